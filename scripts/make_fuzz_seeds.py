#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes seed corpora for the fuzzers from small real traces.

    make_fuzz_seeds.py TRACES_DIR OUT_DIR   -> OUT_DIR/et_json, OUT_DIR/chakra, OUT_DIR/kineto

Seeds are whole tiny traces plus slices of bigger ones (the first nodes of a
JSON trace, the first messages of a Chakra stream) that stay valid, so the
fuzzer starts from inputs that reach deep into the readers. Nothing here is
committed: the seeds are rebuilt from ../shared/traces on every run.
"""
import gzip
import json
import os
import sys
import tarfile


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def json_slices(name, data, out, sizes=(12, 40)):
    """Whole file when small, plus valid traces of its first N nodes."""
    if len(data) <= 64 * 1024:
        write(out, name + ".json", data)
    try:
        trace = json.loads(data)
    except ValueError:  # 1.0.x files may hold unescaped strings: keep whole
        return
    nodes = trace.get("nodes", [])
    # Keep the nodes near the first collective too: that is where the
    # comm parsing lives.
    comm = next((i for i, n in enumerate(nodes) if n.get("name") == "record_param_comms"), None)
    picks = [(f"first{n}", nodes[:n]) for n in sizes if n < len(nodes)]
    if comm is not None:
        picks.append(("comm", nodes[max(0, comm - 6):comm + 4]))
    for tag, part in picks:
        sliced = dict(trace, nodes=part)
        write(out, f"{name}.{tag}.json", json.dumps(sliced).encode())


def varint(data, pos):
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def chakra_slices(name, data, out, counts=(2, 10, 40)):
    """Whole stream when small, plus its first N messages (metadata first)."""
    if len(data) <= 64 * 1024:
        write(out, name, data)
    ends, pos = [], 0
    while pos < len(data) and len(ends) < max(counts):
        size, body = varint(data, pos)
        pos = body + size
        ends.append(pos)
    for n in counts:
        if n < len(ends):
            write(out, f"{name}.first{n}", data[:ends[n - 1]])


def kineto_slices(name, data, out, counts=(20, 200)):
    """Whole trace when small, plus traces of its first N events."""
    if len(data) <= 64 * 1024:
        write(out, name + ".json", data)
    try:
        doc = json.loads(data)
    except ValueError:
        return
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    for n in counts:
        if n < len(events):
            write(out, f"{name}.first{n}.json", json.dumps(dict(traceEvents=events[:n])).encode())


def write(out, name, data):
    with open(os.path.join(out, name.replace("/", "_")), "wb") as f:
        f.write(data)


def main():
    traces, out = sys.argv[1], sys.argv[2]
    et_dir, ch_dir = os.path.join(out, "et_json"), os.path.join(out, "chakra")
    k_dir = os.path.join(out, "kineto")
    for d in (et_dir, ch_dir, k_dir):
        os.makedirs(d, exist_ok=True)
    for rel in ["hta/benchmark_simple_add_trace.json.gz", "param/linear_kineto.json.gz"]:
        path = os.path.join(traces, rel)
        if os.path.exists(path):
            kineto_slices(os.path.basename(rel).split(".")[0], read(path), k_dir)
    for rel in ["hta/benchmark_simple_add_et.json.gz", "param/pt2_et.json",
                "param/linear_et.json.gz", "param/at-fe2a39d0/resnet_et.json.gz",
                "param/1.1.0-chakra.0.0.4/resnet_2gpu_et.json.gz"]:
        path = os.path.join(traces, rel)
        if os.path.exists(path):
            json_slices(os.path.basename(rel).split(".")[0], read(path), et_dir)
    tgz = os.path.join(traces, "chakra/1.0.2-chakra.0.0.4.tgz")
    if os.path.exists(tgz):
        with tarfile.open(tgz) as tar:
            for m in tar.getmembers():
                if m.isfile() and m.name.endswith(".json") and "/._" not in "/" + m.name:
                    json_slices("chakra102", tar.extractfile(m).read(), et_dir)
    for rel in ["astra-sim/microbenchmarks/all_reduce/4npus_1MB/all_reduce.0.et",
                "astra-sim/microbenchmarks/all_to_all/4npus_1MB/all_to_all.1.et",
                "astra-sim/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce.0.et",
                "astra-sim-hybrid-parallelism/test-1-comm-group/chakra_trace.0.et",
                "chakra/at-bb67f055/chakra.0.et"]:
        path = os.path.join(traces, rel)
        if os.path.exists(path):
            chakra_slices(rel.replace("/", "_"), read(path), ch_dir)
    for d in (et_dir, ch_dir, k_dir):
        print(f"{d}: {len(os.listdir(d))} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
