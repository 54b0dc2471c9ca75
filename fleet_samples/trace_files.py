# SPDX-License-Identifier: MIT
"""File helpers for the fleet-sample recorder: gzip, the Kineto-layout profiler file, and the
summaries (node counts, ProfilerStep window, rf_id linking) that go into meta.json."""
import collections
import difflib
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


def recordFunctionIds(rows, et_nodes):
    """The ET rf_id of each profiler row, or 0 where none corresponds.

    rows: dicts with "name", "tid" and "corr" (the profiler's correlation id, FunctionEvent.id).
    In torch 1.13 built without libkineto that id is the profiler's own counter, not the
    RecordFunction handle the ET calls rf_id: the two agree only while both callbacks see the same
    record functions. On DDP runs they part (the profiler counts events the observer does not), so
    the ids of a whole step name other ops. Both counters grow in start order on a thread, so the
    profiler's events and the ET's nodes of one thread are the same sequence of names with a few
    gaps: aligned by name, each profiler event takes the rf_id of the ET node it lines up with."""
    by_rf = {n["rf_id"]: n["name"] for n in et_nodes if n.get("rf_id")}
    agree = sum(1 for r in rows if by_rf.get(r["corr"]) == r["name"])
    if rows and agree >= 0.99 * len(rows):
        return [r["corr"] if by_rf.get(r["corr"]) == r["name"] else 0 for r in rows]
    out = [0] * len(rows)
    et_by_tid = collections.defaultdict(list)
    for n in sorted((n for n in et_nodes if n.get("rf_id")), key=lambda n: n["rf_id"]):
        et_by_tid[n.get("tid", 0)].append(n)
    rows_by_tid = collections.defaultdict(list)
    for i in sorted(range(len(rows)), key=lambda i: rows[i]["corr"]):
        rows_by_tid[rows[i]["tid"]].append(i)
    for tid, idx in rows_by_tid.items():
        nodes = et_by_tid.get(tid, [])
        matcher = difflib.SequenceMatcher(None, [n["name"] for n in nodes],
                                          [rows[i]["name"] for i in idx], autojunk=False)
        for a, b, size in matcher.get_matching_blocks():
            for k in range(size):
                out[idx[b + k]] = nodes[a + k]["rf_id"]
    return out


def writeKinetoLayout(events, path, pid, et_path):
    """Write the profiler's events in the Kineto trace layout.

    Debian's torch 1.13 is built without libkineto, so export_chrome_trace writes the legacy
    array (no ids, no args). We write the events the way Kineto does: cat cpu_op /
    user_annotation, args "External id" (the profiler's correlation id) and "Record function id"
    (the ET rf_id of the same record function, see recordFunctionIds; left out where none).
    """
    rows = [{"name": e.trace_name, "tid": e.thread, "corr": e.id, "event": e}
            for e in sorted(events, key=lambda e: (e.time_range.start, e.id))]
    doc, _ = loadEtTolerant(et_path)
    rf_ids = recordFunctionIds(rows, doc["nodes"])
    out = []
    for idx, (row, rf) in enumerate(zip(rows, rf_ids)):
        e = row["event"]
        args = {"External id": e.id, "Ev Idx": idx,
                "Sequence number": e.sequence_nr, "Fwd thread id": e.fwd_thread}
        if rf:
            args["Record function id"] = rf
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        # RecordScope 7 is USER_SCOPE (record_function labels), which Kineto files as annotations
        out.append({"ph": "X", "cat": "user_annotation" if e.scope == 7 else "cpu_op",
                    "name": e.trace_name, "pid": pid, "tid": e.thread,
                    "ts": round(e.time_range.start, 3),
                    "dur": round(e.time_range.end - e.time_range.start, 3), "args": args})
    writeKinetoDoc(out, path)


def writeKinetoDoc(events, path):
    doc = {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": events,
           "etbench_note": "written by fleet_samples/trace_files.py from torch.profiler events "
                           "(torch built without libkineto); ts in us since profiler start; "
                           "tid is the RecordFunction thread id, as in the ET; Record function "
                           "id aligned to the ET by name in start order per thread"}
    with gzip.GzipFile(path, "wb", mtime=0, compresslevel=9) as f:
        f.write(json.dumps(doc, separators=(",", ":")).encode())


def relinkKinetoFile(kineto_path, et_path):
    """Re-derive "Record function id" in a profiler file written before recordFunctionIds
    existed (it held the correlation id); the events themselves are kept as recorded."""
    with gzip.open(kineto_path, "rt") as f:
        events = json.load(f)["traceEvents"]
    rows = [{"name": e["name"], "tid": e["tid"], "corr": e["args"]["External id"]} for e in events]
    doc, _ = loadEtTolerant(et_path)
    for e, rf in zip(events, recordFunctionIds(rows, doc["nodes"])):
        e["args"].pop("Record function id", None)
        if rf:
            e["args"]["Record function id"] = rf
    writeKinetoDoc(events, kineto_path)


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


def flatNode(n):
    """One node in the 1.0.x layout: schema 1.1.x (torch >= 2.1) renamed parent to ctrl_deps and
    moved rf_id, op_schema and the rest into an attrs list."""
    if "ctrl_deps" in n and "parent" not in n:
        n["parent"] = n["ctrl_deps"]
    for a in n.get("attrs", []):
        n.setdefault(a["name"], a["value"])
    n.setdefault("rf_id", 0)
    n.setdefault("op_schema", "")
    return n


def summarizeEt(path, step_name):
    doc, problem = loadEtTolerant(path)
    nodes = [flatNode(n) for n in doc["nodes"]]
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
    et_rf = {n["rf_id"] for n in map(flatNode, doc["nodes"]) if n["rf_id"]}
    k_rf = {e["args"]["Record function id"] for e in events
            if "Record function id" in e.get("args", {})}
    return {"events": len(events), "rf_ids_matching_et": len(et_rf & k_rf),
            "et_rf_ids": len(et_rf), "kineto_rf_ids_not_in_et": len(k_rf - et_rf)}


if __name__ == "__main__":
    # python3 fleet_samples/trace_files.py relink SAMPLE.kineto.json.gz SAMPLE.et.json.gz
    import sys
    if len(sys.argv) != 4 or sys.argv[1] != "relink":
        sys.exit("usage: trace_files.py relink KINETO_FILE ET_FILE")
    relinkKinetoFile(sys.argv[2], sys.argv[3])
    print(json.dumps(summarizeKineto(sys.argv[2], sys.argv[3])))
