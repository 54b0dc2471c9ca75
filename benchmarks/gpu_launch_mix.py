#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# benchmarks/gpu_launch_mix.py: the host time of a CUDA launch by what ran just before it.
# Run on a GPU machine with a CUDA torch: python3 benchmarks/gpu_launch_mix.py
# Asks whether a replay's per-op host time above the profile's hot-loop launches comes from
# the previous call's kind (a GEMM evicting the launch path) or from the host itself; each
# line is the median and p90 of 1,900 timed calls after 100 warm-up ones (Python adds ~1 us).
import time, torch, statistics as st
d = torch.device("cuda")
x = torch.randn(256, 1024, device=d); W = torch.randn(1024, 1024, device=d); b = torch.randn(1024, device=d)
y = torch.randn(256, 1024, device=d); s = torch.randn(8, device=d)
F = torch.nn.functional
def timed(fn):
    t0 = time.perf_counter_ns(); r = fn(); return (time.perf_counter_ns() - t0) / 1e3, r
def run(name, before, target, n=2000):
    ts, tb = [], []
    for i in range(n):
        if before is not None:
            u, _ = timed(before); tb.append(u)
        u, _ = timed(target); ts.append(u)
        if i % 200 == 199: torch.cuda.synchronize()
    torch.cuda.synchronize()
    print("%-34s target med %6.2f us  p90 %6.2f | before med %6.2f" % (
        name, st.median(ts[100:]), sorted(ts[100:])[int(0.9 * len(ts[100:]))], st.median(tb[100:]) if tb else 0))
for rep in range(2):
    run("relu hot (256x1024)", None, lambda: torch.relu(x))
    run("relu tiny hot (8)", None, lambda: torch.relu(s))
    run("relu after linear", lambda: F.linear(x, W, b), lambda: torch.relu(x))
    run("relu after mm", lambda: torch.mm(x, W), lambda: torch.relu(x))
    run("relu after add", lambda: torch.add(x, y), lambda: torch.relu(x))
    run("relu after t", lambda: W.t(), lambda: torch.relu(x))
    run("t hot", None, lambda: W.t())
    run("t after mm", lambda: torch.mm(x, W), lambda: W.t())
    run("mm hot", None, lambda: torch.mm(x, W))
    run("mm after relu", lambda: torch.relu(x), lambda: torch.mm(x, W))
    run("sum(0) hot", None, lambda: y.sum(0))
    run("sum(0) after mm", lambda: torch.mm(x, W), lambda: y.sum(0))
    run("threshold_backward after mm", lambda: torch.mm(x, W), lambda: torch.ops.aten.threshold_backward(y, x, 0))
    run("threshold_backward hot", None, lambda: torch.ops.aten.threshold_backward(y, x, 0))
