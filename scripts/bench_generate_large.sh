#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/bench_generate_large.sh [NODES]   (default 27000; 270000 gives ~28,000 replayed ops)
# A large generated program, as issue 7 asks of a 27,000-node trace (the size
# of the public hf_GPT2 ET, which ../shared does not hold): et_compose repeats
# a fleet sample's iteration until the trace has at least NODES nodes, then
# et_generate writes the program and CMake builds it (ccache off). Prints the
# trace size, the translation units, generation time and peak RSS, build wall
# and CPU time, the largest compile's peak RSS (every compiler call runs under
# /usr/bin/time) and the binary size; then runs one iteration to show that the
# program works. Not a CI test: minutes of compile time.
# Environment: BUILD (etbench build, default build-test), WORK (default a temp
# folder), SAMPLE (fleet sample to repeat, default transformer), JOBS (default 2).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build=${BUILD:-$root/build-test}
work=${WORK:-$(mktemp -d /tmp/etb_bench_large_XXXXXX)}
sample=${SAMPLE:-transformer} jobs=${JOBS:-2} want=${1:-27000}
gen=$build/generator/et_generate compose=$build/composer/et_compose inspect=$build/core/et_inspect
for t in "$gen" "$compose" "$inspect"; do
  [ -x "$t" ] || { echo "bench_generate_large: build $(basename "$t") in $build first" >&2; exit 2; }
done
command -v /usr/bin/time > /dev/null || { echo "bench_generate_large: needs /usr/bin/time" >&2; exit 2; }
src=$root/fleet_samples/$sample/$sample.et.json.gz
nodes_of() { "$inspect" "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"])'; }

mkdir -p "$work"
base=$(nodes_of "$src")
repeat=$(( (want + base - 1) / base ))
trace=$work/large.et.json.gz
"$compose" "$src" --repeat "$repeat" -o "$trace" > "$work/compose.log"
nodes=$(nodes_of "$trace")
printf "# load: %s; %s x%d: %d nodes\n" "$(cut -d' ' -f1-3 /proc/loadavg)" "$sample" "$repeat" "$nodes"

rm -rf "$work/prog"
/usr/bin/time -f "%e %M" -o "$work/gen.time" "$gen" "$trace" -o "$work/prog" > "$work/gen.log"
read -r gen_s gen_kb < "$work/gen.time"
tus=$(ls "$work/prog/src"/rank*.cc | wc -l)
ops=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ops"])' "$work/prog/bench.json")

# Every compile under /usr/bin/time: peak RSS and seconds per translation unit.
: > "$work/compiles.log"
launcher="/usr/bin/time;-a;-o;$work/compiles.log;-f;%M %e %C"
s=$(date +%s%N)
CCACHE_DISABLE=1 /usr/bin/time -f "%U %S" -o "$work/cpu1" cmake -S "$work/prog" -B "$work/prog/build" \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" > "$work/configure.log"
CCACHE_DISABLE=1 /usr/bin/time -f "%U %S" -o "$work/cpu2" cmake --build "$work/prog/build" -j "$jobs" \
  > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
build_s=$(( ($(date +%s%N) - s) / 1000000 ))
cpu_s=$(cat "$work/cpu1" "$work/cpu2" | awk '{t += $1 + $2} END {printf "%.0f", t}')
read -r max_kb max_s max_cmd < <(awk '$1 ~ /^[0-9]+$/ {print}' "$work/compiles.log" | sort -n | tail -1)
unit=$(echo "$max_cmd" | grep -oE '[^ ]+\.(cc|cxx)' | tail -1 || true)
size=$(stat -c %s "$work/prog/build/bench")

"$work/prog/build/bench" --device cpu --threads 1 --warmup 0 --iters 1 --quiet \
  --report-json "$work/run.json" > "$work/run.log" 2>&1 || { tail "$work/run.log"; exit 1; }
replayed=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["coverage"]; print("%d/%d" % (c["replayed"], c["replayed"] + c["skipped"]))' "$work/run.json")

printf "trace:          %d nodes (%d of them replayed ops), %d translation units\n" "$nodes" "$ops" "$tus"
printf "et_generate:    %.1f s, peak RSS %d MB\n" "$gen_s" $(( gen_kb / 1024 ))
echo "build done: $build_s ms wall" >&2
printf "build (-j%s):    %.1f s wall, %d s CPU (configure + build, ccache off)\n" "$jobs" \
  "$(echo "$build_s / 1000" | bc -l)" "$cpu_s"
printf "largest compile: %d MB peak RSS, %.1f s (%s)\n" $(( max_kb / 1024 )) "$max_s" "$(basename "$unit")"
printf "binary:         %.1f MB; one iteration ran, %s ops replayed\n" "$(echo "$size / 1048576" | bc -l)" "$replayed"
echo "# work folder: $work"
