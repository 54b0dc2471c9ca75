# SPDX-License-Identifier: MIT
"""A DDP step at an odd world size with the uneven collectives gloo allows, recorded per rank
over gloo on 127.0.0.1 (ddp_record.py's layout): DistributedDataParallel on 3 ranks, then
all_to_all_single with uneven input and output splits (rank r sends r+1+d elements to rank d),
all_gather of per-rank tensors, reduce to rank 1, gather and scatter rooted at rank 2, and
all_gather_into_tensor-like all_gather of a flat buffer.

  /usr/bin/python3 fleet_samples/wild2_ddp.py --ranks 3 --out-dir /tmp/wd3

Writes wild2_ddp<N>.rank<R>.{et,kineto,chrome_legacy}.json.gz.
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


def _splits(world, rank):
    """Uneven all_to_all splits: rank r sends r+1+d elements to rank d."""
    send = [rank + 1 + d for d in range(world)]
    recv = [s + 1 + rank for s in range(world)]
    return send, recv


def _worker(rank, args, port):
    world = args.ranks
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    record.metrics.setThreads(torch, 1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1234)
    gen = torch.Generator().manual_seed(1234 + rank)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(args.dim, args.dim), nn.ReLU(), nn.Linear(args.dim, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(args.batch, args.dim, generator=gen)
    y = torch.randint(0, 3, (args.batch,), generator=gen)
    send, recv = _splits(world, rank)
    a2a_in = torch.randn(sum(send), generator=gen)
    a2a_out = torch.empty(sum(recv))
    gathered = [torch.zeros(2, 3) for _ in range(world)]
    root_gather = [torch.zeros(4) for _ in range(world)] if rank == 2 else None
    scattered = torch.zeros(5)
    scatter_src = [torch.full((5,), float(r)) for r in range(world)] if rank == 2 else None

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        dist.all_to_all_single(a2a_out, a2a_in, output_split_sizes=recv, input_split_sizes=send)
        dist.all_gather(gathered, torch.full((2, 3), float(rank)) + loss.detach())
        red = a2a_out[:4].clone()
        dist.reduce(red, dst=1)
        dist.gather(red, root_gather, dst=2)
        dist.scatter(scattered, scatter_src, src=2)

    record.timeIterations(step, args.warmup, args.iters)
    prefix = os.path.join(args.out_dir, "%s.rank%d" % (args.name, rank))
    dist.barrier()
    record.recordWindow(step, prefix, args.warmup + args.iters, pg_config=ddp_record._pgConfig(world))
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ranks", type=int, default=3)
    ap.add_argument("--batch", type=int, default=6)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--name", help="file prefix (default wild2_ddp<ranks>)")
    args = ap.parse_args()
    if args.ranks < 3:
        ap.error("--ranks: at least 3 (gather/scatter are rooted at rank 2)")
    args.name = args.name or "wild2_ddp%d" % args.ranks
    os.makedirs(args.out_dir, exist_ok=True)
    mp.spawn(_worker, args=(args, ddp_record._freePort()), nprocs=args.ranks, join=True)
    print("wrote %s/%s.rank<R>.et.json.gz for %d ranks" % (args.out_dir, args.name, args.ranks))


if __name__ == "__main__":
    main()
