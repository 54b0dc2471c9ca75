# SPDX-License-Identifier: MIT
"""A second sweep of workloads no earlier sample covers (`record.py --model wild2_<name>
[--size KEY=VALUE] --out-dir DIR`):
  wild2_amp     torch.autocast("cpu", bfloat16) training step over channels_last convolutions:
                mixed dtypes, _to_copy casts, strides that are not contiguous
  wild2_jit     a torch.jit.script'ed and a torch.jit.trace'd module inside the step, and
                torch.utils.checkpoint (recomputation in backward)
  wild2_fft     rfft/irfft spectral filter (complex dtypes), einsum, a custom
                torch.autograd.Function
  wild2_mha     nn.MultiheadAttention with key_padding_mask and attn_mask, then
                pack_padded_sequence into a bidirectional GRU
  wild2_sparse  nn.Embedding(sparse=True, padding_idx) + SparseAdam (sparse gradients), in-place
                writes into slices, index_put_ with a boolean mask, where/nonzero
  wild2_qdyn    dynamic int8 quantization (quantize_dynamic on Linear) inference
Every builder reads models.SIZES (record.py --size), so each can be recorded at other sizes.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as ckpt
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from models import Sample, _sized


def _sample(model, step, description, shapes, why):
    return Sample(model, step, description, shapes, False, why)


def _plainStep(opt, loss_of):
    def step():
        opt.zero_grad()
        loss_of().backward()
        opt.step()
    return step


def buildWild2Amp(gen):
    batch, image, width = _sized(batch=2, image=16, width=8)
    model = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
                          nn.Conv2d(width, width, 3, padding=1, groups=2), nn.SiLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 5))
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, image, image, generator=gen).to(memory_format=torch.channels_last)
    y = torch.randint(0, 5, (batch,), generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)

    def loss():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
        return F.cross_entropy(logits.float(), y)
    return _sample(model, _plainStep(opt, loss),
                   "channels_last CNN (conv, BatchNorm, grouped conv, SiLU, pooling, Linear) "
                   "under torch.autocast(cpu, bfloat16), loss in float32, SGD momentum",
                   {"batch": batch, "image": image, "width": width}, "mixed dtypes, NHWC strides")


class _Scripted(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.lin(x)
        if bool(h.sum() > 0):
            h = h * 2.0
        return torch.tanh(h) + x


class _Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.a = nn.Linear(dim, 2 * dim)
        self.b = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return self.b(F.gelu(self.a(x))) + x


def buildWild2Jit(gen):
    batch, dim = _sized(batch=8, dim=32)
    scripted = torch.jit.script(_Scripted(dim))
    traced = torch.jit.trace(_Block(dim), torch.randn(batch, dim, generator=gen))
    block = _Block(dim)
    head = nn.Linear(dim, 1)
    model = nn.ModuleList([scripted, traced, block, head])
    x = torch.randn(batch, dim, generator=gen)
    y = torch.randn(batch, 1, generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def loss():
        h = traced(scripted(x))
        h = ckpt.checkpoint(block, h, use_reentrant=False)
        return F.mse_loss(head(h), y)
    return _sample(model, _plainStep(opt, loss),
                   "torch.jit.script'ed module (data-dependent branch) and a torch.jit.trace'd "
                   "block in the step, a block under torch.utils.checkpoint (recomputed in "
                   "backward), MSE, Adam",
                   {"batch": batch, "dim": dim}, "TorchScript, activation checkpointing")


class _ScaleGrad(torch.autograd.Function):
    """y = x * s with a hand-written backward that clips the gradient."""
    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(x)
        ctx.s = s
        return x * s

    @staticmethod
    def backward(ctx, grad):
        return (grad * ctx.s).clamp(-1.0, 1.0), None


class _Spectral(nn.Module):
    def __init__(self, length, channels):
        super().__init__()
        modes = length // 2 + 1
        self.wr = nn.Parameter(torch.randn(channels, channels, modes) * 0.1)
        self.wi = nn.Parameter(torch.randn(channels, channels, modes) * 0.1)
        self.mix = nn.Parameter(torch.randn(channels, channels) * 0.1)

    def forward(self, x):
        xf = torch.fft.rfft(x, dim=-1)
        w = torch.complex(self.wr, self.wi)
        yf = torch.einsum("bim,iom->bom", xf, w)
        y = torch.fft.irfft(yf, n=x.shape[-1], dim=-1)
        y = y + torch.einsum("bil,io->bol", x, self.mix)
        return _ScaleGrad.apply(F.gelu(y), 0.5) + yf.abs().mean()


def buildWild2Fft(gen):
    batch, channels, length = _sized(batch=4, channels=6, length=32)
    model = _Spectral(length, channels)
    x = torch.randn(batch, channels, length, generator=gen)
    y = torch.randn(batch, channels, length, generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return _sample(model, _plainStep(opt, lambda: F.mse_loss(model(x), y)),
                   "Fourier layer: rfft, complex weights from torch.complex, einsum over complex "
                   "modes, irfft, a real einsum, abs of complex, a custom autograd.Function "
                   "with a clipping backward, AdamW",
                   {"batch": batch, "channels": channels, "length": length}, "complex dtypes")


class _MhaGru(nn.Module):
    def __init__(self, vocab, dim, heads):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.mha = nn.MultiheadAttention(dim, heads, dropout=0.1, batch_first=True)
        self.gru = nn.GRU(dim, dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * dim, vocab)

    def forward(self, tokens, lengths):
        h = self.emb(tokens)
        seq = tokens.shape[1]
        pad = torch.arange(seq)[None, :] >= lengths[:, None]
        causal = torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1)
        a, _ = self.mha(h, h, h, key_padding_mask=pad, attn_mask=causal)
        packed = pack_padded_sequence(a + h, lengths, batch_first=True, enforce_sorted=False)
        o, _ = self.gru(packed)
        o, _ = pad_packed_sequence(o, batch_first=True, total_length=seq)
        return self.out(o)


def buildWild2Mha(gen):
    batch, seq, vocab, dim = _sized(batch=4, seq=12, vocab=40, dim=16)
    model = _MhaGru(vocab, dim, 4)
    tokens = torch.randint(1, vocab, (batch, seq), generator=gen)
    lengths = torch.tensor([seq, seq - 5, 3, seq - 1][:batch] + [seq] * max(0, batch - 4))
    target = torch.randint(0, vocab, (batch, seq), generator=gen)
    target[torch.arange(seq)[None, :] >= lengths[:, None]] = -100
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return _sample(model, _plainStep(opt, lambda: F.cross_entropy(
        model(tokens, lengths).reshape(-1, vocab), target.reshape(-1))),
                   "nn.MultiheadAttention (dropout) with a key_padding_mask and a boolean causal "
                   "attn_mask, pack_padded_sequence (unsorted lengths) into a bidirectional GRU, "
                   "pad_packed_sequence, cross-entropy ignoring padding, Adam",
                   {"batch": batch, "seq": seq, "vocab": vocab, "dim": dim},
                   "masks, packed sequences")


def buildWild2Sparse(gen):
    batch, bag, vocab, dim = _sized(batch=8, bag=5, vocab=100, dim=16)
    emb = nn.Embedding(vocab, dim, padding_idx=0, sparse=True)
    head = nn.Linear(dim, 1)
    ids = torch.randint(0, vocab, (batch, bag), generator=gen)
    ids[:, -1] = 0
    y = torch.rand(batch, 1, generator=gen)
    sparse_opt = torch.optim.SparseAdam(list(emb.parameters()), lr=1e-2)
    dense_opt = torch.optim.SGD(head.parameters(), lr=1e-2)

    def step():
        sparse_opt.zero_grad()
        dense_opt.zero_grad()
        e = emb(ids)                      # batch, bag, dim
        h = e.sum(1)
        h = h.clone()
        h[:, :2] += h[:, 2:4]             # in-place add into a slice
        h[h.abs() > 3.0] = 3.0            # index_put_ with a boolean mask
        h = torch.where(h > 0, h, 0.1 * h)
        live = torch.nonzero(ids[:, 0] > vocab // 2).squeeze(1)  # data-dependent shape
        loss = F.mse_loss(torch.sigmoid(head(h)), y) + h.index_select(0, live).sum() * 1e-3
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
    return _sample(nn.ModuleList([emb, head]), step,
                   "Embedding(sparse=True, padding_idx=0) with SparseAdam (sparse gradient "
                   "tensors) + SGD on a head; in-place add into a slice, index_put_ with a "
                   "boolean mask, torch.where, nonzero (data-dependent shape) + index_select",
                   {"batch": batch, "bag": bag, "vocab": vocab, "dim": dim},
                   "sparse gradients, data-dependent shapes")


def buildWild2Qdyn(gen):
    batch, dim, hidden = _sized(batch=8, dim=32, hidden=64)
    model = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                          nn.ReLU(), nn.Linear(hidden, 4)).eval()
    model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    x = torch.randn(batch, dim, generator=gen)

    def step():
        with torch.no_grad():
            model(x).argmax(-1)
    return _sample(model, step,
                   "dynamic int8 quantization (quantize_dynamic on 3 Linear layers, qint8 "
                   "packed weights) inference under no_grad, argmax",
                   {"batch": batch, "dim": dim, "hidden": hidden}, "quantized inference")


BUILDERS = {"wild2_amp": buildWild2Amp, "wild2_jit": buildWild2Jit, "wild2_fft": buildWild2Fft,
            "wild2_mha": buildWild2Mha, "wild2_sparse": buildWild2Sparse,
            "wild2_qdyn": buildWild2Qdyn}
