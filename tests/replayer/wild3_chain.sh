#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wild3_chain.sh BUILD_DIR SOURCE_DIR WORK_DIR
# The third sweep's workloads (fleet_samples/wild3_models.py, wild3_ddp.py), recorded fresh with
# Debian's torch 1.13 as a user would, through the tools a user chains:
#   wild3_dyn (unique, repeat_interleave by a tensor, masked_select and its backward, histc,
#   bincount, searchsorted, kthvalue): et_replay --verify replays every operator a separate
#   parse of the ET selects (zoo_expected_ops.py), no output unlike the recording; et_compose
#   --repeat 2 passes the shape check and replays twice as many operators.
#   wild3_pipe2 (two pipeline stages passing activations and gradients point-to-point: send,
#   recv, isend/irecv, batch_isend_irecv; barrier, all_gather_object, broadcast_object_list):
#   under mpirun, on gloo and on MPI, every rank (its own coverage in the report's ranks)
#   replays all its operators and all its c10d calls (9: 4 of them point-to-point), and
#   nothing hangs (timeout).
# Planted faults it catches: masked_select_backward's mask taken as argument 1 or left as the
# replay computed it (wild3_dyn: 1 op skipped, "Number of elements of source < number of ones
# in mask"); the composer's own list of data-dependent ops without repeat_interleave
# (et_compose refuses wild3_dyn: "output 0 has shape [0, 16] but the trace claims [48, 16]");
# a send or recv dropped or given the wrong peer (a hang, or collectives below 9); a rank
# other than 0 skipping ops unseen (the report carried rank 0's coverage only).
# Exit 77 (skipped) without torch.
set -u
build=$1 src=$2 work=$3
py=${ETB_PYTHON:-/usr/bin/python3}
replay=$build/replayer/et_replay compose=$build/composer/et_compose
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "SKIP: $py has no torch (python3-torch) to record with"; exit 77
fi
rm -rf "$work" && mkdir -p "$work"
status=0
fail() { echo "FAIL: $*"; status=1; }

# check NAME REPORT LOG WANT_OPS WANT_COMMS: every operator and collective replayed.
check() {
  "$py" - "$@" <<'PY' || status=1
import json, sys
name, report, log, want, comms = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
c = json.load(open(report))["coverage"]
bad = []
if c["operators"] != want:
    bad.append("selected %d operators, expected %d" % (c["operators"], want))
if c["replayed"] != c["operators"]:
    bad.append("replayed %d of %d: %s" % (c["replayed"], c["operators"], c["skipped_by_reason"]))
if c["comms"] != comms or c["comms_replayed"] != comms:
    bad.append("collectives %d/%d, expected %d" % (c["comms_replayed"], c["comms"], comms))
mism = [l.strip() for l in open(log) if "!= recorded" in l or "output is undefined" in l]
if mism:
    bad.append("%d outputs differ from the recording, first: %s" % (len(mism), mism[0]))
print("%-24s %5d/%-5d collectives %d/%d %s" % (name, c["replayed"], c["operators"],
      c["comms_replayed"], c["comms"], "; ".join(bad) or "ok"))
sys.exit(1 if bad else 0)
PY
}

d=$work/wild3_dyn t=$work/wild3_dyn/wild3_dyn.et.json.gz
if "$py" "$src/fleet_samples/record.py" --model wild3_dyn --out-dir "$d" --warmup 1 --iters 1 \
    > "$d.record.log" 2>&1; then
  want=$("$py" "$src/tests/replayer/zoo_expected_ops.py" "$t" | "$py" -c "import json,sys; print(json.load(sys.stdin)['operators'])")
  run() {  # run NAME TRACE WANT
    "$replay" "$2" --threads 1 --warmup 0 --iters 1 --verify --quiet --report-json "$work/$1.json" \
      > "$work/$1.log" 2>&1 || { tail -3 "$work/$1.log"; fail "$1: et_replay exited non-zero"; return; }
    check "$1" "$work/$1.json" "$work/$1.log" "$3" 0
  }
  run wild3_dyn "$t" "$want"
  # (--dtype bf16 is left out: bincount with bf16 weights returns float64 in libtorch, and the
  # composer's dtype change makes its output bf16; the shape check refuses that, by name)
  for v in "x2 --repeat 2"; do
    set -- $v
    if "$compose" "$t" "${@:2}" -o "$d/$1.json.gz" > "$d.$1.log" 2>&1; then
      run "wild3_dyn.$1" "$d/$1.json.gz" $((2 * want))
    else
      grep -m3 error "$d.$1.log"; fail "wild3_dyn: et_compose ${*:2}"
    fi
  done
else
  tail -5 "$d.record.log"; fail "recording wild3_dyn"
fi

d=$work/wild3_pipe2
if "$py" "$src/fleet_samples/wild3_ddp.py" --kind pipe --ranks 2 --out-dir "$d" > "$d.record.log" 2>&1; then
  # Each rank's c10d calls, counted off its file by name (torch 1.13 writes the process-group
  # string unescaped, so the ET is not JSON a plain parser takes)
  comms=$(for r in 0 1; do zcat "$d/wild3_pipe2.rank$r.et.json.gz" | grep -c '"name": "c10d::'; done | paste -sd,)
  for comm in gloo mpi; do
    if timeout 300 mpirun -np 2 --oversubscribe "$replay" "$d/wild3_pipe2.rank%d.et.json.gz" \
        --kineto "$d/wild3_pipe2.rank%d.kineto.json.gz" --comm "$comm" --threads 1 --warmup 1 \
        --iters 1 --verify --quiet --report-json "$d.$comm.json" > "$d.$comm.log" 2>&1; then
      "$py" - "$d.$comm.json" "$d.$comm.log" "$comms" "$comm" <<'PY' || status=1
import json, sys
d = json.load(open(sys.argv[1]))
want = [int(x) for x in sys.argv[3].split(",")]
bad = []
for r in d["ranks"]:
    c = r["coverage"]
    print("%-24s %5d/%-5d collectives %d/%d" % ("wild3_pipe2 r%d %s" % (r["rank"], sys.argv[4]),
          c["replayed"], c["operators"], c["comms_replayed"], c["comms"]))
    if c["replayed"] != c["operators"] or c["comms"] != want[r["rank"]] or c["comms_replayed"] != c["comms"]:
        bad.append("rank %d: %s, its file has %d c10d calls" % (r["rank"], c, want[r["rank"]]))
if len(d["ranks"]) != 2:
    bad.append("%d ranks reported" % len(d["ranks"]))
mism = [l.strip() for l in open(sys.argv[2]) if "!= recorded" in l or "skipped:" in l]
bad += mism[:1]
for b in bad:
    print("FAIL: wild3_pipe2:", b)
sys.exit(1 if bad else 0)
PY
    else
      tail -5 "$d.$comm.log"; fail "wild3_pipe2: mpirun et_replay --comm $comm failed or hung"
    fi
  done
else
  tail -5 "$d.record.log"; fail "recording wild3_pipe2"
fi
[ $status -eq 0 ] && echo "PASS"
exit $status
