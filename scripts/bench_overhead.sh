#!/bin/sh
# SPDX-License-Identifier: MIT
# Replay overhead per op: engine vs direct ATen (Google Benchmark) vs Python
# eager. Usage: scripts/bench_overhead.sh BUILD_DIR
set -e
build=${1:-build}
"$build/benchmarks/etb_replay_overhead_bench" --benchmark_min_time=1
/usr/bin/python3 "$(dirname "$0")/bench_overhead.py"
