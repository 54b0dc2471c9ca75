#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Records one training step of a small network as a PyTorch ET (torch 1.13's
ExecutionGraphObserver: schema 1.0.1, no strides) and, from a second run of
the same step under a dispatch mode, what each convolution and GEMM kernel
saw as it ran: the truth the predictor's layout inference
(predictor/layout_model.h) and its choice of GEMM rates by element type
(OpShapes::computeDType) are checked against.

  step_record.py MODEL OUT_DIR   ->  OUT_DIR/MODEL.et.json, OUT_DIR/MODEL.truth.json

MODEL: convnext (blocks that permute around a LayerNorm, as torchvision's
ConvNeXt), converted (a CNN moved to channels_last, each batch converted in
the step), plain (contiguous throughout: no convolution may be taken as
channels-last), autocast (an attention block under bfloat16 autocast with
one layer kept in float32: GEMMs of both types, forward and backward).
The truth file holds, in the order they ran, "conv": [name, input
channels-last] for aten::convolution (forward) and aten::convolution_backward
(its input, argument 1), and "gemm": [name, dtype] for each GEMM kernel
(mm, addmm, bmm, baddbmm; the type of its output)."""
import json
import os
import sys

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

torch.manual_seed(0)
torch.set_num_threads(1)
CL = torch.channels_last


def channels_last(t):
    return t.dim() == 4 and not t.is_contiguous() and t.is_contiguous(memory_format=CL)


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)
        self.scale = nn.Parameter(torch.full((dim, 1, 1), 0.1))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.down(nn.functional.gelu(self.up(self.norm(y)))).permute(0, 3, 1, 2)
        return x + self.scale * y


def convnext():
    return nn.Sequential(nn.Conv2d(3, 16, 4, stride=4), LayerNorm2d(16), Block(16), Block(16),
                         LayerNorm2d(16), nn.Conv2d(16, 32, 2, stride=2), Block(32),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(16, 32, 1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


class Attention(nn.Module):
    """Projections, scores and their product with the values (bmm), a float32 head."""

    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / q.shape[-1] ** 0.5, dim=-1)
        y = self.out(torch.bmm(scores, v)).mean(1)
        with torch.autocast("cpu", enabled=False):
            return self.head(y.float())


def build(name):
    if name == "autocast":
        return Attention(32), torch.randn(4, 24, 32)
    x = torch.randn(2, 3, 32, 32)
    if name == "convnext":
        return convnext(), x
    if name == "converted":
        return cnn().to(memory_format=CL), x
    if name == "plain":
        return cnn(), x
    sys.exit(f"unknown model {name}")


GEMMS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}
DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


class Kernels(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = {"conv": [], "gemm": []}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name
        out = func(*args, **(kwargs or {}))
        if name == "aten::convolution":
            self.seen["conv"].append([name, channels_last(args[0])])
        elif name == "aten::convolution_backward":
            self.seen["conv"].append([name, channels_last(args[1])])
        elif name in GEMMS:
            self.seen["gemm"].append([name, DTYPES.get(out.dtype, str(out.dtype))])
        return out


def main():
    name, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    model, x = build(name)
    target = torch.randint(0, 10, (x.shape[0],))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        # The input converted in the step, as a channels-last training loop
        # does with each batch (its weights were converted once, before).
        batch = x.to(memory_format=CL) if name == "converted" else x
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=name == "autocast"):
            loss = nn.functional.cross_entropy(model(batch), target)
        loss.backward()
        opt.step()

    step()
    with Kernels() as mode:
        step()
    et = os.path.join(out, name + ".et.json")
    observer = torch.profiler.ExecutionGraphObserver()
    observer.register_callback(et)
    observer.start()
    with torch.autograd.profiler.record_function("ProfilerStep#1"):
        step()
    observer.stop()
    observer.unregister_callback()
    with open(os.path.join(out, name + ".truth.json"), "w") as f:
        json.dump(mode.seen, f)


if __name__ == "__main__":
    main()
