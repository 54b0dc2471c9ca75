#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Trace-load benchmark: builds a >= 500 MB PyTorch ET JSON from a real trace,
# loads it with etbench's readTrace (Google Benchmark) and with Python's
# json.load in the same run, and prints time, speedup and memory.
#
#   scripts/bench_load.sh [SIZE_MB]      (default 512)
# Env: BUILD_DIR (default build-bench), ETB_BENCH_SRC (source trace),
#      ETB_BENCH_FILE (where the big file goes; default $BUILD_DIR/large_et.json)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SIZE_MB="${1:-512}"
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

# peak RSS in KB from /usr/bin/time -v
rss_kb() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }

echo "# loading $FILE ($size bytes) with readTrace ..." >&2
/usr/bin/time -v -o "$tmp/cpp.time" "$BENCH" --trace="$FILE" \
  --benchmark_min_time=0.1 --benchmark_format=json >"$tmp/cpp.json"

echo "# loading it with Python json.load ..." >&2
/usr/bin/time -v -o "$tmp/py.time" "$PY" -c '
import json, sys, time
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    d = json.load(f)
print(time.perf_counter() - t)
' "$FILE" >"$tmp/py.out"

"$PY" - "$tmp/cpp.json" "$tmp/py.out" "$size" "$(rss_kb "$tmp/cpp.time")" "$(rss_kb "$tmp/py.time")" <<'PYEOF'
import json, sys
bench = json.load(open(sys.argv[1]))["benchmarks"][0]
py_s = float(open(sys.argv[2]).read().split()[-1])
size = int(sys.argv[3])
cpp_rss, py_rss = int(sys.argv[4]) * 1024, int(sys.argv[5]) * 1024
unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[bench["time_unit"]]
cpp_s = bench["real_time"] * unit
mem = bench["mem_per_file_byte"]
MB = 1024 * 1024
print(f"file size:               {size / MB:10.1f} MB  ({int(bench['nodes'])} nodes)")
print(f"C++ readTrace:           {cpp_s:10.2f} s   ({size / MB / cpp_s:.0f} MB/s)")
print(f"Python json.load:        {py_s:10.2f} s   ({size / MB / py_s:.0f} MB/s)")
print(f"speedup:                 {py_s / cpp_s:10.1f} x   (target >= 5x)")
print(f"Trace memory / file:     {mem:10.2f}     ({bench['trace_MB']:.0f} MB; target <= 1.5)")
print(f"peak RSS C++ / Python:   {cpp_rss / MB:10.0f} MB / {py_rss / MB:.0f} MB "
      f"({cpp_rss / size:.2f}x / {py_rss / size:.2f}x the file)")
ok = py_s / cpp_s >= 5 and mem <= 1.5
print("targets:                 " + ("met" if ok else "MISSED"))
sys.exit(0 if ok else 1)
PYEOF
