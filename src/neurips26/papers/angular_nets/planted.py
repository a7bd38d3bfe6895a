"""The one-layer planted model: does a small G-gradient mean exact recovery of a binary target?

A binary target w* in {-1, +1}^d is planted; inputs x_i ~ N(0, I_d), i = 1..n, and targets
are the expected 1-bit angular layer of w*: y_i = K(rho(x_i, w*)) = (2 / pi) arcsin(cos(x_i, w*)).
A one-output angular layer (1-bit, N = nu d Gaussian rows, no centring, gain fixed to 1)
is trained on L(w) = (1 / 2n) sum_i (y_hat_i(w) - y_i)^2 with the G-Gradient: the forward is
the 1-bit estimate y_hat, the backward the gradient of K(rho(x_i, w)). At the end we measure

- the G-gradient norm |w| |grad_w Lbar(w)| of the expected loss
  Lbar(w) = (1 / 2n) sum_i (K(rho(x_i, w)) - y_i)^2 (scale-free, since Lbar(c w) = Lbar(w)), and
- exact recovery: sign(w) == w* in every coordinate, and
- the recovery condition's threshold of the trial (`recovery_threshold`): a trial is under the
  condition when its G-gradient norm is below lambda_min(H*) r / 2 (see there).
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


def curvature_at_target(w_star: torch.Tensor, x: torch.Tensor) -> float:
    """lambda_min of the Hessian of Lbar on the unit sphere at u* = w* / |w*|, over the tangent
    space. The residuals vanish at u*, so the Hessian is the Gauss-Newton matrix
    H* = (1 / n) sum_i K'(rho_i)^2 t_i t_i^T, t_i = (I - u* u*^T) x_i / |x_i|, K' = (2 / pi) / sqrt(1 - rho^2).
    It is 0 when the n tangent vectors do not span the (d - 1)-dimensional tangent space (n < d - 1)."""
    x = x.double()
    u = (w_star / w_star.norm()).double()
    xh = x / x.norm(dim=1, keepdim=True)
    rho = (xh @ u).clamp(-1 + 1e-12, 1 - 1e-12)
    t = xh - rho[:, None] * u[None, :]
    k1 = (2 / math.pi) / torch.sqrt(1 - rho ** 2)
    H = (t * (k1 ** 2)[:, None]).T @ t / len(x)
    # an orthonormal basis of the tangent space: drop u from the eigenbasis of I - u u^T
    evals, evecs = torch.linalg.eigh(torch.eye(len(u), dtype=u.dtype) - torch.outer(u, u))
    basis = evecs[:, evals > 0.5]
    return float(torch.linalg.eigvalsh(basis.T @ H @ basis).min().clamp_min(0.0))


def recovery_threshold(w_star: torch.Tensor, x: torch.Tensor, margin: float = 0.5) -> float:
    """The G-gradient norm below which a trial is under the recovery condition:
    eps = margin * lambda_min(H*) * r, r = 1 / sqrt(d).

    Why: sign(u) = sign(u*) whenever |u - u*| < 1 / sqrt(d) (every coordinate of u* has magnitude
    1 / sqrt(d)). Near u* the Riemannian gradient is H* delta to first order, so a gradient norm
    g puts u within g / lambda_min of u*; g < margin lambda_min r keeps it within margin r, the
    margin (< 1) leaving room for the second-order terms."""
    return margin * curvature_at_target(w_star, x) / math.sqrt(len(w_star))


def make_problem(dim: int, n: int, generator: torch.Generator):
    w_star = torch.where(torch.rand(dim, generator=generator) < 0.5, -1.0, 1.0)
    x = torch.randn(n, dim, generator=generator)
    y = (2 / math.pi) * torch.asin(((x @ w_star) / (x.norm(dim=1) * math.sqrt(dim))).clamp(-1, 1))
    return w_star, x, y


class PlantedTrials(torch.nn.Module):
    """Independent trials side by side: one angular layer, one dataset and one target each."""

    def __init__(self, dim: int, sample_sizes: list[int], trials: int, nu: float, seed: int, margin: float = 0.5):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.layers = torch.nn.ModuleList()
        self.problems, self.sizes, self.margin = [], [], margin
        for n in sample_sizes:
            for t in range(trials):
                layer = AngularLinear(dim, 1, bias=False, nu=nu, a_bits=1, w_bits=1, centre="none",
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
            thr = recovery_threshold(w_star, x, self.margin)
            grad = g_gradient_norm(w, x, y)
            out.append({"n": n, "recovered": bool((torch.sign(w) == w_star).all()),
                        "g_gradient_norm": grad, "cosine_to_target": cos, "threshold": thr,
                        "under_condition": bool(grad < thr),
                        "sign_errors": int((torch.sign(w) != w_star).sum())})
        return out


def lightning_module(trials: PlantedTrials, lr: float, steps: int, resample: bool = True):
    """resample: a fresh G for every layer at every step (seeded by the layer and the step), so
    the G-gradient steps are unbiased for the expected loss Lbar, whose minimiser is w*; with one
    fixed G the noisy estimate's own minimiser sits near w* but not at it, and the final
    G-gradient norm stalls at the estimator's noise level."""
    import lightning as L

    class PlantedModule(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.trials = trials

        def training_step(self, batch, batch_idx):
            if resample:
                for layer in self.trials.layers:
                    layer.resample_projection(self.global_step + 1)
            loss = self.trials.loss()
            self.log("planted/total_loss", loss, on_step=True, on_epoch=False)
            return loss

        def configure_optimizers(self):
            # cosine decay: the 1-bit forward is noisy, a shrinking step averages the noise out
            opt = torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=lr)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))))
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    return PlantedModule()
