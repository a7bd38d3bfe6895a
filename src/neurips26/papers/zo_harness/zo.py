"""Seed-replayed zeroth-order perturbations and the MeZO two-point estimate.

A perturbation of the tensors theta = (theta_1, ..., theta_k) is z = (z_1, ..., z_k) with
z_i ~ N(0, I) drawn in list order from a torch.Generator seeded with one integer. It is never
stored: every use regenerates it from the seed (MeZO's in-place trick), so memory stays at the
inference footprint. The two-point (central) estimate along z is

    g_hat = (L(theta + eps z) - L(theta - eps z)) / (2 eps),

with E_z[g_hat z] = grad L + O(eps^2) and, on a quadratic, E[g_hat | z] = <grad L, z> exactly.
The SGD step is theta <- theta - lr * g_hat * z. `QueryCounter` counts forward passes (queries)
so every method can be held to the same budget.
"""

from __future__ import annotations

import hashlib
from typing import Callable, Sequence

import torch

_MASK = (1 << 63) - 1


def step_seed(seed: int, step: int) -> int:
    """The perturbation seed of step `step` of a run seeded `seed` (a hash, so nearby runs and
    steps draw unrelated directions)."""
    digest = hashlib.blake2b(f"{int(seed)}:{int(step)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _MASK


def _generator(seed: int) -> torch.Generator:
    g = torch.Generator(device="cpu")
    g.manual_seed(int(seed) & _MASK)
    return g


def gaussian(tensors: Sequence, seed: int, dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    """The perturbation z(seed): one N(0, I) tensor per entry of `tensors` (tensors or shapes),
    drawn in list order on the CPU (the same numbers on any device)."""
    g = _generator(seed)
    out = []
    for t in tensors:
        shape = tuple(t.shape) if isinstance(t, torch.Tensor) else tuple(t)
        out.append(torch.randn(shape, generator=g, dtype=dtype))
    return out


@torch.no_grad()
def update_(params: Sequence[torch.Tensor], seed: int, coef: float) -> None:
    """In place: theta_i += coef * z_i(seed), regenerating z one tensor at a time."""
    g = _generator(seed)
    for p in params:
        z = torch.randn(tuple(p.shape), generator=g, dtype=torch.float32)
        p.add_(z.to(device=p.device, dtype=p.dtype), alpha=float(coef))


def perturb_(params: Sequence[torch.Tensor], seed: int, scale: float) -> None:
    """In place: theta <- theta + scale * z(seed). Calling it again with -scale restores theta
    (up to float rounding). `params` may be parameters or views of them (a column of a LoRA B)."""
    update_(params, seed, scale)


class QueryCounter:
    """Forward passes spent (one per loss evaluation on a batch) against an optional budget."""

    def __init__(self, budget: int | None = None):
        self.budget = None if budget is None else int(budget)
        self.forwards = 0

    def add(self, n: int = 1) -> None:
        self.forwards += int(n)

    @property
    def left(self) -> int | None:
        return None if self.budget is None else self.budget - self.forwards

    @property
    def exhausted(self) -> bool:
        return self.budget is not None and self.forwards >= self.budget

    def __repr__(self) -> str:
        return f"QueryCounter(forwards={self.forwards}, budget={self.budget})"


def two_point(loss_fn: Callable[[], float], params: Sequence[torch.Tensor], seed: int, eps: float,
              counter: QueryCounter | None = None) -> tuple[float, float, float]:
    """MeZO's central difference along z(seed): two calls of `loss_fn` (the loss at the current
    parameters, a float), theta restored afterwards. Returns (g_hat, L(theta+eps z), L(theta-eps z))."""
    perturb_(params, seed, eps)
    loss_plus = float(loss_fn())
    perturb_(params, seed, -2.0 * eps)
    loss_minus = float(loss_fn())
    perturb_(params, seed, eps)
    if counter is not None:
        counter.add(2)
    return (loss_plus - loss_minus) / (2.0 * eps), loss_plus, loss_minus


@torch.no_grad()
def mezo_step(loss_fn: Callable[[], float], params: Sequence[torch.Tensor], seed: int, eps: float, lr: float,
              counter: QueryCounter | None = None, weight_decay: float = 0.0) -> dict:
    """One MeZO-SGD step: the two-point estimate along z(seed), then theta <- theta - lr * g_hat * z
    (and theta <- (1 - lr * weight_decay) theta first, when asked)."""
    g_hat, lp, lm = two_point(loss_fn, params, seed, eps, counter)
    if weight_decay:
        for p in params:
            p.mul_(1.0 - lr * weight_decay)
    update_(params, seed, -lr * g_hat)
    return {"g_hat": g_hat, "loss_plus": lp, "loss_minus": lm, "loss": 0.5 * (lp + lm)}
