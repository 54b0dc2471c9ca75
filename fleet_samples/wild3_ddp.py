# SPDX-License-Identifier: MIT
"""Multi-rank steps of a third sweep, recorded per rank over gloo on 127.0.0.1 (ddp_record.py's
layout):

  --kind pipe   pipeline parallelism on 2 or 4 ranks: stage 0 (even ranks) and stage 1 (odd
                ranks) pass activations forward and gradients back point-to-point, micro-batch 0
                with blocking send/recv, micro-batch 1 with isend/irecv + wait, and the gradient
                of micro-batch 1 with batch_isend_irecv; at 4 ranks the two data-parallel copies
                of each stage all_reduce their gradients on a sub-group (new_group); then
                barrier, all_gather_object and broadcast_object_list (pickled objects).
  --kind acc    DistributedDataParallel with 2 micro-batches accumulated under no_sync() and a
                third that synchronises; a second DDP module with static_graph=True whose
                branch the step leaves unused; Adam.

  /usr/bin/python3 fleet_samples/wild3_ddp.py --kind pipe --ranks 2 --out-dir /tmp/w3p

Writes wild3_<kind><N>.rank<R>.{et,kineto,chrome_legacy}.json.gz.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_record  # noqa: E402
import record  # noqa: E402


def _pgConfig(world, groups):
    cfg = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo",
            "ranks": [], "group_size": world, "group_count": 1 + len(groups)}]
    for i, ranks in enumerate(groups):
        cfg.append({"pg_name": str(i + 1), "pg_desc": "stage_dp", "backend_config": "cpu:gloo",
                    "ranks": ranks, "group_size": len(ranks), "group_count": 1 + len(groups)})
    return cfg


def _pipeStep(rank, world, args, gen):
    """Two pipeline stages; rank r is stage r % 2 of pipeline r // 2."""
    stage, peer = rank % 2, rank ^ 1
    dim, mb = args.dim, args.batch
    if stage == 0:
        model = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim))
    else:
        model = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    xs = [torch.randn(mb, dim, generator=gen) for _ in range(2)]
    ys = [torch.randint(0, 4, (mb,), generator=gen) for _ in range(2)]
    # every rank calls new_group for every group, in the same order
    groups = [[s, s + 2] for s in range(2)] if world == 4 else []
    dp = [dist.new_group(g) for g in groups]
    my_dp = dp[stage] if dp else None

    def stage0():
        outs = [model(x) for x in xs]
        dist.send(outs[0].detach(), dst=peer)                 # micro-batch 0: blocking
        dist.isend(outs[1].detach(), dst=peer).wait()         # micro-batch 1: async
        g0, g1 = torch.empty(mb, dim), torch.empty(mb, dim)
        dist.recv(g0, src=peer)
        for req in dist.batch_isend_irecv([dist.P2POp(dist.irecv, g1, peer)]):
            req.wait()
        torch.autograd.backward(outs, [g0, g1])

    def stage1():
        acts = [torch.empty(mb, dim) for _ in range(2)]
        dist.recv(acts[0], src=peer)
        dist.irecv(acts[1], src=peer).wait()
        grads = []
        for a, y in zip(acts, ys):
            a.requires_grad_(True)
            F.cross_entropy(model(a), y).backward()
            grads.append(a.grad)
        dist.send(grads[0], dst=peer)
        for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, grads[1], peer)]):
            req.wait()

    def step():
        opt.zero_grad()
        (stage0 if stage == 0 else stage1)()
        if my_dp is not None:
            for p in model.parameters():
                dist.all_reduce(p.grad, group=my_dp)
        opt.step()
        dist.barrier()
        stats = [None] * world
        dist.all_gather_object(stats, {"rank": rank, "norm": float(model[0].weight.norm())})
        cfg = [{"lr": 0.01, "step": rank}] if rank == 0 else [None]
        dist.broadcast_object_list(cfg, src=0)
    return step, groups


class _Branchy(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.body = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 4)
        self.aux = nn.Linear(dim, 4)  # never used in the step: the static graph knows it

    def forward(self, x):
        return self.head(F.relu(self.body(x)))


def _accStep(rank, world, args, gen):
    dim, mb = args.dim, args.batch
    # torch 1.13's static_graph reducer asserts (expect_autograd_hooks_) under no_sync, so the
    # accumulating module is a plain DDP and the static graph is the branchy one's.
    acc = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 4)))
    branchy = nn.parallel.DistributedDataParallel(_Branchy(dim), static_graph=True)
    opt = torch.optim.Adam(list(acc.parameters()) + list(branchy.parameters()), lr=1e-3)
    xs = [torch.randn(mb, dim, generator=gen) for _ in range(3)]
    ys = [torch.randint(0, 4, (mb,), generator=gen) for _ in range(3)]

    def step():
        opt.zero_grad(set_to_none=True)
        with acc.no_sync():
            for x, y in zip(xs[:2], ys[:2]):
                (F.cross_entropy(acc(x), y) / 3).backward()
        (F.cross_entropy(acc(xs[2]), ys[2]) / 3).backward()  # all_reduce of the sum
        F.cross_entropy(branchy(xs[0]), ys[0]).backward()
        opt.step()
    return step, []


def _worker(rank, args, port):
    world = args.ranks
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    record.metrics.setThreads(torch, 1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1234)
    gen = torch.Generator().manual_seed(1234 + rank)
    step, groups = (_pipeStep if args.kind == "pipe" else _accStep)(rank, world, args, gen)
    record.timeIterations(step, args.warmup, args.iters, barrier=dist.barrier)
    prefix = os.path.join(args.out_dir, "%s.rank%d" % (args.name, rank))
    dist.barrier()
    record.recordWindow(step, prefix, args.warmup + args.iters, pg_config=_pgConfig(world, groups))
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kind", choices=["pipe", "acc"], default="pipe")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--name", help="file prefix (default wild3_<kind><ranks>)")
    args = ap.parse_args()
    if args.kind == "pipe" and args.ranks not in (2, 4):
        ap.error("--kind pipe: 2 or 4 ranks (2 stages, 1 or 2 data-parallel copies)")
    args.name = args.name or "wild3_%s%d" % (args.kind, args.ranks)
    os.makedirs(args.out_dir, exist_ok=True)
    mp.spawn(_worker, args=(args, ddp_record._freePort()), nprocs=args.ranks, join=True)
    print("wrote %s/%s.rank<R>.et.json.gz for %d ranks" % (args.out_dir, args.name, args.ranks))


if __name__ == "__main__":
    main()
