# SPDX-License-Identifier: MIT
"""A third sweep of workloads no earlier sample covers (`record.py --model wild3_<name>
[--size KEY=VALUE] --out-dir DIR`):
  wild3_optim   Adagrad / RMSprop / NAdam / RAdam with foreach=True on four parameter groups,
                LBFGS on a fifth (a closure: several forward/backward passes per step), an LR
                scheduler, clip_grad_norm_(foreach) and an EMA of the weights under no_grad
                (torch._foreach_mul_ / _foreach_add_ with alpha)
  wild3_dyn     data-dependent shapes: unique (inverse, counts), unique_consecutive, nonzero,
                repeat_interleave with a tensor of repeats, masked_select, topk / sort / argsort,
                bincount with weights, histc, searchsorted, kthvalue
  wild3_policy  a policy-gradient (REINFORCE + value baseline) step with torch.distributions:
                Categorical and Normal sample, log_prob, entropy
  wild3_warp    spatial transformer (affine_grid + grid_sample), dilated causal Conv1d gated
                like WaveNet, pixel_shuffle, bilinear interpolate with align_corners=True, and an
                InfoNCE contrastive loss (normalize, similarity matrix, logsumexp)
Every builder reads models.SIZES (record.py --size), so each can be recorded at other sizes.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, Normal

from models import Sample, _sized


def _sample(model, step, description, shapes, why):
    return Sample(model, step, description, shapes, False, why)


def _mlp(dim, out):
    return nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, out))


def buildWild3Optim(gen):
    batch, dim = _sized(batch=8, dim=16)
    parts = nn.ModuleList([_mlp(dim, dim) for _ in range(5)])
    x = torch.randn(batch, dim, generator=gen)
    y = torch.randn(batch, dim, generator=gen)
    opts = [torch.optim.Adagrad(parts[0].parameters(), lr=1e-2, foreach=True),
            torch.optim.RMSprop(parts[1].parameters(), lr=1e-3, momentum=0.9, foreach=True),
            torch.optim.NAdam(parts[2].parameters(), lr=1e-3, foreach=True),
            torch.optim.RAdam(parts[3].parameters(), lr=1e-3, weight_decay=1e-4, foreach=True)]
    lbfgs = torch.optim.LBFGS(parts[4].parameters(), lr=0.5, max_iter=3, history_size=4)
    sched = torch.optim.lr_scheduler.ExponentialLR(opts[2], gamma=0.99)
    params = [p for m in parts[:4] for p in m.parameters()]
    ema = [p.detach().clone() for p in params]

    def chain(h):
        for m in parts[:4]:
            h = m(h)
        return h

    def closure():
        lbfgs.zero_grad()
        loss = F.mse_loss(parts[4](x), y)
        loss.backward()
        return loss

    def step():
        for o in opts:
            o.zero_grad()
        F.smooth_l1_loss(chain(x), y).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        for o in opts:
            o.step()
        sched.step()
        lbfgs.step(closure)
        with torch.no_grad():
            torch._foreach_mul_(ema, 0.99)
            torch._foreach_add_(ema, [p.detach() for p in params], alpha=0.01)
    return _sample(parts, step,
                   "5 small MLPs: Adagrad, RMSprop(momentum), NAdam, RAdam(weight_decay) with "
                   "foreach=True, ExponentialLR, clip_grad_norm_, an EMA of the weights "
                   "(_foreach_mul_/_foreach_add_ under no_grad), LBFGS(max_iter=3) closure",
                   {"batch": batch, "dim": dim}, "optimizer loops, several passes per step")


def buildWild3Dyn(gen):
    batch, tokens, vocab, dim = _sized(batch=4, tokens=24, vocab=40, dim=16)
    emb = nn.Embedding(vocab, dim)
    score = nn.Linear(dim, 1)
    ids = torch.randint(0, vocab, (batch, tokens), generator=gen)
    opt = torch.optim.SGD(list(emb.parameters()) + list(score.parameters()), lr=1e-2)

    def step():
        opt.zero_grad()
        flat = ids.flatten()
        uniq, inverse, counts = torch.unique(flat, sorted=True, return_inverse=True,
                                             return_counts=True)
        runs, run_len = torch.unique_consecutive(flat.sort().values, return_counts=True)
        e = emb(uniq)                                   # one row per distinct id
        s = score(e).squeeze(1)
        top_v, top_i = torch.topk(s, k=min(5, s.numel()))
        order = torch.argsort(s, descending=True)
        kept = torch.nonzero(s > s.median()).squeeze(1)
        rep = torch.repeat_interleave(e[kept], counts[kept], dim=0)
        sel = torch.masked_select(s, s > 0)
        hist = torch.histc(s.detach(), bins=8, min=-2.0, max=2.0)
        bins = torch.bincount(inverse, weights=s.detach()[inverse], minlength=uniq.numel())
        edges = torch.linspace(-1.0, 1.0, 5)
        bucket = torch.searchsorted(edges, s.detach().contiguous())
        kth = torch.kthvalue(s, k=max(1, s.numel() // 2)).values
        loss = (rep.pow(2).mean() + top_v.sum() * 0.1 + sel.sum() * 0.01
                + e[order[:3]].mean() + kth
                + (bins * hist.sum() * bucket.float().mean() * run_len.float().mean()
                   * runs.float().mean()).mean() * 1e-6)
        loss.backward()
        opt.step()
    return _sample(nn.ModuleList([emb, score]), step,
                   "data-dependent shapes: unique(inverse, counts), unique_consecutive, "
                   "embedding of the distinct ids, topk, argsort, nonzero, repeat_interleave "
                   "with tensor repeats, masked_select, histc, bincount(weights), "
                   "searchsorted, kthvalue; SGD",
                   {"batch": batch, "tokens": tokens, "vocab": vocab, "dim": dim},
                   "output shapes set by the data")


class _ActorCritic(nn.Module):
    def __init__(self, obs, hidden, actions):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh())
        self.logits = nn.Linear(hidden, actions)
        self.mu = nn.Linear(hidden, 2)
        self.log_std = nn.Parameter(torch.zeros(2))
        self.value = nn.Linear(hidden, 1)

    def forward(self, s):
        h = self.body(s)
        return self.logits(h), self.mu(h), self.value(h).squeeze(-1)


def buildWild3Policy(gen):
    batch, obs, hidden, actions = _sized(batch=16, obs=8, hidden=32, actions=5)
    model = _ActorCritic(obs, hidden, actions)
    states = torch.randn(batch, obs, generator=gen)
    returns = torch.randn(batch, generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)

    def step():
        opt.zero_grad()
        logits, mu, value = model(states)
        disc = Categorical(logits=logits)
        cont = Normal(mu, model.log_std.exp())
        a = disc.sample()
        u = cont.rsample()
        logp = disc.log_prob(a) + cont.log_prob(u).sum(-1)
        adv = (returns - value).detach()
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        loss = (-(logp * adv).mean() + 0.5 * F.mse_loss(value, returns)
                - 0.01 * (disc.entropy().mean() + cont.entropy().sum(-1).mean()))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
    return _sample(model, step,
                   "actor-critic policy gradient: Categorical(logits) and Normal(mu, exp(log_std))"
                   " sample/rsample, log_prob, entropy, normalised advantages, value MSE, "
                   "clip_grad_norm_, Adam",
                   {"batch": batch, "obs": obs, "hidden": hidden, "actions": actions},
                   "sampling ops (multinomial, normal) and small reductions")


class _Warp(nn.Module):
    def __init__(self, ch, emb):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(ch, 8, 3, padding=1), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 6))
        self.up = nn.Conv2d(ch, ch * 4, 3, padding=1)
        self.filt = nn.ModuleList([nn.Conv1d(ch, 2 * ch, 2, dilation=d) for d in (1, 2, 4)])
        self.proj = nn.Linear(ch, emb)

    def forward(self, img):
        n, c = img.shape[:2]
        theta = self.loc(img).view(n, 2, 3) + torch.tensor([[1., 0., 0.], [0., 1., 0.]])
        grid = F.affine_grid(theta, list(img.shape), align_corners=False)
        warped = F.grid_sample(img, grid, mode="bilinear", padding_mode="border",
                               align_corners=False)
        big = F.pixel_shuffle(self.up(warped), 2)                     # 2x spatial
        small = F.interpolate(big, scale_factor=0.5, mode="bilinear", align_corners=True)
        seq = small.flatten(2)                                         # n, c, h*w
        for conv in self.filt:                                         # causal: pad left only
            pad = conv.dilation[0] * (conv.kernel_size[0] - 1)
            f, g = conv(F.pad(seq, (pad, 0))).chunk(2, dim=1)
            seq = seq + torch.tanh(f) * torch.sigmoid(g)
        return self.proj(seq.mean(-1))


def buildWild3Warp(gen):
    batch, ch, image, emb = _sized(batch=4, ch=4, image=12, emb=16)
    model = _Warp(ch, emb)
    a = torch.randn(batch, ch, image, image, generator=gen)
    b = a + 0.1 * torch.randn(batch, ch, image, image, generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        za = F.normalize(model(a), dim=-1)
        zb = F.normalize(model(b), dim=-1)
        sim = za @ zb.t() / 0.1
        pos = sim.diagonal()
        loss = (torch.logsumexp(sim, dim=1) - pos).mean()   # InfoNCE
        loss.backward()
        opt.step()
    return _sample(model, step,
                   "affine_grid + grid_sample (bilinear, border), pixel_shuffle, interpolate "
                   "bilinear align_corners=True, 3 dilated causal Conv1d with tanh*sigmoid gates "
                   "(WaveNet-like), InfoNCE over a normalised similarity matrix "
                   "(logsumexp, diagonal); AdamW",
                   {"batch": batch, "ch": ch, "image": image, "emb": emb},
                   "sampling grids, dilations, small convolutions")


BUILDERS = {"wild3_optim": buildWild3Optim, "wild3_dyn": buildWild3Dyn,
            "wild3_policy": buildWild3Policy, "wild3_warp": buildWild3Warp}
