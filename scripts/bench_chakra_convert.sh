#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Usage: scripts/bench_chakra_convert.sh OLD_ET_CONVERT NEW_ET_CONVERT INPUT [ROUNDS]
# Times two et_convert builds on one input (-> .et), alternating sides so that
# background load hits both alike; prints each run and the median ratio
# new/old of wall time and peak RSS. Also prints what a simulator sees in
# each output (scripts/chakra_stats.py).
set -euo pipefail
old=$1 new=$2 in=$3 rounds=${4:-5}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for ((i = 0; i < rounds; i++)); do
  for side in old new; do
    bin=${!side}
    /usr/bin/time -f "$side %e %M" -a -o "$tmp/times" "$bin" "$in" "$tmp/$side.et" > /dev/null 2>&1
  done
done
cat "$tmp/times"
python3 - "$tmp/times" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = lambda side, k: statistics.median(float(r[k]) for r in rows if r[0] == side)
print("median wall s: old %.3f new %.3f ratio new/old %.2f" % (med("old", 1), med("new", 1), med("new", 1) / med("old", 1)))
print("median peak RSS KB: old %d new %d ratio %.2f" % (med("old", 2), med("new", 2), med("new", 2) / med("old", 2)))
PY
python3 "$(dirname "$0")/chakra_stats.py" "$tmp/old.et" "$tmp/new.et"
