#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Counts what a simulator sees in Chakra .et files, without protobuf.

Usage: scripts/chakra_stats.py FILE.et [...]
Prints per file: nodes, data_deps edges, ctrl_deps edges, nodes ready at the
start for a data_deps-only feeder (no data_deps), the same for FeederV3 (no
data_deps and no ctrl_deps), nodes with duration_micros and their sum.
A plain wire-format walk (varint32-framed messages, first = GlobalMetadata),
independent of etbench's reader, so figures can be re-measured anywhere.
"""
import gzip
import sys


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7


def fields(msg):
    i = 0
    while i < len(msg):
        key, i = varint(msg, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(msg, i)
        elif wt == 2:
            n, i = varint(msg, i)
            v, i = msg[i:i + n], i + n
        elif wt == 1:
            v, i = msg[i:i + 8], i + 8
        elif wt == 5:
            v, i = msg[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v


def deps(wt, v):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        d, i = varint(v, i)
        out.append(d)
    return out


def stats(path):
    b = open(path, "rb").read()
    if b[:2] == b"\x1f\x8b":
        b = gzip.decompress(b)
    i, first = 0, True
    s = dict(nodes=0, data=0, ctrl=0, ready_data=0, ready_v3=0, timed=0, sum_us=0)
    while i < len(b):
        n, i = varint(b, i)
        msg, i = b[i:i + n], i + n
        if first:
            first = False
            continue
        data = ctrl = dur = 0
        for num, wt, v in fields(msg):
            if num == 4:
                ctrl += len(deps(wt, v))
            elif num == 5:
                data += len(deps(wt, v))
            elif num == 7:
                dur = v
        s["nodes"] += 1
        s["data"] += data
        s["ctrl"] += ctrl
        s["ready_data"] += data == 0
        s["ready_v3"] += data == 0 and ctrl == 0
        s["timed"] += dur > 0
        s["sum_us"] += dur
    return s


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p, " ".join("%s=%d" % kv for kv in stats(p).items()))
