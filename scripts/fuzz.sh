#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each reader's
# fuzzer for SECONDS (default 120), seeded from small real traces. Exits
# non-zero when any fuzzer finds something; the reproducers are kept in
# $BUILD_DIR/fuzz-findings/ (save real bugs under tests/fuzz/regressions/).
#
#   scripts/fuzz.sh [SECONDS]
# Env: BUILD_DIR (default build-fuzz), TRACES (default ../shared/traces),
#      FUZZ_TARGETS (default "et_json chakra kineto"), FUZZ_JOBS (default 1).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECONDS_EACH="${1:-120}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-fuzz}"
TRACES="${TRACES:-$ROOT/../shared/traces}"
TARGETS="${FUZZ_TARGETS:-et_json chakra kineto}"
PY="${PYTHON:-python3}"

command -v clang++ >/dev/null || {
  echo "fuzz: clang++ not found (apt-get install -y clang libclang-rt-14-dev)" >&2; exit 2; }
[ -d "$TRACES" ] || { echo "fuzz: seed traces $TRACES not found (set TRACES)" >&2; exit 2; }

# Configure every time (cheap): a target added since the last run must exist.
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD_DIR" -DETB_FUZZ=ON \
  -DETB_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
for t in $TARGETS; do
  cmake --build "$BUILD_DIR" -j2 --target "etb_fuzz_$t" >/dev/null
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$PY" "$ROOT/scripts/make_fuzz_seeds.py" "$TRACES" "$work/seeds"
findings="$BUILD_DIR/fuzz-findings"
mkdir -p "$findings"

status=0
for t in $TARGETS; do
  mkdir -p "$work/corpus/$t"
  dict=()
  [ -f "$ROOT/tests/fuzz/$t.dict" ] && dict=(-dict="$ROOT/tests/fuzz/$t.dict")
  echo "# fuzzing $t for ${SECONDS_EACH}s" >&2
  # First corpus dir receives new inputs; the seeds stay untouched.
  if ! "$BUILD_DIR/tests/fuzz/etb_fuzz_$t" "$work/corpus/$t" "$work/seeds/$t" \
      "${dict[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/$t-" \
      >"$work/$t.log" 2>&1; then
    status=1
    echo "fuzz: $t found something:" >&2
    grep -E "ERROR|SUMMARY|Test unit written|terminate|what\(\)" "$work/$t.log" | head -20 >&2
  fi
  grep -E "stat::number_of_executed_runs|stat::peak_rss_mb|cov:" "$work/$t.log" | tail -3 >&2
  cp "$work/$t.log" "$findings/$t.log"
done
[ "$status" -eq 0 ] && echo "fuzz: no findings in ${SECONDS_EACH}s per target ($TARGETS)" >&2
exit "$status"
