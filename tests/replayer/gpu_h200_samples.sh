#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gpu_h200_samples.sh BUILD_DIR SOURCE_DIR WORK_DIR NAME files|replay
# One GPU fleet sample (fleet_samples/gpu_h200/NAME: torch 2.11 on an H200, ET 1.1.1 and
# libkineto's trace with the GPU kernels) on this CPU-only build, checked against
# gpu_h200_expect.py, a parse of the same files that shares nothing with etbench:
#   files:  et_inspect --kineto: node count; the Kineto link times exactly the ET nodes whose
#           rf_id is a host event's "Record function id" of the same name, and >= 99% of the
#           operators; the GPU kernels attached (count, summed time in trace.kernels and in
#           the nodes' gpu_dur_us) are the step's GPU activity by the expect script's rule.
#           et_convert to Chakra and back (node count and names), and with --kineto (kernels).
#   replay: et_replay --device cpu --kineto --original-meta --iters 1 --warmup 0 (a functional
#           replay of a CUDA trace on the CPU): exit 0 (no output mismatch), the operators
#           selected equal the expect script's count, >= 99% replayed, >= 99% of them linked
#           to an original time, the original is the meta.json's iter_ms_median (to its rounding) and
#           the median of its iter_ms list; for mlp also
#           without --device (this libtorch has no CUDA: the CPU). The GPU-bound sizes take
#           1-4 minutes each on a CPU (mlp_big 47 s, resnet18_big and transformer_big 250 s
#           at nice 19 on 2 busy cores): they run only with ETB_SLOW_TESTS=1 (else exit 77).
set -u
build=$1 src=$2 work=$3 name=$4 mode=$5
dir=$src/fleet_samples/gpu_h200/$name
et=$dir/$name.et.json.gz kineto=$dir/$name.kineto.json.gz meta=$dir/$name.meta.json
out=$work/$name.$mode
if [ "$mode" = replay ]; then
  case "$name" in mlp_big|resnet18_big|transformer_big)
    if [ "${ETB_SLOW_TESTS:-0}" != 1 ]; then
      echo "SKIP: $name's GPU-bound step takes 1-4 minutes on a CPU (set ETB_SLOW_TESTS=1)"; exit 77
    fi;;
  esac
fi
rm -rf "$out" && mkdir -p "$out"
[ -f "$et" ] || { echo "FAIL: no $et"; exit 1; }
python3 "$src/tests/replayer/gpu_h200_expect.py" "$dir" "$name" > "$out/expect.json" || exit 1
echo "expected: $(cat "$out/expect.json")"

run() {  # run STDOUT CMD...: stderr to STDOUT.err, shown when the command fails
  local to=$1; shift
  "$@" > "$to" 2> "$to.err" || { tail -5 "$to.err"; echo "FAIL: $name: $* exited $?"; exit 1; }
}

# Each check appends one Python expression, (ok, detail), over the JSON files named below;
# verdict evaluates them all in one interpreter (one start-up per test, not per check).
check() { printf '%s\t%s\n' "$1" "$(tr '\n' ' ' <<< "$2")" >> "$out/checks.tsv"; }
verdict() {
  python3 - "$name" "$out" "$et" <<'PY'
import gzip, json, os, sys
name, out, et = sys.argv[1:4]
env = {"json": json}
for var, f in (("x", "expect.json"), ("i", "inspect.json"), ("c", "chakra.json"),
               ("b", name + ".back.json"), ("k", "chakra_k.json"), ("r", "r.json"), ("d", "d.json")):
    if os.path.exists(os.path.join(out, f)):
        env[var] = json.load(open(os.path.join(out, f)))
if "b" in env:
    env["o"] = json.load(gzip.open(et, "rt"))
failed = 0
for line in open(os.path.join(out, "checks.tsv")):
    what, expr = line.rstrip("\n").split("\t", 1)
    ok, detail = eval(expr, env)
    print(("ok:   " if ok else "FAIL: ") + name + ": " + what + " (" + detail + ")")
    failed += not ok
sys.exit(1 if failed else 0)
PY
}

if [ "$mode" = files ]; then
  run "$out/inspect.json" "$build/core/et_inspect" "$et" --kineto "$kineto" --json
  check "node count" '(i["nodes"] == x["nodes"], "%d vs %d" % (i["nodes"], x["nodes"]))'
  check "Kineto link: the nodes whose rf_id names a host event of their name" \
    '(i["kineto"]["linked_nodes"] == x["rf_linked"] and i["kineto"]["misnamed"] == 0,
      "%d linked vs %d, %d misnamed" % (i["kineto"]["linked_nodes"], x["rf_linked"], i["kineto"]["misnamed"]))'
  check "Kineto link: >= 99% of the operators" \
    '(i["kineto"]["linked_operators"] >= 0.99 * i["kineto"]["operators"] > 0,
      "%d of %d" % (i["kineto"]["linked_operators"], i["kineto"]["operators"]))'
  check "GPU kernels attached: count and time of the step's GPU activity" \
    '(i["kernels"] == i["kineto"]["kernels"] == x["gpu_events"] > 0
      and abs(i["kernel_us"] - x["gpu_us"]) <= 1e-6 * x["gpu_us"]
      and abs(i["node_gpu_us"] - x["gpu_us"]) <= 1e-6 * x["gpu_us"],
      "%d kernels %.3f us (nodes %.3f us) vs %d, %.3f us" % (i["kernels"], i["kernel_us"],
      i["node_gpu_us"], x["gpu_events"], x["gpu_us"]))'
  run "$out/to_chakra.log" "$build/core/et_convert" "$et" "$out/$name.et"
  run "$out/back.log" "$build/core/et_convert" "$out/$name.et" "$out/$name.back.json"
  run "$out/chakra.json" "$build/core/et_inspect" "$out/$name.et" --json
  check "et_convert to Chakra and back: nodes and their names" \
    '(c["nodes"] == len(b["nodes"]) == x["nodes"] and sorted(n["name"] for n in b["nodes"]) == sorted(n["name"] for n in o["nodes"]),
      "chakra %d, back %d, expected %d" % (c["nodes"], len(b["nodes"]), x["nodes"]))'
  run "$out/to_chakra_k.log" "$build/core/et_convert" "$et" "$out/$name.k.et" --kineto "$kineto"
  run "$out/chakra_k.json" "$build/core/et_inspect" "$out/$name.k.et" --json
  check "et_convert --kineto: the GPU kernels go into the Chakra file" \
    '(k["kernels"] == x["gpu_events"] and k["nodes"] == x["nodes"], "%d kernels vs %d" % (k["kernels"], x["gpu_events"]))'
  verdict; exit
fi

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
run "$out/replay.log" "$build/replayer/et_replay" "$et" --device cpu --kineto "$kineto" \
  --original-meta "$meta" --threads 1 --iters 1 --warmup 0 --quiet --report-json "$out/r.json"
grep -m1 "differ from the recording" "$out/replay.log.err"
check "operators selected" \
  '(r["coverage"]["operators"] == x["operators_in_step"], "%d vs %d" % (r["coverage"]["operators"], x["operators_in_step"]))'
check "coverage >= 99% on the CPU" \
  '(r["run"]["device"] == "cpu" and r["coverage"]["replayed"] >= 0.99 * r["coverage"]["operators"],
    "%d of %d on %s; skipped: %s" % (r["coverage"]["replayed"], r["coverage"]["operators"], r["run"]["device"],
    json.dumps(r["coverage"]["skipped_by_reason"])))'
check "ops linked to an original time >= 99%" \
  '(sum("original_us" in o for o in r["ops"]) >= 0.99 * len(r["ops"]) > 0,
    "%d of %d" % (sum("original_us" in o for o in r["ops"]), len(r["ops"])))'
# The report's median is of meta.json's iter_ms list, which record.py rounded to 1 us, while
# iter_ms_median is the rounded median of the unrounded times: equal to within 0.5 us, and
# exactly the median of the list.
check "original = meta.json iter_ms_median" \
  '(abs(r["original"]["iter_ms"]["median"] - x["iter_ms_median"]) <= 0.0005 + 1e-9
    and r["original"]["iter_ms"]["median"] == x["iter_ms_list_median"] and "meta" in r["original"]["source"],
    "%s from %s vs %s (list median %s)" % (r["original"]["iter_ms"]["median"], r["original"]["source"],
    x["iter_ms_median"], x["iter_ms_list_median"]))'
if [ "$name" = mlp ]; then
  run "$out/default.log" "$build/replayer/et_replay" "$et" --threads 1 --iters 1 --warmup 0 --quiet \
    --report-json "$out/d.json"
  check "without --device: the CPU (no CUDA in this libtorch)" \
    '(d["run"]["device"] == "cpu", d["run"]["device"])'
fi
verdict
