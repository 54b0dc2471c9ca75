#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bus bandwidth of large all_reduce / all_to_all through etbench's
# communication layer vs a plain MPI loop, at 2 and 4 ranks.
#   scripts/bench_comm.sh [BUILD_DIR] [MB...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake --build "$build" --target etb_comm_busbw_bench -j2 >/dev/null
for np in 2 4; do
  mpirun -np "$np" --oversubscribe "$build/benchmarks/etb_comm_busbw_bench" "$@"
done
