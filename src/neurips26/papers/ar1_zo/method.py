"""AR1-ZO: zeroth-order LoRA fine-tuning that queries one rank-1 atom per step.

A LoRA adapter of rank r on a frozen weight W0 is W = W0 + s B A, with B in R^{d_out x r},
A in R^{r x d_in} and scaling s = lora_alpha / r. It is a sum of r matched rank-1 atoms,
B A = sum_i b_i a_i^T (b_i the i-th column of B, a_i the i-th row of A). AR1-ZO perturbs the
atom i_t = t mod r (in every adapted matrix at once) with z = (u, v) ~ N(0, I) on
(b_i, a_i) only, takes MeZO's two-point estimate

    g_hat = (L(b_i + eps u, a_i + eps v) - L(b_i - eps u, a_i - eps v)) / (2 eps)

and updates (b_i, a_i) <- (b_i, a_i) - lr g_hat (u, v). The active finite-difference signal of
one atom query is, to first order, eps s <grad_W L, u a_i^T + b_i v^T>: with the canonical
lora_alpha = alpha (s = alpha / r, the naive atomwise baseline) it shrinks as 1/r and the
FD-SNR under a fixed evaluation-noise floor sigma as 1/r^2. AR1-ZO sets lora_alpha = gamma =
alpha * r, so s = gamma / r = alpha for every rank: the active signal is rank-invariant and r
is left only in the coverage (each atom is visited every r steps).
"""

from __future__ import annotations

from typing import Sequence

import torch

from neurips26.papers.zo_harness import zo

ADAPTER = "default"


def lora_alpha_for(scheme: str, alpha: float, rank: int) -> float:
    """peft's lora_alpha: gamma = alpha * r for AR1-ZO (effective scaling gamma / r = alpha),
    alpha for the canonical scaling alpha / r (naive atomwise, MeZO on LoRA factors)."""
    if scheme == "ar1":
        return float(alpha) * int(rank)
    if scheme == "canonical":
        return float(alpha)
    raise ValueError(f"unknown LoRA scaling scheme '{scheme}' (ar1 or canonical)")


def add_lora(encoder, rank: int, lora_alpha: float, layers: Sequence[int] | None, targets: Sequence[str], seed: int):
    """Inject LoRA adapters (peft) of rank `rank` into `targets` of the encoder layers `layers`
    (None: of every layer), in place, A initialised by peft (Kaiming-uniform) under `seed` and
    B = 0. Returns the LoRA modules in a fixed order."""
    from peft import LoraConfig, inject_adapter_in_model

    where = {} if layers is None else {"layers_to_transform": list(layers), "layers_pattern": "layer"}
    cfg = LoraConfig(r=int(rank), lora_alpha=lora_alpha, target_modules=list(targets), lora_dropout=0.0,
                     bias="none", **where)
    with torch.random.fork_rng():
        torch.manual_seed(int(seed))
        inject_adapter_in_model(cfg, encoder)
    for p in encoder.parameters():
        p.requires_grad_(False)
    return lora_modules(encoder)


def lora_modules(model) -> list:
    """The LoRA-wrapped linear layers of `model`, in module order."""
    return [m for _, m in model.named_modules() if hasattr(m, "lora_A") and ADAPTER in getattr(m, "lora_A", {})]


def factors(module) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, A) of one LoRA module: B (d_out x r), A (r x d_in)."""
    return module.lora_B[ADAPTER].weight, module.lora_A[ADAPTER].weight


def scaling(module) -> float:
    return float(module.scaling[ADAPTER])


def atom_views(modules: Sequence, i: int) -> list[torch.Tensor]:
    """Views of atom i in every module: [b_i (column i of B), a_i (row i of A), ...]."""
    out = []
    for m in modules:
        b, a = factors(m)
        out += [b.data[:, i], a.data[i, :]]
    return out


def all_factors(modules: Sequence) -> list[torch.Tensor]:
    out = []
    for m in modules:
        b, a = factors(m)
        out += [b.data, a.data]
    return out


class AtomwiseZO:
    """One rank-1 atom per step, alternating i_t = t mod r (AR1-ZO with lora_alpha = alpha r,
    the naive atomwise baseline with lora_alpha = alpha)."""

    def __init__(self, modules: Sequence, rank: int):
        self.modules, self.rank = list(modules), int(rank)

    def atom(self, step: int) -> int:
        return int(step) % self.rank

    def tensors(self, step: int) -> list[torch.Tensor]:
        return atom_views(self.modules, self.atom(step))

    def perturb_(self, step: int, seed: int, scale: float) -> None:
        zo.perturb_(self.tensors(step), seed, scale)

    def update_(self, step: int, seed: int, coef: float) -> None:
        zo.update_(self.tensors(step), seed, coef)


def atom_signal(loss_fn, modules: Sequence, atom: int, seed: int, eps: float) -> float:
    """The active finite-difference signal of one atom query, (L(+) - L(-)) / 2, noise-free."""
    _, lp, lm = zo.two_point(loss_fn, atom_views(modules, atom), seed, eps)
    return 0.5 * (lp - lm)
