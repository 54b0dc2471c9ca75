# SPDX-License-Identifier: MIT
"""Record a fleet sample: time real training steps, then capture one step with the execution
trace observer and the profiler over the same window.

Run with Debian's python (torch 1.13 CPU):
  /usr/bin/python3 fleet_samples/record.py --model mlp [--out-dir DIR] [--threads 1]
  /usr/bin/python3 fleet_samples/record.py --model ddp2          # 2 gloo ranks on 127.0.0.1
  /usr/bin/python3 fleet_samples/record.py --model mlp --metrics-only   # only <name>.metrics.json
  /usr/bin/python3 fleet_samples/record.py --model ddp_transformer4   # DDP at 4 ranks

Writes <out-dir>/<name>.et.json.gz, <name>.kineto.json.gz, <name>.chrome_legacy.json.gz,
<name>.metrics.json (the original's CPU utilisation, peak RSS, threads; NVML on a GPU) and
<name>.meta.json (for ddp2 one et/kineto/chrome_legacy file per rank: ddp2.rank<R>.*).
See fleet_samples/README.md for what each file holds and why.
"""
import argparse
import dataclasses
import datetime
import json
import os
import statistics
import sys
import time

import torch
from torch.autograd.profiler import record_function
from torch.profiler import ProfilerActivity, profile

try:  # torch >= 2.0 calls it the execution trace observer
    from torch.profiler import ExecutionTraceObserver as EtObserver
except ImportError:  # torch 1.13 (Debian)
    from torch.profiler import ExecutionGraphObserver as EtObserver

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402
import models  # noqa: E402
import trace_files  # noqa: E402


def deviceSync():
    """Waits for the device's queued work (a no-op on CPU): a GPU step ends when its kernels do."""
    if DEVICE.startswith("cuda"):
        torch.cuda.synchronize()


DEVICE = "cpu"  # record.py --device


def timeIterations(step, warmup, iters, barrier=None, region=None):
    """Per-iteration wall time (ms) of the plain step, no observer or profiler attached.
    `region` (metrics.Region) counts page faults from the first timed step on."""
    for _ in range(warmup):
        step()
    deviceSync()
    if region:
        region.startFaults()
    times = []
    for _ in range(iters):
        if barrier:
            barrier()
        t0 = time.perf_counter()
        step()
        deviceSync()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def recordWindow(step, prefix, step_index, pg_config=None):
    """Capture one training step as ProfilerStep#<step_index> in both the ET and the profiler.

    The observer starts before the profiler so that every profiler event carries the
    RecordFunction handle (ids are only allocated when a callback asks for them), and the
    ProfilerStep marker is entered after both are on, so the marker and its whole subtree are in
    both files. torch.profiler's schedule is not used: without libkineto (Debian's build) a
    scheduled profiler keeps only a handful of events from the wrong step.
    """
    tmp_et = prefix + ".et.json.tmp"
    observer = EtObserver()
    observer.register_callback(tmp_et)
    observer.start()
    if pg_config is not None and not hasattr(torch.profiler, "ExecutionTraceObserver"):
        # torch 1.13's observer does not emit this node itself; PARAM's docs of that era said to
        # emit it by hand with the group config as its one String input.
        with record_function("## process_group:init ##", json.dumps(pg_config)):
            pass
    t0 = time.perf_counter()
    activities = [ProfilerActivity.CPU]
    if DEVICE.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities, record_shapes=True) as prof:
        with record_function("ProfilerStep#%d" % step_index):
            step()
        deviceSync()
    traced_ms = (time.perf_counter() - t0) * 1e3
    observer.stop()
    observer.unregister_callback()
    trace_files.gzipFile(tmp_et, prefix + ".et.json.gz")
    os.remove(tmp_et)
    if torch.autograd.kineto_available():
        # A libkineto build (pip's torch 2.x) exports the Kineto trace itself, GPU kernels and
        # all; Debian's 1.13 has no libkineto: its events are laid out as Kineto below.
        tmp_kineto = prefix + ".kineto.json.tmp"
        prof.export_chrome_trace(tmp_kineto)
        trace_files.gzipFile(tmp_kineto, prefix + ".kineto.json.gz")
        os.remove(tmp_kineto)
        return traced_ms
    tmp_chrome = prefix + ".chrome_legacy.json.tmp"
    prof.export_chrome_trace(tmp_chrome)
    trace_files.gzipFile(tmp_chrome, prefix + ".chrome_legacy.json.gz")
    os.remove(tmp_chrome)
    trace_files.writeKinetoLayout(prof.events(), prefix + ".kineto.json.gz", os.getpid(),
                                 prefix + ".et.json.gz")
    return traced_ms


def _instrumented(body):
    """Runs body() with what recordWindow turns on (the ET observer writing to a scratch file,
    the profiler recording shapes); returns its result and the profiler's events."""
    tmp = "%s/etb_instr_%d.json" % (os.environ.get("TMPDIR", "/tmp"), os.getpid())
    observer = EtObserver()
    observer.register_callback(tmp)
    observer.start()
    try:
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            out = body()
    finally:
        observer.stop()
        observer.unregister_callback()
        if os.path.exists(tmp):
            os.remove(tmp)
    return out, prof


def instrumentationCost(rounds=7, ops=2000, nodes=500):
    """What the recording's instrumentation costs per event in this process, now: et_replay
    subtracts it from the profiled gaps between ops (--host-time emulate). Its own measurement
    through libtorch's C++ API found a label 0.4-1.0x this process's figure on the same quiet
    machine (an operator event 1.0-2.7x, 18 recordings), and the LSTM sample's gaps hold 3,400
    label boundaries.

    Operator events: `ops` aten::add calls on one-element tensors, with and without the observer
    and profiler, alternating, median of `rounds`. Label events (the autograd engine's scopes
    around each backward node): the backward of a chain of `nodes` multiplications, less its
    operator events at the operator cost, over the label events the profiler kept per node."""
    a = torch.ones(1, device="cpu")
    b = torch.ones(1, device="cpu")

    def forward():
        t0 = time.perf_counter()
        for _ in range(ops):
            torch.add(a, b)
        return (time.perf_counter() - t0) * 1e6 / ops

    def chain():  # built outside the instrumented part: only the backward is measured
        y = torch.ones(1, device="cpu", requires_grad=True)
        for _ in range(nodes):
            y = y * 1.0001
        return y

    def backward(y):
        t0 = time.perf_counter()
        y.backward()
        return (time.perf_counter() - t0) * 1e6 / nodes

    fwd_off, fwd_on, bwd_off, bwd_on = [], [], [], []
    for _ in range(rounds):
        fwd_off.append(forward())
        bwd_off.append(backward(chain()))
        us, _ = _instrumented(forward)
        fwd_on.append(us)
        y = chain()
        us, prof = _instrumented(lambda: backward(y))
        bwd_on.append(us)
    # Events per backward node, counted once: every round's backward is the same chain.
    names = [e.name for e in prof.events()]
    op_events = sum(1 for n in names if n.startswith("aten::"))
    label_events = len(names) - op_events
    per_op = max(0.0, statistics.median(fwd_on) - statistics.median(fwd_off))
    per_node = max(0.0, statistics.median(bwd_on) - statistics.median(bwd_off))
    ops_per_node = op_events / nodes
    labels_per_node = label_events / nodes
    per_label = (max(0.0, per_node - ops_per_node * per_op) / labels_per_node
                 if labels_per_node > 0 else 0.0)
    return {"per_op_event_us": round(per_op, 3), "per_label_event_us": round(per_label, 3),
            "backward_node": {"op_events": round(ops_per_node, 3),
                              "label_events": round(labels_per_node, 3),
                              "us": round(per_node, 3)},
            "measured": "in the recording process right after the traced step: %d aten::add "
                        "calls and the backward of %d mul nodes, ET observer and profiler "
                        "(record_shapes) on vs off, median of %d alternating rounds"
                        % (ops, nodes, rounds)}


def baseMeta(args, name):
    return {
        "name": name,
        "torch_version": torch.__version__,
        "python": sys.version.split()[0],
        "threads": torch.get_num_threads(),
        "seed": args.seed,
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "host_cpus": os.cpu_count(),
        # --device only when not the default, so the CPU samples' strings stay as they were.
        "recorded_with": "fleet_samples/record.py --model %s%s%s --threads %d --warmup %d "
                         "--iters %d%s"
                         % (args.model, " --name " + name if name != args.model else "",
                            " --device " + args.device if args.device != "cpu" else "",
                            args.threads, args.warmup, args.iters,
                            "".join(" --size " + kv for kv in args.size)),
    }


def timingMeta(times, traced_ms, step_index, warmup):
    return {
        "original": {"iter_ms": [round(t, 3) for t in times],
                     "iter_ms_median": round(statistics.median(times), 3),
                     "measured": "wall time of plain steps %d..%d (after %d warmup steps), "
                                 "no observer or profiler attached"
                                 % (warmup, warmup + len(times) - 1, warmup)},
        "window": {"profiler_step": "ProfilerStep#%d" % step_index, "steps": 1,
                   "traced_step_ms": round(traced_ms, 3),
                   "note": "traced_step_ms is the same step with ET + profiler attached "
                           "(observer overhead included); do not compare replays with it"},
    }


def timeWithMetrics(args, step):
    """Times the plain steps and measures the original's system metrics over them."""
    with metrics.Region(use_gpu=torch.cuda.is_available()) as region:
        times = timeIterations(step, args.warmup, args.iters, region=region)
    window = "plain steps %d..%d (after %d warmup steps), no observer or profiler attached" % (
        args.warmup, args.warmup + args.iters - 1, args.warmup)
    return times, metrics.build(region, torch.get_num_threads(), window, steps=args.iters,
                                same_process=not args.metrics_only)


def withAutocast(sample, dtype):
    """The sample's whole step under torch.autocast: its forward's autocast ops (linear, matmul,
    conv, bmm) run in `dtype`, the backward in the types the forward saved, the optimizer on
    float32 parameters, as a mixed-precision step wrapped in autocast does."""
    step, device = sample.step, DEVICE.split(":")[0]

    def autocastStep():
        with torch.autocast(device, dtype=getattr(torch, dtype)):
            step()
    return dataclasses.replace(sample, step=autocastStep,
                               description=sample.description + " (whole step under %s autocast)" % dtype)


def recordSingle(args):
    gen = torch.Generator(device=DEVICE).manual_seed(args.seed)
    torch.manual_seed(args.seed)
    sample = models.BUILDERS[args.model](gen)
    if args.autocast:
        sample = withAutocast(sample, args.autocast)
    times, metrics_doc = timeWithMetrics(args, sample.step)
    name = args.name or args.model
    prefix = os.path.join(args.out_dir, name)
    if args.metrics_only:
        # Adds the sidecar to a committed sample without touching its traces: the same program
        # and settings in a new process (same_process_as_trace false says so).
        metrics_doc["original_iter_ms_median"] = round(statistics.median(times), 3)
        metrics.write(prefix + ".metrics.json", metrics_doc)
        print(json.dumps({"name": name, "metrics": prefix + ".metrics.json"}))
        return
    step_index = args.warmup + args.iters
    traced_ms = recordWindow(sample.step, prefix, step_index)
    props = metrics.deviceProperties(prefix + ".kineto.json.gz")
    if props:
        metrics_doc["device_properties"] = props
    metrics_doc["original_iter_ms_median"] = round(statistics.median(times), 3)
    metrics.write(prefix + ".metrics.json", metrics_doc)
    meta = baseMeta(args, name)
    meta.update({"model": sample.description, "shapes": sample.shapes,
                 "compute_bound": sample.compute_bound, "compute_bound_why": sample.why,
                 "device": DEVICE,
                 "files": {"et": name + ".et.json.gz",
                           "kineto": name + ".kineto.json.gz",
                           "metrics": name + ".metrics.json"}})
    if os.path.exists(prefix + ".chrome_legacy.json.gz"):
        meta["files"]["chrome_legacy"] = name + ".chrome_legacy.json.gz"
    meta.update(timingMeta(times, traced_ms, step_index, args.warmup))
    meta["instrumentation"] = instrumentationCost()
    meta["et_summary"] = trace_files.summarizeEt(prefix + ".et.json.gz", meta["window"]["profiler_step"])
    meta["kineto_summary"] = trace_files.summarizeKineto(prefix + ".kineto.json.gz",
                                                         prefix + ".et.json.gz")
    trace_files.writeMeta(prefix + ".meta.json", meta)
    print(json.dumps({"name": name, "median_ms": meta["original"]["iter_ms_median"],
                      "et_nodes": meta["et_summary"].get("nodes"),
                      "cpu_util_pct": metrics_doc["cpu_util_pct"],
                      "peak_rss_mib": round(metrics_doc["peak_rss_bytes"] / 2**20, 1)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    import ddp_record  # imports this module by name; keep record.py importable
    ap.add_argument("--model", required=True,
                    choices=sorted(models.BUILDERS) + sorted(ddp_record.DDP_SAMPLES))
    ap.add_argument("--out-dir", help="default: fleet_samples/<model>")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--size", action="append", default=[], metavar="KEY=VALUE",
                    help="override one of the model's sizes (the builders in models.py name "
                         "them: e.g. mlp: batch, hidden; gpt: batch, seq, vocab, d_model, heads, "
                         "layers); repeatable; a wrong key lists the model's own")
    ap.add_argument("--name", help="file prefix and meta name of a single-rank recording "
                                   "(default: the model; e.g. a sized variant's label)")
    ap.add_argument("--device", default="cpu",
                    help="cpu, or cuda on a GPU host with torch >= 2.0 (the models are built "
                         "under torch.set_default_device; single-rank samples only)")
    ap.add_argument("--autocast", choices=["bfloat16", "float16"],
                    help="run the whole step under torch.autocast in this type (mixed precision; "
                         "single-rank samples; CPU torch 1.13 autocasts to bfloat16 only)")
    ap.add_argument("--metrics-only", action="store_true",
                    help="time the plain steps and write only <name>.metrics.json "
                         "(adds the sidecar to a committed sample; traces untouched)")
    args = ap.parse_args()
    for kv in args.size:
        key, _, value = kv.partition("=")
        if not value.isdigit():
            ap.error("--size %s: expected KEY=INTEGER" % kv)
        models.SIZES[key] = int(value)
    if args.size and args.model not in models.SIZED:
        ap.error("--size: only %s take size overrides" % ", ".join(sorted(models.SIZED)))
    if args.out_dir is None:
        args.out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), args.model)
    os.makedirs(args.out_dir, exist_ok=True)
    metrics.setThreads(torch, args.threads)
    global DEVICE
    DEVICE = args.device
    if DEVICE != "cpu":
        if not hasattr(torch, "set_default_device"):
            ap.error("--device %s needs torch >= 2.0 (torch.set_default_device)" % DEVICE)
        torch.set_default_device(DEVICE)
    if args.model in ddp_record.DDP_SAMPLES:
        if args.metrics_only or args.name or args.autocast:
            ap.error("--metrics-only, --name and --autocast are for single-rank samples")
        ddp_record.run(args)
    else:
        recordSingle(args)


if __name__ == "__main__":
    main()
