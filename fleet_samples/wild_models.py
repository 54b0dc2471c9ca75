# SPDX-License-Identifier: MIT
"""Workloads users bring that neither the fleet nor the zoo covers, recorded to find what the
tools break on (`record.py --model wild_<name> [--size KEY=VALUE] --out-dir DIR`):
  wild_unet     UNet: cat skip connections, interpolate/upsample, BatchNorm and GroupNorm
  wild_gnn      message passing on an edge list: index_select, index_add/scatter_add, segment
                means from a degree count, float64 edge weights cast down
  wild_seq2seq  nn.Transformer encoder-decoder with key-padding masks and a causal mask,
                label-smoothed cross-entropy ignoring the pad token
  wild_vae      VAE: randn_like reparameterisation, KL term, BCE-with-logits
  wild_f64      an MLP trained entirely in float64
  wild_inplace  in-place-heavy step: add_/mul_/relu_/clamp_, copy_ into views, addcmul_
  wild_accum    gradient accumulation over 2 micro-batches, one optimizer step
  wild_infer    inference only under torch.no_grad (no backward, no optimizer)
Every builder reads models.SIZES (record.py --size), so each can be recorded at other sizes.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from models import Sample, _sized


def _sample(model, step, description, shapes, why):
    return Sample(model, step, description, shapes, False, why)


def _plainStep(model, opt, loss_of):
    def step():
        opt.zero_grad()
        loss_of().backward()
        opt.step()
    return step


class _UNet(nn.Module):
    def __init__(self, ch, width):
        super().__init__()

        def block(cin, cout, norm):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), norm(cout), nn.ReLU(inplace=True))
        self.down1 = block(ch, width, nn.BatchNorm2d)
        self.down2 = block(width, 2 * width, lambda c: nn.GroupNorm(4, c))
        self.mid = block(2 * width, 2 * width, nn.BatchNorm2d)
        self.up2 = block(4 * width, width, lambda c: nn.GroupNorm(4, c))
        self.up1 = block(2 * width, width, nn.BatchNorm2d)
        self.tconv = nn.ConvTranspose2d(2 * width, 2 * width, 2, stride=2)
        self.out = nn.Conv2d(width, 1, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        m = self.mid(F.avg_pool2d(d2, 2))
        u2 = self.up2(torch.cat([self.tconv(m), d2], dim=1))
        u1 = self.up1(torch.cat([F.interpolate(u2, scale_factor=2, mode="bilinear",
                                               align_corners=False), d1], dim=1))
        return self.out(u1)


def buildWildUnet(gen):
    batch, image, width = _sized(batch=2, image=32, width=8)
    model = _UNet(3, width)
    x = torch.randn(batch, 3, image, image, generator=gen)
    mask = (torch.rand(batch, 1, image, image, generator=gen) > 0.5).float()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    step = _plainStep(model, opt, lambda: F.binary_cross_entropy_with_logits(model(x), mask)
                      + 0.1 * F.mse_loss(torch.sigmoid(model(x)), mask))
    return _sample(model, step,
                   "UNet: conv + BatchNorm/GroupNorm blocks, max/avg pooling, ConvTranspose2d "
                   "and bilinear interpolate upsampling, cat skip connections, BCE-with-logits + "
                   "MSE on a sigmoid, Adam(weight_decay)",
                   {"batch": batch, "image": image, "width": width}, "skip connections, norms")


class _Gnn(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.msg = nn.Linear(dim, dim)
        self.upd = nn.Linear(2 * dim, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x, src, dst, weight):
        for _ in range(2):
            m = self.msg(x).index_select(0, src) * weight.float().unsqueeze(1)
            agg = torch.zeros_like(x).index_add_(0, dst, m)
            deg = torch.zeros(x.shape[0], dtype=x.dtype).scatter_add_(
                0, dst, torch.ones_like(dst, dtype=x.dtype))
            agg = agg / deg.clamp(min=1).unsqueeze(1)  # segment mean
            x = F.relu(self.upd(torch.cat([x, agg], dim=1)))
        # graph readout: per-graph mean through scatter_add over a batch vector
        return self.head(x)


def buildWildGnn(gen):
    nodes, edges, dim, classes = _sized(nodes=200, edges=800, dim=32, classes=4)
    model = _Gnn(dim, classes)
    x = torch.randn(nodes, dim, generator=gen)
    src = torch.randint(0, nodes, (edges,), generator=gen)
    dst = torch.randint(0, nodes, (edges,), generator=gen)
    weight = torch.rand(edges, generator=gen, dtype=torch.float64)
    y = torch.randint(0, classes, (nodes,), generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = _plainStep(model, opt, lambda: F.nll_loss(F.log_softmax(model(x, src, dst, weight), 1), y))
    return _sample(model, step,
                   "2 rounds of message passing over an edge list: index_select on sources, "
                   "index_add_ into destinations, degree by scatter_add_, segment mean, float64 "
                   "edge weights cast to float32, log_softmax + nll_loss, AdamW",
                   {"nodes": nodes, "edges": edges, "dim": dim}, "gather/scatter on edge lists")


def buildWildSeq2seq(gen):
    batch, src_len, tgt_len, vocab, d_model = _sized(batch=4, src_len=12, tgt_len=10, vocab=50,
                                                     d_model=32)
    pad = 0
    model = nn.ModuleDict({"emb": nn.Embedding(vocab, d_model, padding_idx=pad),
                           "tf": nn.Transformer(d_model, 4, 1, 1, 2 * d_model, dropout=0.1,
                                                batch_first=True),
                           "out": nn.Linear(d_model, vocab)})
    src = torch.randint(1, vocab, (batch, src_len), generator=gen)
    tgt = torch.randint(1, vocab, (batch, tgt_len + 1), generator=gen)
    src[0, -3:] = pad
    tgt[1, -4:] = pad
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98))

    def loss():
        tin, tout = tgt[:, :-1], tgt[:, 1:]
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_len)
        h = model["tf"](model["emb"](src), model["emb"](tin), tgt_mask=causal,
                        src_key_padding_mask=src == pad, tgt_key_padding_mask=tin == pad,
                        memory_key_padding_mask=src == pad)
        logits = model["out"](h)
        return F.cross_entropy(logits.reshape(-1, vocab), tout.reshape(-1), ignore_index=pad,
                               label_smoothing=0.1)
    return _sample(model, _plainStep(model, opt, loss),
                   "nn.Transformer encoder-decoder (1+1 layers, 4 heads) with src/tgt/memory "
                   "key-padding masks and a causal mask, label-smoothed cross-entropy with "
                   "ignore_index, Adam",
                   {"batch": batch, "src_len": src_len, "tgt_len": tgt_len, "vocab": vocab},
                   "masks, decoder cross-attention")


class _Vae(nn.Module):
    def __init__(self, dim, hidden, latent):
        super().__init__()
        self.enc = nn.Linear(dim, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.Tanh(), nn.Linear(hidden, dim))

    def forward(self, x):
        h = F.leaky_relu(self.enc(x), 0.2)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar


def buildWildVae(gen):
    batch, dim, hidden, latent = _sized(batch=32, dim=64, hidden=48, latent=8)
    model = _Vae(dim, hidden, latent)
    x = (torch.rand(batch, dim, generator=gen) > 0.5).float()
    opt = torch.optim.Adamax(model.parameters(), lr=1e-3)

    def loss():
        recon, mu, logvar = model(x)
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / batch
        return F.binary_cross_entropy_with_logits(recon, x, reduction="sum") / batch + kl
    return _sample(model, _plainStep(model, opt, loss),
                   "VAE: leaky_relu encoder, randn_like reparameterisation, KL term, "
                   "BCE-with-logits (sum) reconstruction, Adamax",
                   {"batch": batch, "dim": dim, "latent": latent}, "random sampling in the step")


def buildWildF64(gen):
    batch, hidden = _sized(batch=16, hidden=64)
    model = nn.Sequential(nn.Linear(hidden, hidden), nn.Softplus(), nn.LayerNorm(hidden),
                          nn.Linear(hidden, 1)).double()
    x = torch.randn(batch, hidden, generator=gen, dtype=torch.float64)
    y = torch.randn(batch, 1, generator=gen, dtype=torch.float64)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=2)

    def step():
        def closure():
            opt.zero_grad()
            loss = F.smooth_l1_loss(model(x), y)
            loss.backward()
            return loss
        opt.step(closure)
    return _sample(model, step, "float64 MLP (Softplus, LayerNorm), smooth L1, LBFGS(max_iter=2)",
                   {"batch": batch, "hidden": hidden}, "float64 throughout; LBFGS closures")


def buildWildInplace(gen):
    batch, dim = _sized(batch=16, dim=32)
    lin = nn.Linear(dim, dim)
    x = torch.randn(batch, dim, generator=gen)
    stats = torch.zeros(2, dim)
    opt = torch.optim.SGD(lin.parameters(), lr=1e-2, momentum=0.9, nesterov=True)

    def step():
        opt.zero_grad()
        h = lin(x)
        h = h.clone()
        h.mul_(0.5).add_(1.0)
        h.relu_()
        h = h * 1.0  # relu_'s backward needs h unchanged
        h[:, : dim // 2].clamp_(max=3.0)
        h.addcmul_(x, x, value=0.1)
        loss = h.pow(2).mean()
        loss.backward()
        with torch.no_grad():
            stats[0].copy_(h.mean(0))
            stats[1].mul_(0.9).add_(h.var(0), alpha=0.1)
            stats.t()[1:3].fill_(0.0)
            lin.weight.grad.div_(2.0)
        opt.step()
    return _sample(lin, step,
                   "Linear with an in-place chain (mul_/add_/relu_/clamp_ on a slice/addcmul_), "
                   "running stats written with copy_/mul_/add_ into row views and fill_ through "
                   "a transposed slice, gradient scaled in place, SGD nesterov",
                   {"batch": batch, "dim": dim}, "in-place ops on views")


def buildWildAccum(gen):
    batch, dim, classes = _sized(batch=16, dim=48, classes=6)
    model = nn.Sequential(nn.Linear(dim, dim), nn.Dropout(0.2), nn.GELU(), nn.Linear(dim, classes))
    xs = torch.randn(2, batch, dim, generator=gen).unbind(0)
    ys = torch.randint(0, classes, (2, batch), generator=gen).unbind(0)
    opt = torch.optim.Adagrad(model.parameters(), lr=1e-2)

    def step():
        opt.zero_grad(set_to_none=True)
        for x, y in zip(xs, ys):
            (F.cross_entropy(model(x), y) / 2).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return _sample(model, step,
                   "MLP with dropout and GELU, gradients accumulated over 2 micro-batches "
                   "(zero_grad(set_to_none)), clip_grad_norm_, Adagrad",
                   {"batch": batch, "dim": dim, "micro_batches": 2}, "accumulated gradients")


def buildWildInfer(gen):
    batch, seq, d_model = _sized(batch=4, seq=16, d_model=32)
    layer = nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, batch_first=True, norm_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
                          nn.Linear(d_model, 3)).eval()
    x = torch.randn(batch, seq, d_model, generator=gen)

    def step():
        with torch.no_grad():
            probs = model(x).softmax(-1)
            top = probs.topk(2, dim=-1)
            (top.values[..., 0] > 0.5).sum()
    return _sample(model, step,
                   "inference only: TransformerEncoder (norm_first, eval: the fused fast path) "
                   "under torch.no_grad, softmax + topk",
                   {"batch": batch, "seq": seq, "d_model": d_model}, "no backward, no optimizer")


def buildWildLosses(gen):
    batch, classes, image, dim = _sized(batch=2, classes=5, image=16, dim=8)
    seg = nn.Conv2d(3, classes, 3, padding=1)
    proj = nn.Linear(dim, dim)
    model = nn.ModuleList([seg, proj])
    x = torch.randn(batch, 3, image, image, generator=gen)
    y = torch.randint(0, classes, (batch, image, image), generator=gen)
    y[0, :2] = -100
    weight = torch.rand(classes, generator=gen) + 0.5
    a, p, n = (torch.randn(4, dim, generator=gen) for _ in range(3))
    opt = torch.optim.RAdam(model.parameters(), lr=1e-3)

    def loss():
        logits = seg(x)
        l1 = F.cross_entropy(logits, y, weight=weight)  # nll_loss2d with ignore_index
        probs = logits.softmax(1)
        l2 = F.kl_div(probs.log(), torch.full_like(probs, 1.0 / classes), reduction="batchmean")
        l3 = torch.logsumexp(logits, 1).mean() + probs.cumsum(1)[:, -1].mean()
        e = proj(a)
        l4 = F.triplet_margin_loss(e, proj(p), proj(n)) + F.huber_loss(e, a)
        cov = e.T @ e + torch.eye(dim)
        l5 = torch.linalg.cholesky(cov).diagonal().log().sum() * 1e-3 \
            + torch.linalg.solve(cov, e.T).sum() * 1e-3
        drop = torch.distributions.Bernoulli(probs=torch.full((dim,), 0.9)).sample()
        idx = torch.multinomial(probs[0, :, 0, 0], 3, replacement=True)
        return l1 + l2 + l3 + l4 + l5 + (e * drop).mean() + logits[0, idx].mean() * 0
    return _sample(model, _plainStep(model, opt, loss),
                   "segmentation cross-entropy (nll_loss2d: class weights, ignore_index), kl_div, "
                   "logsumexp, cumsum, triplet margin and Huber losses, linalg cholesky/solve, "
                   "Bernoulli sampling, multinomial, RAdam",
                   {"batch": batch, "classes": classes, "image": image}, "losses and linalg")


def buildWildNested(gen):
    batch, seq, d_model = _sized(batch=4, seq=16, d_model=32)
    layer = nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, batch_first=True)
    model = nn.TransformerEncoder(layer, 2).eval()  # enable_nested_tensor: padding goes nested
    x = torch.randn(batch, seq, d_model, generator=gen)
    pad = torch.arange(seq)[None, :] >= torch.tensor([seq, seq - 3, seq // 2, 5])[:, None]

    def step():
        with torch.inference_mode():
            model(x, src_key_padding_mask=pad).sum()
    return _sample(model, step,
                   "inference_mode TransformerEncoder with a key-padding mask: the fast path "
                   "converts the batch to a nested tensor and back",
                   {"batch": batch, "seq": seq, "d_model": d_model}, "nested tensors")


BUILDERS = {"wild_unet": buildWildUnet, "wild_gnn": buildWildGnn,
            "wild_seq2seq": buildWildSeq2seq, "wild_vae": buildWildVae,
            "wild_f64": buildWildF64, "wild_inplace": buildWildInplace,
            "wild_accum": buildWildAccum, "wild_infer": buildWildInfer,
            "wild_losses": buildWildLosses, "wild_nested": buildWildNested}
