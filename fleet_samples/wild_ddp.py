# SPDX-License-Identifier: MIT
"""A DDP step unlike the fleet's (ddp_record.py), recorded per rank over gloo on 127.0.0.1:
DistributedDataParallel(find_unused_parameters=True) with a branch the step leaves unused, then
explicit collectives a training loop adds around it: broadcast of a buffer from rank 0,
all_gather of per-rank losses, a reduce_scatter-like all_reduce + chunk, all_reduce on a
sub-group of the even ranks (new_group), and a barrier.

  /usr/bin/python3 fleet_samples/wild_ddp.py --ranks 4 --out-dir /tmp/wd [--batch 8 --dim 64]

Writes wild_ddp<N>.rank<R>.{et,kineto,chrome_legacy}.json.gz (ddp_record.py's layout; the
process-group node lists the world and the sub-group).
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


class _TwoHeads(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.body = nn.Linear(dim, dim)
        self.used = nn.Linear(dim, 4)
        self.unused = nn.Linear(dim, 4)  # find_unused_parameters marks it ready

    def forward(self, x):
        return self.used(F.relu(self.body(x)))


def _pgConfig(world, even):
    return [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo",
             "ranks": [], "group_size": world, "group_count": 2},
            {"pg_name": "1", "pg_desc": "even_ranks", "backend_config": "cpu:gloo",
             "ranks": even, "group_size": len(even), "group_count": 2}]


def _worker(rank, args, port):
    world = args.ranks
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    record.metrics.setThreads(torch, 1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    even = list(range(0, world, 2))
    sub = dist.new_group(even)  # every rank calls new_group
    torch.manual_seed(1234)
    gen = torch.Generator().manual_seed(1234 + rank)
    model = nn.parallel.DistributedDataParallel(_TwoHeads(args.dim), find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(args.batch, args.dim, generator=gen)
    y = torch.randint(0, 4, (args.batch,), generator=gen)
    scale = torch.ones(args.dim)
    losses = [torch.zeros(1) for _ in range(world)]
    shard_src = torch.randn(world * args.dim, generator=gen)

    def step():
        dist.broadcast(scale, src=0)
        opt.zero_grad()
        loss = F.cross_entropy(model(x * scale), y)
        loss.backward()
        opt.step()
        dist.all_gather(losses, loss.detach().reshape(1))
        full = shard_src.clone()
        dist.all_reduce(full)
        mine = full.chunk(world)[rank].clone()  # reduce_scatter as gloo 1.13 allows it
        if args.subgroup and rank in even:
            dist.all_reduce(mine, group=sub)
        dist.barrier()

    record.timeIterations(step, args.warmup, args.iters)
    prefix = os.path.join(args.out_dir, "%s.rank%d" % (args.name, rank))
    dist.barrier()
    record.recordWindow(step, prefix, args.warmup + args.iters, pg_config=_pgConfig(world, even))
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--no-subgroup", dest="subgroup", action="store_false",
                    help="leave out the sub-group all_reduce (torch 1.13's c10d ops do not "
                         "record which group they ran on)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--name", help="file prefix (default wild_ddp<ranks>)")
    args = ap.parse_args()
    args.name = args.name or "wild_ddp%d" % args.ranks
    os.makedirs(args.out_dir, exist_ok=True)
    mp.spawn(_worker, args=(args, ddp_record._freePort()), nprocs=args.ranks, join=True)
    print("wrote %s/%s.rank<R>.et.json.gz for %d ranks" % (args.out_dir, args.name, args.ranks))


if __name__ == "__main__":
    main()
