#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Builds a large PyTorch ET JSON by repeating the nodes of a real trace.

Every copy of the source's nodes gets fresh unique ids (id + k * stride),
parents remapped the same way, rf_ids shifted and ProfilerStep numbers
advanced, so the result is a valid trace of many iterations. The root
nodes ([pytorch|profiler|execution_trace|...]) appear once and every copy
hangs under them. Output is plain JSON laid out like the observer writes it.

    make_large_et.py --src resnet_2gpu_et.json.gz --out big.json --size-mb 512
"""
import argparse
import gzip
import json
import os
import re
import sys

ROOT_PREFIX = "[pytorch|profiler|execution_trace|"
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def compact(value):
    return json.dumps(value, separators=(",", ":"))


def node_text(node):
    """One node in the observer's layout: top-level keys spaced, values compact."""
    parts = []
    for key, value in node.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{json.dumps(k)}: {compact(v)}" for k, v in value.items())
            parts.append(f"{json.dumps(key)}: {{{inner}}}")
        elif key == "attrs":
            parts.append(f"{json.dumps(key)}: [" +
                         ", ".join(json.dumps(a) for a in value) + "]")
        else:
            parts.append(f"{json.dumps(key)}: {json.dumps(value)}")
    return "    {\n      " + ",\n      ".join(parts) + "\n    }"


def shifted(node, k, stride, roots, steps):
    """Copy k of `node`: ids, parent, rf_id and step number moved."""
    out = dict(node)
    out["id"] = node["id"] + k * stride
    parent_key = "ctrl_deps" if "ctrl_deps" in node else "parent"
    parent = node.get(parent_key, 0)
    if parent and parent not in roots:
        out[parent_key] = parent + k * stride
    m = STEP.match(node.get("name", ""))
    if m:
        out["name"] = f"ProfilerStep#{int(m.group(1)) + k * steps}"
    if "attrs" in node:
        attrs = []
        for a in node["attrs"]:
            if a.get("name") == "rf_id" and isinstance(a.get("value"), int) and a["value"]:
                a = dict(a, value=a["value"] + k * stride)
            attrs.append(a)
        out["attrs"] = attrs
    elif node.get("rf_id"):
        out["rf_id"] = node["rf_id"] + k * stride
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True, help="a real PyTorch ET JSON (.json/.json.gz)")
    ap.add_argument("--out", required=True, help="output .json (plain)")
    ap.add_argument("--size-mb", type=float, default=512, help="stop once this size is reached")
    args = ap.parse_args()

    trace = load(args.src)
    nodes = trace["nodes"]
    roots = {n["id"] for n in nodes if n.get("name", "").startswith(ROOT_PREFIX)}
    body = [n for n in nodes if n["id"] not in roots]
    stride = 10 ** len(str(max(n["id"] for n in nodes) + 1))
    steps = sum(1 for n in nodes if STEP.match(n.get("name", ""))) or 1
    target = int(args.size_mb * 1024 * 1024)

    header = {k: v for k, v in trace.items() if k != "nodes"}
    written = copies = count = 0
    with open(args.out, "w") as f:
        head = "{\n  " + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}"
                                   for k, v in header.items()) + ",\n  \"nodes\": [\n"
        f.write(head)
        written += len(head)
        first = True
        # Copy 0 is the original (roots included); later copies skip the roots.
        k = 0
        while k == 0 or written < target:
            chunk = []
            for n in (nodes if k == 0 else body):
                chunk.append(("" if first else ",\n") + node_text(shifted(n, k, stride, roots, steps)))
                first = False
            text = "".join(chunk)
            f.write(text)
            written += len(text.encode())
            count += len(nodes if k == 0 else body)
            copies += 1
            k += 1
        f.write("\n  ]\n}\n")
    print(f"{args.out}: {os.path.getsize(args.out)} bytes, {count} nodes "
          f"({copies} copies of {len(body)} nodes from {args.src})", file=sys.stderr)


if __name__ == "__main__":
    main()
