#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# heap_repeatable.sh ET_REPLAY SOURCE_DIR WORK_DIR
# The same replay faults the same number of pages per iteration in every run:
# each fleet sample named below is replayed three times in fresh processes and
# the reports' minor_faults_per_iter must agree within 2% (and 5 faults). The
# count is a function of the heap calls alone, so runs of one replay differ
# only where the heap they start from does.
# Planted fault it catches: the trace read on et_replay's main thread again
# (replay_main.cc's readOffMainHeap): its reader's workers then lay out the
# main heap by their timing, and mlp's three runs counted e.g. 154, 705 and
# 1,510 faults per iteration.
set -euo pipefail
replay=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
status=0
for s in mlp gpt; do
  counts=()
  for r in 1 2 3; do
    "$replay" "$src/fleet_samples/$s/$s.et.json.gz" --threads 1 --warmup 2 --iters 3 --quiet \
      --log-level warn --report-json "$work/$s.$r.json"
    counts+=("$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['system']['minor_faults_per_iter'])" \
      "$work/$s.$r.json")")
  done
  if python3 -c "
import sys
c = [float(x) for x in sys.argv[1:]]
sys.exit(0 if max(c) - min(c) <= max(5, 0.02 * min(c)) else 1)" "${counts[@]}"; then
    echo "ok   $s: ${counts[*]} faults per iteration"
  else
    echo "FAIL $s: ${counts[*]} faults per iteration in three runs of one replay"; status=1
  fi
done
exit $status
