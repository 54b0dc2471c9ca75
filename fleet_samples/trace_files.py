# SPDX-License-Identifier: MIT
"""File helpers for the fleet-sample recorder: gzip, the Kineto-layout profiler file, and the
summaries (node counts, ProfilerStep window, rf_id linking) that go into meta.json."""
import collections
import gzip
import json
import re
import shutil


def gzipFile(src, dst):
    # mtime=0 so re-recording identical content gives an identical file
    with open(src, "rb") as fin, open(dst, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fout:
            shutil.copyfileobj(fin, fout)


def writeMeta(path, meta):
    with open(path, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


def writeKinetoLayout(events, path, pid):
    """Write the profiler's events in the Kineto trace layout.

    Debian's torch 1.13 is built without libkineto, so export_chrome_trace writes the legacy
    array (no ids, no args). The profiler's events still carry the RecordFunction handle (as
    FunctionEvent.id) when the ET observer is registered, so we write them the way Kineto does:
    cat cpu_op / user_annotation, args "Record function id" (= ET rf_id) and "External id".
    """
    out = []
    for idx, e in enumerate(sorted(events, key=lambda e: (e.time_range.start, e.id))):
        args = {"External id": e.id, "Record function id": e.id, "Ev Idx": idx,
                "Sequence number": e.sequence_nr, "Fwd thread id": e.fwd_thread}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        # RecordScope 7 is USER_SCOPE (record_function labels), which Kineto files as annotations
        out.append({"ph": "X", "cat": "user_annotation" if e.scope == 7 else "cpu_op",
                    "name": e.trace_name, "pid": pid, "tid": e.thread,
                    "ts": round(e.time_range.start, 3),
                    "dur": round(e.time_range.end - e.time_range.start, 3), "args": args})
    doc = {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": out,
           "etbench_note": "written by fleet_samples/trace_files.py from torch.profiler events "
                           "(torch built without libkineto); ts in us since profiler start; "
                           "tid is the RecordFunction thread id, as in the ET"}
    with gzip.GzipFile(path, "wb", mtime=0, compresslevel=9) as f:
        f.write(json.dumps(doc, separators=(",", ":")).encode())


def loadEtTolerant(path):
    """Parse an ET; if the file is invalid JSON (the 1.0.1 observer writes strings unescaped),
    parse node by node and count the nodes that still fail."""
    with gzip.open(path, "rt") as f:
        text = f.read()
    try:
        return json.loads(text), None
    except json.JSONDecodeError as err:
        problem = "invalid JSON: %s" % err
    head = json.loads(text[:text.index('"nodes"')] + '"nodes": []}')
    body = text[text.index("[", text.index('"nodes"')) + 1:text.rindex("]")]
    nodes, bad = [], 0
    for chunk in re.split(r"\n    },\n    {", body):
        chunk = "{" + chunk.strip().lstrip("{").rstrip("}").strip() + "}"
        try:
            nodes.append(json.loads(chunk))
        except json.JSONDecodeError:
            bad += 1
    head["nodes"] = nodes
    return head, "%s; %d node(s) unparseable on their own" % (problem, bad)


def summarizeEt(path, step_name):
    doc, problem = loadEtTolerant(path)
    nodes = doc["nodes"]
    by_id = {n["id"]: n for n in nodes}
    children = collections.defaultdict(list)
    for n in nodes:
        if n["parent"] != n["id"]:
            children[n["parent"]].append(n["id"])
    steps = [n for n in nodes if n["name"].startswith("ProfilerStep#")]
    window = [n for n in steps if n["name"] == step_name]
    in_window, top_level = 0, 0
    if window:
        stack = list(children[window[0]["id"]])
        top_level = len(stack)
        while stack:
            nid = stack.pop()
            in_window += 1
            stack.extend(children[nid])
    threads = [n for n in nodes if n["name"].endswith("|thread]")]
    ops = [n for n in nodes if n["op_schema"]]
    names = collections.Counter(n["name"] for n in nodes)
    comm = {k: v for k, v in names.items()
            if "param_comms" in k or k.startswith(("c10d::", "gloo:", "nccl:"))}
    rf = [n["rf_id"] for n in nodes if n["rf_id"]]
    return {
        "schema": doc.get("schema"), "valid_json": problem is None, "defect": problem,
        "nodes": len(nodes), "aten_ops_with_schema": len(ops), "threads": len(threads),
        "profiler_steps": [n["name"] for n in steps],
        "window_nodes": in_window, "window_top_level_nodes": top_level,
        "autograd_nodes_in_trace": sum(v for k, v in names.items()
                                       if k.startswith("autograd::engine::evaluate_function")),
        "comm_nodes": comm,
        "process_group_init": names.get("## process_group:init ##", 0),
        "dangling_parents": sum(1 for n in nodes if n["parent"] not in by_id),
        "rf_ids_unique": len(rf) == len(set(rf)),
        "top_ops": names.most_common(8),
    }


def summarizeKineto(kineto_path, et_path):
    with gzip.open(kineto_path, "rt") as f:
        events = json.load(f)["traceEvents"]
    doc, _ = loadEtTolerant(et_path)
    et_rf = {n["rf_id"] for n in doc["nodes"] if n["rf_id"]}
    k_rf = {e["args"]["Record function id"] for e in events}
    return {"events": len(events), "rf_ids_matching_et": len(et_rf & k_rf),
            "et_rf_ids": len(et_rf), "kineto_rf_ids_not_in_et": len(k_rf - et_rf)}
