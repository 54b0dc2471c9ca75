# SPDX-License-Identifier: MIT
"""2-rank DistributedDataParallel (gloo, 127.0.0.1 only) for fleet_samples/record.py --model ddp2.

Each rank writes ddp2.rank<R>.et.json.gz / .kineto.json.gz / .chrome_legacy.json.gz; the parent
merges the per-rank timings and summaries into ddp2.meta.json.
"""
import json
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

import models
import record
import trace_files

WORLD = 2


def _freePort():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pgConfig():
    # The layout later observers write (pg_config_info); torch 1.13 has no such attribute.
    return [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo",
             "ranks": [], "group_size": WORLD, "group_count": 1}]


def _worker(rank, args, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(args.seed)
    model, x, y, shapes = models.buildDdpMlp(torch.Generator().manual_seed(args.seed + rank))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()

    times = record.timeIterations(step, args.warmup, args.iters, barrier=dist.barrier)
    step_index = args.warmup + args.iters
    prefix = os.path.join(args.out_dir, "ddp2.rank%d" % rank)
    dist.barrier()
    traced_ms = record.recordWindow(step, prefix, step_index, pg_config=_pgConfig())
    part = record.timingMeta(times, traced_ms, step_index, args.warmup)
    part["et_summary"] = trace_files.summarizeEt(prefix + ".et.json.gz",
                                                 part["window"]["profiler_step"])
    part["kineto_summary"] = trace_files.summarizeKineto(prefix + ".kineto.json.gz",
                                                         prefix + ".et.json.gz")
    part["shapes"] = shapes
    with open(prefix + ".part.json", "w") as f:
        json.dump(part, f)
    dist.barrier()
    dist.destroy_process_group()


def run(args):
    mp.spawn(_worker, args=(args, _freePort()), nprocs=WORLD, join=True)
    meta = record.baseMeta(args, "ddp2")
    meta.update({
        "model": "DistributedDataParallel(3 x (Linear 1024->1024 + ReLU) + Linear 1024->16), "
                 "gloo backend, 2 ranks on 127.0.0.1 (torch.multiprocessing.spawn), "
                 "cross-entropy, SGD momentum, default bucket sizes",
        "world_size": WORLD, "backend": "gloo", "compute_bound": False,
        "compute_bound_why": "multi-rank: gloo allreduce over loopback is part of the step; "
                             "not part of the single-rank fidelity check",
        "file_naming": "ddp2.rank<R>.{et,kineto,chrome_legacy}.json.gz, R = global rank",
        "process_group_init": "emitted by record.py with record_function('## process_group:init ##', "
                              "json) because the 1.13 observer does not emit it; the observer "
                              "writes that String input unescaped, so the ET is invalid JSON",
        "ranks": {}})
    for rank in range(WORLD):
        path = os.path.join(args.out_dir, "ddp2.rank%d.part.json" % rank)
        with open(path) as f:
            part = json.load(f)
        os.remove(path)
        meta["shapes"] = part.pop("shapes")
        meta["ranks"][str(rank)] = part
    medians = [meta["ranks"][r]["original"]["iter_ms_median"] for r in meta["ranks"]]
    meta["original"] = {"iter_ms_median": max(medians),
                        "measured": "max over ranks of each rank's median plain-step time; "
                                    "per-rank lists under ranks.<R>.original"}
    trace_files.writeMeta(os.path.join(args.out_dir, "ddp2.meta.json"), meta)
    print(json.dumps({"name": "ddp2", "median_ms": medians}))
