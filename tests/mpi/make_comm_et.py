#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes small per-rank PyTorch ETs (1.1.0-chakra.0.0.4 layout, as recorded
by torch's ExecutionTraceObserver) made of record_param_comms nodes with
comm attrs, a `## process_group:init ##` node and a few aten ops between.

  make_comm_et.py groups OUTDIR   4 ranks: world all_reduce, then all_reduce
                                  and all_to_all in two groups {0,2} {1,3}
  make_comm_et.py throw OUTDIR    2 ranks: rank 1 fails mid-replay (a send to
                                  rank 5, outside the 2-rank world) while
                                  rank 0 waits in a recv from it
  make_comm_et.py stall OUTDIR    2 ranks: rank 1 waits in a recv nobody
                                  sends while rank 0 waits in an all_reduce
  make_comm_et.py bench OUTDIR [--world N] [--mb 16 64] [--calls K]
                                  large all_reduce / all_to_all (benchmark)

Files are OUTDIR/<kind>.rank<R>.et.json; with --expect FILE, FILE gets what
the tests check (JSON): per rank the payload bytes of one iteration (nccl-tests
sizes of every call, summed here from the sizes written) and the ids of the
nodes a failure must name. Standard library only, so that the tests do not
need torch.
"""
import argparse
import json
import os


class Builder:
    """Appends nodes under one ProfilerStep, ids and rf_ids in order."""

    def __init__(self, rank, device="cpu"):
        self.rank, self.device = rank, device
        self.nodes, self.next_id, self.rf = [], 10, 3
        self.tensor_id = 1000
        self.comm_bytes = 0
        self.calls = {}  # bench: node id -> (collective, bytes)
        self._node(1, "[pytorch|profiler|execution_trace|process]", 1)
        self._node(2, "[pytorch|profiler|execution_trace|thread]", 1)
        self._node(3, "ProfilerStep#1", 2)

    def _attrs(self, schema, extra=()):
        self.rf += 1
        base = [("rf_id", "uint64", self.rf), ("fw_parent", "uint64", 0),
                ("seq_id", "int64", -1), ("scope", "uint64", 0), ("tid", "uint64", 1),
                ("fw_tid", "uint64", 0), ("op_schema", "string", schema)]
        return [{"name": n, "type": t, "value": v} for n, t, v in list(base) + list(extra)]

    def _node(self, nid, name, parent, inputs=None, outputs=None, schema="", extra=()):
        empty = {"values": [], "shapes": [], "types": []}
        self.nodes.append({"id": nid, "name": name, "ctrl_deps": parent,
                           "inputs": inputs or empty, "outputs": outputs or empty,
                           "attrs": self._attrs(schema, extra)})

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def tensor(self, numel):
        """A fresh tensor value [id, storage, offset, numel, elem size, device]."""
        self.tensor_id += 1
        return [self.tensor_id, self.tensor_id, 0, numel, 4, self.device]

    def pg_init(self, groups):
        cfg = [{"pg_name": name, "pg_desc": desc, "backend_config": "cpu:gloo",
                "ranks": ranks, "group_size": size, "group_count": len(groups)}
               for name, desc, ranks, size in groups]
        val = {"values": [json.dumps(cfg)], "shapes": [[]], "types": ["String"]}
        self._node(4, "## process_group:init ##", 3, inputs=val)

    def mm(self, n):
        a, b, c = self.tensor(n * n), self.tensor(n * n), self.tensor(n * n)
        ins = {"values": [a, b], "shapes": [[n, n], [n, n]],
               "types": ["Tensor(float)", "Tensor(float)"]}
        outs = {"values": [c], "shapes": [[n, n]], "types": ["Tensor(float)"]}
        self._node(self.new_id(), "aten::mm", 3, ins, outs,
                   "aten::mm(Tensor self, Tensor mat2) -> Tensor")

    def add_(self, numel):
        a, b = self.tensor(numel), self.tensor(numel)
        ins = {"values": [a, b, 1], "shapes": [[numel], [numel], []],
               "types": ["Tensor(float)", "Tensor(float)", "Int"]}
        outs = {"values": [a], "shapes": [[numel]], "types": ["Tensor(float)"]}
        self._node(self.new_id(), "aten::add_", 3, ins, outs,
                   "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) "
                   "-> Tensor(a!)")

    def comm(self, coll, numel, pg, start, stride, size, seq, out_numel=None, tensors=None,
             peer=None):
        """One record_param_comms node as c10d's gloo/nccl backends record it;
        `tensors` = (in, out) reuses earlier buffers as a loop would; `peer`
        (send/recv) goes where collectives record the caller's rank. Returns
        the node id and adds the call's nccl-tests size to self.comm_bytes."""
        out_numel = numel if out_numel is None else out_numel
        t_in = tensors[0] if tensors else self.tensor(numel)
        t_out = tensors[1] if tensors else t_in if coll == "allreduce" else self.tensor(out_numel)
        name, desc = pg
        rank_field = self.rank if peer is None else peer
        ins = {"values": [[t_in], seq, [name, desc], rank_field, coll, [], [], start, stride, size],
               "shapes": [[[numel]], [], [[], []], [], [], [], [], [], [], []],
               "types": ["GenericList[Tensor(float)]", "Int", "Tuple[String,String]", "Int",
                         "String", "GenericList[]", "GenericList[]", "Int", "Int", "Int"]}
        outs = {"values": [[t_out]], "shapes": [[[out_numel]]],
                "types": ["GenericList[Tensor(float)]"]}
        extra = [("collective_name", "string", coll), ("dtype", "string", "Float"),
                 ("in_msg_nelems", "uint64", numel), ("out_msg_nelems", "uint64", out_numel),
                 ("in_split_size", "string", "[]"), ("out_split_size", "string", "[]"),
                 ("global_rank_start", "uint64", start), ("global_rank_stride", "uint64", stride),
                 ("pg_name", "string", name), ("pg_desc", "string", desc),
                 ("pg_size", "uint64", size)]
        nid = self.new_id()
        self._node(nid, "record_param_comms", 3, ins, outs, "", extra)
        # all_reduce / all_to_all / send / recv: the message is numel floats.
        self.comm_bytes += 4 * max(numel, out_numel)
        return nid

    def write(self, path):
        doc = {"schema": "1.1.0-chakra.0.0.4", "pid": 1000 + self.rank,
               "time": "2025-01-01 00:00:00", "start_ts": 1, "finish_ts": 2, "nodes": self.nodes}
        with open(path, "w") as f:
            json.dump(doc, f)


def groups_trace(rank):
    """World all_reduce; then the even ranks {0,2} and odd ranks {1,3} each
    run an all_reduce and an all_to_all in their own group (stride 2)."""
    world = ("0", "default_pg")
    sub = ("1", "even") if rank % 2 == 0 else ("2", "odd")
    b = Builder(rank)
    b.pg_init([("0", "default_pg", [], 4), ("1", "even", [0, 2], 2), ("2", "odd", [1, 3], 2)])
    b.mm(32)
    b.comm("allreduce", 4096, world, 0, 1, 4, 1)
    b.add_(4096)
    b.comm("allreduce", 1024 * (1 + rank % 2), sub, rank % 2, 2, 2, 1)
    b.mm(16)
    b.comm("all_to_all", 2048, sub, rank % 2, 2, 2, 2)
    b.comm("allreduce", 256, world, 0, 1, 4, 2)
    return b


def throw_trace(rank):
    """A world all_reduce, then rank 0 receives from rank 1 while rank 1's
    send names peer 5: an input error that only shows when rank 1 reaches
    that node (the pre-flight compares collectives, not point-to-point)."""
    world = ("0", "default_pg")
    b = Builder(rank)
    b.pg_init([("0", "default_pg", [], 2)])
    b.mm(32)
    b.comm("allreduce", 4096, world, 0, 1, 2, 1)
    b.add_(4096)
    failing = b.comm("recv" if rank == 0 else "send", 512, world, 0, 1, 2, 2,
                     peer=1 if rank == 0 else 5)
    b.comm("allreduce", 256, world, 0, 1, 2, 3)
    return b, {"failing_node": failing}


def stall_trace(rank):
    """Same collectives on both ranks (the pre-flight passes), but rank 1
    first waits in a recv from rank 0 that rank 0 never posts: rank 0 is
    stuck in its second all_reduce, rank 1 in the recv."""
    world = ("0", "default_pg")
    b = Builder(rank)
    b.pg_init([("0", "default_pg", [], 2)])
    b.comm("allreduce", 4096, world, 0, 1, 2, 1)
    b.mm(16)
    stuck = None
    if rank == 1:
        stuck = b.comm("recv", 512, world, 0, 1, 2, 2, peer=0)
    blocked = b.comm("allreduce", 256, world, 0, 1, 2, 3)
    return b, {"stuck_node": stuck if rank == 1 else blocked}


def bench_trace(rank, world, mbs, calls, reuse):
    """`calls` calls per size and type; with `reuse` they share one buffer
    (in-place all_reduce, send/recv pair for all_to_all) like a plain loop."""
    b = Builder(rank)
    b.pg_init([("0", "default_pg", [], world)])
    seq = 0
    for mb in mbs:
        numel = int(mb * 1024 * 1024 / 4) // world * world
        for coll in ("allreduce", "all_to_all"):
            t_in = b.tensor(numel)
            shared = (t_in, t_in if coll == "allreduce" else b.tensor(numel)) if reuse else None
            for _ in range(calls):
                seq += 1
                nid = b.comm(coll, numel, ("0", "default_pg"), 0, 1, world, seq, tensors=shared)
                b.calls[nid] = ("all_reduce" if coll == "allreduce" else coll, numel * 4)
    return b


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("kind", choices=["groups", "throw", "stall", "bench"])
    p.add_argument("outdir")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--mb", type=float, nargs="+", default=[16, 64])
    p.add_argument("--calls", type=int, default=1, help="calls per size and type (bench)")
    p.add_argument("--expect", help="write the expected per-rank bytes and node ids here")
    p.add_argument("--reuse", action="store_true", help="bench: calls of a size share buffers")
    a = p.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    world = {"groups": 4, "throw": 2, "stall": 2}.get(a.kind, a.world)
    expect = {"comm_bytes": []}
    for r in range(world):
        if a.kind == "groups":
            b, ids = groups_trace(r), {}
        elif a.kind == "throw":
            b, ids = throw_trace(r)
        elif a.kind == "stall":
            b, ids = stall_trace(r)
        else:
            b = bench_trace(r, world, a.mb, a.calls, a.reuse)
            ids = {"calls": b.calls} if r == 0 else {}
        b.write(os.path.join(a.outdir, f"{a.kind}.rank{r}.et.json"))
        expect["comm_bytes"].append(b.comm_bytes)
        for k, v in ids.items():
            expect.setdefault(k, []).append(v)
    if a.expect:
        with open(a.expect, "w") as f:
            json.dump(expect, f)


if __name__ == "__main__":
    main()
