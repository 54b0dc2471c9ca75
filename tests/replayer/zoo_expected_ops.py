# SPDX-License-Identifier: MIT
"""Operators a profiler would show for one recorded step of a torch 1.13 ET, from a parse of
the JSON that shares nothing with etbench's reader: the top-most nodes with an op schema under
the ProfilerStep#N node (labels such as autograd nodes or optimizer scopes are looked through).

  zoo_expected_ops.py TRACE.et.json.gz  ->  prints the count and a per-name tally as JSON
"""
import collections
import gzip
import json
import sys


def expectedOps(path):
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        nodes = json.load(f)["nodes"]
    children = collections.defaultdict(list)
    for n in nodes:
        if n["parent"] != n["id"]:
            children[n["parent"]].append(n)
    steps = [n for n in nodes if n["name"].startswith("ProfilerStep#")]
    if len(steps) != 1:
        raise SystemExit("%s: expected one ProfilerStep node, found %d" % (path, len(steps)))
    found, stack = [], [steps[0]]
    while stack:
        for c in children[stack.pop()["id"]]:
            if c.get("op_schema"):
                found.append(c)  # top-most: its own children are its internals
            else:
                stack.append(c)
    return found


if __name__ == "__main__":
    ops = expectedOps(sys.argv[1])
    tally = collections.Counter(n["name"] for n in ops)
    print(json.dumps({"operators": len(ops), "by_name": dict(tally.most_common())}))
