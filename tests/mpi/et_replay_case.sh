#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# et_replay_case.sh CASE ET_REPLAY SOURCE_DIR
# One multi-rank et_replay scenario under real mpirun (ctest label mpi, see
# et_replay_tests.cmake). Every mpirun is wrapped in `timeout` so a hang fails
# this test instead of stalling the suite. Exit 77 = skipped.
#   ddp2      fleet DDP sample, 2 ranks: both collectives replayed
#   dlrm      PARAM 8-rank DLRM set (CUDA trace) on cpu, 8 ranks oversubscribed
#   groups    4 ranks (TRACE a folder), collectives in two sub-groups {0,2} {1,3}
#   world     2 per-rank traces for a 3-rank job: clear error
#   preflight ddp2 with rank 1's first collective removed: pre-flight names it
#   kill      kill -9 one rank mid-replay: whole job ends non-zero within 30 s
#   gloo:SAMPLE:NP  fleet DDP sample on NP ranks with --comm gloo and per-rank --kineto
#             'SAMPLE.rank%d.kineto.json.gz': backend gloo, every op and collective replayed,
#             each rank's original equal to the ProfilerStep of its own profiler file
#   kineto_missing  --kineto pattern without a file for rank 1: exit 2 naming that file
set -u
case_name=$1 et_replay=$2 src=$3
py=$(command -v python3)
tmp=$(mktemp -d /tmp/etb_et_replay_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Short runs: the CI box has 2 cores shared by every rank.
run_flags=(--device cpu --threads 1 --warmup 0 --iters 1)

fail() { echo "FAIL: $*"; exit 1; }

# mpirun NP ARGS... with a hard time limit; output in $tmp/out, status in $rc.
launch() {
  local np=$1 limit=$2
  shift 2
  timeout -k 5 "$limit" mpirun -np "$np" --oversubscribe "$et_replay" "$@" >"$tmp/out" 2>&1
  rc=$?
  tail -n 40 "$tmp/out"
  [ "$rc" -ne 124 ] || fail "mpirun hung (killed after ${limit}s)"
}

# check_report JSON RANKS MIN_COMMS [GROUP_TYPE]: exit 0 already checked.
check_report() {
  "$py" - "$@" <<'EOF' || fail "report check"
import json, sys
path, ranks, min_comms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = json.load(open(path))
cov = d["coverage"]
print("coverage:", {k: cov[k] for k in ("operators", "replayed", "comms", "comms_replayed")})
assert cov["comms_replayed"] >= min_comms, f"only {cov['comms_replayed']} collectives replayed"
assert cov["comms_replayed"] == cov["comms"], "some collectives were not replayed"
assert len(d["ranks"]) == ranks, f"ranks array has {len(d['ranks'])} entries, want {ranks}"
assert sorted(r["rank"] for r in d["ranks"]) == list(range(ranks)), "ranks not 0..N-1"
assert all(r["comm_bytes"] > 0 for r in d["ranks"]), "a rank moved no bytes"
colls = {(c["type"], c["group"]) for c in d["collectives"]}
print("collectives on rank 0:", sorted(colls))
for want in sys.argv[4:]:
    t, g = want.split("@")  # group "*": any group
    assert any(t == ct and g in ("*", cg) for ct, cg in colls), f"no {t} in group {g}"
EOF
}

# check_ranks_original JSON KINETO_PATTERN: ranks[r].original_ms is the ProfilerStep
# duration read here from rank r's own profiler file.
check_ranks_original() {
  "$py" - "$@" <<'EOF' || fail "per-rank original check"
import gzip, json, sys
d = json.load(open(sys.argv[1]))
assert d["run"]["comm_backend"] == "gloo", d["run"]["comm_backend"]
seen = []
for r in d["ranks"]:
    events = json.load(gzip.open(sys.argv[2].replace("%d", str(r["rank"]))))["traceEvents"]
    step = [e for e in events if e.get("name", "").startswith("ProfilerStep#")]
    assert len(step) == 1, f"rank {r['rank']}: {len(step)} ProfilerStep events"
    want = step[0]["dur"] / 1e3
    assert "original_ms" in r, f"rank {r['rank']} has no original_ms"
    assert abs(r["original_ms"] - want) < 1e-3, f"rank {r['rank']}: {r['original_ms']} != {want}"
    seen.append(r["original_ms"])
assert len(set(seen)) == len(seen), f"ranks share one original: {seen}"
cov = d["coverage"]
assert cov["replayed"] == cov["operators"], f"ops {cov['replayed']}/{cov['operators']}"
print("per-rank originals (ms):", seen)
EOF
}

case "$case_name" in
gloo:*)
  IFS=: read -r _ sample np <<<"$case_name"
  dir="$src/fleet_samples/$sample"
  [ -f "$dir/$sample.meta.json" ] || fail "no sample $dir"
  launch "$np" 240 "$dir/$sample.rank%d.et.json.gz" --comm gloo \
    --kineto "$dir/$sample.rank%d.kineto.json.gz" "${run_flags[@]}" --report-json "$tmp/r.json"
  [ "$rc" -eq 0 ] || fail "exit $rc"
  check_report "$tmp/r.json" "$np" 1 all_reduce@0
  check_ranks_original "$tmp/r.json" "$dir/$sample.rank%d.kineto.json.gz"
  ;;
kineto_missing)
  cp "$src/fleet_samples/ddp2/ddp2.rank0.kineto.json.gz" "$tmp/k_0.json.gz"
  launch 2 60 "$src/fleet_samples/ddp2/ddp2.rank%d.et.json.gz" --kineto "$tmp/k_%d.json.gz" \
    "${run_flags[@]}"
  [ "$rc" -eq 2 ] || fail "exit $rc, want 2"
  grep -q "k_1.json.gz.*no file for rank 1" "$tmp/out" || fail "no message naming k_1.json.gz"
  ;;
ddp2)
  launch 2 120 "$src/fleet_samples/ddp2/ddp2.rank%d.et.json.gz" "${run_flags[@]}" \
    --report-json "$tmp/r.json"
  [ "$rc" -eq 0 ] || fail "exit $rc"
  check_report "$tmp/r.json" 2 2 all_reduce@0
  ;;
dlrm)
  tar_gz="$src/../shared/traces/param/dlrm_pytorch_et.tar.gz"
  if [ ! -f "$tar_gz" ]; then echo "SKIP: $tar_gz absent (shared traces not mounted)"; exit 77; fi
  tar -xzf "$tar_gz" -C "$tmp" || fail "cannot extract $tar_gz"
  first=$(find "$tmp" -name dlrm_eg_0.json | head -n1)
  [ -n "$first" ] || fail "dlrm_eg_0.json not in $tar_gz"
  launch 8 240 "$(dirname "$first")/dlrm_eg_%d.json" "${run_flags[@]}" --report-json "$tmp/r.json"
  [ "$rc" -eq 0 ] || fail "exit $rc"
  check_report "$tmp/r.json" 8 2 all_reduce@* all_to_allv@*
  ;;
groups)
  # TRACE as a folder of per-rank files (groups.rank<R>.et.json).
  "$py" "$src/tests/mpi/make_comm_et.py" groups "$tmp/traces" || fail "trace generator"
  launch 4 120 "$tmp/traces" --device cpu --threads 1 --warmup 1 --iters 1 \
    --report-json "$tmp/r.json"
  [ "$rc" -eq 0 ] || fail "exit $rc"
  # Rank 0 sits in the even group "1": its sub-group calls are reported there.
  check_report "$tmp/r.json" 4 4 all_reduce@0 all_reduce@1 all_to_all@1
  ;;
world)
  launch 3 60 "$src/fleet_samples/ddp2/ddp2.rank%d.et.json.gz" "${run_flags[@]}"
  [ "$rc" -ne 0 ] || fail "a 3-rank job on a 2-rank trace set succeeded"
  grep -q "2 per-rank traces found but the job has 3 ranks" "$tmp/out" || fail "no clear message"
  ;;
preflight)
  for r in 0 1; do cp "$src/fleet_samples/ddp2/ddp2.rank$r.et.json.gz" "$tmp/"; done
  # Text rewrite (the 1.13 JSON has unescaped quotes json.load rejects): drop
  # rank 1's first c10d::allreduce_ node, i.e. its 5 lines "{" .. "},".
  "$py" - "$tmp/ddp2.rank1.et.json.gz" <<'EOF' || fail "rewrite"
import gzip, sys
lines = gzip.open(sys.argv[1], "rt").read().split("\n")
i = next(k for k, l in enumerate(lines) if '"name": "c10d::allreduce_"' in l)
assert lines[i - 1].strip() == "{" and lines[i + 3].strip() == "},", lines[i - 1 : i + 4]
del lines[i - 1 : i + 4]
gzip.open(sys.argv[1], "wt").write("\n".join(lines))
EOF
  start=$(date +%s)
  launch 2 60 "$tmp/ddp2.rank%d.et.json.gz" "${run_flags[@]}"
  echo "exit $rc after $(($(date +%s) - start))s"
  [ "$rc" -ne 0 ] || fail "mismatched collective sequences replayed without error"
  grep -Eq 'pre-flight: process group "0" collective #0 differs: rank 0 has node [0-9]+ all_reduce.*rank 1 has node [0-9]+ all_reduce' \
    "$tmp/out" || fail "no pre-flight message naming group, index, ranks and op"
  ;;
kill)
  timeout -k 5 90 mpirun -np 2 --oversubscribe "$et_replay" \
    "$src/fleet_samples/ddp2/ddp2.rank%d.et.json.gz" --device cpu --threads 1 --warmup 0 \
    --iters 100000 >"$tmp/out" 2>&1 &
  job=$!
  # Wait until both ranks replay, then kill rank 1 (a child of mpirun).
  for _ in $(seq 120); do
    [ "$(grep -c 'replaying' "$tmp/out")" -ge 2 ] && break
    sleep 0.5
  done
  sleep 2
  mpirun_pid=$(pgrep -P "$job" -x mpirun || echo "$job")
  victim=""
  for p in $(pgrep -P "$mpirun_pid"); do
    grep -qz '^OMPI_COMM_WORLD_RANK=1$' "/proc/$p/environ" 2>/dev/null && victim=$p
  done
  [ -n "$victim" ] || { kill -9 "$job"; cat "$tmp/out"; fail "rank 1 process not found"; }
  echo "killing rank 1 (pid $victim)"
  start=$(date +%s)
  kill -9 "$victim"
  wait "$job"
  rc=$?
  took=$(($(date +%s) - start))
  tail -n 20 "$tmp/out"
  echo "exit $rc, ${took}s after the kill"
  [ "$rc" -ne 0 ] || fail "job exited 0 after a rank was killed"
  [ "$took" -le 30 ] || fail "job took ${took}s to end"
  grep -Eiq 'rank 1.*(signal 9|killed)|signal 9' "$tmp/out" || fail "no message about the killed rank"
  ;;
*)
  fail "unknown case $case_name"
  ;;
esac
echo PASS
