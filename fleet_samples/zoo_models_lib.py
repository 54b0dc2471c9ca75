# SPDX-License-Identifier: MIT
"""The zoo's models built on library features rather than hand-written layers: bfloat16
autocast, TorchScript, activation checkpointing, torchvision's own operators
(torchvision::roi_align, nms: et_replay --load-library) and torchvision architectures.
Registered into models.BUILDERS through zoo_models.py.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

from zoo_models import _sample


class _Speech(nn.Module):
    """CTC acoustic model bits: spectral features (rfft), a scripted conv block, pixel shuffle
    upsampling, grid_sample, embedding with max_norm, multi-head attention, checkpointing."""

    def __init__(self, dim, vocab):
        super().__init__()
        self.conv = torch.jit.script(nn.Sequential(nn.Conv1d(dim, dim, 3, padding=1), nn.GELU()))
        self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)
        self.emb = nn.Embedding(vocab, dim, max_norm=1.0)
        self.up = nn.Conv2d(1, 4, 3, padding=1)
        self.out = nn.Linear(dim, vocab)

    def forward(self, wave, labels):
        spec = torch.fft.rfft(wave, dim=-1).abs()[..., : self.out.in_features]  # [B, T, dim]
        h = self.conv(spec.transpose(1, 2)).transpose(1, 2)
        h = torch.utils.checkpoint.checkpoint(lambda z: self.attn(z, z, z)[0], h,
                                              use_reentrant=False)
        img = F.pixel_shuffle(self.up(h[:, None]), 2)  # [B, 1, 2T, 2dim]
        grid = torch.zeros(h.shape[0], h.shape[1], h.shape[2], 2)
        h = h + F.grid_sample(img, grid, align_corners=False)[:, 0] + self.emb(labels).mean(1, True)
        return self.out(F.pad(h, (0, 0, 0, 2), mode="reflect")).log_softmax(-1)


def buildZooSpeech(gen):
    batch, steps, dim, vocab, label_len = 4, 20, 16, 12, 6
    model = _Speech(dim, vocab)
    wave = torch.randn(batch, steps, 2 * dim, generator=gen)
    labels = torch.randint(1, vocab, (batch, label_len), generator=gen)
    in_lens = torch.full((batch,), steps + 2, dtype=torch.long)
    lab_lens = torch.randint(2, label_len + 1, (batch,), generator=gen)
    opt = torch.optim.Adamax(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logp = model(wave, labels)
        loss = F.ctc_loss(logp.float().transpose(0, 1), labels, in_lens, lab_lens)
        loss.backward()
        opt.step()
        with torch.no_grad():
            model.eval()
            model.attn(wave[..., :dim], wave[..., :dim], wave[..., :dim], need_weights=False)
            model.train()
    return _sample(model, step,
                   "rfft features, torch.jit.script Conv1d + GELU, MultiheadAttention under "
                   "checkpoint(use_reentrant=False), pixel_shuffle + grid_sample, Embedding "
                   "max_norm, reflect pad, log_softmax, CTC loss, bfloat16 autocast on CPU, "
                   "Adamax, an eval MultiheadAttention under no_grad (the fused fast path)",
                   {"batch": batch, "steps": steps, "dim": dim, "vocab": vocab},
                   "scripted graphs, bfloat16 autocast, CTC lengths, complex tensors")


class _Detector(nn.Module):
    """Second-stage detector bits: RoIAlign over a conv feature map, box regression and
    classification heads, torchvision's box ops (the torchvision:: operators)."""

    def __init__(self, classes):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, 2, 1))
        self.cls = nn.Linear(32 * 4 * 4, classes)
        self.box = nn.Linear(32 * 4 * 4, 4)

    def forward(self, images, boxes):
        import torchvision.ops as ops
        feats = self.backbone(images)
        rois = ops.roi_align(feats, boxes, output_size=4, spatial_scale=0.25, sampling_ratio=2)
        flat = rois.flatten(1)
        return self.cls(flat), self.box(flat)


def buildZooDetect(gen):
    import torchvision.ops as ops
    batch, image, per_image, classes = 2, 64, 8, 5
    model = _Detector(classes)
    images = torch.randn(batch, 3, image, image, generator=gen)
    xy = torch.rand(batch * per_image, 2, generator=gen) * (image / 2)
    wh = torch.rand(batch * per_image, 2, generator=gen) * (image / 2) + 4
    idx = torch.arange(batch).repeat_interleave(per_image)[:, None].float()
    boxes = torch.cat([idx, xy, xy + wh], 1)
    labels = torch.randint(0, classes, (batch * per_image,), generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)

    def step():
        opt.zero_grad()
        logits, delta = model(images, boxes)
        pred = boxes[:, 1:] + delta
        keep = ops.batched_nms(pred.detach(), logits.detach().softmax(-1).max(-1)[0], labels, 0.5)
        iou = ops.box_iou(pred, boxes[:, 1:]).diagonal()
        loss = F.cross_entropy(logits, labels) + (1 - iou).mean() + \
            ops.sigmoid_focal_loss(logits, F.one_hot(labels, classes).float(), reduction="mean") + \
            delta[keep].pow(2).mean() * 0.01
        loss.backward()
        opt.step()
    return _sample(model, step,
                   "RoIAlign (torchvision::roi_align) over a small conv backbone, class and box "
                   "heads, batched_nms (torchvision::nms), box_iou, sigmoid_focal_loss, SGD",
                   {"batch": batch, "input": [batch, 3, image, image], "rois": batch * per_image},
                   "operators from torchvision's own library (et_replay --load-library)")


class _Quantized(nn.Module):
    """Quantization-aware training (fake-quant observers), weight and spectral norm, and a
    grab-bag of value-dependent tensor ops (searchsorted, bucketize, unique, kthvalue,
    scatter_reduce, masked_scatter, take_along_dim, cummax, where(cond))."""

    def __init__(self, dim):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.fc = nn.Linear(dim, dim)
        self.dequant = torch.ao.quantization.DeQuantStub()
        self.normed = nn.Sequential(nn.utils.weight_norm(nn.Linear(dim, dim)), nn.ReLU(),
                                    nn.utils.spectral_norm(nn.Linear(dim, dim)))
        self.normed.qconfig = None  # float layers beside the quantized one

    def forward(self, x):
        h = self.normed(self.dequant(F.relu(self.fc(self.quant(x)))))
        edges = torch.linspace(-1, 1, 9)
        bins = torch.bucketize(h.detach(), edges) + torch.searchsorted(edges, h.detach())
        uniq, counts = torch.unique(bins, return_counts=True)
        top = h.kthvalue(2, dim=1).values + h.cummax(1).values[:, -1]
        red = torch.zeros(h.shape[0], 18).scatter_reduce(1, bins, h, reduce="amax",
                                                        include_self=False)
        picked = torch.take_along_dim(h, bins.clamp(max=h.shape[1] - 1), dim=1)
        mask = h > 0
        filled = torch.zeros_like(h).masked_scatter(mask, h[mask] * 2)
        rows = torch.where(mask.any(1))[0]
        return (top.sum() + red.sum() * 0 + picked.mean() + filled.mean() + h[rows].mean()
                + counts.float().mean() * 0 + uniq.numel() * 0)


def buildZooQat(gen):
    batch, dim = 16, 32
    model = _Quantized(dim)
    model.qconfig = torch.ao.quantization.get_default_qat_qconfig("fbgemm")
    model.train()
    torch.ao.quantization.prepare_qat(model, inplace=True)
    x = torch.randn(batch, dim, generator=gen)
    opt = torch.optim.NAdam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        model(x).backward()
        opt.step()
    return _sample(model, step,
                   "QAT (prepare_qat, fbgemm fake-quant observers) over weight_norm and "
                   "spectral_norm Linear layers, then bucketize/searchsorted, unique(counts), "
                   "kthvalue, cummax, scatter_reduce(amax), take_along_dim, masked_scatter, "
                   "where(cond), NAdam", {"batch": batch, "dim": dim},
                   "fake-quant int tensors (zero points, enable flags), value-dependent ops")


def _torchvision(name, image, **kwargs):
    def build(gen):
        import torchvision
        if name == "VisionTransformer":
            model = torchvision.models.VisionTransformer(num_classes=10, **kwargs)
        else:
            model = getattr(torchvision.models, name)(num_classes=10, **kwargs)
        x = torch.randn(2, 3, image, image, generator=gen)
        y = torch.randint(0, 10, (2,), generator=gen)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

        def step():
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        return _sample(model, step, "torchvision %s(num_classes=10), batch 2, 3x%dx%d, SGD"
                       % (name, image, image), {"input": [2, 3, image, image]},
                       "a public architecture as users will bring it")
    return build


# Public architectures with ops the hand-written zoo lacks (shifted windows, channel
# shuffle, dense concatenation, stochastic depth, the fused attention path, grouped
# convolutions of 4-32 channels a group).
TORCHVISION = {"swin_t": (64, {}), "resnext50_32x4d": (32, {}), "regnet_x_400mf": (32, {}),
               "regnet_y_400mf": (32, {}), "convnext_tiny": (64, {}), "shufflenet_v2_x0_5": (64, {}),
               "densenet121": (32, {}), "efficientnet_b0": (64, {}), "mnasnet0_5": (64, {}),
               "googlenet": (64, {"aux_logits": False, "init_weights": False}),
               "VisionTransformer": (32, {"image_size": 32, "patch_size": 8, "num_layers": 2,
                                          "num_heads": 4, "hidden_dim": 64, "mlp_dim": 128})}


BUILDERS = {"zoo_speech": buildZooSpeech, "zoo_detect": buildZooDetect, "zoo_qat": buildZooQat}
BUILDERS.update({"zoo_tv_" + k.lower(): _torchvision(k, image, **kw)
                 for k, (image, kw) in TORCHVISION.items()})
