# SPDX-License-Identifier: MIT
"""What a GPU fleet sample (fleet_samples/gpu_h200/<name>/) holds, from a parse of its files
that shares nothing with etbench's readers or its Kineto linker (python's json only).

  gpu_h200_expect.py SAMPLE_DIR NAME  ->  prints the expectations as JSON:
  - nodes: the ET's node count; operators_in_step: the top-most nodes with an op schema below
    the roots (thread nodes, labels such as autograd nodes or optimizer scopes looked through)
    from the ProfilerStep#N node's id on: the recording holds one step, and the backward's
    nodes hang off the autograd thread's node, not the step's;
  - rf_linked: ET nodes whose rf_id (attrs) is the "Record function id" of a host event
    (cpu_op / user_annotation) of the same name in the Kineto file;
  - gpu_events, gpu_us: the step's GPU activity, by this rule: events of cat kernel,
    gpu_memcpy or gpu_memset whose args.correlation names a cuda_runtime or cuda_driver event
    of the host process that starts and ends inside the host-side ProfilerStep#N
    user_annotation (N from meta.json window.profiler_step). Not the gpu_user_annotation
    ProfilerStep#N span: libkineto draws it only around kernels launched from the thread that
    entered the step, so the backward's kernels (autograd thread) fall outside it (mlp: 13 of
    41 inside);
  - iter_ms_median: meta.json original.iter_ms_median (the unprofiled original), and
    iter_ms_list_median, the median of its iter_ms list (rounded to 1 us by record.py).
"""
import collections
import gzip
import json
import statistics
import sys

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


def attrs(node):
    # schema 1.1.x keeps rf_id and op_schema in a list of {name, type, value}
    out = {a["name"]: a["value"] for a in node.get("attrs", [])}
    for key in ("rf_id", "op_schema"):
        if key in node:
            out[key] = node[key]
    return out


def parentOf(node):
    return node["ctrl_deps"] if "ctrl_deps" in node else node["parent"]


def stepOps(nodes, step_name):
    children = collections.defaultdict(list)
    for n in nodes:
        if parentOf(n) != n["id"]:
            children[parentOf(n)].append(n)
    steps = [n for n in nodes if n["name"] == step_name]
    if len(steps) != 1:
        raise SystemExit("expected one %s node, found %d" % (step_name, len(steps)))
    roots = [n for n in nodes if parentOf(n) == n["id"] or parentOf(n) not in {m["id"] for m in nodes}]
    found, stack = [], list(roots)
    while stack:
        for c in children[stack.pop()["id"]]:
            if attrs(c).get("op_schema"):
                if c["id"] >= steps[0]["id"]:
                    found.append(c)  # top-most: its own children are its internals
            else:
                stack.append(c)
    return found


def gpuActivity(events, step_name):
    steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
             and e.get("name") == step_name]
    if len(steps) != 1:
        raise SystemExit("expected one host %s event, found %d" % (step_name, len(steps)))
    step = steps[0]
    lo, hi = step["ts"], step["ts"] + step["dur"]
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS
                and e.get("pid") == step["pid"] and "correlation" in e.get("args", {})}
    picked = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in GPU_CATS:
            continue
        launch = launches.get(e.get("args", {}).get("correlation"))
        if launch and lo <= launch["ts"] and launch["ts"] + launch["dur"] <= hi:
            picked.append(e)
    return picked, len([e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATS])


def main(sample_dir, name):
    base = "%s/%s" % (sample_dir, name)
    with gzip.open(base + ".et.json.gz", "rt") as f:
        nodes = json.load(f)["nodes"]
    with gzip.open(base + ".kineto.json.gz", "rt") as f:
        events = json.load(f)["traceEvents"]
    with open(base + ".meta.json") as f:
        meta = json.load(f)
    step_name = meta["window"]["profiler_step"]
    host = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"):
            rf = e.get("args", {}).get("Record function id")
            if rf:
                host[rf] = e["name"]
    rf_linked = sum(1 for n in nodes if attrs(n).get("rf_id") and host.get(attrs(n)["rf_id"]) == n["name"])
    gpu, gpu_all = gpuActivity(events, step_name)
    print(json.dumps({
        "nodes": len(nodes),
        "operators_in_step": len(stepOps(nodes, step_name)),
        "rf_ids": sum(1 for n in nodes if attrs(n).get("rf_id")),
        "rf_linked": rf_linked,
        "gpu_events": len(gpu),
        "gpu_events_in_file": gpu_all,
        "gpu_us": sum(e["dur"] for e in gpu),
        "iter_ms_median": meta["original"]["iter_ms_median"],
        "iter_ms_list_median": statistics.median(meta["original"]["iter_ms"]),
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
