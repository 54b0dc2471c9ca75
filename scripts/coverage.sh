#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Coverage on CPU of every public PyTorch ET (../shared/traces, archives unpacked into a temp
# dir) and every fleet sample (zoo/ and gpu_h200/ too): one et_replay --device cpu --iters 1 each, one row
# each: replayed/operators, percent, fp32-fallback and no-op counts, and the skip reasons.
#   scripts/coverage.sh [TRACE...]     default: all of the above
# Environment: ETB_REPLAY (default build/replayer/et_replay), ETB_TRACES (default ../shared/traces)
set -euo pipefail
cd "$(dirname "$0")/.."
REPLAY="${ETB_REPLAY:-build/replayer/et_replay}"
TRACES="${ETB_TRACES:-../shared/traces}"
[ -x "$REPLAY" ] || { echo "coverage.sh: no replay binary at '$REPLAY' (set ETB_REPLAY)" >&2; exit 2; }
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
FILES=("$@")
if [ ${#FILES[@]} -eq 0 ]; then
  if [ -d "$TRACES" ]; then
    for a in param/dlrm_pytorch_et.tar.gz param/resnet_1gpu_et.json.tar.gz chakra/1.0.2-chakra.0.0.4.tgz; do
      [ -f "$TRACES/$a" ] && tar xzf "$TRACES/$a" -C "$WORK" 2>/dev/null
    done
    while IFS= read -r f; do FILES+=("$f"); done < <(
      { find "$TRACES" -name '*.json.gz' ! -name '*kineto*' ! -name '*_trace.json.gz'
        find "$TRACES" -name 'pt2_et.json'; find "$WORK" -name '*.json' ! -name '._*'; } | sort)
  fi
  # The committed samples one level down too: zoo/ and the GPU recordings (gpu_h200/, replayed
  # on the CPU), less the GPU-bound sizes: minutes of GEMMs on a CPU each, and the same
  # operators as their default sizes (pass them as TRACE to include them).
  while IFS= read -r f; do FILES+=("$f"); done < <(
    ls fleet_samples/*/*.et.json.gz fleet_samples/{zoo,gpu_h200}/*/*.et.json.gz 2>/dev/null | grep -v '_big\.et\.json\.gz$')
fi
printf '%-58s %12s %7s %5s %5s  %s\n' trace replayed % fp32 noop "skipped: reason (count)"
for f in "${FILES[@]}"; do
  name="${f#"$WORK"/}"; name="${name#"$TRACES"/}"
  if ! "$REPLAY" "$f" --device cpu --warmup 0 --iters 1 --quiet --report-json "$WORK/r.json" \
      --log-level error >"$WORK/log" 2>&1; then
    [ -f "$WORK/r.json" ] || { printf '%-58s error: %s\n' "$name" "$(tail -n1 "$WORK/log")"; continue; }
  fi
  python3 - "$WORK/r.json" "$name" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["coverage"]
ops, rep = c["operators"], c["replayed"]
why = "; ".join(f"{r[:70]} ({n})" for r, n in sorted(c["skipped_by_reason"].items(), key=lambda x: -x[1]))
print(f"{sys.argv[2]:<58} {rep:>5}/{ops:<6} {100.0 * rep / max(ops, 1):6.2f}% "
      f"{c.get('fallback_fp32', 0):>5} {c.get('noop', 0):>5}  {why}")
PY
  rm -f "$WORK/r.json"
done
