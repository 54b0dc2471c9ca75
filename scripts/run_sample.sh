#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job on a bundled sample: installs what is missing, builds, then
# replays a recorded training iteration and reports it next to the original.
#   scripts/run_sample.sh [SAMPLE] [et_replay flags...]   (default: mlp)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
SAMPLE="${1:-mlp}"; shift || true
DIR="fleet_samples/$SAMPLE"
NAME="$(basename "$SAMPLE")"  # gpu_h200/mlp: the files are mlp.*
TRACE="$(ls "$DIR"/*.et.json.gz 2>/dev/null | head -n1 || true)"
[ -n "$TRACE" ] || { echo "no trace in $DIR (samples: $(ls fleet_samples | tr '\n' ' '))" >&2; exit 2; }
KINETO=()
K="$(ls "$DIR"/*.kineto.json.gz 2>/dev/null | head -n1 || true)"
[ -n "$K" ] && KINETO=(--kineto "$K")
# The original to compare with: the sample's unprofiled steps, replayed with the threads they
# ran with (the profiled step in the Kineto file carries the profiler's own cost).
ORIGINAL=()
M="$DIR/$NAME.meta.json"
[ -f "$M" ] && ORIGINAL=(--original-meta "$M")
mkdir -p out
echo "== et_inspect $TRACE"
build/core/et_inspect "$TRACE" "${KINETO[@]}"
echo "== et_replay $TRACE"
build/replayer/et_replay "$TRACE" "${KINETO[@]}" "${ORIGINAL[@]}" --device cpu --warmup 3 --iters 10 \
  --report-json "out/$NAME.report.json" --report-html "out/$NAME.report.html" \
  --chrome-trace "out/$NAME.trace.json" "$@"
echo "== reports: out/$NAME.report.{json,html}, timeline: out/$NAME.trace.json (open in Perfetto)"
