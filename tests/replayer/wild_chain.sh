#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wild_chain.sh BUILD_DIR SOURCE_DIR WORK_DIR
# Workloads neither the fleet nor the zoo has (fleet_samples/wild_models.py, wild_ddp.py),
# recorded fresh with Debian's torch 1.13 as a user would, through every tool a user chains:
#   et_inspect; et_replay --threads 1 --verify (operators equal to a separate parse of the ET,
#   zoo_expected_ops.py, all replayed, no output unlike the recording); et_convert to Chakra and
#   back, each replayed with the same coverage; et_compose --repeat 2 (re-read by et_inspect,
#   replayed: twice the operators) and --dtype bf16 to Chakra (replayed, --verify);
#   a 4-rank DDP step over gloo (find_unused_parameters, broadcast, all_gather, barrier) under
#   mpirun with each rank's profiler file: every rank replays every collective; and
#   et_compose --repeat 2 of the 4 ranks, replayed under mpirun.
# Planted faults it catches: a bf16 transposed convolution run by libtorch 1.13's CPU kernel
# (wild_unet --dtype bf16: wrong shapes, an op skipped); random LU pivots (wild_losses: the
# linalg.solve backward skipped); a bf16 factory (eye) not sent to float32 (wild_losses bf16);
# collectives dropped below a mis-parented c10d op (wild_ddp: a hang, caught by the timeout,
# or ranks' counts differ); torch 1.13's c10d outputs taken for inputs (wild_ddp --repeat 2
# refused by the all_gather size rule).
# wild2_ddp3 (3 ranks): torch 1.13's bare gloo:all_to_all dropped without a word (5 of 6
# collectives counted, no reason given).
# Exit 77 (skipped) without torch.
set -u
build=$1 src=$2 work=$3
py=${ETB_PYTHON:-/usr/bin/python3}
inspect=$build/core/et_inspect convert=$build/core/et_convert
replay=$build/replayer/et_replay compose=$build/composer/et_compose
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "SKIP: $py has no torch (python3-torch) to record with"; exit 77
fi
rm -rf "$work" && mkdir -p "$work"
status=0
fail() { echo "FAIL: $*"; status=1; }

# replayCheck NAME TRACE WANT_OPS [ARGS...]: et_replay --verify; prints "replayed/operators".
replayCheck() {
  local name=$1 t=$2 want=$3
  shift 3
  if ! "$replay" "$t" --threads 1 --warmup 0 --iters 1 --verify --quiet "$@" \
      --report-json "$work/$name.json" > "$work/$name.log" 2>&1; then
    tail -3 "$work/$name.log"; fail "$name: et_replay exited non-zero"; return
  fi
  "$py" - "$name" "$work/$name.json" "$want" "$work/$name.log" <<'PY' || status=1
import json, sys
name, report, want, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
c = json.load(open(report))["coverage"]
bad = []
if c["operators"] != want:
    bad.append("selected %d operators, expected %d" % (c["operators"], want))
if c["replayed"] != c["operators"]:
    bad.append("replayed %d of %d: %s" % (c["replayed"], c["operators"], c["skipped_by_reason"]))
mism = [l.strip() for l in open(log) if "!= recorded" in l or "output is undefined" in l]
if mism:
    bad.append("%d outputs differ from the recording, first: %s" % (len(mism), mism[0]))
print("%-28s %5d/%-5d %s" % (name, c["replayed"], c["operators"], "; ".join(bad) or "ok"))
sys.exit(1 if bad else 0)
PY
}

for m in wild_unet wild_gnn wild_seq2seq wild_losses; do
  d=$work/$m t=$work/$m/$m.et.json.gz
  "$py" "$src/fleet_samples/record.py" --model "$m" --out-dir "$d" --warmup 1 --iters 1 \
    > "$d.record.log" 2>&1 || { cat "$d.record.log"; fail "recording $m"; continue; }
  "$inspect" "$t" > "$d.inspect" 2>&1 || fail "$m: et_inspect"
  want=$("$py" "$src/tests/replayer/zoo_expected_ops.py" "$t" | "$py" -c "import json,sys; print(json.load(sys.stdin)['operators'])")
  replayCheck "$m" "$t" "$want"
  "$convert" "$t" "$d/c.et" --kineto "$d/$m.kineto.json.gz" > "$d.convert.log" 2>&1 || fail "$m: et_convert to .et"
  "$convert" "$d/c.et" "$d/back.json.gz" > "$d.back.log" 2>&1 || fail "$m: et_convert back"
  replayCheck "$m.chakra" "$d/c.et" "$want"
  replayCheck "$m.back" "$d/back.json.gz" "$want"
  "$compose" "$t" --repeat 2 -o "$d/x2.json.gz" > "$d.x2.log" 2>&1 || { grep -m3 error "$d.x2.log"; fail "$m: et_compose --repeat 2"; }
  "$inspect" "$d/x2.json.gz" > "$d.x2.inspect" 2>&1 || fail "$m: et_inspect of the composed trace"
  replayCheck "$m.x2" "$d/x2.json.gz" $((2 * want))
  "$compose" "$t" --dtype bf16 -o "$d/bf16.et" > "$d.bf16.log" 2>&1 || { grep -m3 error "$d.bf16.log"; fail "$m: et_compose --dtype bf16"; }
  replayCheck "$m.bf16" "$d/bf16.et" "$want"
done

# DDP over gloo at 4 ranks, each rank with its own profiler file.
d=$work/wild_ddp4
if "$py" "$src/fleet_samples/wild_ddp.py" --ranks 4 --no-subgroup --out-dir "$d" > "$d.record.log" 2>&1; then
  if timeout 300 mpirun -np 4 --oversubscribe "$replay" "$d/wild_ddp4.rank%d.et.json.gz" \
      --kineto "$d/wild_ddp4.rank%d.kineto.json.gz" --threads 1 --warmup 1 --iters 1 --verify \
      --quiet --report-json "$d.json" > "$d.log" 2>&1; then
    "$py" - "$d.json" <<'PY' || status=1
import json, sys
r = json.load(open(sys.argv[1]))
c = r["coverage"]
print("%-28s %5d/%-5d collectives %d/%d" % ("wild_ddp4 (rank 0)", c["replayed"], c["operators"],
                                            c["comms_replayed"], c["comms"]))
ok = c["replayed"] == c["operators"] and c["comms_replayed"] == c["comms"] == 6
sys.exit(0 if ok else 1)
PY
  else
    tail -5 "$d.log"; fail "wild_ddp4: mpirun et_replay failed or hung"
  fi
  # Two chained copies of every rank's step: the collectives' size rules hold
  # (dist.all_gather of one loss per rank: 1 element in, 4 out).
  if "$compose" "$d/wild_ddp4.rank%d.et.json.gz" --repeat 2 -o "$d/x2.rank%d.json.gz" > "$d.x2.log" 2>&1; then
    timeout 300 mpirun -np 4 --oversubscribe "$replay" "$d/x2.rank%d.json.gz" --threads 1 --warmup 0 \
      --iters 1 --verify --quiet --report-json "$d.x2.json" > "$d.x2.run" 2>&1 || fail "wild_ddp4 x2: mpirun et_replay"
    "$py" -c "import json,sys; c=json.load(open(sys.argv[1]))['coverage']; print('%-28s %5d/%-5d collectives %d/%d' % ('wild_ddp4.x2 (rank 0)', c['replayed'], c['operators'], c['comms_replayed'], c['comms'])); sys.exit(0 if c['comms_replayed'] == c['comms'] == 12 else 1)" \
      "$d.x2.json" || fail "wild_ddp4 x2: collectives"
  else
    grep -m3 error "$d.x2.log"; fail "wild_ddp4: et_compose --repeat 2"
  fi
else
  tail -5 "$d.record.log"; fail "recording wild_ddp4"
fi
# DDP at an odd world size (3 ranks) with all_to_all_single at uneven splits, reduce, gather and
# scatter (fleet_samples/wild2_ddp.py): torch 1.13 records the all_to_all only as a bare
# gloo:all_to_all label without sizes. Every rank counts it (6 collectives), replays the other 5,
# and names it with the reason; the same after et_convert to Chakra.
d=$work/wild2_ddp3
if "$py" "$src/fleet_samples/wild2_ddp.py" --ranks 3 --out-dir "$d" > "$d.record.log" 2>&1; then
  "$build/core/et_convert" "$d/wild2_ddp3.rank%d.et.json.gz" "$d/c.%d.et" > "$d.conv.log" 2>&1 ||
    fail "wild2_ddp3: et_convert"
  for v in wild2_ddp3.rank%d.et.json.gz c.%d.et; do
    if timeout 300 mpirun -np 3 --oversubscribe "$replay" "$d/$v" --threads 1 --warmup 0 --iters 1 \
        --verify --quiet --report-json "$d.json" > "$d.log" 2>&1; then
      "$py" -c "import json,sys; c=json.load(open(sys.argv[1]))['coverage']; print('%-28s %5d/%-5d collectives %d/%d' % ('wild2_ddp3 ' + sys.argv[2], c['replayed'], c['operators'], c['comms_replayed'], c['comms'])); sys.exit(0 if c['replayed'] == c['operators'] and (c['comms'], c['comms_replayed']) == (6, 5) else 1)" \
        "$d.json" "$v" || fail "wild2_ddp3 $v: collectives"
      [ "$(grep -c 'gloo:all_to_all: collective not replayed' "$d.log")" -eq 3 ] ||
        fail "wild2_ddp3 $v: not every rank names the unsized all_to_all"
    else
      tail -5 "$d.log"; fail "wild2_ddp3 $v: mpirun et_replay failed or hung"
    fi
  done
else
  tail -5 "$d.record.log"; fail "recording wild2_ddp3"
fi
[ $status -eq 0 ] && echo "PASS"
exit $status
