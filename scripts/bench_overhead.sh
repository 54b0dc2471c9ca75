#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Replay overhead per op on a chain of 10,000 tiny ops: the engine
# (BM_ReplayTinyOps), the same ATen calls from a C++ loop
# (BM_DirectAtenTinyOps) and Python eager PyTorch (bench_overhead.py), each
# in its own process. The three sides run in rotating order for ROUNDS
# rounds so background load hits each alike; the script prints per side the
# median us/op and the ratios, each the median over rounds of the ratio
# within a round.
#   scripts/bench_overhead.sh [BUILD_DIR] [ROUNDS]      (default build 5)
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
bench="$build/benchmarks/etb_replay_overhead_bench"
[ -x "$bench" ] || { echo "bench_overhead: $bench not built" >&2; exit 2; }
tmp=$(mktemp -d /tmp/etb_bench_overhead_XXXXXX)
trap 'rm -rf "$tmp"' EXIT

side() {  # NAME ROUND
  case $1 in
    replay | direct)
      local filter=BM_ReplayTinyOps
      [ "$1" = direct ] && filter=BM_DirectAtenTinyOps
      "$bench" --benchmark_filter="^$filter\$" --benchmark_min_time=1 --benchmark_format=json \
        >"$tmp/$1.$2.json" ;;
    python) /usr/bin/python3 "$here/bench_overhead.py" >"$tmp/python.$2.txt" ;;
  esac
}
sides=(replay direct python)
for r in $(seq "$rounds"); do
  echo "# round $r/$rounds" >&2
  for k in 0 1 2; do side "${sides[$(((r + k) % 3))]}" "$r"; done
done

python3 - "$tmp" "$rounds" <<'PY'
import json, re, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
med = statistics.median
def gbench_us(path):  # us per op = 1 / items_per_second
    return 1e6 / json.load(open(path))["benchmarks"][0]["items_per_second"]
def python_us(path):
    return float(re.search(r"python eager: ([0-9.]+) us/op", open(path).read()).group(1))
rows = [(gbench_us(f"{tmp}/replay.{r}.json"), gbench_us(f"{tmp}/direct.{r}.json"),
         python_us(f"{tmp}/python.{r}.txt")) for r in range(1, rounds + 1)]
print(f"# 10,000 tiny ops (4-element add/mul), 1 thread, {rounds} rotating rounds")
for i, name in enumerate(("et_replay engine", "direct ATen (C++)", "Python eager")):
    print(f"{name:<20}{med(x[i] for x in rows):8.3f} us/op   rounds {[round(x[i], 3) for x in rows]}")
print(f"replay / direct:    {med(x[0] / x[1] for x in rows):8.2f} x   (median of per-round ratios)")
print(f"python / replay:    {med(x[2] / x[0] for x in rows):8.2f} x")
PY
