#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gen_program_case.sh CASE ET_GENERATE ET_REPLAY HOSTILE_TOOL SOURCE_DIR WORK_DIR
# One et_generate scenario (ctest label generator, see CMakeLists.txt).
#   build_programs: generate mlp, ddp2 (2 ranks), zoo_moe and the hostile program into
#       WORK_DIR (outside the checkout) and build them with CMake (libtorch);
#       only ddp2 looks for and links MPI; zlib is hidden from CMake
#   mlp_vs_et_replay / ddp2_vs_et_replay: run the program and et_replay on the
#       same trace with --verify; same operators replayed and skipped, same
#       collectives, same original figures (ddp2: both under mpirun -np 2,
#       with --host-time emulate: the same profiled gaps)
#   zoo_moe_vs_et_replay: the same for the MoE zoo sample, whose data-dependent
#       shapes both adapt alike
#   hta_gpu_vs_et_replay: a public GPU trace with its profiler file, replayed on
#       CPU: the program carries the original's device time per op as et_replay
#       links it
#   mlp_host_time: --host-time emulate in the program and et_replay (trace + Kineto):
#       the original's gaps as profiled (a property of the trace) are the same,
#       the emulated host time differs by no more than the two processes'
#       separately measured instrumentation costs explain; both report
#       "ops only" and "with host"
#   mlp_autograd: --autograd record in both: the same forward ops and parameters
#   mlp_flags: the program's flags (bad ones exit 2), HTML and Chrome output;
#       mpirun -np 2 of the MPI-less one-rank program is refused
#   hostile_names: the hostile program builds, runs and prints names intact
#   bad_input: unreadable / empty trace, foreign output folder: exit 2, one
#       message, nothing written outside -o
# Exit 77 = skipped.
set -u
case_name=$1 gen=$2 replay=$3 hostile=$4 src=$5 work=$6
py=$(command -v python3)
mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
run_flags=(--device cpu --threads 1 --warmup 1 --iters 2 --seed 7)
fleet=$src/fleet_samples

fail() { echo "FAIL: $*"; exit 1; }

# build_all NAME...: one CMake build of the program folders $work/NAME (a
# top CMakeLists adds each; the runtime compiles once); binaries land in
# $work/build/NAME/bench.
build_all() {
  local t0=$SECONDS
  { echo "cmake_minimum_required(VERSION 3.18)"; echo "project(gen_tests LANGUAGES C CXX)"
    for n in "$@"; do echo "add_subdirectory($n)"; done; } > "$work/CMakeLists.txt"
  # Without zlib, as on a machine that lacks it: the programs must not need it.
  cmake -S "$work" -B "$work/build" -DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON > "$work/configure.log" 2>&1 \
    || { tail -30 "$work/configure.log"; fail "configure"; }
  nice cmake --build "$work/build" -j2 > "$work/build.log" 2>&1 \
    || { grep -m5 -A5 'error' "$work/build.log"; tail -20 "$work/build.log"; fail "build"; }
  for n in "$@"; do [ -x "$work/build/$n/bench" ] || fail "no bench binary for $n"; done
  echo "built $* in $((SECONDS - t0)) s"
}

# compare ET_REPLAY_JSON BENCH_JSON
compare() {
  "$py" - "$1" "$2" <<'PY' || fail "reports differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def ops(d): return [(o["node_id"], o["name"], o["overload"], o["replayed"], o["is_comm"]) for o in d["ops"]]
def colls(d): return sorted((c["type"], c["group"], c["bytes"], c["count"]) for c in d["collectives"])
def orig(d): return (d.get("original") or {}).get("iter_ms", {}).get("median")
checks = {
  "ops (node id, name, overload, replayed, comm)": (ops(a), ops(b)),
  "coverage": (a["coverage"], b["coverage"]),
  "collectives": (colls(a), colls(b)),
  "original iteration time": (orig(a), orig(b)),
  "world size": (a["run"]["world_size"], b["run"]["world_size"]),
  "original per-op times": ([o.get("original_us") for o in a["ops"]], [o.get("original_us") for o in b["ops"]]),
  "original per-op device times": ([o.get("original_device_us") for o in a["ops"]],
                                   [o.get("original_device_us") for o in b["ops"]]),
  # The program carries the replayed ops with their children's kernels, not
  # kernels linked under no replayed op: their sum, not original_ms.
  "original device time of the ops": ((a.get("device_time") or {}).get("original_ops_ms"),
                                      (b.get("device_time") or {}).get("original_ops_ms")),
  # The recorder's sidecar beside the trace: et_replay reads it, et_generate
  # embeds it.
  "original system metrics": (a.get("original_system"), b.get("original_system")),
}
bad = [k for k, (x, y) in checks.items() if x != y]
for k in bad:
    x, y = checks[k]
    print(f"{k} differ:\n  et_replay: {str(x)[:400]}\n  generated: {str(y)[:400]}")
assert len(a["ops"]) > 0, "no ops"
print(f"{len(a['ops'])} ops, {a['coverage']['replayed']} replayed, {a['coverage']['skipped']} skipped,"
      f" {len(a['collectives'])} collective kinds: same in both")
sys.exit(1 if bad else 0)
PY
}

case "$case_name" in
  build_programs)
    rm -rf "$work"/mlp "$work"/ddp2 "$work"/hostile "$work"/zoo_moe "$work"/hta "$work"/build
    "$gen" "$fleet/mlp/mlp.et.json.gz" --kineto "$fleet/mlp/mlp.kineto.json.gz" -o "$work/mlp" \
      || fail "et_generate mlp"
    "$gen" "$fleet/ddp2/ddp2.rank%d.et.json.gz" --kineto "$fleet/ddp2/ddp2.rank%d.kineto.json.gz" \
      --original-meta "$fleet/ddp2/ddp2.meta.json" -o "$work/ddp2" || fail "et_generate ddp2"
    grep -q 'mpirun -np 2' "$work/ddp2/README.md" || fail "README does not say mpirun -np 2"
    "$hostile" "$work/hostile" "$work/hostile.expected" || fail "hostile generator"
    "$gen" "$fleet/zoo/zoo_moe/zoo_moe.et.json.gz" -o "$work/zoo_moe" || fail "et_generate zoo_moe"
    hta=$src/../shared/traces/hta programs=(mlp ddp2 hostile zoo_moe)
    if [ -f "$hta/benchmark_simple_add_et.json.gz" ]; then
      "$gen" "$hta/benchmark_simple_add_et.json.gz" --kineto "$hta/benchmark_simple_add_trace.json.gz" \
        -o "$work/hta" || fail "et_generate hta"
      programs+=(hta)
    fi
    build_all "${programs[@]}"
    # MPI only where the trace communicates: the one-rank mlp program neither
    # looks for MPI nor links it; the 2-rank ddp2 program does both.
    grep -q 'set(BENCH_NEEDS_MPI OFF)' "$work/mlp/CMakeLists.txt" || fail "mlp's CMakeLists asks for MPI"
    grep -q 'set(BENCH_NEEDS_MPI ON)' "$work/ddp2/CMakeLists.txt" || fail "ddp2's CMakeLists does not ask for MPI"
    ldd "$work/build/mlp/bench" | grep -q 'libmpi' && fail "the one-rank mlp program links MPI"
    ldd "$work/build/ddp2/bench" | grep -q 'libmpi' || fail "the 2-rank ddp2 program does not link MPI"
    true ;;
  mlp_vs_et_replay)
    t=$fleet/mlp/mlp.et.json.gz k=$fleet/mlp/mlp.kineto.json.gz
    "$replay" "$t" --kineto "$k" "${run_flags[@]}" --verify --quiet --report-json "$work/mlp.replay.json" \
      || fail "et_replay --verify"
    "$work/build/mlp/bench" "${run_flags[@]}" --verify --report-json "$work/mlp.bench.json" > "$work/mlp.out" \
      || fail "generated program --verify"
    grep -q 'replay/original' "$work/mlp.out" || fail "terminal report lacks the original figures"
    compare "$work/mlp.replay.json" "$work/mlp.bench.json" ;;
  zoo_moe_vs_et_replay)
    # Data-dependent shapes and masks (boolean-mask indexing, nonzero counts): the
    # program adapts the same ops the same way (coverage, adapted_ops) as et_replay.
    t=$fleet/zoo/zoo_moe/zoo_moe.et.json.gz
    "$replay" "$t" "${run_flags[@]}" --verify --quiet --report-json "$work/zoo_moe.replay.json" \
      || fail "et_replay --verify"
    "$work/build/zoo_moe/bench" "${run_flags[@]}" --verify --quiet \
      --report-json "$work/zoo_moe.bench.json" || fail "generated program --verify"
    compare "$work/zoo_moe.replay.json" "$work/zoo_moe.bench.json" || exit 1
    "$py" -c "import json,sys; c=json.load(open(sys.argv[1]))['coverage']; print('adapted:', c['adapted_ops']); assert c['adapted'] > 0" \
      "$work/zoo_moe.bench.json" || fail "zoo_moe's data-dependent ops were not adapted" ;;
  hta_gpu_vs_et_replay)
    hta=$src/../shared/traces/hta
    [ -x "$work/build/hta/bench" ] || { echo "no public traces: skipped"; exit 77; }
    "$replay" "$hta/benchmark_simple_add_et.json.gz" --kineto "$hta/benchmark_simple_add_trace.json.gz" \
      "${run_flags[@]}" --quiet --report-json "$work/hta.replay.json" || fail "et_replay"
    "$work/build/hta/bench" "${run_flags[@]}" --report-json "$work/hta.bench.json" > "$work/hta.out" \
      || fail "generated program"
    grep -q 'orig device' "$work/hta.out" || fail "terminal report lacks the device columns"
    compare "$work/hta.replay.json" "$work/hta.bench.json" || exit 1
    "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['device_time']['original_ms'] > 0, d.get('device_time')" \
      "$work/hta.bench.json" || fail "no original device time in the program's report" ;;
  mlp_host_time)
    t=$fleet/mlp/mlp.et.json.gz k=$fleet/mlp/mlp.kineto.json.gz
    host_flags=(--device cpu --threads 1 --warmup 1 --iters 3 --seed 7 --host-time emulate)
    "$replay" "$t" --kineto "$k" "${host_flags[@]}" --report-json "$work/host.replay.json" \
      > "$work/host.replay.out" || fail "et_replay --host-time emulate"
    "$work/build/mlp/bench" "${host_flags[@]}" --report-json "$work/host.bench.json" \
      > "$work/host.bench.out" || fail "generated program --host-time emulate"
    for row in 'ops only' 'with host'; do
      grep -q "$row" "$work/host.replay.out" || fail "et_replay's report lacks \"$row\""
      grep -q "$row" "$work/host.bench.out" || fail "the program's report lacks \"$row\""
    done
    "$py" - "$work/host.replay.json" "$work/host.bench.json" <<'PY' || fail "host time differs from et_replay's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert "host_time" in a, "et_replay reported no host time"
assert "host_time" in b, "the generated program reported no host time (ignored --host-time?)"
ha, hb = a["host_time"], b["host_time"]
# From the trace alone (node and ProfilerStep times, labels, threads): equal.
exact = ["recorded_gap_ms", "boundaries", "label_boundaries", "untimed_ops", "stalls", "stalled_ms",
         "stall_limit_us"]
bad = [k for k in exact if abs(ha[k] - hb[k]) > 1e-9 * max(1, abs(ha[k]))]
for k in exact: print(f"{k}: et_replay {ha[k]}, program {hb[k]}")
assert not bad, f"differ: {bad}"
assert ha["recorded_gap_ms"] > 0 and ha["boundaries"] > 0, ha
# The original's host time = gaps - stalls - instrumentation, the latter
# costed per gap and per event boundary with costs each process measures on
# its own (noisy). max(0, .) per gap is 1-Lipschitz, so the two totals can
# differ by at most what the cost differences explain over the same gaps
# (at most ops + 1 of them) and boundaries.
gaps = len(a["ops"]) + 1
labels, ops = ha["label_boundaries"], ha["boundaries"] - ha["label_boundaries"]
explained = (gaps * abs(ha["profiler_gap_us"] - hb["profiler_gap_us"]) +
             0.5 * (ops * abs(ha["profiler_event_us"] - hb["profiler_event_us"]) +
                    labels * abs(ha["profiler_label_us"] - hb["profiler_label_us"]))) / 1e3
diff = abs(ha["original_host_ms"] - hb["original_host_ms"])
print(f"original host: et_replay {ha['original_host_ms']:.4f} ms, program {hb['original_host_ms']:.4f} ms;"
      f" |diff| {diff:.4f} <= {explained:.4f} ms explained by the measured costs")
assert diff <= explained + 1e-6, (diff, explained)
for h in (ha, hb):
  assert h["original_host_ms"] <= h["recorded_gap_ms"] - h["stalled_ms"] + 1e-9, h
  assert h["with_host_iter_ms"]["median"] > 0, h
PY
    ;;
  mlp_autograd)
    t=$fleet/mlp/mlp.et.json.gz
    "$replay" "$t" "${run_flags[@]}" --autograd record --quiet --report-json "$work/ag.replay.json" \
      || fail "et_replay --autograd record"
    "$work/build/mlp/bench" "${run_flags[@]}" --autograd record --quiet \
      --report-json "$work/ag.bench.json" || fail "generated program --autograd record"
    "$py" - "$work/ag.replay.json" "$work/ag.bench.json" <<'PY' || fail "autograd recording differs from et_replay's"
import json, sys
a, b = (json.load(open(p))["coverage"].get("autograd") for p in sys.argv[1:3])
print("autograd: et_replay", a, "program", b)
assert a and a["forward_ops"] > 0 and a["parameters"] > 0, a
assert b == a, "the program recorded another forward (its ops lost their phase labels?)"
PY
    ;;
  mlp_flags)
    b=$work/build/mlp/bench
    # The replay-fidelity flags are listed; without profiler times (zoo_moe was
    # generated without --kineto), --host-time emulate is refused by name.
    "$b" --help > "$work/help.out" || fail "--help"
    for flag in --host-time --host-stall-us --heap --autograd --original-metrics --original-ms; do
      grep -q -- "$flag" "$work/help.out" || fail "--help lacks $flag"
    done
    "$b" --host-time sometimes > "$work/flags.out" 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q -- '--host-time' "$work/flags.out" || fail "--host-time sometimes: rc $rc"
    "$work/build/zoo_moe/bench" --host-time emulate --iters 1 > "$work/flags.out" 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q 'zoo_moe.*generated without them' "$work/flags.out" \
      || { cat "$work/flags.out"; fail "--host-time emulate without Kineto times: rc $rc"; }
    "$b" --help | grep -q -- '--index-dist' || fail "--help"
    "$b" --bogus > "$work/flags.out" 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q -- '--bogus' "$work/flags.out" || fail "unknown flag: rc $rc"
    "$b" --iters 0 > "$work/flags.out" 2>&1; [ $? -eq 2 ] || fail "--iters 0 accepted"
    "$b" --iters=1 --warmup=0 --threads 1 --index-dist zipf:1.2 --quiet --report-html "$work/r.html" \
      --chrome-trace "$work/r.trace.json" || fail "flags run"
    grep -q '<html' "$work/r.html" || fail "no HTML report"
    "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['traceEvents']" "$work/r.trace.json" \
      || fail "chrome trace"
    # Built without zlib (build_all), a .gz report is refused by name.
    "$b" --iters 1 --warmup 0 --quiet --report-json "$work/r.json.gz" > "$work/flags.out" 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q 'r.json.gz.*zlib' "$work/flags.out" || fail ".gz without zlib: rc $rc"
    # Built without MPI, a one-rank program refuses a multi-rank launch.
    timeout -k 5 120 mpirun -np 2 --oversubscribe "$b" --iters 1 > "$work/np2.out" 2>&1; rc=$?
    [ $rc -ne 0 ] && grep -q 'built without MPI' "$work/np2.out" || fail "mpirun -np 2 of a one-rank program: rc $rc" ;;
  ddp2_vs_et_replay)
    # Each rank links its own profiler trace, as the program was generated.
    t=$fleet/ddp2/ddp2.rank%d.et.json.gz k=$fleet/ddp2/ddp2.rank%d.kineto.json.gz
    m=$fleet/ddp2/ddp2.meta.json
    # With host time too: every rank emulates its own gaps, from its own profiler file.
    timeout -k 5 240 mpirun -np 2 --oversubscribe "$replay" "$t" --kineto "$k" --original-meta "$m" \
      "${run_flags[@]}" --host-time emulate --verify --quiet --report-json "$work/ddp2.replay.json" \
      || fail "et_replay under mpirun"
    timeout -k 5 240 mpirun -np 2 --oversubscribe "$work/build/ddp2/bench" "${run_flags[@]}" --host-time emulate \
      --verify --quiet --report-json "$work/ddp2.bench.json" || fail "generated program under mpirun"
    compare "$work/ddp2.replay.json" "$work/ddp2.bench.json" || exit 1
    "$py" - "$work/ddp2.replay.json" "$work/ddp2.bench.json" <<'PY' || fail "ddp2's host time differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
keys = ["recorded_gap_ms", "boundaries", "label_boundaries", "stalls", "stalled_ms", "untimed_ops"]
ha, hb = ({k: d["host_time"][k] for k in keys} for d in (a, b))
print("host time (rank 0): et_replay", ha, "program", hb)
assert ha == hb and ha["recorded_gap_ms"] > 0
assert all(r.get("with_host_ms", -1) > 0 for r in b["ranks"]), b["ranks"]
PY
    # The program carries each rank's unprofiled steps from meta.json (generated with
    # --original-meta): rank 0's report shows rank 0's median, per rank each its own.
    "$py" - "$m" "$work/ddp2.bench.json" <<'PY' || fail "generated program's original is not meta.json's"
import json, statistics, sys
meta, rep = (json.load(open(p)) for p in sys.argv[1:3])
want = {int(r): statistics.median(v["original"]["iter_ms"]) for r, v in meta["ranks"].items()}
got = {r["rank"]: r.get("original_ms") for r in rep["ranks"]}
print("original per rank (meta.json):", want, "program:", got)
assert abs(rep["original"]["iter_ms"]["median"] - want[0]) < 1e-6, rep["original"]
assert "meta.json" in rep["original"]["source"], rep["original"]["source"]
assert all(abs(got[r] - want[r]) < 1e-6 for r in want), got
PY
    "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['run']['world_size']==2 and d['collectives'], d['run']" \
      "$work/ddp2.bench.json" || fail "no collectives replayed"
    timeout -k 5 120 mpirun -np 3 --oversubscribe "$work/build/ddp2/bench" --iters 1 > "$work/np3.out" 2>&1
    rc=$?
    [ $rc -ne 0 ] && grep -q 'recorded with 2 ranks' "$work/np3.out" || fail "3 ranks for a 2-rank program: rc $rc" ;;
  hostile_names)
    "$work/build/hostile/bench" --device cpu --warmup 0 --iters 1 > "$work/hostile.out" 2>&1 \
      || { tail "$work/hostile.out"; fail "hostile program failed"; }
    "$py" - "$work/hostile.expected" "$work/hostile.out" <<'PY' || fail "names not printed intact"
import sys
want = [bytes.fromhex(l) for l in open(sys.argv[1]).read().split()]
out = open(sys.argv[2], "rb").read()
missing = [w for w in want if w not in out]
for w in missing: print("missing:", w[:80])
print(f"{len(want) - len(missing)}/{len(want)} hostile strings printed intact")
sys.exit(1 if missing or not want else 0)
PY
    ;;
  bad_input)
    tmp=$(mktemp -d "$work/bad.XXXXXX")
    cd "$tmp" || fail "cd"
    "$gen" "$tmp/missing.json" -o "$tmp/out1" > err 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q 'missing.json' err || { cat err; fail "unreadable trace: rc $rc"; }
    [ ! -e "$tmp/out1" ] || fail "output written for an unreadable trace"
    printf '{"schema": "1.0.1", "pid": 1, "time": "x", "start_ts": 0, "nodes": [], "finish_ts": 0}' > empty.json
    "$gen" empty.json -o "$tmp/out2" > err 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q 'empty.json' err || { cat err; fail "empty trace: rc $rc"; }
    [ ! -e "$tmp/out2" ] || fail "output written for an empty trace"
    mkdir mine && echo keep > mine/notes.txt
    "$gen" "$fleet/mlp/mlp.et.json.gz" -o mine > err 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q 'not written by et_generate' err || { cat err; fail "foreign folder: rc $rc"; }
    [ "$(ls -A mine)" = notes.txt ] || fail "foreign folder was changed"
    "$gen" "$fleet/mlp/mlp.et.json.gz" -o gen > err 2>&1 || { cat err; fail "generate"; }
    "$gen" "$fleet/mlp/mlp.et.json.gz" -o gen > err 2>&1 || { cat err; fail "regenerate into a generated folder"; }
    "$gen" "$fleet/mlp/mlp.et.json.gz" --iteration 999 -o gen2 > err 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -q 'out of range' err || { cat err; fail "bad --iteration: rc $rc"; }
    [ "$(ls -A | sort | tr '\n' ' ')" = "empty.json err gen mine " ] || fail "files written outside -o: $(ls -A)"
    cd / && rm -rf "$tmp"
    echo "bad input: all refused with exit 2" ;;
  *) fail "unknown case $case_name" ;;
esac
