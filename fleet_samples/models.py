# SPDX-License-Identifier: MIT
"""The fleet-sample models and their synthetic inputs (no network: no weights, no datasets).

Each builder returns a Sample: the model, its optimizer, a step() that runs one real training
step (zero_grad, forward, loss, backward, optimizer step) and a description for meta.json.
Sizes are chosen so the big ops (GEMMs, convolutions) dominate a single-threaded iteration.
"""
import dataclasses
from typing import Callable, Dict

import torch
import torch.nn as nn


@dataclasses.dataclass
class Sample:
    model: nn.Module
    step: Callable[[], None]
    description: str
    shapes: Dict[str, object]
    compute_bound: bool
    why: str


# Size overrides for the builders that take them (record.py --size KEY=VALUE): one model
# recorded at several sizes, e.g. to check a predictor on sizes it was never tuned on.
SIZES: Dict[str, int] = {}


def _sized(**defaults):
    """The builder's default sizes with record.py's --size overrides applied."""
    unknown = set(SIZES) - set(defaults)
    if unknown:
        raise SystemExit("--size: this model takes %s, not %s"
                         % (", ".join(sorted(defaults)), ", ".join(sorted(unknown))))
    return [SIZES.get(k, v) for k, v in defaults.items()]


def _trainStep(model, opt, loss_fn, inputs, target):
    def step():
        opt.zero_grad()
        out = model(*inputs)
        loss = loss_fn(out, target)
        loss.backward()
        opt.step()
    return step


def buildMlp(gen):
    batch, hidden, classes = _sized(batch=256, hidden=1024, classes=16)
    layers = []
    for _ in range(4):
        layers += [nn.Linear(hidden, hidden), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(hidden, classes))
    x = torch.randn(batch, hidden, generator=gen)
    y = torch.randint(0, classes, (batch,), generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return Sample(model, _trainStep(model, opt, nn.functional.cross_entropy, (x,), y),
                  "4 x (Linear %d->%d + ReLU) + Linear %d->%d, cross-entropy, SGD momentum"
                  % (hidden, hidden, hidden, classes),
                  {"batch": batch, "hidden": hidden, "classes": classes, "input": [batch, hidden]},
                  True, "1024x1024 GEMMs at batch 256 dominate the step")


def buildResnet18(gen):
    import torchvision
    batch, image, classes = _sized(batch=8, image=112, classes=100)
    model = torchvision.models.resnet18(num_classes=classes)
    x = torch.randn(batch, 3, image, image, generator=gen)
    y = torch.randint(0, classes, (batch,), generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return Sample(model, _trainStep(model, opt, nn.functional.cross_entropy, (x,), y),
                  "torchvision resnet18(num_classes=%d), random init, batch %d, 3x%dx%d, cross-entropy, "
                  "SGD momentum" % (classes, batch, image, image),
                  {"batch": batch, "input": [batch, 3, image, image], "classes": classes},
                  True, "convolutions dominate the step")


class _Encoder(nn.Module):
    def __init__(self, d_model, heads, ff, layers, classes):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


def buildTransformer(gen):
    batch, seq, d_model, heads, ff, layers, classes = _sized(
        batch=8, seq=128, d_model=256, heads=4, ff=1024, layers=3, classes=10)
    model = _Encoder(d_model, heads, ff, layers, classes)
    x = torch.randn(batch, seq, d_model, generator=gen)
    y = torch.randint(0, classes, (batch,), generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    return Sample(model, _trainStep(model, opt, nn.functional.cross_entropy, (x,), y),
                  "nn.TransformerEncoder, %d layers, d_model %d, %d heads, ff %d, dropout 0.1, "
                  "mean-pool + Linear head, cross-entropy, Adam" % (layers, d_model, heads, ff),
                  {"batch": batch, "seq": seq, "d_model": d_model, "heads": heads, "ff": ff,
                   "layers": layers, "input": [batch, seq, d_model]},
                  True, "QKV/FF GEMMs over 1024 tokens dominate the step")


class _Dlrm(nn.Module):
    """DLRM-style: bottom MLP on dense features, EmbeddingBag (sum) per sparse feature,
    pairwise dot interaction, top MLP on [dense, interactions]."""

    def __init__(self, dense_in, rows, dim):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(dense_in, 512), nn.ReLU(), nn.Linear(512, 256),
                                    nn.ReLU(), nn.Linear(256, dim), nn.ReLU())
        self.tables = nn.ModuleList(nn.EmbeddingBag(r, dim, mode="sum") for r in rows)
        n = len(rows) + 1
        self.pairs = torch.tril_indices(n, n, offset=-1)
        self.top = nn.Sequential(nn.Linear(dim + n * (n - 1) // 2, 512), nn.ReLU(),
                                 nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, dense, indices, offsets):
        x = self.bottom(dense)
        feats = [x] + [t(i, o) for t, i, o in zip(self.tables, indices, offsets)]
        z = torch.stack(feats, dim=1)
        inter = torch.bmm(z, z.transpose(1, 2))
        flat = inter[:, self.pairs[0], self.pairs[1]]
        return self.top(torch.cat([x, flat], dim=1)).squeeze(1)


def zipfIndices(gen, rows, count, alpha):
    """Skewed ids: row k (1-based rank) drawn with probability proportional to 1/k^alpha,
    then ranks are scattered over the table by a fixed permutation (hot rows aren't all at 0)."""
    ranks = torch.arange(1, rows + 1, dtype=torch.float64)
    probs = ranks.pow(-alpha)
    draw = torch.multinomial(probs / probs.sum(), count, replacement=True, generator=gen)
    perm = torch.randperm(rows, generator=gen)
    return perm[draw]


def buildDlrm(gen):
    batch, dim, bag = _sized(batch=512, dim=64, bag=20)
    dense_in, alpha = 13, 1.05
    rows = [100000, 50000, 20000, 20000, 5000, 5000, 1000, 1000]
    model = _Dlrm(dense_in, rows, dim)
    dense = torch.randn(batch, dense_in, generator=gen)
    indices, offsets = [], []
    for r in rows:
        # variable bag sizes (1..2*bag-1) so offsets are not a trivial arithmetic sequence
        lengths = torch.randint(1, 2 * bag, (batch,), generator=gen)
        offsets.append(torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]]))
        indices.append(zipfIndices(gen, r, int(lengths.sum()), alpha))
    y = torch.randint(0, 2, (batch,), generator=gen).float()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step = _trainStep(model, opt, nn.functional.binary_cross_entropy_with_logits,
                      (dense, indices, offsets), y)
    return Sample(model, step,
                  "DLRM-style: bottom MLP 13-512-256-%d, 8 EmbeddingBag(sum, offsets) tables dim %d, "
                  "pairwise-dot interaction (bmm + tril gather), top MLP %d-512-256-1, batch %d, "
                  "mean bag %d, BCE, SGD (dense embedding gradients)"
                  % (dim, dim, dim + 36, batch, bag),
                  {"batch": batch, "dense_in": dense_in, "dim": dim, "rows": rows,
                   "mean_bag": bag, "zipf_alpha": alpha,
                   "indices_per_table": [int(i.numel()) for i in indices]},
                  False, "embedding gather/scatter and the dense table gradient/SGD update are "
                  "memory-bound, and replayed indices differ from the recorded ones")


def buildDdpMlp(gen):
    batch, hidden, classes = 128, 1024, 16
    layers = []
    for _ in range(3):
        layers += [nn.Linear(hidden, hidden), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(hidden, classes))
    x = torch.randn(batch, hidden, generator=gen)
    y = torch.randint(0, classes, (batch,), generator=gen)
    return model, x, y, {"batch_per_rank": batch, "hidden": hidden, "classes": classes,
                         "input": [batch, hidden]}


def buildLstm(gen):
    batch, seq, features, hidden, layers, classes = _sized(
        batch=16, seq=32, features=64, hidden=128, layers=2, classes=10)
    model = _LstmClassifier(features, hidden, layers, classes)
    x = torch.randn(batch, seq, features, generator=gen)
    y = torch.randint(0, classes, (batch,), generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return Sample(model, _trainStep(model, opt, nn.functional.cross_entropy, (x,), y),
                  "nn.LSTM %d layers, %d -> %d hidden, batch %d x seq %d, last step -> Linear "
                  "%d->%d, cross-entropy, SGD momentum"
                  % (layers, features, hidden, batch, seq, hidden, classes),
                  {"batch": batch, "seq": seq, "features": features, "hidden": hidden,
                   "layers": layers, "input": [batch, seq, features]},
                  False, "the CPU LSTM runs small per-time-step GEMMs and its backward is hundreds "
                  "of small autograd nodes: the autograd engine's host time is a large share")


class _LstmClassifier(nn.Module):
    def __init__(self, features, hidden, layers, classes):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def buildConvAdamW(gen):
    batch, image, width, classes = _sized(batch=16, image=64, width=32, classes=10)
    model = nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.Conv2d(2 * width, 2 * width, 3, stride=2, padding=1), nn.BatchNorm2d(2 * width),
        nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, classes))
    x = torch.randn(batch, 3, image, image, generator=gen)
    y = torch.randint(0, classes, (batch,), generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    return Sample(model, _trainStep(model, opt, nn.functional.cross_entropy, (x,), y),
                  "3 x (Conv2d 3x3 + BatchNorm + ReLU) 3->%d->%d->%d (stride 1, 2, 2), global "
                  "avg-pool, Linear %d->%d, batch %d, 3x%dx%d, cross-entropy, AdamW(foreach=True)"
                  % (width, 2 * width, 2 * width, 2 * width, classes, batch, image, image),
                  {"batch": batch, "input": [batch, 3, image, image], "classes": classes},
                  True, "convolutions dominate the step; AdamW's _foreach_* ops take "
                  "Scalar[] lists")


class _CausalSelfAttention(nn.Module):
    def __init__(self, d_model, heads, seq):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer("mask", torch.ones(seq, seq, dtype=torch.bool).triu(1))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        att = att.masked_fill(self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class _Block(nn.Module):
    def __init__(self, d_model, heads, seq):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = _CausalSelfAttention(d_model, heads, seq)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class _Gpt(nn.Module):
    def __init__(self, vocab, d_model, heads, layers, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq, d_model)
        self.blocks = nn.Sequential(*[_Block(d_model, heads, seq) for _ in range(layers)])
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1])
        x = self.blocks(self.tok(idx) + self.pos(pos))
        return self.head(self.ln(x)).flatten(0, 1)


def buildGpt(gen):
    batch, seq, vocab, d_model, heads, layers = _sized(
        batch=8, seq=64, vocab=1024, d_model=128, heads=4, layers=2)
    model = _Gpt(vocab, d_model, heads, layers, seq)
    idx = torch.randint(0, vocab, (batch, seq), generator=gen)
    target = torch.randint(0, vocab, (batch * seq,), generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, foreach=True)
    return Sample(model, _trainStep(model, opt, nn.functional.cross_entropy, (idx,), target),
                  "GPT-style decoder: token + position Embedding, %d blocks (pre-LayerNorm, causal "
                  "self-attention %d heads with a triu mask + masked_fill, MLP %d->%d->%d GELU), "
                  "LayerNorm, Linear %d->%d head, batch %d x seq %d, cross-entropy, "
                  "AdamW(foreach=True)" % (layers, heads, d_model, 4 * d_model, d_model, d_model,
                                           vocab, batch, seq),
                  {"batch": batch, "seq": seq, "vocab": vocab, "d_model": d_model,
                   "heads": heads, "layers": layers, "input": [batch, seq]},
                  False, "many small ops (attention per head, LayerNorm, foreach optimizer over "
                  "30 parameters) at this size: host time between ops is a large share")


def buildDdpTransformer(gen):
    """A small encoder for DDP samples: 2 to 4 ranks share 2 cores, so each rank's step is kept
    to tens of milliseconds (the single-rank transformer sample is 20x bigger)."""
    batch, seq, d_model, heads, ff, layers, classes = 4, 64, 128, 4, 512, 2, 10
    model = _Encoder(d_model, heads, ff, layers, classes)
    x = torch.randn(batch, seq, d_model, generator=gen)
    y = torch.randint(0, classes, (batch,), generator=gen)
    return model, x, y, {"batch_per_rank": batch, "seq": seq, "d_model": d_model,
                         "heads": heads, "ff": ff, "layers": layers,
                         "input": [batch, seq, d_model]}


# DDP samples: builder and optimizer per model (ddp_record.py).
DDP_BUILDERS = {"mlp": buildDdpMlp, "transformer": buildDdpTransformer}

BUILDERS = {"mlp": buildMlp, "resnet18": buildResnet18, "transformer": buildTransformer,
            "dlrm": buildDlrm, "lstm": buildLstm, "conv_adamw": buildConvAdamW, "gpt": buildGpt}

# Every fleet builder above reads SIZES (record.py refuses --size for the DDP samples and the zoo).
SIZED = set(BUILDERS)

# The zoo (fleet_samples/zoo_models.py): architectures and training styles the samples above
# lack, recorded on demand (`record.py --model zoo_<name> --out-dir DIR`), not committed.
import zoo_models  # noqa: E402  (imports Sample from this module)
BUILDERS.update(zoo_models.BUILDERS)

# Workloads found missing by a sweep over all tools (fleet_samples/wild_models.py); they read
# SIZES too.
import wild_models  # noqa: E402
BUILDERS.update(wild_models.BUILDERS)
SIZED.update(wild_models.BUILDERS)

# A second sweep's workloads (fleet_samples/wild2_models.py): autocast, TorchScript, complex
# FFTs, masked attention + packed GRU, sparse embeddings, dynamic quantization.
import wild2_models  # noqa: E402
BUILDERS.update(wild2_models.BUILDERS)
SIZED.update(wild2_models.BUILDERS)

# A third sweep's (fleet_samples/wild3_models.py): optimizers with foreach + LBFGS + EMA,
# data-dependent shapes, torch.distributions, sampling grids and dilated convolutions.
import wild3_models  # noqa: E402
BUILDERS.update(wild3_models.BUILDERS)
SIZED.update(wild3_models.BUILDERS)
