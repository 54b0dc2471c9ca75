#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fidelity of multi-rank replay (issue 9): DDP over gloo. For each DDP fleet sample, alternately
# (1) measure the original now (fleet_samples/record.py: N gloo ranks, --threads 1, into a temp
# dir; the committed traces are not touched) and (2) replay the committed per-rank traces under
# mpirun with `et_replay --comm gloo --threads 1 --kineto <each rank's profiler file>
# --host-time emulate` (ops-only and with-host iterations alternate), FIDELITY_ROUNDS times.
# Both sides take the slowest rank's median step (DDP ranks wait for each other). Prints name |
# ranks | original | ops only | with host (errors paired per round) and exits 1 if a sample is
# more than 15% off with host time (2 on missing results). FIDELITY_HOST=0 replays ops only.
#
#   scripts/fidelity_ddp.sh [SAMPLE...]   default: ddp_mlp2 ddp_mlp4 ddp_transformer2 ddp_transformer4
# Environment: ETB_REPLAY, ETB_PYTHON, FIDELITY_ROUNDS (default 3), FIDELITY_KEEP as fidelity.sh;
#   FIDELITY_COMM  backend for the replay (default gloo, the recording's)
#   FIDELITY_NICE  niceness of both sides (default -15 as root, else 0; scripts/fidelity_common.sh)
#   FIDELITY_AUTOGRAD et_replay --autograd (default off; record: the forward builds autograd's graph)
#   FIDELITY_HEAP  et_replay --heap (default match: page faults near the fresh original's, per rank)
set -euo pipefail
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
cd "$(dirname "$0")/.."
REPLAY="${ETB_REPLAY:-build/replayer/et_replay}"
PY="${ETB_PYTHON:-/usr/bin/python3}"
ROUNDS="${FIDELITY_ROUNDS:-3}"
COMM="${FIDELITY_COMM:-gloo}"
NICE="${FIDELITY_NICE:-$([ "$(id -u)" = 0 ] && echo -15 || echo 0)}"
SAMPLES=("$@")
[ ${#SAMPLES[@]} -gt 0 ] || SAMPLES=(ddp_mlp2 ddp_mlp4 ddp_transformer2 ddp_transformer4)
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1

if [ ! -x "$REPLAY" ]; then
  echo "fidelity_ddp.sh: replay binary '$REPLAY' not found; build et_replay or set ETB_REPLAY." >&2
  exit 2
fi
command -v mpirun >/dev/null || { echo "fidelity_ddp.sh: mpirun not found (openmpi-bin)" >&2; exit 2; }
for name in "${SAMPLES[@]}"; do
  if [ ! -f "fleet_samples/$name/$name.meta.json" ]; then
    echo "fidelity_ddp.sh: unknown sample '$name' (no fleet_samples/$name/$name.meta.json)" >&2
    exit 2
  fi
done

# shellcheck source=scripts/fidelity_common.sh
. scripts/fidelity_common.sh
etbStartMeasurement fidelity-ddp "$NICE"

ranksOf() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["world_size"])' "$1"; }

for ((r = 1; r <= ROUNDS; r++)); do
  for name in "${SAMPLES[@]}"; do
    RW="$WORK/r$r"
    mkdir -p "$RW"
    np=$(ranksOf "fleet_samples/$name/$name.meta.json")
    echo "== round $r/$ROUNDS $name: measuring the original ($np gloo ranks, threads 1)" >&2
    nice -n "$NICE" "$PY" fleet_samples/record.py --model "$name" --out-dir "$RW/$name" --threads 1 \
      --warmup 3 --iters 10 >&2
    echo "== round $r/$ROUNDS $name: replaying on $np ranks, --comm $COMM" >&2
    # unbound ranks, like the original's processes; a failure shows in the table
    host=(--kineto "fleet_samples/$name/$name.rank%d.kineto.json.gz" --host-time emulate)
    [ "${FIDELITY_HOST:-1}" = 0 ] && host=()
    nice -n "$NICE" mpirun -np "$np" --oversubscribe --bind-to none "$REPLAY" \
      "fleet_samples/$name/$name.rank%d.et.json.gz" --comm "$COMM" --device cpu --threads 1 \
      "${host[@]}" --heap "${FIDELITY_HEAP:-match}" --autograd "${FIDELITY_AUTOGRAD:-off}" \
      --original-metrics "$RW/$name/$name.rank%d.metrics.json" \
      --warmup 3 --iters 10 --report-json "$RW/$name.json" >"$RW/$name.replay.log" 2>&1 \
      || { echo "fidelity_ddp.sh: et_replay failed on $name (exit $?); last lines:" >&2;
           tail -n 15 "$RW/$name.replay.log" >&2; }
  done
done

status=0
"$PY" scripts/fidelity_ddp_table.py "$WORK" "${SAMPLES[@]}" || status=$?
[ -n "${FIDELITY_KEEP:-}" ] && echo "work directory kept: $WORK" >&2
exit $status
