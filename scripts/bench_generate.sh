#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/bench_generate.sh [MODEL...]   (default: resnet18 transformer dlrm)
# For each fleet sample: et_generate time, the generated program's CMake
# configure+build time (ccache off) and binary size, then its iteration time
# against et_replay on the same trace in the same run: ROUNDS rounds (default
# 4) in ABBA order so a load trend favours neither side; prints the median
# replay/generated ratio (target: within 5%).
# Environment: BUILD (etbench build, default build-test), WORK (default a
# temp folder), ROUNDS, ITERS (default 10), JOBS (compile jobs, default 2).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build=${BUILD:-$root/build-test}
work=${WORK:-$(mktemp -d /tmp/etb_bench_generate_XXXXXX)}
rounds=${ROUNDS:-4} iters=${ITERS:-10} jobs=${JOBS:-2}
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet18 transformer dlrm)
gen=$build/generator/et_generate replay=$build/replayer/et_replay
[ -x "$gen" ] && [ -x "$replay" ] || { echo "build et_generate and et_replay in $build first"; exit 1; }
flags=(--device cpu --threads 1 --warmup 2 --iters "$iters" --quiet)

median_ms() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['replay']['iter_ms']['median'])" "$1"; }

printf "# load: %s\n" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-12s %8s %9s %9s %9s %11s %11s %8s\n" model gen_s build_s build_cpu size_MB et_replay_ms generated_ms ratio
for m in "${models[@]}"; do
  t=$root/fleet_samples/$m/$m.et.json.gz k=$root/fleet_samples/$m/$m.kineto.json.gz
  out=$work/$m
  rm -rf "$out"
  s=$(date +%s%N)
  "$gen" "$t" --kineto "$k" -o "$out" > /dev/null
  gen_s=$(( ($(date +%s%N) - s) / 1000000 ))
  s=$(date +%s%N)
  CCACHE_DISABLE=1 /usr/bin/time -f "%U %S" -o "$out/cpu1" cmake -S "$out" -B "$out/build" > "$out/configure.log"
  CCACHE_DISABLE=1 /usr/bin/time -f "%U %S" -o "$out/cpu2" cmake --build "$out/build" -j "$jobs" > "$out/build.log"
  build_s=$(( ($(date +%s%N) - s) / 1000000 ))
  # CPU seconds (user+sys) do not depend on the load; / JOBS = idle wall time.
  cpu_s=$(cat "$out/cpu1" "$out/cpu2" | awk '{t += $1 + $2} END {printf "%.0f", t}')
  size=$(stat -c %s "$out/build/bench")
  a=() b=()
  for ((r = 0; r < rounds; ++r)); do
    order="AB"; [ $((r % 2)) -eq 1 ] && order="BA"
    for side in $(echo $order | fold -w1); do
      if [ "$side" = A ]; then
        "$replay" "$t" --kineto "$k" "${flags[@]}" --report-json "$work/a.json"
        a+=("$(median_ms "$work/a.json")")
      else
        "$out/build/bench" "${flags[@]}" --report-json "$work/b.json"
        b+=("$(median_ms "$work/b.json")")
      fi
    done
  done
  python3 - "$m" "$gen_s" "$build_s" "$cpu_s" "$size" "${a[*]}" "${b[*]}" <<'PY'
import statistics, sys
m, gen_s, build_s, cpu_s, size, a, b = sys.argv[1:8]
a = [float(x) for x in a.split()]; b = [float(x) for x in b.split()]
ratio = statistics.median(y / x for x, y in zip(a, b))
print(f"{m:12s} {int(gen_s)/1e3:8.2f} {int(build_s)/1e3:9.1f} {int(cpu_s):9d} {int(size)/1e6:9.1f} "
      f"{statistics.median(a):11.3f} {statistics.median(b):11.3f} {ratio:8.3f}"
      + ("" if abs(ratio - 1) <= 0.05 else "  (outside 5%)"))
PY
done
echo "# ratio = generated / et_replay median iteration time, median over $rounds alternating rounds"
echo "# build_s: wall seconds under the load above; build_cpu: user+sys CPU seconds (load-independent)"
