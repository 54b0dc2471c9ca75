#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fidelity check (issue 3): for each single-rank fleet sample, measure the original training
# step on this machine now (fleet_samples/record.py, --threads 1, into a temp dir; the committed
# traces are not touched) and replay the trace right after it in the same run with et_replay
# (--threads 1). Prints name | original ms | replay ms | error %, the geometric mean of the
# errors, and exits non-zero if a compute-bound sample (meta.json "compute_bound") is off by
# more than 10%.
#
#   scripts/fidelity.sh [SAMPLE...]        default: mlp resnet18 transformer dlrm
# Environment:
#   ETB_REPLAY      et_replay binary (default: build/replayer/et_replay)
#   ETB_PYTHON      python with torch (default: /usr/bin/python3, Debian's torch 1.13)
#   FIDELITY_TRACE  committed (default: fleet_samples/<name>/<name>.et.json.gz) or fresh
#                   (replay the trace recorded in this run)
#   FIDELITY_KEEP   set to keep the work directory (printed at the end)
#   FIDELITY_DDP    1: also run scripts/fidelity_ddp.sh (DDP over gloo, mpirun) after the table;
#                   0: never (default: when no SAMPLE is named)
#   FIDELITY_ROUNDS rounds of (original, replay) measured alternately (default 3); the table
#                   compares the medians over rounds, so a noisy spell on a shared machine
#                   hits both sides instead of one
set -euo pipefail
# One thread means one thread: torch.set_num_threads / at::set_num_threads leave a pthread
# OpenBLAS on every core (et_replay --threads also limits it, python's original does not).
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
cd "$(dirname "$0")/.."
REPLAY="${ETB_REPLAY:-build/replayer/et_replay}"
PY="${ETB_PYTHON:-/usr/bin/python3}"
TRACE_KIND="${FIDELITY_TRACE:-committed}"
SAMPLES=("$@")
[ ${#SAMPLES[@]} -gt 0 ] || SAMPLES=(mlp resnet18 transformer dlrm)

if [ ! -x "$REPLAY" ]; then
  echo "fidelity.sh: replay binary '$REPLAY' not found or not executable." >&2
  echo "  Build it (cmake --build <builddir> --target et_replay) and/or set ETB_REPLAY=/path/to/et_replay." >&2
  exit 2
fi
if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "fidelity.sh: '$PY' cannot import torch; set ETB_PYTHON to a python with torch (Debian: /usr/bin/python3)." >&2
  exit 2
fi
case "$TRACE_KIND" in committed|fresh) ;; *)
  echo "fidelity.sh: FIDELITY_TRACE must be 'committed' or 'fresh', got '$TRACE_KIND'" >&2; exit 2;;
esac

WORK="$(mktemp -d -t etb-fidelity.XXXXXX)"
if [ -z "${FIDELITY_KEEP:-}" ]; then trap 'rm -rf "$WORK"' EXIT; fi

ROUNDS="${FIDELITY_ROUNDS:-3}"
for name in "${SAMPLES[@]}"; do
  if [ ! -f "fleet_samples/$name/$name.meta.json" ]; then
    echo "fidelity.sh: unknown sample '$name' (no fleet_samples/$name/$name.meta.json)" >&2
    exit 2
  fi
done
for ((r = 1; r <= ROUNDS; r++)); do
  for name in "${SAMPLES[@]}"; do
    RW="$WORK/r$r"
    mkdir -p "$RW"
    echo "== round $r/$ROUNDS $name: measuring the original (threads 1)" >&2
    "$PY" fleet_samples/record.py --model "$name" --out-dir "$RW/$name" --threads 1 \
      --warmup 3 --iters 10 >&2
    trace="fleet_samples/$name/$name.et.json.gz"
    [ "$TRACE_KIND" = fresh ] && trace="$RW/$name/$name.et.json.gz"
    echo "== round $r/$ROUNDS $name: replaying $trace" >&2
    # a failed replay is reported in the table (no report file), not fatal for the others
    "$REPLAY" "$trace" --device cpu --threads 1 --warmup 3 --iters 10 \
      --report-json "$RW/$name.json" >"$RW/$name.replay.log" 2>&1 \
      || { echo "fidelity.sh: et_replay failed on $trace (exit $?); last lines:" >&2;
           tail -n 15 "$RW/$name.replay.log" >&2; }
  done
done

status=0
"$PY" scripts/fidelity_table.py "$WORK" "${SAMPLES[@]}" || status=$?

# ---- DDP over gloo at 2 and 4 ranks (issue 9) ----------------------------------------------
# Multi-rank samples have their own script (mpirun, --comm gloo, own table, 15% limit). It runs
# after the single-rank table when no sample was named, or with FIDELITY_DDP=1; FIDELITY_DDP=0
# skips it. FIDELITY_DDP_SAMPLES (space-separated) picks the DDP samples.
if [ "${FIDELITY_DDP:-}" = 1 ] || { [ $# -eq 0 ] && [ "${FIDELITY_DDP:-}" != 0 ]; }; then
  ddp_status=0
  # shellcheck disable=SC2086  # a list of sample names
  scripts/fidelity_ddp.sh ${FIDELITY_DDP_SAMPLES:-} || ddp_status=$?
  [ "$status" -ne 0 ] || status=$ddp_status
fi
[ -n "${FIDELITY_KEEP:-}" ] && echo "work directory kept: $WORK" >&2
exit $status
