#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Trace-load benchmark, whole process: builds a large PyTorch ET JSON from a
# real trace, then times `et_inspect FILE --json` (read, summary, exit) and
# Python's json.load of the same file, alternating which goes first each
# round so machine load hits both alike. Prints per-round times, the median
# speed ratio and each side's peak RSS (from /usr/bin/time) over the file size.
#
#   scripts/bench_load.sh [SIZE_MB] [ROUNDS]   (default 512 3)
#   ROUNDS=1 NO_PYTHON=1 scripts/bench_load.sh 4096   # the 4 GB run: over
#       simdjson's 4 GB single-document limit; needs ~5 GB of disk for the
#       file and (without NO_PYTHON) ~11 GB of RAM for json.load
# Env: BUILD_DIR (default build-bench), ETB_BENCH_SRC (source trace),
#      ETB_BENCH_FILE (default $BUILD_DIR/large_et_<SIZE_MB>.json), ROUNDS (3),
#      NO_PYTHON=1 (time et_inspect only).
# Exit: 0 when the targets (>= 20x json.load, peak RSS <= 1x the file) are
# met, 1 when missed, 2 on a setup problem.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SIZE_MB="${1:-512}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-bench}"
SRC="${ETB_BENCH_SRC:-$ROOT/../shared/traces/param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz}"
FILE="${ETB_BENCH_FILE:-$BUILD_DIR/large_et_${SIZE_MB}.json}"
ROUNDS="${2:-${ROUNDS:-3}}"
PY="${PYTHON:-python3}"

[ -f "$SRC" ] || { echo "bench_load: source trace $SRC not found (set ETB_BENCH_SRC)" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "bench_load: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD_DIR" -j2 --target et_inspect >/dev/null
INSPECT="$BUILD_DIR/core/et_inspect"

# Rebuild the file only when it is missing or smaller than asked.
want=$(( SIZE_MB * 1024 * 1024 ))
if [ ! -f "$FILE" ] || [ "$(stat -c %s "$FILE")" -lt "$want" ]; then
  mkdir -p "$(dirname "$FILE")"
  free_kb=$(df -Pk "$(dirname "$FILE")" | awk 'NR==2 {print $4}')
  if [ "$free_kb" -lt $(( want / 1024 * 11 / 10 )) ]; then
    echo "bench_load: not enough disk for a ${SIZE_MB} MB file in $(dirname "$FILE")" >&2; exit 2
  fi
  "$PY" "$ROOT/scripts/make_large_et.py" --src "$SRC" --out "$FILE" --size-mb "$SIZE_MB"
fi
size=$(stat -c %s "$FILE")
cat "$FILE" >/dev/null  # both sides start from the page cache

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# wall seconds and peak RSS (KB) from /usr/bin/time -v output
wall_s() { awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$1"; }
rss_kb() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }

run_cpp() {
  /usr/bin/time -v -o "$tmp/cpp.time" "$INSPECT" "$FILE" --json >"$tmp/cpp.json"
  echo "$(wall_s "$tmp/cpp.time") $(rss_kb "$tmp/cpp.time")"
}
run_py() {
  /usr/bin/time -v -o "$tmp/py.time" "$PY" -c '
import json, sys, time
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    d = json.load(f)
print(time.perf_counter() - t)
' "$FILE" >"$tmp/py.out"
  echo "$(tail -1 "$tmp/py.out") $(rss_kb "$tmp/py.time")"
}

echo "# $FILE: $size bytes; $ROUNDS round(s); load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
: >"$tmp/rounds"
for ((r = 0; r < ROUNDS; r++)); do
  if [ -n "${NO_PYTHON:-}" ]; then
    c=$(run_cpp); p="0 0"
  elif (( r % 2 == 0 )); then
    c=$(run_cpp); p=$(run_py)
  else
    p=$(run_py); c=$(run_cpp)
  fi
  echo "$c $p" >>"$tmp/rounds"
  echo "# round $((r + 1)): et_inspect ${c% *} s, json.load ${p% *} s" >&2
done
nodes=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodes"])' "$tmp/cpp.json")

"$PY" - "$tmp/rounds" "$size" "$nodes" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PYEOF'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
size, nodes, load = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
MB = 1024 * 1024
cpp = statistics.median(r[0] for r in rows)
cpp_rss = max(r[1] for r in rows) * 1024
print(f"file size:                 {size / MB:10.1f} MB  ({nodes} nodes)")
print(f"et_inspect (whole process): {cpp:9.2f} s   ({size / MB / cpp:.0f} MB/s, median of {len(rows)})")
print(f"peak RSS et_inspect:       {cpp_rss / MB:10.0f} MB  ({cpp_rss / size:.2f}x the file; target <= 1.0)")
ok = cpp_rss <= size
if rows[0][2] > 0:
    py = statistics.median(r[2] for r in rows)
    py_rss = max(r[3] for r in rows) * 1024
    ratio = statistics.median(r[2] / r[0] for r in rows)
    print(f"Python json.load:          {py:10.2f} s   ({size / MB / py:.0f} MB/s)")
    print(f"speed ratio (per round):   {ratio:10.1f} x   (median; target >= 20x)")
    print(f"peak RSS json.load:        {py_rss / MB:10.0f} MB  ({py_rss / size:.2f}x the file)")
    ok = ok and ratio >= 20
print(f"load average at the end:   {load}")
print("targets:                   " + ("met" if ok else "MISSED"))
sys.exit(0 if ok else 1)
PYEOF
