"""A small PhysNet (Yu et al. 2019): 3D convolutions over (time, height, width), two
temporal poolings and two transposed convolutions back to the input frame rate, spatial
average pooling and a 1x1x1 head that outputs one pulse value per frame.

Every layer has a slot for adaptation branches, one per domain that asked for it (the
Hierarchical Expansion Strategy): a residual bottleneck h + U(elu(D h)) with a temporal
kernel in U. U starts at zero, so adding a branch leaves the network's output unchanged.

Loss: the negative Pearson correlation 1 - r(pred, label) per chunk.
"""

from __future__ import annotations

import torch
from torch import nn

LAYERS = ("stem", "conv2", "conv3", "conv4", "conv5", "up1", "up2")


def neg_pearson(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of 1 - Pearson r along time; pred, target: (B, T)."""
    p = pred - pred.mean(-1, keepdim=True)
    t = target - target.mean(-1, keepdim=True)
    r = (p * t).sum(-1) / (p.norm(dim=-1) * t.norm(dim=-1) + 1e-8)
    return (1 - r).mean()


class Branch(nn.Module):
    """Residual adaptation branch: D (1x1x1, C -> r), ELU, U ((3,1,1), r -> C), U zero-initialised."""

    def __init__(self, channels: int, rank: int):
        super().__init__()
        self.down = nn.Conv3d(channels, rank, 1)
        self.up = nn.Conv3d(rank, channels, (3, 1, 1), padding=(1, 0, 0))
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, h):
        return self.up(nn.functional.elu(self.down(h)))


def _conv(cin, cout, kernel, padding):
    return nn.Sequential(nn.Conv3d(cin, cout, kernel, padding=padding), nn.BatchNorm3d(cout), nn.ReLU(inplace=True))


def _up(c):
    return nn.Sequential(nn.ConvTranspose3d(c, c, (4, 1, 1), stride=(2, 1, 1), padding=(1, 0, 0)),
                         nn.BatchNorm3d(c), nn.ELU(inplace=True))


class PhysNet(nn.Module):
    def __init__(self, in_channels: int = 6, widths=(8, 16, 16), spatial_pool: int = 4, branch_rank: int = 4):
        super().__init__()
        w0, w1, w2 = widths
        self.spatial_pool = spatial_pool
        self.branch_rank = branch_rank
        self.layers = nn.ModuleDict({
            "stem": _conv(in_channels, w0, (1, 3, 3), (0, 1, 1)),
            "conv2": _conv(w0, w1, 3, 1),
            "conv3": _conv(w1, w1, 3, 1),
            "conv4": _conv(w1, w2, 3, 1),
            "conv5": _conv(w2, w2, 3, 1),
            "up1": _up(w2),
            "up2": _up(w2),
        })
        self.head = nn.Conv3d(w2, 1, 1)
        self.branches = nn.ModuleDict()  # key f"{domain}:{layer}"
        self.channels = {"stem": w0, "conv2": w1, "conv3": w1, "conv4": w2, "conv5": w2, "up1": w2, "up2": w2}

    # ---- branches
    @staticmethod
    def key(domain: int, layer: str) -> str:
        return f"{domain}:{layer}"

    def add_branch(self, domain: int, layer: str, init_from: int | None = None) -> Branch:
        branch = Branch(self.channels[layer], self.branch_rank)
        if init_from is not None and self.key(init_from, layer) in self.branches:
            branch.load_state_dict(self.branches[self.key(init_from, layer)].state_dict())
        self.branches[self.key(domain, layer)] = branch
        return branch

    def branch_layers(self, domain: int) -> list[str]:
        return [layer for layer in LAYERS if self.key(domain, layer) in self.branches]

    def backbone_parameters(self):
        return [p for n, p in self.named_parameters() if not n.startswith("branches.")]

    def named_backbone_parameters(self):
        return [(n, p) for n, p in self.named_parameters() if not n.startswith("branches.")]

    # ---- forward
    def _layer(self, name, h, path, record):
        h = self.layers[name](h)
        if record is not None:
            record[name] = h
        key = None if path is None else self.key(path, name)
        if key is not None and key in self.branches:
            h = h + self.branches[key](h)
        return h

    def forward(self, x: torch.Tensor, path: int | None = None, record: dict | None = None) -> torch.Tensor:
        """x: (B, C, T, H, W) -> (B, T). `path`: the domain whose branches to use (None: backbone
        only). `record`: filled with each layer's backbone output (before its branch)."""
        t = x.shape[2]
        h = nn.functional.avg_pool3d(x, (1, self.spatial_pool, self.spatial_pool))
        h = self._layer("stem", h, path, record)
        h = nn.functional.max_pool3d(h, (2, 2, 2))
        h = self._layer("conv2", h, path, record)
        h = self._layer("conv3", h, path, record)
        h = nn.functional.max_pool3d(h, (2, 2, 2))
        h = self._layer("conv4", h, path, record)
        h = self._layer("conv5", h, path, record)
        h = nn.functional.adaptive_avg_pool3d(h, (h.shape[2], 1, 1))
        h = self._layer("up1", h, path, record)
        h = self._layer("up2", h, path, record)
        out = self.head(h).flatten(1)
        if out.shape[1] != t:
            out = nn.functional.interpolate(out[:, None], size=t, mode="linear", align_corners=False)[:, 0]
        return out
