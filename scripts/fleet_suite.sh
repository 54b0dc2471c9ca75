#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/fleet_suite.sh [OUT] [program flags...]
# One command from fleet traces to a weighted score: et_generate --suite over
# fleet_samples/ and the public traces in ../shared/traces (when present),
# then the suite's run_suite.sh builds every program (one CMake build, one
# shared runtime), runs each (multi-rank ones under mpirun) and prints the
# combined report with the weighted score. OUT defaults to a temp folder;
# program flags default to --device cpu --threads 1 --warmup 1 --iters 3.
# Environment: BUILD (etbench build, default build), JOBS, PROGRAM_TIMEOUT
# (default 900 s per program), MPIRUN_FLAGS (default --oversubscribe).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build=${BUILD:-$root/build}
gen=$build/generator/et_generate
[ -x "$gen" ] || { echo "fleet_suite: build et_generate in $build first (scripts/setup.sh)" >&2; exit 2; }
out=${1:-$(mktemp -d /tmp/etb_fleet_suite_XXXXXX)/suite}
shift || true
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(--device cpu --threads 1 --warmup 1 --iters 3)
dirs=(--suite "$root/fleet_samples")
shared=$root/../shared/traces
if [ -d "$shared" ]; then
  dirs+=(--suite "$shared")
else
  echo "fleet_suite: $shared not found: the suite holds the fleet samples only" >&2
fi
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
export MPIRUN_FLAGS=${MPIRUN_FLAGS:---oversubscribe} PROGRAM_TIMEOUT=${PROGRAM_TIMEOUT:-900}
t0=$SECONDS
"$gen" "${dirs[@]}" -o "$out"
echo "generated in $((SECONDS - t0)) s; building and running (log: $out/build.log)"
status=0
"$out/run_suite.sh" "${flags[@]}" || status=$?
echo "suite: $out (suite_report.json, suite_report.html); $((SECONDS - t0)) s in all"
exit $status
