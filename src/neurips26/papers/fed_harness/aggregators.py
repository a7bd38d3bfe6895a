"""The server side of federated LoRA: what a server does with the clients' LoRA factors.

Per LoRA-wrapped module (one "layer"), client i sends B_i (m x r_i) and A_i (r_i x n), whose
product B_i A_i is its low-rank update of the frozen weight W0 (m x n; the LoRA scale is folded
into the factors: lora_alpha = r). An aggregator returns a `Dispatch`: the B and A each client
starts its next round from, and optionally a dense `base_delta` added to the frozen weight of
every client. The effective weight of client i next round is W0 + base_delta + B'_i A'_i.

Client weights are the data shares p_i = n_i / sum_j n_j throughout.

An aggregator may also ask for client-side behaviour with a `client_options` attribute (a
dict the local training reads): `freeze_A` (train B only), `drift_mu` (penalty
(mu / 2) ||(I - U U^T) B||_F^2 against the `reference_basis` U the aggregator leaves in the
layer's state). Aggregators register by name in `AGGREGATORS` with `@register("name")`; a
registered entry is a factory `AGGREGATORS[name](**settings) -> Aggregator`.

`state` is a per-layer dict kept across rounds by the engine. The engine fills in
`state["generator"]` (a seeded torch.Generator, for aggregators that draw fresh factors),
`state["round"]` (0-based) and `state["layer"]` (the module's name) before each call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Protocol

import torch
from torch import Tensor


@dataclass
class Dispatch:
    B: list[Tensor]            # what client i receives, shape (m, r_i)
    A: list[Tensor]            # shape (r_i, n)
    base_delta: Tensor | None  # (m, n) added to the frozen base weight of every client, else None


class Aggregator(Protocol):
    name: str

    def __call__(self, B: list[Tensor], A: list[Tensor], sizes: list[int], ranks: list[int],
                 state: dict) -> Dispatch: ...


AGGREGATORS: dict[str, Callable[..., Aggregator]] = {}


def register(name: str):
    """Class or factory decorator: `AGGREGATORS[name] = obj`; sets `obj.name` for classes."""
    def wrap(obj):
        if name in AGGREGATORS and AGGREGATORS[name] is not obj:
            raise ValueError(f"aggregator '{name}' is registered twice")
        AGGREGATORS[name] = obj
        if isinstance(obj, type):
            obj.name = name
        return obj
    return wrap


def make(name: str, **settings) -> Aggregator:
    """The aggregator registered as `name`, built with `settings`."""
    if name not in AGGREGATORS:
        raise KeyError(f"unknown aggregator '{name}'; registered: {', '.join(sorted(AGGREGATORS))}")
    return AGGREGATORS[name](**settings)


def client_options(agg) -> dict:
    return dict(getattr(agg, "client_options", {}) or {})


# ---------------------------------------------------------------- helpers
def weights(sizes: list[int]) -> list[float]:
    total = float(sum(sizes))
    if total <= 0:
        raise ValueError("client sizes must sum to a positive number")
    return [s / total for s in sizes]


def weighted_sum(mats: list[Tensor], p: list[float]) -> Tensor:
    out = torch.zeros_like(mats[0])
    for w, x in zip(p, mats):
        out = out + w * x
    return out


def mean_product(B: list[Tensor], A: list[Tensor], sizes: list[int]) -> Tensor:
    """sum_i p_i B_i A_i (the exact, "ideal" aggregate of the updates)."""
    return weighted_sum([b @ a for b, a in zip(B, A)], weights(sizes))


def balanced_factors(M: Tensor, r: int) -> tuple[Tensor, Tensor]:
    """Rank-r factors of M by its SVD, balanced: B = U_r S_r^(1/2), A = S_r^(1/2) V_r^T; the
    signs fixed so that the largest-magnitude entry of each column of U is positive."""
    U, S, Vh = torch.linalg.svd(M, full_matrices=False)
    U, S, Vh = U[:, :r], S[:r], Vh[:r]
    idx = U.abs().argmax(0)
    sign = torch.sign(U[idx, torch.arange(U.shape[1])])
    sign[sign == 0] = 1
    U, Vh = U * sign, Vh * sign[:, None]
    root = S.clamp_min(0).sqrt()
    B, A = U * root, root[:, None] * Vh
    if B.shape[1] < r:  # M of smaller size than r: pad with zero directions
        B = torch.cat([B, B.new_zeros(B.shape[0], r - B.shape[1])], 1)
        A = torch.cat([A, A.new_zeros(r - A.shape[0], A.shape[1])], 0)
    return B, A


def pad_rank(B: Tensor, A: Tensor, r: int) -> tuple[Tensor, Tensor]:
    """Zero-pad B (m x r_i) and A (r_i x n) to rank r."""
    k = B.shape[1]
    return (torch.cat([B, B.new_zeros(B.shape[0], r - k)], 1),
            torch.cat([A, A.new_zeros(r - k, A.shape[1])], 0))


def lora_init_A(r: int, n: int, generator: torch.Generator, dtype=torch.float32) -> Tensor:
    """peft's default LoRA A initialisation (Kaiming-uniform with a = sqrt(5): U(-1/sqrt(n), 1/sqrt(n)))."""
    bound = 1.0 / math.sqrt(n)
    return (torch.rand(r, n, generator=generator, dtype=torch.float64) * 2 - 1).mul(bound).to(dtype)


# ---------------------------------------------------------------- the shared aggregators
@register("fedit")
class FedIT:
    """FedIT (Zhang et al., "Towards Building the Federated GPT: Federated Instruction Tuning",
    ICASSP 2024): FedAvg of the factors, B = sum_i p_i B_i and A = sum_i p_i A_i, the same to
    every client. Its product differs from sum_i p_i B_i A_i (the aggregation bias). Needs
    equal ranks (use `zero_padding` otherwise)."""

    def __call__(self, B, A, sizes, ranks, state):
        if len(set(ranks)) != 1:
            raise ValueError(f"fedit needs equal ranks, got {ranks}; use zero_padding")
        p = weights(sizes)
        b, a = weighted_sum(B, p), weighted_sum(A, p)
        return Dispatch([b.clone() for _ in B], [a.clone() for _ in A], None)


@register("zero_padding")
class ZeroPadding:
    """Zero-padding FedAvg for heterogeneous ranks (HetLoRA's aggregation without its sparsity
    weighting; Cho et al., "Heterogeneous LoRA for Federated Fine-tuning of On-Device Foundation
    Models", EMNLP 2024): pad every B_i, A_i with zeros to r_max, average the padded factors
    with weights p_i, and send client i the rank-r_i prefix. Equals FedIT for equal ranks."""

    def __call__(self, B, A, sizes, ranks, state):
        r = max(ranks)
        padded = [pad_rank(b, a, r) for b, a in zip(B, A)]
        p = weights(sizes)
        b = weighted_sum([x for x, _ in padded], p)
        a = weighted_sum([y for _, y in padded], p)
        return Dispatch([b[:, :k].clone() for k in ranks], [a[:k].clone() for k in ranks], None)


@register("flora")
class FLoRA:
    """FLoRA (Wang et al., "FLoRA: Federated Fine-Tuning Large Language Models with
    Heterogeneous Low-Rank Adaptations", NeurIPS 2024): stacking. The server stacks
    B = [p_1 B_1, ..., p_N B_N] (m x sum r_i) and A = [A_1; ...; A_N], whose product is exactly
    sum_i p_i B_i A_i; every client adds it to its frozen weight (`base_delta`) and starts a
    fresh LoRA module (B = 0, A re-drawn with peft's initialisation from the layer's seeded
    generator, shared by all clients)."""

    def __call__(self, B, A, sizes, ranks, state):
        p = weights(sizes)
        Bs = torch.cat([w * b for w, b in zip(p, B)], 1)
        As = torch.cat(A, 0)
        delta = Bs @ As
        gen = state["generator"]
        a0 = lora_init_A(max(ranks), A[0].shape[1], gen, dtype=A[0].dtype)
        return Dispatch([B[0].new_zeros(B[0].shape[0], k) for k in ranks], [a0[:k].clone() for k in ranks], delta)


@register("ideal")
class Ideal:
    """Ideal aggregation, the control: the exact average of the updates M = sum_i p_i B_i A_i,
    refactorised by SVD (B = U_r S_r^(1/2), A = S_r^(1/2) V_r^T, rank prefix r_i to client i).
    With `residual=True` (default) the part of M beyond rank r_max goes into `base_delta`, so
    the global model is exactly W0 + M for clients of rank r_max (no aggregation bias at all)."""

    def __init__(self, residual: bool = True):
        self.residual = residual

    def __call__(self, B, A, sizes, ranks, state):
        M = mean_product(B, A, sizes)
        b, a = balanced_factors(M, max(ranks))
        delta = (M - b @ a) if self.residual else None
        return Dispatch([b[:, :k].clone() for k in ranks], [a[:k].clone() for k in ranks], delta)


def effective_updates(d: Dispatch) -> list[Tensor]:
    """What each client's weight differs from W0 by after the dispatch: base_delta + B'_i A'_i."""
    return [(d.base_delta if d.base_delta is not None else 0) + b @ a for b, a in zip(d.B, d.A)]
