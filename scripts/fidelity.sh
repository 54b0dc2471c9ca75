#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fidelity check (issues 3 and 9): for each single-rank fleet sample, measure the original
# training step on this machine now (fleet_samples/record.py --metrics-only: plain steps, no
# observer or profiler, --threads 1; the committed traces are not touched) and replay the
# committed trace right after it with et_replay --threads 1 --kineto <profiler file>
# --host-time emulate, which times ops-only iterations and iterations with the original's host
# time between ops, alternately (with --index-dist as the sample's meta.json drew its indices,
# e.g. dlrm's Zipf). Rounds alternate original and replay; the table compares paired rounds:
#   name | original | ops only | error % | with host | error % | host share % | note
# plus geometric means of |error|. Exits 1 when a target of issue 9 is missed (each of the
# compute-bound five within 10% and their geometric mean within 5% ops-only; every sample
# within 10% with host time), 2 on missing results.
#
#   scripts/fidelity.sh [SAMPLE...]   default: every single-rank sample in fleet_samples/
# A SAMPLE may name a size variant, MODEL@KEY=VALUE,KEY=VALUE (record.py --size overrides, e.g.
# gpt@batch=16,d_model=192): a model at sizes no sample was recorded at, recorded fresh every
# round (trace, profiler file and original in one process), so nothing committed is reused.
# Environment:
#   ETB_REPLAY      et_replay binary (default: build/replayer/et_replay)
#   ETB_PYTHON      python with torch (default: /usr/bin/python3, Debian's torch 1.13)
#   FIDELITY_TRACE  committed (default: fleet_samples/<name>/<name>.et.json.gz) or fresh
#                   (record a new trace each round and replay that)
#   FIDELITY_ROUNDS rounds of (original, replay) (default 3)
#   FIDELITY_ITERS  measured iterations per side and round (default 20)
#   FIDELITY_KEEP   set to keep the work directory (printed at the end)
#   FIDELITY_HEAP   et_replay --heap: match (default: blocks of 64 KiB and up from fresh pages, a
#                   share handed back so that the replay's page faults per iteration come near the
#                   original's) or glibc (the heap as malloc leaves it)
#   FIDELITY_AUTOGRAD et_replay --autograd: off (default) or record (the forward's ops build
#                   autograd's graph over the parameters, as the original's did)
#   FIDELITY_NICE   niceness of both sides (default -15 as root, else 0): on a machine shared
#                   with compilers a higher priority means fewer preemption stalls in either.
#                   Where the kernel groups processes by session (autogroup: most distributions,
#                   VMs included), a nice value only orders processes within one session and a
#                   build in another terminal still takes half the core; as root the script then
#                   also sets its session's autogroup niceness, and puts the old one back at exit.
# Pinning: `taskset -c N scripts/fidelity.sh` pins both sides (every process it starts inherits
# the CPU set; the replay runs --threads 1, the original torch.set_num_threads(1)).
#   FIDELITY_DDP    1: also run scripts/fidelity_ddp.sh (DDP over gloo, mpirun) after the table;
#                   0: never (default: when no SAMPLE is named)
set -euo pipefail
# One thread means one thread: torch.set_num_threads / at::set_num_threads leave a pthread
# OpenBLAS on every core (et_replay --threads also limits it, python's original does not).
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
cd "$(dirname "$0")/.."
REPLAY="${ETB_REPLAY:-build/replayer/et_replay}"
PY="${ETB_PYTHON:-/usr/bin/python3}"
TRACE_KIND="${FIDELITY_TRACE:-committed}"
ROUNDS="${FIDELITY_ROUNDS:-3}"
ITERS="${FIDELITY_ITERS:-20}"
HEAP="${FIDELITY_HEAP:-match}"
AUTOGRAD="${FIDELITY_AUTOGRAD:-off}"
NICE="${FIDELITY_NICE:-$([ "$(id -u)" = 0 ] && echo -15 || echo 0)}"
SAMPLES=("$@")
if [ ${#SAMPLES[@]} -eq 0 ]; then
  for d in fleet_samples/*/; do
    n="$(basename "$d")"
    [ -f "$d/$n.et.json.gz" ] && SAMPLES+=("$n")  # single-rank: ddp samples have per-rank files
  done
fi

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
for name in "${SAMPLES[@]}"; do
  model="${name%%@*}"
  if [ ! -f "fleet_samples/$model/$model.et.json.gz" ]; then
    echo "fidelity.sh: unknown single-rank sample '$model' (no fleet_samples/$model/$model.et.json.gz)" >&2
    exit 2
  fi
done

# record.py arguments for a sample: its model, and for a variant its name and sizes.
recordArgs() {
  local name="$1" model="${1%%@*}" kv
  echo "--model $model"
  if [ "$name" != "$model" ]; then
    echo "--name $name"
    for kv in $(tr ',' ' ' <<<"${name#*@}"); do echo "--size $kv"; done
  fi
}

# shellcheck source=scripts/fidelity_common.sh
. scripts/fidelity_common.sh
etbStartMeasurement fidelity "$NICE"

for ((r = 1; r <= ROUNDS; r++)); do
  for name in "${SAMPLES[@]}"; do
    RW="$WORK/r$r"
    mkdir -p "$RW"
    trace="fleet_samples/$name/$name.et.json.gz"
    kineto="fleet_samples/$name/$name.kineto.json.gz"
    meta="fleet_samples/$name/$name.meta.json"
    mapfile -t rec < <(recordArgs "$name" | tr ' ' '\n')
    echo "== round $r/$ROUNDS $name: measuring the original (threads 1)" >&2
    if [ "$TRACE_KIND" = fresh ] || [ "$name" != "${name%%@*}" ]; then
      nice -n "$NICE" "$PY" fleet_samples/record.py "${rec[@]}" --out-dir "$RW/$name" \
        --threads 1 --warmup 3 --iters "$ITERS" >&2
      trace="$RW/$name/$name.et.json.gz"
      kineto="$RW/$name/$name.kineto.json.gz"
      meta="$RW/$name/$name.meta.json"
    else
      nice -n "$NICE" "$PY" fleet_samples/record.py "${rec[@]}" --out-dir "$RW/$name" \
        --threads 1 --warmup 3 --iters "$ITERS" --metrics-only >&2
    fi
    # Index tensors as the original drew them where the sample says (dlrm: Zipf); the replay's
    # default is uniform, which gathers more distinct embedding rows.
    dist="$("$PY" -c 'import json,sys; a=json.load(open(sys.argv[1])).get("shapes",{}).get("zipf_alpha"); print("zipf:%s" % a if a else "uniform")' "$meta")"
    echo "== round $r/$ROUNDS $name: replaying $trace (--index-dist $dist)" >&2
    # a failed replay is reported in the table (no report file), not fatal for the others
    # The original's page faults from its fresh measurement (the committed sidecars predate them);
    # the recording's meta.json for its instrumentation cost where record.py measured it (the
    # table compares with the original measured now, not with the meta's).
    nice -n "$NICE" "$REPLAY" "$trace" --kineto "$kineto" --host-time emulate --device cpu --threads 1 \
      --index-dist "$dist" --heap "$HEAP" --autograd "$AUTOGRAD" --original-metrics "$RW/$name/$name.metrics.json" \
      --original-meta "$meta" \
      --warmup 3 --iters "$ITERS" --quiet --report-json "$RW/$name.json" \
      >"$RW/$name.replay.log" 2>&1 \
      || { echo "fidelity.sh: et_replay failed on $trace (exit $?); last lines:" >&2;
           tail -n 15 "$RW/$name.replay.log" >&2; }
  done
done
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg) on $(getconf _NPROCESSORS_ONLN) cores" >&2

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
