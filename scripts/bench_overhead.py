#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Python eager PyTorch on the chain replay_overhead_bench.cc replays:
10,000 alternating add/mul ops on 4-element tensors. Run with the Python
that has torch (/usr/bin/python3 here). Prints microseconds per op."""
import time

import torch

OPS = 10000


def chain(x, w):
    for i in range(OPS):
        x = torch.mul(x, w) if i % 2 else torch.add(x, w)
    return x


def main():
    torch.set_num_threads(1)
    w, x0 = torch.rand(4), torch.rand(4)
    chain(x0, w)  # warm-up
    best = []
    for _ in range(10):
        t0 = time.perf_counter()
        chain(x0, w)
        best.append(time.perf_counter() - t0)
    best.sort()
    print(f"python eager: {best[len(best) // 2] / OPS * 1e6:.3f} us/op (median of 10, torch {torch.__version__})")


if __name__ == "__main__":
    main()
