#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Trace-load benchmark: builds a >= 500 MB PyTorch ET JSON from a real trace,
# loads it with etbench's readTrace (Google Benchmark) and with Python's
# json.load, each in its own process, alternating sides for ROUNDS rounds
# (ABBA order, so a load trend favours neither). Prints per side the median
# load time and whole-process peak RSS (/usr/bin/time -v), the heap the
# Trace keeps (allocator statistics), and the ratios, each the median over
# rounds of the ratio within a round.
#
#   scripts/bench_load.sh [SIZE_MB] [ROUNDS]      (default 512 3)
# Env: BUILD_DIR (default build-bench), ETB_BENCH_SRC (source trace),
#      ETB_BENCH_FILE (where the big file goes; default $BUILD_DIR/large_et.json)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SIZE_MB="${1:-512}"
ROUNDS="${2:-3}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-bench}"
SRC="${ETB_BENCH_SRC:-$ROOT/../shared/traces/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz}"
FILE="${ETB_BENCH_FILE:-$BUILD_DIR/large_et.json}"
PY="${PYTHON:-python3}"

[ -f "$SRC" ] || { echo "bench_load: source trace $SRC not found (set ETB_BENCH_SRC)" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "bench_load: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD_DIR" -j2 --target etb_trace_load_bench >/dev/null
BENCH="$BUILD_DIR/benchmarks/etb_trace_load_bench"

# Rebuild the file only when it is missing or smaller than asked.
want=$(( SIZE_MB * 1024 * 1024 ))
if [ ! -f "$FILE" ] || [ "$(stat -c %s "$FILE")" -lt "$want" ]; then
  "$PY" "$ROOT/scripts/make_large_et.py" --src "$SRC" --out "$FILE" --size-mb "$SIZE_MB"
fi
size=$(stat -c %s "$FILE")

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cpp() {  # ROUND
  /usr/bin/time -v -o "$tmp/cpp.$1.time" "$BENCH" --trace="$FILE" \
    --benchmark_min_time=0.1 --benchmark_format=json >"$tmp/cpp.$1.json"
}
py() {  # ROUND
  /usr/bin/time -v -o "$tmp/py.$1.time" "$PY" -c '
import json, sys, time
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    d = json.load(f)
print(time.perf_counter() - t)
' "$FILE" >"$tmp/py.$1.out"
}
for r in $(seq "$ROUNDS"); do
  echo "# round $r/$ROUNDS: loading $FILE ($size bytes) with readTrace and json.load ..." >&2
  if [ $((r % 2)) -eq 1 ]; then cpp "$r"; py "$r"; else py "$r"; cpp "$r"; fi
done

"$PY" - "$tmp" "$ROUNDS" "$size" <<'PYEOF'
import json, re, statistics, sys
tmp, rounds, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
MB = 1024 * 1024
med = statistics.median
def rss(path):  # bytes, from /usr/bin/time -v
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(path).read()).group(1)) * 1024
rows = []
for r in range(1, rounds + 1):
    b = json.load(open(f"{tmp}/cpp.{r}.json"))["benchmarks"][0]
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
    rows.append({"cpp_s": b["real_time"] * unit, "py_s": float(open(f"{tmp}/py.{r}.out").read().split()[-1]),
                 "cpp_rss": rss(f"{tmp}/cpp.{r}.time"), "py_rss": rss(f"{tmp}/py.{r}.time"),
                 "heap": b["heap_MB"] * MB, "nodes": int(b["nodes"])})
col = lambda k: med(x[k] for x in rows)
speedup = med(x["py_s"] / x["cpp_s"] for x in rows)
rss_ratio = med(x["cpp_rss"] / x["py_rss"] for x in rows)
print(f"file size:               {size / MB:10.1f} MB  ({rows[0]['nodes']} nodes), {rounds} alternating rounds")
print(f"C++ readTrace:           {col('cpp_s'):10.2f} s   ({size / MB / col('cpp_s'):.0f} MB/s)  rounds {[round(x['cpp_s'], 2) for x in rows]}")
print(f"Python json.load:        {col('py_s'):10.2f} s   ({size / MB / col('py_s'):.0f} MB/s)  rounds {[round(x['py_s'], 2) for x in rows]}")
print(f"speedup:                 {speedup:10.1f} x   (median of per-round ratios; target >= 5x)")
print(f"peak RSS C++ / Python:   {col('cpp_rss') / MB:10.0f} MB / {col('py_rss') / MB:.0f} MB "
      f"({col('cpp_rss') / size:.2f}x / {col('py_rss') / size:.2f}x the file; C++/Python {rss_ratio:.2f})")
print(f"Trace heap (mallinfo2):  {col('heap') / MB:10.0f} MB  ({col('heap') / size:.2f}x the file; target <= 1.5)")
ok = speedup >= 5 and col("heap") / size <= 1.5
print("targets:                 " + ("met" if ok else "MISSED"))
sys.exit(0 if ok else 1)
PYEOF
