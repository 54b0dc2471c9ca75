# SPDX-License-Identifier: MIT
"""DistributedDataParallel over gloo (127.0.0.1 only) for fleet_samples/record.py:
  --model ddp2                  the 3-layer MLP at 2 ranks (the first DDP sample)
  --model ddp_<model><ranks>    models.DDP_BUILDERS[<model>] at <ranks> ranks, e.g. ddp_mlp4,
                                ddp_transformer2 (see DDP_SAMPLES)

Each rank writes <name>.rank<R>.et.json.gz / .kineto.json.gz / .chrome_legacy.json.gz and its
metrics sidecar <name>.rank<R>.metrics.json (CPU utilisation and peak RSS of its timed steps); the
parent merges the per-rank timings and summaries into <name>.meta.json.
"""
import json
import os
import socket
import statistics

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

import metrics
import models
import record
import trace_files

# sample name -> (model in models.DDP_BUILDERS, ranks)
DDP_SAMPLES = {"ddp2": ("mlp", 2), "ddp_mlp2": ("mlp", 2), "ddp_mlp4": ("mlp", 4),
               "ddp_transformer2": ("transformer", 2), "ddp_transformer4": ("transformer", 4)}


def _freePort():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pgConfig(world):
    # The layout later observers write (pg_config_info); torch 1.13 has no such attribute.
    return [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo",
             "ranks": [], "group_size": world, "group_count": 1}]


def _optimizer(model_name, params):
    # as the single-rank samples of the same model
    if model_name == "transformer":
        return torch.optim.Adam(params, lr=1e-4)
    return torch.optim.SGD(params, lr=0.01, momentum=0.9)


def _worker(rank, args, port, name):
    model_name, world = DDP_SAMPLES[name]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    metrics.setThreads(torch, args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(args.seed)
    build = models.DDP_BUILDERS[model_name]
    model, x, y, shapes = build(torch.Generator().manual_seed(args.seed + rank))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = _optimizer(model_name, ddp.parameters())

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()

    with metrics.Region() as region:
        times = record.timeIterations(step, args.warmup, args.iters, barrier=dist.barrier,
                                      region=region)
    window = "plain steps %d..%d (after %d warmup steps, each after a barrier), no observer " \
             "or profiler attached" % (args.warmup, args.warmup + args.iters - 1, args.warmup)
    metrics_doc = metrics.build(region, torch.get_num_threads(), window, steps=args.iters)
    metrics_doc["original_iter_ms_median"] = round(statistics.median(times), 3)
    step_index = args.warmup + args.iters
    prefix = os.path.join(args.out_dir, "%s.rank%d" % (name, rank))
    # this rank's sidecar, beside its trace (et_replay reads <stem>.metrics.json per rank)
    metrics.write(prefix + ".metrics.json", metrics_doc)
    dist.barrier()
    traced_ms = record.recordWindow(step, prefix, step_index, pg_config=_pgConfig(world))
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


_DESCRIPTIONS = {
    "mlp": "3 x (Linear 1024->1024 + ReLU) + Linear 1024->16, cross-entropy, SGD momentum",
    "transformer": "nn.TransformerEncoder, 2 layers, d_model 128, 4 heads, ff 512, dropout 0.1, "
                   "mean-pool + Linear head, cross-entropy, Adam",
}


def run(args):
    name = args.model
    model_name, world = DDP_SAMPLES[name]
    mp.spawn(_worker, args=(args, _freePort(), name), nprocs=world, join=True)
    meta = record.baseMeta(args, name)
    meta.update({
        "model": "DistributedDataParallel(%s), gloo backend, %d ranks on 127.0.0.1 "
                 "(torch.multiprocessing.spawn), default bucket sizes"
                 % (_DESCRIPTIONS[model_name], world),
        "ddp_model": model_name,
        "world_size": world, "backend": "gloo", "compute_bound": False,
        "compute_bound_why": "multi-rank: gloo allreduce over loopback is part of the step; "
                             "not part of the single-rank fidelity check",
        "file_naming": "%s.rank<R>.{et,kineto,chrome_legacy}.json.gz and %s.rank<R>.metrics.json, "
                       "R = global rank" % (name, name),
        "process_group_init": "emitted by record.py with record_function('## process_group:init ##', "
                              "json) because the 1.13 observer does not emit it; the observer "
                              "writes that String input unescaped, so the ET is invalid JSON",
        "ranks": {}})
    for rank in range(world):
        path = os.path.join(args.out_dir, "%s.rank%d.part.json" % (name, rank))
        with open(path) as f:
            part = json.load(f)
        os.remove(path)
        meta["shapes"] = part.pop("shapes")
        meta["ranks"][str(rank)] = part
    medians = [meta["ranks"][r]["original"]["iter_ms_median"] for r in meta["ranks"]]
    meta["original"] = {"iter_ms_median": max(medians),
                        "measured": "max over ranks of each rank's median plain-step time; "
                                    "per-rank lists under ranks.<R>.original"}
    trace_files.writeMeta(os.path.join(args.out_dir, "%s.meta.json" % name), meta)
    print(json.dumps({"name": name, "median_ms": medians}))
