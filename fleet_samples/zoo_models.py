# SPDX-License-Identifier: MIT
"""The zoo: small models whose architectures and training styles the fleet samples lack.

Each is a few milliseconds per step on one core, so record.py records one in about a second.
They exist to exercise the replayer on operators, argument kinds and dtypes that users' traces
will bring (packed sequences, grouped convolutions, transposed convolutions, einsum, sparse
gradients, routing with int64/bool tensors, in-place views, no_grad evaluation, double
backward, every optimizer family): `record.py --model zoo_<name>`. See fleet_samples/README.md.
zoo_models_lib.py adds those built on library features (autocast, TorchScript, torchvision).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from models import Sample


def _sample(model, step, description, shapes, why):
    return Sample(model, step, description, shapes, False, why)


class _PackedRnn(nn.Module):
    def __init__(self, vocab, dim, hidden, classes):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.gru = nn.GRU(dim, hidden, batch_first=True, bidirectional=True)
        self.lstm = nn.LSTM(2 * hidden, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.emb(tokens), lengths, batch_first=True,
                                      enforce_sorted=False)
        out, _ = self.gru(packed)
        out, (h, _) = self.lstm(out)
        padded, _ = pad_packed_sequence(out, batch_first=True)
        mask = (torch.arange(padded.shape[1])[None, :] < lengths[:, None]).unsqueeze(-1)
        pooled = (padded * mask).sum(1) / lengths[:, None].to(padded.dtype)
        return self.head(pooled + torch.cat([h[0], h[1]], dim=1))


def buildZooRnn(gen):
    batch, seq, vocab, dim, hidden, classes = 8, 12, 200, 16, 24, 5
    model = _PackedRnn(vocab, dim, hidden, classes)
    lengths = torch.randint(3, seq + 1, (batch,), generator=gen)
    tokens = torch.randint(1, vocab, (batch, seq), generator=gen)
    tokens = tokens * (torch.arange(seq)[None, :] < lengths[:, None])
    y = torch.randint(0, classes, (batch,), generator=gen)
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9, centered=True)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(tokens, lengths), y, label_smoothing=0.1)
        loss.backward()
        opt.step()
    return _sample(model, step,
                   "Embedding(padding_idx) -> bidirectional GRU -> bidirectional LSTM over packed "
                   "variable-length sequences (enforce_sorted=False), masked mean pool, "
                   "label-smoothed cross-entropy, RMSprop(momentum, centered)",
                   {"batch": batch, "seq": seq, "vocab": vocab, "hidden": hidden},
                   "packed-sequence RNN kernels, int64 lengths and sort indices")


class _ConvAutoencoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.LeakyReLU(0.1),
                                 nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.Tanh())
        self.dec = nn.Sequential(nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1), nn.ELU(),
                                 nn.ConvTranspose2d(8, 1, 4, stride=2, padding=1), nn.Sigmoid())
        self.seq = nn.Sequential(nn.Conv1d(16, 16, 3, padding=2, dilation=2), nn.Softplus(),
                                 nn.MaxPool1d(2), nn.Upsample(scale_factor=2, mode="nearest"))

    def forward(self, x):
        z = self.enc(x)
        b, c, h, w = z.shape
        z = z + self.seq(z.flatten(2)).view(b, c, h, w)
        return self.dec(F.interpolate(z, scale_factor=1.0, mode="bilinear",
                                      align_corners=False))


def buildZooAutoencoder(gen):
    batch, image = 8, 32
    model = _ConvAutoencoder()
    x = torch.rand(batch, 1, image, image, generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True,
                          weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    def step():
        opt.zero_grad()
        out = model(x)
        loss = F.mse_loss(out, x) + 0.1 * F.binary_cross_entropy(out, x) + \
            0.01 * F.smooth_l1_loss(out, x)
        loss.backward()
        opt.step()
        sched.step()
    return _sample(model, step,
                   "Conv2d encoder (LeakyReLU, Tanh), Conv1d(dilation 2) + MaxPool1d + Upsample "
                   "on the flattened code, bilinear interpolate, ConvTranspose2d decoder (ELU, "
                   "Sigmoid), MSE + BCE + smooth L1, SGD(momentum, nesterov, weight decay), StepLR",
                   {"batch": batch, "input": [batch, 1, image, image]},
                   "transposed and 1-d convolutions, pooling with indices, interpolation")


def _dwBlock(cin, cout, stride, expand):
    mid = cin * expand
    return nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU(),
                         nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
                         nn.BatchNorm2d(mid), nn.Hardswish(),
                         nn.Conv2d(mid, cout, 1, groups=2, bias=False), nn.BatchNorm2d(cout))


class _MobileNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.SiLU(inplace=True))
        self.blocks = nn.ModuleList([_dwBlock(16, 16, 1, 2), _dwBlock(16, 24, 2, 3)])
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(24, 8, 1), nn.ReLU6(),
                                nn.Conv2d(8, 24, 1), nn.Hardsigmoid())
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(24, classes))

    def forward(self, x):
        x = self.stem(x)
        x = x + self.blocks[0](x)
        x = self.blocks[1](x)
        x = x * self.se(x)
        return self.head(torch.flatten(F.adaptive_max_pool2d(x, 1), 1))


def buildZooMobilenet(gen):
    batch, image, classes = 8, 32, 10
    model = _MobileNet(classes)
    x = torch.randn(batch, 3, image, image, generator=gen)
    y = torch.randint(0, classes, (batch,), generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, amsgrad=True, weight_decay=1e-5)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return _sample(model, step,
                   "MobileNet-like: stem conv, inverted residuals (1x1 expand, 3x3 depthwise "
                   "groups=C, 1x1 grouped project) with BatchNorm + SiLU/Hardswish, squeeze-excite "
                   "(ReLU6, Hardsigmoid), adaptive max pool, dropout, Adam(amsgrad), "
                   "clip_grad_norm_",
                   {"batch": batch, "input": [batch, 3, image, image], "classes": classes},
                   "depthwise/grouped convolutions, many BatchNorm layers, gradient clipping")


class _Vit(nn.Module):
    def __init__(self, image, patch, dim, heads, classes):
        super().__init__()
        self.patch, self.heads = patch, heads
        self.embed = nn.Parameter(torch.randn(3 * patch * patch, dim) * 0.02)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, dim))
        self.ln1, self.ln2, self.ln = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        patches = F.unfold(x, self.patch, stride=self.patch).transpose(1, 2)
        tok = torch.einsum("bnp,pd->bnd", patches, self.embed)
        tok = torch.cat([self.cls.expand(x.shape[0], -1, -1), tok], dim=1) + self.pos
        b, n, d = tok.shape
        q, k, v = self.qkv(self.ln1(tok)).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, d // self.heads).permute(0, 2, 1, 3)
                   for t in (q, k, v))
        att = torch.einsum("bhqd,bhkd->bhqk", q, k) / (d // self.heads) ** 0.5
        att = F.dropout(att.softmax(-1), 0.1, self.training)
        o = torch.matmul(att, v).permute(0, 2, 1, 3).contiguous().view(b, n, d)
        tok = tok + self.proj(o)
        tok = tok + self.mlp(self.ln2(tok))
        return self.head(self.ln(tok)[:, 0])


def buildZooVit(gen):
    batch, image, patch, dim, heads, classes = 8, 32, 8, 64, 4, 10
    model = _Vit(image, patch, dim, heads, classes)
    x = torch.randn(batch, 3, image, image, generator=gen)
    y = torch.randint(0, classes, (batch,), generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=1000)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), 0.5)
        opt.step()
        sched.step()
    return _sample(model, step,
                   "ViT-like: unfold patches + einsum embedding, class token, position "
                   "parameter, one pre-LN block (attention written out with einsum, softmax, "
                   "dropout, matmul; GELU MLP), AdamW(foreach=False), OneCycleLR, "
                   "clip_grad_value_",
                   {"batch": batch, "input": [batch, 3, image, image], "patch": patch,
                    "dim": dim, "heads": heads},
                   "einsum/unfold/permute views and a written-out attention")


class _SparseRec(nn.Module):
    def __init__(self, rows, dim):
        super().__init__()
        self.emb = nn.Embedding(rows, dim, sparse=True)
        self.bag = nn.EmbeddingBag(rows, dim, mode="max", sparse=False)
        self.wbag = nn.EmbeddingBag(rows // 2, dim, mode="sum", sparse=True)
        self.mlp = nn.Sequential(nn.Linear(3 * dim, 32), nn.Mish(), nn.Linear(32, 1))

    def forward(self, ids, bag_ids, offsets, wids, weights):
        a = self.emb(ids).mean(1)
        b = self.bag(bag_ids, offsets)
        c = self.wbag(wids, offsets, per_sample_weights=weights)
        return self.mlp(torch.cat([a, b, c], 1)).squeeze(1)


def buildZooSparse(gen):
    batch, rows, dim, hot = 32, 5000, 16, 4
    model = _SparseRec(rows, dim)
    ids = torch.randint(0, rows, (batch, hot), generator=gen)
    bag_ids = torch.randint(0, rows, (batch * hot,), generator=gen)
    wids = torch.randint(0, rows // 2, (batch * hot,), generator=gen)
    weights = torch.rand(batch * hot, generator=gen)
    offsets = torch.arange(0, batch * hot, hot)
    y = torch.rand(batch, generator=gen)
    sparse = [model.emb.weight, model.wbag.weight]
    dense = [p for p in model.parameters() if all(p is not s for s in sparse)]
    opts = [torch.optim.SparseAdam(sparse, lr=1e-2),
            torch.optim.Adagrad(dense, lr=1e-2, lr_decay=1e-4, foreach=True)]

    def step():
        for o in opts:
            o.zero_grad()
        loss = F.huber_loss(torch.sigmoid(model(ids, bag_ids, offsets, wids, weights)), y)
        loss.backward()
        for o in opts:
            o.step()
    return _sample(model, step,
                   "Embedding(sparse=True) mean over 4 ids, EmbeddingBag(max, offsets), "
                   "EmbeddingBag(sum, sparse, per_sample_weights), MLP with Mish, Huber loss, "
                   "SparseAdam on the sparse tables + Adagrad(foreach) on the rest",
                   {"batch": batch, "rows": rows, "dim": dim, "ids_per_sample": hot},
                   "sparse COO gradients (coalesce, sparse_mask, index_select) and max bags")


class _Moe(nn.Module):
    """Top-2 routing over 4 experts the way small MoE codes write it: sort tokens by expert,
    cumsum for positions, a capacity mask, gather/scatter/index_add to combine."""

    def __init__(self, dim, experts, capacity):
        super().__init__()
        self.experts, self.capacity = experts, capacity
        self.gate = nn.Linear(dim, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, dim, 2 * dim) * 0.05)
        self.w2 = nn.Parameter(torch.randn(experts, 2 * dim, dim) * 0.05)

    def forward(self, x):
        probs = self.gate(x).softmax(-1)
        weight, expert = probs.topk(2, dim=-1)
        weight = weight / weight.sum(-1, keepdim=True)
        flat_e = expert.flatten()
        order = flat_e.argsort(stable=True)
        sorted_e, _ = flat_e.sort()
        one_hot = F.one_hot(sorted_e, self.experts)
        pos = (one_hot.cumsum(0) - 1).gather(1, sorted_e[:, None]).squeeze(1)
        keep = pos < self.capacity
        token = order // 2
        slots = torch.zeros(self.experts, self.capacity, x.shape[1])
        idx = (sorted_e * self.capacity + pos.clamp(max=self.capacity - 1))
        src = x.index_select(0, token) * keep[:, None]
        slots = slots.view(-1, x.shape[1]).index_add(0, idx.masked_fill(~keep, 0), src)
        h = torch.bmm(F.relu(torch.bmm(slots.view(self.experts, self.capacity, -1), self.w1)),
                      self.w2).view(-1, x.shape[1])
        w = weight.flatten()[order].masked_fill(~keep, 0.0)
        out = torch.zeros_like(x).index_add_(0, token, h[idx] * w[:, None])
        dense_w = torch.zeros_like(probs).scatter_(1, expert, weight)  # [tokens, experts]
        counts = torch.bincount(flat_e, minlength=self.experts).float() + dense_w.sum(0) * 0
        aux = (counts / counts.sum() * probs.mean(0)).sum() * self.experts
        dropped = torch.where(keep, torch.zeros_like(pos), torch.ones_like(pos)).sum()
        return out + x, aux, dropped


def buildZooMoe(gen):
    tokens, dim, experts, capacity, classes = 64, 32, 4, 40, 8
    moe = _Moe(dim, experts, capacity)
    head = nn.Linear(dim, classes)
    model = nn.ModuleList([moe, head])
    x = torch.randn(tokens, dim, generator=gen)
    y = torch.randint(0, classes, (tokens,), generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)

    def step():
        opt.zero_grad()
        h, aux, dropped = moe(x)
        logits = head(h)
        keep = (y != 0) | (dropped > 0)
        loss = F.cross_entropy(logits[keep], y[keep]) + 0.01 * aux
        loss.backward()
        opt.step()
    return _sample(model, step,
                   "MoE layer: softmax gate, top-2, argsort/sort by expert, one_hot + cumsum "
                   "positions, capacity mask, index_select/index_add/scatter_/gather/masked_fill/"
                   "where, "
                   "bincount load-balancing loss, batched expert MLPs (bmm), boolean-mask "
                   "indexing of the loss, Adam(foreach)",
                   {"tokens": tokens, "dim": dim, "experts": experts, "capacity": capacity},
                   "data-dependent shapes and int64/bool index tensors")


class _Critic(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.a = nn.Linear(dim, 32)
        self.b = nn.Linear(32, 1)

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


def buildZooMisc(gen):
    batch, dim = 16, 24
    model = _Critic(dim)
    x = torch.randn(batch, dim, generator=gen)
    held_out = torch.randn(batch, dim, generator=gen)
    buf = torch.zeros(dim, batch)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.5, dampening=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)

    def step():
        opt.zero_grad()
        # in-place views: a transposed buffer written through narrow and as_strided
        t = buf.clone()
        t.transpose_(0, 1)
        t.narrow(0, 0, batch // 2).copy_(x[: batch // 2])
        diag = t.as_strided((min(batch, dim),), (dim + 1,))
        diag.add_(1.0)
        inp = (t + x).requires_grad_(True)
        score = model(inp)
        # gradient penalty: double backward through autograd.grad
        g, = torch.autograd.grad(score.sum(), inp, create_graph=True)
        penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
        flags = score.squeeze(1) > 0
        idx = torch.nonzero(flags).squeeze(1)
        loss = score.mean() + 10 * penalty + score.squeeze(1).index_select(0, idx).sum() * 0 \
            + (flags.long().sum() * 0).float()
        loss.backward()
        opt.step()
        sched.step()
        with torch.no_grad():  # evaluation step inside the same iteration
            model.eval()
            val = model(held_out)
            (val.argmax(0) == torch.arange(1)).all()
            model.train()
    return _sample(model, step,
                   "critic MLP with a gradient penalty (autograd.grad create_graph + double "
                   "backward), inputs built through transpose_/narrow/as_strided in-place views, "
                   "bool/int64 masks (nonzero, index_select), SGD(momentum, dampening), "
                   "CosineAnnealingLR, a torch.no_grad evaluation pass",
                   {"batch": batch, "dim": dim},
                   "double backward, in-place views, no_grad")


BUILDERS = {"zoo_rnn": buildZooRnn, "zoo_autoencoder": buildZooAutoencoder,
            "zoo_mobilenet": buildZooMobilenet, "zoo_vit": buildZooVit,
            "zoo_sparse": buildZooSparse, "zoo_moe": buildZooMoe, "zoo_misc": buildZooMisc}

import zoo_models_lib  # noqa: E402  (the zoo's models built on library features)
BUILDERS.update(zoo_models_lib.BUILDERS)
