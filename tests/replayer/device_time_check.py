#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks et_replay's original device times against the profiler file itself.

Usage: device_time_check.py ET_REPLAY TRACES_DIR WORK_DIR

For public GPU traces with their Kineto files, et_replay --device cpu
--report-json must give each replayed op the original's device time, and
each op kind the sum, computed here by another rule than the linker's:

  A GPU event (kernel, memcpy, memset) belongs to the CUDA runtime call with
  its correlation id; the call belongs to every op whose CPU span (same
  thread) contains it. An op's device time is the sum of the GPU events of
  the calls inside its span: a top-level op's span contains its children's,
  so their kernels count once, for it.

The linker instead follows External ids to the innermost op and walks the
ET's parent links up to the replayed op. The op's span comes from the
profiler's op event with the ET node's rf_id (as "Record function id", or
"External id" in older files) and the same name.

On CPU the replay's own device columns must be absent. Exit 77 (skip) when
the traces are missing.
"""
import collections
import gzip
import json
import os
import subprocess
import sys

PAIRS = [
    ("param/at-fe2a39d0/resnet_et.json.gz", "param/resnet_kineto.json.gz"),
    ("param/linear_et.json.gz", "param/linear_kineto.json.gz"),
    ("hta/benchmark_simple_add_et.json.gz", "hta/benchmark_simple_add_trace.json.gz"),
]
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
OP_CATS = {"cpu_op", "Operator", "user_annotation"}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def op_spans(events, ids_by_node):
    """Node id -> (tid, begin, end) for the ops named and numbered as in the ET."""
    best = {}
    for key in ("Record function id", "External id"):
        by_id = {}
        for e in events:
            if e.get("ph") != "X" or e.get("cat") not in OP_CATS:
                continue
            rid = e.get("args", {}).get(key)
            if rid is not None:
                by_id.setdefault(int(rid), []).append(e)
        spans = {}
        for node, (rf, name) in ids_by_node.items():
            for e in by_id.get(rf, []):
                if e["name"] == name:
                    spans[node] = (e["tid"], e["ts"], e["ts"] + e["dur"])
                    break
        if len(spans) > len(best):
            best = spans
    return best


def device_per_op(kineto_path, et_path, node_ids):
    events = load(kineto_path)
    events = events["traceEvents"] if isinstance(events, dict) else events
    et = load(et_path)
    ids = {n["id"]: (n.get("rf_id", 0), n["name"]) for n in et["nodes"] if n["id"] in node_ids}
    spans = op_spans(events, ids)
    gpu_by_corr = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS and "correlation" in e.get("args", {}):
            gpu_by_corr[int(e["args"]["correlation"])] += float(e["dur"])
    launches = collections.defaultdict(list)  # tid -> [(ts, end, device us)]
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in RUNTIME_CATS:
            continue
        corr = e.get("args", {}).get("correlation")
        if corr is not None and int(corr) in gpu_by_corr:
            launches[e["tid"]].append((e["ts"], e["ts"] + e["dur"], gpu_by_corr[int(corr)]))
    out = {}
    for node, (tid, begin, end) in spans.items():
        total = [us for (ts, te, us) in launches[tid] if begin <= ts and te <= end]
        if total:
            out[node] = sum(total)
    return out, len(spans)


def check(et_replay, traces, work, et_rel, kineto_rel):
    et, kineto = os.path.join(traces, et_rel), os.path.join(traces, kineto_rel)
    report = os.path.join(work, os.path.basename(et_rel) + ".report.json")
    cmd = [et_replay, et, "--kineto", kineto, "--device", "cpu", "--warmup", "0", "--iters", "1",
           "--threads", "1", "--quiet", "--report-json", report]
    subprocess.run(cmd, check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    with open(report) as f:
        r = json.load(f)
    ops = r["ops"]
    want, linked = device_per_op(kineto, et, {o["node_id"] for o in ops})
    # Every op is compared: one without a span here must have no device
    # time there either.
    errors = []
    assert want, f"{et_rel}: no kernels found under the replayed ops by the independent rule"
    for o in ops:
        got, exp = o.get("original_device_us"), want.get(o["node_id"])
        if "device_us" in o:
            errors.append(f"node {o['node_id']}: replay device_us on CPU")
        if (got is None) != (exp is None) or (got is not None and abs(got - exp) > 1e-6 * max(1, exp)):
            errors.append(f"node {o['node_id']} {o['name']}: original_device_us {got}, expected {exp}")
    kinds = collections.defaultdict(float)
    for o in ops:
        if o["node_id"] in want:
            kinds[o["name"]] += want[o["node_id"]]
    for k in r["kinds"]:
        got, exp = k.get("original_device_us"), kinds.get(k["name"])
        if (got is None) != (exp is None) or (got is not None and abs(got - exp) > 1e-6 * max(1, exp)):
            errors.append(f"kind {k['name']}: original_device_us {got}, expected {exp}")
    d = r.get("device_time", {})
    total = sum(want.values()) / 1e3
    if abs(d.get("original_ops_ms", -1) - total) > 1e-6 * max(1, total):
        errors.append(f"device_time.original_ops_ms {d.get('original_ops_ms')}, expected {total}")
    if d.get("iters", -1) != 0 or "replay_ms" in d:
        errors.append(f"device_time on CPU: iters {d.get('iters')}, replay_ms {d.get('replay_ms')}")
    print(f"{et_rel}: {len(ops)} ops, {linked} with a profiler span, {len(want)} with kernels, "
          f"{total:.3f} ms of kernels; {len(errors)} disagreements")
    for e in errors[:20]:
        print("  " + e)
    return not errors


def main():
    et_replay, traces, work = sys.argv[1:4]
    if not all(os.path.exists(os.path.join(traces, p)) for pair in PAIRS for p in pair):
        print("public traces not found under", traces)
        return 77
    os.makedirs(work, exist_ok=True)
    ok = [check(et_replay, traces, work, et, k) for et, k in PAIRS]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
