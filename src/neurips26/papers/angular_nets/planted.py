"""The one-layer planted model: does a small G-gradient mean exact recovery of a binary target?

A binary target w* in {-1, +1}^d is planted; inputs x_i ~ N(0, I_d), i = 1..n, and targets
are the expected 1-bit angular layer of w*: y_i = K(rho(x_i, w*)) = (2 / pi) arcsin(cos(x_i, w*)).
A one-output angular layer (1-bit, N = nu d Gaussian rows, no centring, gain fixed to 1)
is trained on L(w) = (1 / 2n) sum_i (y_hat_i(w) - y_i)^2 with the G-Gradient: the forward is
the 1-bit estimate y_hat, the backward the gradient of K(rho(x_i, w)). At the end we measure

- the G-gradient norm |w| |grad_w Lbar(w)| of the expected loss
  Lbar(w) = (1 / 2n) sum_i (K(rho(x_i, w)) - y_i)^2 (scale-free, since Lbar(c w) = Lbar(w)), and
- exact recovery: sign(w) == w* in every coordinate.
"""

from __future__ import annotations

import math

import torch

from .angular import AngularLinear, angular_kernel


def expected_loss(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    cos = (x @ w) / (x.norm(dim=1) * w.norm())
    return 0.5 * ((angular_kernel(cos, 1, 1) - y) ** 2).mean()


def g_gradient_norm(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
    w = w.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(expected_loss(w, x, y), w)
    return float(grad.norm() * w.norm())


def make_problem(dim: int, n: int, generator: torch.Generator):
    w_star = torch.where(torch.rand(dim, generator=generator) < 0.5, -1.0, 1.0)
    x = torch.randn(n, dim, generator=generator)
    y = (2 / math.pi) * torch.asin(((x @ w_star) / (x.norm(dim=1) * math.sqrt(dim))).clamp(-1, 1))
    return w_star, x, y


class PlantedTrials(torch.nn.Module):
    """Independent trials side by side: one angular layer, one dataset and one target each."""

    def __init__(self, dim: int, sample_sizes: list[int], trials: int, nu: float, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.layers = torch.nn.ModuleList()
        self.problems, self.sizes = [], []
        for n in sample_sizes:
            for t in range(trials):
                layer = AngularLinear(dim, 1, bias=False, nu=nu, a_bits=1, w_bits=1, centre=False,
                                      seed=seed * 100_000 + n * 100 + t)
                layer.gain.data.fill_(1.0)
                layer.gain.requires_grad_(False)
                with torch.no_grad():
                    layer.weight.copy_(torch.randn(1, dim, generator=g))
                self.layers.append(layer)
                self.problems.append(make_problem(dim, n, g))
                self.sizes.append(n)

    def loss(self) -> torch.Tensor:
        total = 0.0
        for layer, (_, x, y) in zip(self.layers, self.problems):
            total = total + 0.5 * ((layer(x)[:, 0] - y) ** 2).mean()
        return total

    def results(self) -> list[dict]:
        out = []
        for layer, n, (w_star, x, y) in zip(self.layers, self.sizes, self.problems):
            w = layer.weight.detach()[0]
            cos = float(w @ w_star / (w.norm() * w_star.norm()))
            out.append({"n": n, "recovered": bool((torch.sign(w) == w_star).all()),
                        "g_gradient_norm": g_gradient_norm(w, x, y), "cosine_to_target": cos,
                        "sign_errors": int((torch.sign(w) != w_star).sum())})
        return out


def lightning_module(trials: PlantedTrials, lr: float, steps: int):
    import lightning as L

    class PlantedModule(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.trials = trials

        def training_step(self, batch, batch_idx):
            loss = self.trials.loss()
            self.log("planted/total_loss", loss, on_step=True, on_epoch=False)
            return loss

        def configure_optimizers(self):
            # cosine decay: the 1-bit forward is noisy, a shrinking step averages the noise out
            opt = torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=lr)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))))
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    return PlantedModule()
