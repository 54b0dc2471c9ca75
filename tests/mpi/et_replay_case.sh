#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# et_replay_case.sh CASE ET_REPLAY SOURCE_DIR
# One multi-rank et_replay scenario under real mpirun (ctest label mpi, see
# et_replay_tests.cmake). Every mpirun is wrapped in `timeout` so a hang fails
# this test instead of stalling the suite. Exit 77 = skipped.
#   ddp2      fleet DDP sample, 2 ranks: both collectives replayed; with --speed-probe
#             one host probe per measured iteration in rank 0's report
#   dlrm      PARAM 8-rank DLRM set (CUDA trace) on cpu, 8 ranks oversubscribed
#   groups    4 ranks (TRACE a folder), collectives in two sub-groups {0,2} {1,3}
#   world     2 per-rank traces for a 3-rank job: clear error
#   preflight ddp2 with rank 1's first collective removed: pre-flight names it
#   throw     rank 1 hits an input error mid-replay while rank 0 waits for it:
#             etbench's abort path ends the job, naming rank, host and node
#   stall     rank 1 never arrives at rank 0's all_reduce: the --comm-timeout
#             watchdog ends the job, naming the node, inside its time bound
# (A rank killed by a signal is left out on purpose: mpirun ends that job on
# its own, so such a test would pass whatever etbench does.)
#   gloo:SAMPLE:NP  fleet DDP sample on NP ranks with --comm gloo and per-rank --kineto
#             'SAMPLE.rank%d.kineto.json.gz': backend gloo, every op and collective replayed,
#             each rank's original equal to the ProfilerStep of its own profiler file
#   host:SAMPLE:NP  the same with --host-time emulate: every rank emulates host time from its own
#             profiler file (nearly every op timed, so the file names the trace's own ops) and
#             reports its with-host median; each rank's original CPU utilisation and peak RSS
#             equal its own metrics sidecar (SAMPLE.rank<R>.metrics.json, read here)
#   kineto_missing  --kineto pattern without a file for rank 1: exit 2 naming that file
#   heap      ddp2 with --heap match, rank 0 searching and rank 1 not (no original figure): the
#             job ends (the ranks stay in step), rank 0's search reported
#   ring      ASTRA-sim's 8-rank custom ring all-reduce (Chakra send/recv nodes): no
#             deadlock, every p2p node replayed, each rank's bytes as its file says
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
# With $expect set (make_comm_et.py --expect), every rank's comm_bytes must be
# exactly the bytes the generator wrote for it.
check_report() {
  EXPECT=${expect:-} ITERS=${iters:-1} "$py" - "$@" <<'EOF' || fail "report check"
import json, os, sys
path, ranks, min_comms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = json.load(open(path))
# One measured sample per requested --iters (ITERS), not what the code says it ran.
want_iters = int(os.environ["ITERS"])
samples = d["replay"]["iter_ms"]["samples"]
assert len(samples) == want_iters, f"{len(samples)} iteration samples for --iters {want_iters}"
if os.environ["EXPECT"]:
    want = json.load(open(os.environ["EXPECT"]))["comm_bytes"]
    got = [r["comm_bytes"] for r in sorted(d["ranks"], key=lambda r: r["rank"])]
    print("comm bytes per rank:", got, "expected:", want)
    assert got == want, f"comm_bytes {got} != generator's {want}"
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
host:*)
  IFS=: read -r _ sample np <<<"$case_name"
  dir="$src/fleet_samples/$sample"
  launch "$np" 240 "$dir/$sample.rank%d.et.json.gz" --comm gloo --host-time emulate \
    --kineto "$dir/$sample.rank%d.kineto.json.gz" --device cpu --threads 1 --warmup 2 --iters 2 \
    --report-json "$tmp/r.json"
  [ "$rc" -eq 0 ] || fail "exit $rc"
  "$py" - "$tmp/r.json" "$dir/$sample.rank%d.metrics.json" <<'EOF' || fail "host time / per-rank metrics check"
import json, sys
d = json.load(open(sys.argv[1]))
h = d["host_time"]
ops = d["coverage"]["operators"]
print("host time:", {k: h[k] for k in ("untimed_ops", "gaps", "emulated_ms", "share_pct")})
# a profiler file whose ids name other ops leaves most ops untimed
assert h["untimed_ops"] <= 0.02 * ops, f"{h['untimed_ops']} of {ops} ops have no profiler time"
for r in d["ranks"]:
    assert r.get("with_host_ms", 0) > 0, f"rank {r['rank']}: no with-host median"
    side = json.load(open(sys.argv[2].replace("%d", str(r["rank"]))))
    got = r.get("original_system")
    assert got, f"rank {r['rank']}: no original_system (its sidecar was not read)"
    assert abs(got["cpu_util_pct"] - side["cpu_util_pct"]) < 1e-6, (r["rank"], got, side["cpu_util_pct"])
    assert got["peak_rss_bytes"] == side["peak_rss_bytes"], (r["rank"], got, side["peak_rss_bytes"])
print("per-rank originals:", [r["original_system"] for r in d["ranks"]])
EOF
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
  "$py" -c "import json, sys; sys.exit('speed_probe_us' in json.load(open(sys.argv[1]))['replay'])" "$tmp/r.json" \
    || fail "speed_probe_us reported without --speed-probe"
  # --speed-probe: the ranks probe one at a time around each iteration and
  # agree on the slowest; rank 0 reports one probe per measured iteration.
  launch 2 120 "$src/fleet_samples/ddp2/ddp2.rank%d.et.json.gz" --device cpu --threads 1 --warmup 0 \
    --iters 2 --speed-probe --report-json "$tmp/p.json"
  [ "$rc" -eq 0 ] || fail "--speed-probe: exit $rc"
  iters=2 check_report "$tmp/p.json" 2 2 all_reduce@0
  "$py" - "$tmp/p.json" <<'EOF' || fail "--speed-probe report"
import json, sys
r = json.load(open(sys.argv[1]))["replay"]
p = r["speed_probe_us"]
print("speed probes:", p)
assert len(p) == len(r["iter_ms"]["samples"]) == 2, p
# Four 64x64 mm's take 2 MFLOP: microseconds to a few milliseconds on any CPU.
assert all(1 < x < 1e4 for x in p), p
EOF
  ;;
heap)
  # Rank 0's original faulted far more than any replay will (it counts every step of the match),
  # rank 1's figure is unknown (it runs the same iterations plainly): the ranks take different paths
  # through --heap match and must still meet at every collective.
  d="$src/fleet_samples/ddp2"
  "$py" - "$d/ddp2.rank0.metrics.json" "$tmp/m.rank0.json" "$tmp/m.rank1.json" <<'EOF' || fail "sidecars"
import json, sys
doc = json.load(open(sys.argv[1]))
doc["minor_faults_per_step"] = 1e7
json.dump(doc, open(sys.argv[2], "w"))
doc.pop("minor_faults_per_step")
json.dump(doc, open(sys.argv[3], "w"))
EOF
  launch 2 180 "$d/ddp2.rank%d.et.json.gz" --device cpu --threads 1 --warmup 1 --iters 1 \
    --heap match --original-metrics "$tmp/m.rank%d.json" --report-json "$tmp/r.json"
  [ "$rc" -eq 0 ] || fail "exit $rc (ranks out of step in --heap match?)"
  check_report "$tmp/r.json" 2 2 all_reduce@0
  "$py" - "$tmp/r.json" <<'EOF' || fail "rank 0's heap match"
import json, sys
h = json.load(open(sys.argv[1]))["heap"]
print("rank 0 heap:", h)
assert h["target_faults_per_iter"] == 1e7 and len(h["steps"]) == 4, h
# the fixed heap alone first; far more faults asked for than the large blocks hold pages: every
# page of them handed back, and each faults once when written
assert h["steps"][0]["fresh_share"] == 0 and h["fresh_share"] == 1, h
assert "more than" in h.get("note", ""), h
assert h["faults_per_iter"] >= 0.9 * h["offered_pages_per_iter"] > 0, h
EOF
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
ring)
  # ASTRA-sim's custom ring all-reduce: every rank sends to its right before it
  # receives from its left, and each receive depends on the send before it.
  # Replayed in node order with blocking sends this deadlocked (128 KB is past
  # MPI's eager limit); p2p nodes now post non-blocking.
  dir="$src/../shared/traces/astra-sim/custom_collectives/custom_ring_allreduce_8npus_1MB"
  if [ ! -d "$dir" ]; then echo "SKIP: $dir absent (shared traces not mounted)"; exit 77; fi
  launch 8 180 "$dir/custom_allreduce.%d.et" "${run_flags[@]}" --comm-timeout 60 --report-json "$tmp/r.json"
  [ "$rc" -eq 0 ] || fail "exit $rc"
  # Each rank moves what its own file's send and recv nodes say (et_inspect's
  # per-file sums, read rank by rank; the replay reads all eight at once).
  expect=$tmp/expect.json
  for r in 0 1 2 3 4 5 6 7; do
    "${et_replay%/replayer/et_replay}/core/et_inspect" "$dir/custom_allreduce.$r.et" --json > "$tmp/i$r.json" ||
      fail "et_inspect rank $r"
  done
  "$py" - "$tmp" > "$expect" <<'PY' || fail "expected bytes"
import json, sys
sums = []
for r in range(8):
    c = json.load(open(f"{sys.argv[1]}/i{r}.json"))["collectives"]
    sums.append(sum(x["bytes"] for x in c if x["type"] in ("send", "recv")))
print(json.dumps({"comm_bytes": sums}))
PY
  check_report "$tmp/r.json" 8 28 send@* recv@*
  ;;
groups)
  # TRACE as a folder of per-rank files (groups.rank<R>.et.json).
  expect=$tmp/expect.json
  "$py" "$src/tests/mpi/make_comm_et.py" groups "$tmp/traces" --expect "$expect" ||
    fail "trace generator"
  iters=3
  launch 4 120 "$tmp/traces" --device cpu --threads 1 --warmup 1 --iters $iters \
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
throw)
  "$py" "$src/tests/mpi/make_comm_et.py" throw "$tmp/t" --expect "$tmp/e.json" || fail "generator"
  node=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["failing_node"][1])' "$tmp/e.json")
  start=$(date +%s.%N)
  launch 2 60 "$tmp/t/throw.rank%d.et.json" "${run_flags[@]}"
  took=$(echo "$(date +%s.%N) - $start" | bc)
  echo "exit $rc after ${took}s"
  [ "$rc" -ne 0 ] || fail "the job succeeded"
  [ "$(echo "$took < 30" | bc)" -eq 1 ] || fail "took ${took}s (bound 30 s)"
  # abortJob's line: "et_replay: r1@HOST: et_replay: error: FILE: node N ...".
  grep -Eq "^et_replay: r1@[^:]+: et_replay: error: .*node $node\b.*peer 5 is not a member" \
    "$tmp/out" || fail "no abort message naming rank 1, its host and node $node"
  ;;
stall)
  "$py" "$src/tests/mpi/make_comm_et.py" stall "$tmp/t" --expect "$tmp/e.json" || fail "generator"
  read -r n0 n1 < <("$py" -c 'import json,sys; print(*json.load(open(sys.argv[1]))["stuck_node"])' "$tmp/e.json")
  limit=3
  start=$(date +%s.%N)
  # etbench's watchdog (on MPI); gloo would end the job through its own timeout.
  launch 2 60 "$tmp/t/stall.rank%d.et.json" "${run_flags[@]}" --comm mpi --comm-timeout $limit
  took=$(echo "$(date +%s.%N) - $start" | bc)
  echo "exit $rc after ${took}s"
  [ "$rc" -ne 0 ] || fail "the job succeeded"
  # Startup (libtorch, trace) is most of the bound on a loaded 2-core box.
  [ "$(echo "$took < 30" | bc)" -eq 1 ] || fail "took ${took}s (bound 30 s)"
  # Either stuck rank's watchdog may fire first; each must name its own node.
  line=$(grep -E "^et_replay: (r0@[^:]+: communication timeout: node $n0 \"record_param_comms\" all_reduce |r1@[^:]+: communication timeout: node $n1 \"record_param_comms\" recv )" \
    "$tmp/out" | head -n1)
  [ -n "$line" ] || fail "no watchdog message naming the stuck node ($n0 on rank 0, $n1 on rank 1)"
  waited=$(echo "$line" | sed -nE 's/.* blocked for ([0-9.]+) s \(--comm-timeout.*/\1/p')
  echo "watchdog waited ${waited}s for a ${limit}s limit"
  # Polling at a quarter of the limit: it fires within [limit, 1.25 limit + slack).
  [ -n "$waited" ] && [ "$(echo "$waited >= $limit && $waited < $limit * 1.25 + 1" | bc)" -eq 1 ] ||
    fail "watchdog fired after ${waited}s, outside [$limit, $limit*1.25+1)"
  ;;
*)
  fail "unknown case $case_name"
  ;;
esac
echo PASS
