"""The matched-budget zeroth-order baselines of AR1-ZO, each two forward passes per step.

* MeZO on full parameters (Malladi et al. 2023): z ~ N(0, I) on every tuned weight,
  theta <- theta - lr g_hat z.
* MeZO on all LoRA factors: the same on (B, A) of every adapter, canonical scaling alpha / r.
* LoZO (Chen et al. 2024, low-rank ZO): every weight matrix W (d_out x d_in) is perturbed by
  Z = U V^T with U ~ N(0, I_{d_out x k}) fresh each step and V ~ N(0, I_{d_in x k}) lazily
  resampled every `nu` steps; vectors (biases, LayerNorm) by N(0, I); W <- W - lr g_hat U V^T.
* Naive atomwise ZO: `method.AtomwiseZO` with the canonical lora_alpha = alpha (s = alpha / r).
U and the vector noise come from the step's seed, V from the seed of its lazy window, so nothing
is stored.
"""

from __future__ import annotations

from typing import Sequence

import torch

from neurips26.papers.zo_harness import zo


class GaussianZO:
    """MeZO on a fixed list of tensors (all tuned weights, or all LoRA factors)."""

    def __init__(self, tensors: Sequence[torch.Tensor]):
        self.tensors = list(tensors)

    def perturb_(self, step: int, seed: int, scale: float) -> None:
        zo.perturb_(self.tensors, seed, scale)

    def update_(self, step: int, seed: int, coef: float) -> None:
        zo.update_(self.tensors, seed, coef)


class LoZO:
    """Low-rank perturbations U V^T of the weight matrices (lazy V), Gaussian on vectors."""

    def __init__(self, tensors: Sequence[torch.Tensor], rank: int, nu: int, run_seed: int):
        self.tensors, self.rank, self.nu, self.run_seed = list(tensors), int(rank), int(nu), int(run_seed)

    def v_seed(self, step: int) -> int:
        return zo.step_seed(self.run_seed + 7_919, int(step) // self.nu)

    def direction(self, step: int, seed: int) -> list[torch.Tensor]:
        """The perturbation of every tensor at `step` (regenerated, never stored)."""
        shapes_u = [(t.shape[0], self.rank) if t.dim() == 2 else tuple(t.shape) for t in self.tensors]
        shapes_v = [(t.shape[1], self.rank) for t in self.tensors if t.dim() == 2]
        us = zo.gaussian(shapes_u, seed)
        vs = iter(zo.gaussian(shapes_v, self.v_seed(step)))
        return [u @ next(vs).T if t.dim() == 2 else u for t, u in zip(self.tensors, us)]

    @torch.no_grad()
    def update_(self, step: int, seed: int, coef: float) -> None:
        for t, z in zip(self.tensors, self.direction(step, seed)):
            t.add_(z.to(t.dtype), alpha=float(coef))

    def perturb_(self, step: int, seed: int, scale: float) -> None:
        self.update_(step, seed, scale)
