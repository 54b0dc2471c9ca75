#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Predicted vs replayed iteration time, in the same run.
#   scripts/predict_validate.sh [BUILD_DIR] [--quick] [--rounds N] [--hw HW.json]
#                               [--faults model|original] [--device cpu|cuda] [SAMPLE...]
# Measures this machine once with et_profile_hw (before and independently of
# the traces: it never reads them), then for each fleet sample alternates
# et_replay (--threads 1, medians) and et_predict over N rounds and prints
# the error of the median prediction against the median replay, and the
# geometric mean of |error| (GMAE, as the published predictors report it).
# Multi-rank samples (a folder with rank%d files) run under mpirun, each
# predicted with a profile measured under mpirun at its own number of ranks
# (hw2.json, hw4.json: the collectives' curves are the world's, and how ranks
# sharing cores exchange data depends on how many there are: with every rank
# on one core a 1 KiB all_reduce took 8.8 ms among two busy-polling ranks and
# 65 us among four, which Open MPI runs yielding); one is only measured when
# a sample of that size is listed. --hw reuses a
# single-rank profile measured earlier (et_profile_hw --threads 1).
# --faults original replays with --heap match (the original's page faults per
# step, from the sample's metrics sidecar) and predicts with --faults
# original (the same count at the profile's cost), the count measured once per
# sample in a plain run of its model (single-rank samples); model (default) replays
# with the replay's own heap and predicts its faults with the heap model.
# --device cuda (a build of scripts/build_cuda.sh) profiles the GPU (et_profile_hw --device
# cuda) and replays and predicts the GPU samples (default: every fleet_samples/gpu_h200 one; a
# SAMPLE is a folder under fleet_samples, gpu_h200/mlp) on it, with ETB_THREADS host threads
# (default 4, as they were recorded).
# --speed profile (default) predicts at the profile's typical host speed; now at
# the present one (et_predict --speed now: a second of the profile's guard
# probe, right after the replays it is set against); replay at the speed each
# replay ran at (et_replay --speed-probe: the guard's probe around each measured
# iteration over the profile's fastest probe; the prediction is made at their
# median, given to et_predict --speed, and each iteration is brought to that
# median by its own probes before the median iteration is taken); now and
# replay print the profile-speed error beside it (at_profile). The column
# 'speed' is the slowdown the predictions took, over the profile's fastest probe.
# ETB_CORE=N pins every replay, profile and prediction to core N (taskset);
# et_predict then shares that one core among a multi-rank sample's ranks, as
# mpirun's ranks do (--cores defaults to the CPUs it may run on).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build-test; QUICK=""; ROUNDS=3; SAMPLES=(); HW_GIVEN=""; FAULTS=model; DEVICE=cpu; SPEED=profile
while (($#)); do
  case "$1" in
    --quick) QUICK=--quick ;;
    --rounds) ROUNDS=$2; shift ;;
    --hw) HW_GIVEN=$2; shift ;;
    --faults) FAULTS=$2; shift ;;
    --device) DEVICE=$2; shift ;;
    --speed) SPEED=$2; shift ;;
    -*) echo "unknown flag $1" >&2; exit 2 ;;
    *) if [ -d "$1/predictor" ]; then BUILD=$1; else SAMPLES+=("$1"); fi ;;
  esac
  shift
done
case "$FAULTS" in
  model) REPLAY_HEAP=(--heap glibc) ;;
  original) REPLAY_HEAP=(--heap match) ;;
  *) echo "--faults must be model or original, got '$FAULTS'" >&2; exit 2 ;;
esac
case "$SPEED" in
  profile|now|replay) ;;
  *) echo "--speed must be profile, now or replay, got '$SPEED'" >&2; exit 2 ;;
esac
THREADS=1
if [ "$DEVICE" != cpu ]; then
  [ "$SPEED" = profile ] || { echo "--speed $SPEED: CPU replays only" >&2; exit 2; }
  [ "$FAULTS" = model ] || { echo "--faults original: CPU replays only" >&2; exit 2; }
  THREADS=${ETB_THREADS:-4}; REPLAY_HEAP=()
  ((${#SAMPLES[@]})) || SAMPLES=(gpu_h200/mlp gpu_h200/resnet18 gpu_h200/transformer gpu_h200/gpt
                                 gpu_h200/dlrm gpu_h200/mlp_big gpu_h200/resnet18_big
                                 gpu_h200/transformer_big gpu_h200/gpt_big)
fi
((${#SAMPLES[@]})) || SAMPLES=(mlp resnet18 transformer dlrm dlrm@zipf:1.1 ddp2)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# PREDICT_VALIDATE_OUT: where the profiles and reports go (default a new /tmp folder).
OUT=${PREDICT_VALIDATE_OUT:-$(mktemp -d /tmp/predict_validate.XXXX)}
mkdir -p "$OUT"
HW1=$OUT/hw1.json
PIN=(); [ -n "${ETB_CORE:-}" ] && PIN=(taskset -c "$ETB_CORE")
# A multi-rank sample's number of ranks (its rank%d files).
ranksOf() { ls "$1"/*.rank*.et.json.gz | wc -l; }
# The numbers of ranks of the multi-rank samples listed (each profiled once).
worlds=()
for entry in "${SAMPLES[@]}"; do
  s=${entry%%@*}; dir=fleet_samples/$s
  [ -f "$dir/${s##*/}.et.json.gz" ] && continue
  n=$(ranksOf "$dir")
  [[ " ${worlds[*]} " == *" $n "* ]] || worlds+=("$n")
done
t0=$(date +%s)
if [ -n "$HW_GIVEN" ]; then HW1=$HW_GIVEN
else "${PIN[@]}" "$BUILD/predictor/et_profile_hw" -o "$HW1" --threads "$THREADS" --device "$DEVICE" $QUICK; fi
# Each multi-rank profile runs where the replays will (same pinning): its
# collective curves then include how the ranks share the cores.
profiled=$HW1
for n in "${worlds[@]}"; do
  mpirun -np "$n" "${PIN[@]}" "$BUILD/predictor/et_profile_hw" -o "$OUT/hw$n.json" --threads 1 $QUICK
  profiled+=", $OUT/hw$n.json"
done
echo "# profiles took $(( $(date +%s) - t0 )) s ($profiled)"
# The machine's state while profiling (stalls beyond the median calls go
# into every prediction) and now: a replay slowed by other jobs is not.
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print('# profile stall share %.1f%%; load average now %s' % (100 * d.get('stall_share', 0), open('/proc/loadavg').read().split()[0]))" "$HW1"

field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

echo "# page faults: $FAULTS (et_replay ${REPLAY_HEAP[*]}, et_predict --faults $FAULTS)"
echo "# host speed: et_predict --speed $SPEED"
printf "# %-12s %12s %12s %9s %7s" sample replay_ms predicted_ms error speed
[ "$SPEED" != profile ] && printf " %11s" at_profile
echo
errs=(); errs_profile=()
for entry in "${SAMPLES[@]}"; do
  # SAMPLE@DIST replays and predicts with --index-dist DIST.
  s=${entry%%@*}; dist=uniform; [ "$entry" != "$s" ] && dist=${entry#*@}
  dir=fleet_samples/$s; name=${s##*/}
  # The reports' names carry the distribution: dlrm@zipf:1.1 wrote over dlrm's.
  tag=$name; [ "$dist" != uniform ] && tag=$name.${dist//:/-}
  if [ -f "$dir/$name.et.json.gz" ]; then
    trace=$dir/$name.et.json.gz; launch=(); hw=$HW1
  else
    trace="$dir/$name.rank%d.et.json.gz"; n=$(ranksOf "$dir")
    launch=(mpirun -np "$n"); hw=$OUT/hw$n.json
  fi
  # --faults original: the original's faults per step, measured now (the committed sidecars
  # predate the count): one plain run of the model (fleet_samples/record.py --metrics-only).
  orig=()
  if [ "$FAULTS" = original ]; then
    if [ -n "${launch[*]}" ]; then echo "--faults original: single-rank samples only ($s)" >&2; exit 2; fi
    "${PIN[@]}" /usr/bin/python3 fleet_samples/record.py --model "$s" --threads 1 --warmup 3 --iters 10 \
      --metrics-only --out-dir "$OUT/orig_$s" >&2
    orig=(--original-metrics "$OUT/orig_$s/$s.metrics.json")
  fi
  reps=(); preds=(); preds_profile=(); speeds=()
  for ((r = 0; r < ROUNDS; r++)); do
    probe=(); [ "$SPEED" = replay ] && probe=(--speed-probe)
    "${launch[@]}" "${PIN[@]}" "$BUILD/replayer/et_replay" "$trace" --threads "$THREADS" --warmup 2 --iters 5 \
      --min-iters-s 1 --quiet --device "$DEVICE" --index-dist "$dist" "${REPLAY_HEAP[@]}" "${orig[@]}" "${probe[@]}" \
      --report-json "$OUT/$tag.replay.json"
    speed=$SPEED
    if [ "$SPEED" = replay ]; then
      # Each iteration is set against the probes around it: the median
      # iteration and the median probe, taken apart, pair a fast iteration
      # with a slow probe when the host's speed moves within the replay
      # (lstm here: probes 1.0-2.3x, iterations 19.8-38.8 ms). Every
      # iteration is brought to the median slowdown by its own probes'
      # (CPU time scales with it), and the prediction is made at that one.
      read -r rep speed < <(python3 -c "
import json, statistics, sys
r = json.load(open(sys.argv[1]))['replay']
fastest = json.load(open(sys.argv[2]))['speed_guard']['probe_us']
slow = [max(1.0, p / fastest) for p in r['speed_probe_us']]
its = r['iter_ms']['samples']
if len(its) != len(slow): sys.exit('%s: %d iterations, %d probes' % (sys.argv[1], len(its), len(slow)))
mid = statistics.median(slow)
print(statistics.median(t * mid / s for t, s in zip(its, slow)), '%.4f' % mid)" "$OUT/$tag.replay.json" "$hw")
      reps+=("$rep")
    else
      reps+=("$(field "$OUT/$tag.replay.json" "d['replay']['iter_ms']['median']")")
    fi
    "${PIN[@]}" "$BUILD/predictor/et_predict" "$trace" --hw "$hw" --quiet --index-dist "$dist" --faults "$FAULTS" \
      --device "$DEVICE" --speed "$speed" "${orig[@]}" --report-json "$OUT/$tag.predict.json"
    preds+=("$(field "$OUT/$tag.predict.json" "d['predicted']['iter_ms']")")
    speeds+=("$(field "$OUT/$tag.predict.json" "d['predicted']['speed']['slowdown']")")
    if [ "$SPEED" != profile ]; then
      "${PIN[@]}" "$BUILD/predictor/et_predict" "$trace" --hw "$hw" --quiet --index-dist "$dist" \
        --faults "$FAULTS" --device "$DEVICE" "${orig[@]}" --report-json "$OUT/$tag.predict_profile.json"
      preds_profile+=("$(field "$OUT/$tag.predict_profile.json" "d['predicted']['iter_ms']")")
    else
      preds_profile+=("${preds[-1]}")
    fi
  done
  read -r rep pred err speed err_profile < <(python3 -c "
import statistics as st, sys
r, p, s, q = (st.median(map(float, a.split())) for a in sys.argv[1:])
print(r, p, (p - r) / r * 100, s, (q - r) / r * 100)" "${reps[*]}" "${preds[*]}" "${speeds[*]}" "${preds_profile[*]}")
  # The replays' spread over rounds: a wide one means the machine was busy.
  spread=$(python3 -c "import sys; r = [float(x) for x in sys.argv[1:]]; print('%.0f%%' % ((max(r) - min(r)) / min(r) * 100))" "${reps[@]}")
  printf "  %-12s %12.2f %12.2f %+8.1f%% %6.2fx" "$entry" "$rep" "$pred" "$err" "$speed"
  [ "$SPEED" != profile ] && printf " %+10.1f%%" "$err_profile"
  printf "   (replay spread %s, load %s)\n" "$spread" "$(cut -d' ' -f1 /proc/loadavg)"
  errs+=("$err"); errs_profile+=("$err_profile")
done
gmae() {
  python3 -c "
import math, sys
e = [abs(float(x)) / 100 for x in sys.argv[2:]]
print('# %s: GMAE %.1f%% over %d samples; worst %.1f%%' % (sys.argv[1], 100 * math.exp(sum(math.log(max(x, 4e-4)) for x in e) / len(e)), len(e), 100 * max(e)))" "$@"
}
gmae "--speed $SPEED" "${errs[@]}"
[ "$SPEED" != profile ] && gmae "at the profile's speed" "${errs_profile[@]}"
echo "# profiles and reports in $OUT (scripts/predict_attrib.py --replay R --predict P: per op kind)"
