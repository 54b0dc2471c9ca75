#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Generalisation of et_predict: one model recorded at several sizes that
# nothing was tuned on, each replayed and predicted in the same run.
#   scripts/predict_sizes.sh [BUILD_DIR] [--hw HW.json] [--model transformer] [--rounds N]
#                            [--out DIR] [--faults model|original] [--speed profile|now]
#                            [VARIANT...]
# A VARIANT is NAME:KEY=VALUE,KEY=VALUE (record.py --size overrides); the
# defaults are four transformer sizes. Recordings go to --out (default a
# temporary folder; an existing NAME/ there is reused). Prints replay and
# predicted medians, the error of each, whether the predicted times rank the
# variants as the replays do, and exits 1 when a variant is off by more than
# 15% or the order differs. ETB_CORE=N pins the timing to core N.
# --speed profile|now: the host speed et_predict predicts at (default profile,
# as in predict_validate.sh; now: the present one, probed after each replay).
# --faults original (as in predict_validate.sh) replays each variant with
# --heap match and predicts with --faults original, both from the page faults
# of a plain run of the variant (record.py --metrics-only): the op models'
# generalisation apart from where glibc's heap happens to fault, which
# differs from run to run (benchmarks/RESULTS.md, "heap model against glibc").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build-test; HW=""; MODEL=transformer; ROUNDS=3; OUT=""; VARIANTS=(); FAULTS=model; SPEED=profile
while (($#)); do
  case "$1" in
    --hw) HW=$2; shift ;;
    --model) MODEL=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --out) OUT=$2; shift ;;
    --faults) FAULTS=$2; shift ;;
    --speed) SPEED=$2; shift ;;
    -*) echo "unknown flag $1" >&2; exit 2 ;;
    *) if [ -d "$1/predictor" ]; then BUILD=$1; else VARIANTS+=("$1"); fi ;;
  esac
  shift
done
((${#VARIANTS[@]})) || VARIANTS=(
  t1:batch=4,seq=64,d_model=128,ff=512,layers=2
  t2:batch=8,seq=64,d_model=192,ff=768,layers=2
  t3:batch=4,seq=128,d_model=256,ff=1024,layers=2
  t4:batch=16,seq=128,d_model=256,ff=1024,layers=2)
case "$FAULTS" in
  model) REPLAY_HEAP=(--heap glibc) ;;
  original) REPLAY_HEAP=(--heap match) ;;
  *) echo "--faults must be model or original, got '$FAULTS'" >&2; exit 2 ;;
esac
OUT=${OUT:-$(mktemp -d /tmp/predict_sizes.XXXX)}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
PIN=(); [ -n "${ETB_CORE:-}" ] && PIN=(taskset -c "$ETB_CORE")
if [ -z "$HW" ]; then
  HW=$OUT/hw.json
  "${PIN[@]}" "$BUILD/predictor/et_profile_hw" -o "$HW" --threads 1
fi
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
rows=()
for v in "${VARIANTS[@]}"; do
  name=${v%%:*}; sizes=${v#*:}; args=()
  IFS=, read -ra kvs <<<"$sizes"
  for kv in "${kvs[@]}"; do args+=(--size "$kv"); done
  trace=$OUT/$name/$MODEL.et.json.gz
  [ -f "$trace" ] || "${PIN[@]}" /usr/bin/python3 fleet_samples/record.py --model "$MODEL" \
    --out-dir "$OUT/$name" --warmup 1 --iters 3 "${args[@]}" > /dev/null
  orig=()
  if [ "$FAULTS" = original ]; then
    metrics=$OUT/$name/orig/$MODEL.metrics.json
    [ -f "$metrics" ] || "${PIN[@]}" /usr/bin/python3 fleet_samples/record.py --model "$MODEL" --threads 1 \
      --warmup 3 --iters 10 --metrics-only --out-dir "$OUT/$name/orig" "${args[@]}" > /dev/null
    orig=(--original-metrics "$metrics")
  fi
  reps=(); preds=()
  for ((r = 0; r < ROUNDS; r++)); do
    "${PIN[@]}" "$BUILD/replayer/et_replay" "$trace" --threads 1 --warmup 2 --iters 5 --min-iters-s 1 --quiet \
      "${REPLAY_HEAP[@]}" "${orig[@]}" --report-json "$OUT/$name.replay.json" 2> /dev/null
    reps+=("$(field "$OUT/$name.replay.json" "d['replay']['iter_ms']['median']")")
    "${PIN[@]}" "$BUILD/predictor/et_predict" "$trace" --hw "$HW" --quiet --faults "$FAULTS" "${orig[@]}" \
      --speed "$SPEED" --report-json "$OUT/$name.predict.json"
    preds+=("$(field "$OUT/$name.predict.json" "d['predicted']['iter_ms']")")
  done
  rows+=("$name $sizes $(IFS=,; echo "${reps[*]}") $(IFS=,; echo "${preds[*]}")")
done
python3 - "${rows[@]}" <<'PY'
import math, statistics as st, sys
rows = []
for line in sys.argv[1:]:
    name, sizes, reps, preds = line.split()
    rows.append((name, sizes, st.median(map(float, reps.split(","))), st.median(map(float, preds.split(",")))))
print("# %-4s %-44s %10s %10s %8s" % ("var", "sizes", "replay_ms", "pred_ms", "error"))
worst = 0
for name, sizes, r, p in rows:
    e = (p - r) / r * 100
    worst = max(worst, abs(e))
    print("  %-4s %-44s %10.2f %10.2f %+7.1f%%" % (name, sizes, r, p, e))
by_replay = [n for n, _, r, _ in sorted(rows, key=lambda x: x[2])]
by_pred = [n for n, _, _, p in sorted(rows, key=lambda x: x[3])]
same = by_replay == by_pred
print("# order by replay %s, by prediction %s: %s; worst error %.1f%%"
      % (" < ".join(by_replay), " < ".join(by_pred), "same" if same else "DIFFERENT", worst))
sys.exit(0 if same and worst <= 15 else 1)
PY
