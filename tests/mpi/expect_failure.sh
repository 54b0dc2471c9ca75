#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# expect_failure.sh MAX_SECONDS REGEX COMMAND...
# Passes when COMMAND exits non-zero within MAX_SECONDS and its output
# matches REGEX (skipped when empty). `timeout 60` turns a hang into a test
# failure instead of a stuck suite.
set -u
max=$1 regex=$2
shift 2
start=$(date +%s.%N)
out=$(timeout -k 5 60 "$@" 2>&1)
rc=$?
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
printf '%s\n' "$out" | tail -n 30
echo "exit $rc after ${elapsed}s"
if [ "$rc" -eq 0 ]; then echo "FAIL: the job succeeded"; exit 1; fi
# 137 is also how mpirun reports a rank killed by SIGKILL, so a hang is
# told apart by the time it took, not by the code alone.
if [ "$rc" -eq 124 ] || [ "$(echo "$elapsed >= 60" | bc)" -eq 1 ]; then
  echo "FAIL: the job hung"; exit 1
fi
if [ "$(echo "$elapsed > $max" | bc)" -eq 1 ]; then echo "FAIL: took more than ${max}s"; exit 1; fi
if [ -n "$regex" ] && ! printf '%s\n' "$out" | grep -Eq "$regex"; then
  echo "FAIL: no message matching /$regex/"; exit 1
fi
echo "PASS"
