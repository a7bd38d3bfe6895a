"""Neural encoders f, g: R^m -> R^D trained with InfoNCE on samples of a continuous joint.

The score is s(x, y) = f(x)^T g(y) with two MLPs of a given width; training minimises the
symmetric in-batch InfoNCE (CLIP) loss
    L = 1/2 [CE(S, I) + CE(S^T, I)],   S_ij = f(x_i)^T g(y_j) over a batch of B pairs,
whose population minimiser is PMI + const for any batch size. On correlated Gaussians PMI has
rank m + 2 (pmi.GaussianPair), so moderate widths and D = m + 2 should fit it; D < m + 2
cannot do better than the spectral tail. Trained through Lightning (core.trainer).
"""

from __future__ import annotations

import lightning as L
import numpy as np
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, in_dim: int, width: int, out_dim: int, depth: int = 2):
        super().__init__()
        layers, d = [], in_dim
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.SiLU()]
            d = width
        layers.append(nn.Linear(d, out_dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def clip_infonce(f: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    scores = f @ g.T
    target = torch.arange(len(f))
    return 0.5 * (nn.functional.cross_entropy(scores, target) + nn.functional.cross_entropy(scores.T, target))


def spectral_contrastive(f: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """HaoChen et al. (2021): -2 E_p[s] + E_{p_X x p_Y}[s^2], the off-diagonal pairs as negatives."""
    scores = f @ g.T
    n = len(f)
    off = scores[~torch.eye(n, dtype=torch.bool)]
    return -2 * scores.diagonal().mean() + (off ** 2).mean()


OBJECTIVES = {"infonce": clip_infonce, "spectral": spectral_contrastive}
# the cosine schedule ends at this fraction of the learning rate
LR_FLOOR = 0.05


class ContrastivePair(L.LightningModule):
    """Two encoders trained with symmetric InfoNCE (or the spectral contrastive baseline)."""

    def __init__(self, in_dim: int, width: int, dim: int, depth: int, lr: float, loss: str = "infonce"):
        super().__init__()
        self.f = Encoder(in_dim, width, dim, depth)
        self.g = Encoder(in_dim, width, dim, depth)
        self.lr = lr
        self.loss_name = loss
        self.objective = OBJECTIVES[loss]

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.objective(self.f(x), self.g(y))
        self.log(f"train/{self.loss_name}", loss)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.trainer.max_steps, eta_min=self.lr * LR_FLOOR)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    @torch.no_grad()
    def scores(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The score matrix s(x_i, y_j) = f(x_i)^T g(y_j)."""
        device = next(self.parameters()).device
        fx = self.f(torch.as_tensor(x, dtype=torch.float32, device=device))
        gy = self.g(torch.as_tensor(y, dtype=torch.float32, device=device))
        return (fx @ gy.T).double().cpu().numpy()
