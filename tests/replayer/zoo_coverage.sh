#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# zoo_coverage.sh ET_REPLAY ET_COMPOSE SOURCE_DIR WORK_DIR [MODEL...]
# Architectures and training styles the fleet samples lack, seen as a user meets them: each
# zoo model (fleet_samples/zoo_models.py) is recorded fresh with Debian's torch 1.13
# (record.py, as a user would), and the committed fleet_samples/zoo/ samples are taken as
# they are; each replays with et_replay --threads 1 --verify (and --load-library with
# torchvision's operator library when python3-torchvision has one). Per trace it checks:
#   - the operators selected equal those of a separate parse of the ET
#     (zoo_expected_ops.py), in count and per op name;
#   - coverage >= 99%, with every skipped op's reason printed;
#   - no replayed output differs from the recorded shape, dtype or strides;
#   - et_compose --repeat 2 (two chained copies of the step) passes its shape check.
# Prints: model | ops | replayed | skipped | adapted. Exit 77 (skipped) without torch.
set -u
replay=$1 compose=$2 src=$3 work=$4
shift 4
py=${ETB_PYTHON:-/usr/bin/python3}
models=("$@")
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "SKIP: $py has no torch (python3-torch) to record the zoo with"; exit 77
fi
# torchvision's operator library (torchvision::roi_align, nms) for zoo_detect, as a user
# would pass it: et_replay --load-library.
tvlib=$("$py" -c "import glob, os, torchvision; print(glob.glob(os.path.join(os.path.dirname(torchvision.__file__), '_C*.so'))[0])" 2>/dev/null)
if [ ${#models[@]} -eq 0 ]; then
  models=(zoo_rnn zoo_autoencoder zoo_mobilenet zoo_vit zoo_sparse zoo_moe zoo_misc zoo_speech zoo_qat)
  if [ -n "$tvlib" ]; then models+=(zoo_detect); else echo "note: no torchvision library: zoo_detect left out"; fi
fi
libs=(); [ -n "$tvlib" ] && libs=(--load-library "$tvlib")
rm -rf "$work" && mkdir -p "$work"
traces=()
for m in "${models[@]}"; do
  "$py" "$src/fleet_samples/record.py" --model "$m" --out-dir "$work/$m" --warmup 1 --iters 1 \
    > "$work/$m.record.log" 2>&1 || { cat "$work/$m.record.log"; echo "FAIL: recording $m"; exit 1; }
  traces+=("$work/$m/$m.et.json.gz")
done
for t in "$src"/fleet_samples/zoo/*/*.et.json.gz; do [ -f "$t" ] && traces+=("$t"); done
status=0
printf '%-34s %6s %8s %7s %7s\n' model ops replayed skipped adapted
for t in "${traces[@]}"; do
  name=$(basename "$t" .et.json.gz)
  [[ $t == "$src"/fleet_samples/* ]] && name="$name (committed)"
  out="$work/$(basename "$t" .et.json.gz).$([[ $t == "$src"/fleet_samples/* ]] && echo c || echo f)"
  lib=(); zcat "$t" | grep -q '"torchvision::' && lib=("${libs[@]}")
  if ! "$replay" "$t" "${lib[@]}" --threads 1 --warmup 0 --iters 1 --verify --quiet \
      --report-json "$out.json" > "$out.log" 2>&1; then
    tail -5 "$out.log"; echo "FAIL: $name: et_replay exited non-zero"; status=1; continue
  fi
  "$py" "$src/tests/replayer/zoo_expected_ops.py" "$t" > "$out.expected.json" || { status=1; continue; }
  if ! "$compose" "$t" --repeat 2 -o "$out.x2.json.gz" > "$out.compose.log" 2>&1; then
    grep -m3 error "$out.compose.log"; echo "FAIL: $name: et_compose --repeat 2 refused it"; status=1
  fi
  "$py" - "$name" "$out.json" "$out.expected.json" "$out.log" <<'PY' || status=1
import collections, json, sys
name, report, expected, log = sys.argv[1:]
r, e = json.load(open(report)), json.load(open(expected))
c = r["coverage"]
print("%-34s %6d %8d %7d %7d" % (name, c["operators"], c["replayed"], c["skipped"], c["adapted"]))
for reason, n in c["skipped_by_reason"].items():
    print("    skipped %d: %s" % (n, reason))
for op in c["adapted_ops"]:
    print("    adapted node %d %s: %s" % (op["node_id"], op["name"], op["reason"]))
bad = []
if c["operators"] != e["operators"]:
    bad.append("selected %d operators, the trace has %d" % (c["operators"], e["operators"]))
got = collections.Counter(o["name"] for o in r["ops"] if not o["is_comm"])
diff = {k: (got.get(k, 0), v) for k, v in e["by_name"].items() if got.get(k, 0) != v}
diff.update({k: (v, 0) for k, v in got.items() if k not in e["by_name"]})
if diff:
    bad.append("per-name counts (replay, trace) differ: %s" % dict(list(diff.items())[:5]))
if c["replayed"] < 0.99 * c["operators"]:
    bad.append("coverage %d/%d below 99%%" % (c["replayed"], c["operators"]))
mism = [l.strip() for l in open(log) if "!= recorded" in l or "output is undefined" in l]
if mism:
    bad.append("%d outputs differ from the recording, first: %s" % (len(mism), mism[0]))
for b in bad:
    print("FAIL: %s: %s" % (name, b))
sys.exit(1 if bad else 0)
PY
done
[ $status -eq 0 ] && echo "PASS: ${#traces[@]} traces"
exit $status
