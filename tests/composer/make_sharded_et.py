#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes OUTDIR/sharded.rank<R>.et.json for a 2-rank job whose collectives
change size with the world: an FSDP-style all_gather (full 4096 floats, each
rank holds 4096/2) and reduce_scatter, and an all_to_allv of 256 rows of 16
floats split [128, 128], plus an all_reduce of 4096. Built with the comm ET
writer of tests/mpi/make_comm_et.py (standard library only)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))
from make_comm_et import Builder  # noqa: E402

FULL, WORLD = 4096, 2


def set_splits(node, splits):
    """The 1.1.0 layout: split attrs are JSON text, positional lists ints."""
    for a in node["attrs"]:
        if a["name"] in ("in_split_size", "out_split_size"):
            a["value"] = json.dumps(splits)
    node["inputs"]["values"][5] = list(splits)
    node["inputs"]["values"][6] = list(splits)


def sharded_trace(rank):
    world = ("0", "default_pg")
    b = Builder(rank)
    b.pg_init([("0", "default_pg", [], WORLD)])
    b.mm(32)
    b.comm("all_gather", FULL // WORLD, world, 0, 1, WORLD, 1, out_numel=FULL)
    b.comm("reduce_scatter", FULL, world, 0, 1, WORLD, 2, out_numel=FULL // WORLD)
    b.comm("all_to_allv", FULL, world, 0, 1, WORLD, 3, out_numel=FULL)
    set_splits(b.nodes[-1], [128, 128])
    b.add_(FULL)
    b.comm("allreduce", FULL, world, 0, 1, WORLD, 4)
    return b


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for r in range(WORLD):
        sharded_trace(r).write(os.path.join(out, "sharded.rank%d.et.json" % r))


if __name__ == "__main__":
    main()
