"""Heterogeneous-rank baselines: HetLoRA and FlexLoRA (plus a zero-padding FedIT reference).

HetLoRA (Cho et al., "Heterogeneous LoRA for Federated Fine-tuning of On-Device Foundation Models",
EMNLP 2024): zero-pad every client's factors to the largest rank R, B_i -> [B_i, 0], A_i -> [A_i; 0],
average the padded factors with sparsity weights w_i proportional to ||B_i A_i||_F (the paper's
"sparsity-weighted aggregation"; `weighting="size"` gives data-size weights), and dispatch the
rank-r_i truncation B[:, :r_i], A[:r_i]. Its local rank self-pruning is not part of the server rule.

FlexLoRA (Bai et al., "Federated Fine-tuning of Large Language Models under Heterogeneous Tasks and
Client Resources", NeurIPS 2024): compose Delta W = sum_i (n_i / sum n) B_i A_i, dense SVD
U S V^T, client i receives B_i = U_{:r_i} S_{:r_i}, A_i = V^T_{:r_i} (the released recipe: singular
values on B).

`ZeroPadFedIT` is the data-size weighted zero-padding FedAvg of the factors (FedIT, Zhang et al.,
ICASSP 2024, extended to heterogeneous ranks by padding); the shared harness holds the canonical one.
"""

from __future__ import annotations

import torch
from torch import Tensor

from neurips26.papers.fed_harness.aggregators import Dispatch, register


def _pad(B: Tensor, A: Tensor, R: int) -> tuple[Tensor, Tensor]:
    m, r = B.shape
    n = A.shape[1]
    return (torch.cat([B, B.new_zeros(m, R - r)], 1), torch.cat([A, A.new_zeros(R - r, n)], 0))


def _padded_average(B, A, ranks, w) -> tuple[Tensor, Tensor]:
    R = max(ranks)
    padded = [_pad(b, a, R) for b, a in zip(B, A)]
    Bg = sum(wi * p[0] for wi, p in zip(w, padded))
    Ag = sum(wi * p[1] for wi, p in zip(w, padded))
    return Bg, Ag


class ZeroPadFedIT:
    """Zero-padding FedIT (Zhang et al., ICASSP 2024): size-weighted FedAvg of padded A and B."""

    name = "zeropad_fedit_ref"

    def __call__(self, B, A, sizes, ranks, state) -> Dispatch:
        t = float(sum(sizes))
        Bg, Ag = _padded_average(B, A, ranks, [n / t for n in sizes])
        return Dispatch(B=[Bg[:, :r].clone() for r in ranks], A=[Ag[:r].clone() for r in ranks], base_delta=None)


@register("hetlora")
class HetLoRA:
    """HetLoRA (Cho et al., EMNLP 2024): zero-padding, sparsity-weighted aggregation, rank truncation."""

    name = "hetlora"

    def __init__(self, weighting: str = "norm"):
        if weighting not in ("norm", "size"):
            raise ValueError(f"hetlora weighting must be 'norm' or 'size', got {weighting!r}")
        self.weighting = weighting

    def __call__(self, B, A, sizes, ranks, state) -> Dispatch:
        if self.weighting == "norm":
            raw = [float(torch.linalg.matrix_norm(b.double() @ a.double())) for b, a in zip(B, A)]
        else:
            raw = [float(n) for n in sizes]
        t = sum(raw)
        w = [x / t for x in raw] if t > 0 else [1.0 / len(raw)] * len(raw)
        Bg, Ag = _padded_average(B, A, ranks, w)
        _record_prefix(state, Bg, ranks)
        return Dispatch(B=[Bg[:, :r].clone() for r in ranks], A=[Ag[:r].clone() for r in ranks], base_delta=None)


@register("flexlora")
class FlexLoRA:
    """FlexLoRA (Bai et al., NeurIPS 2024): size-weighted full update, dense SVD, rank-r_i redistribution."""

    name = "flexlora"

    def __call__(self, B, A, sizes, ranks, state) -> Dispatch:
        t = float(sum(sizes))
        W = sum((n / t) * (b.double() @ a.double()) for n, b, a in zip(sizes, B, A))
        U, S, Vh = torch.linalg.svd(W, full_matrices=False)
        _record_prefix(state, U[:, : max(ranks)], ranks)
        dt = B[0].dtype
        return Dispatch(B=[(U[:, :r] * S[:r]).to(dt) for r in ranks], A=[Vh[:r].to(dt).contiguous() for r in ranks],
                        base_delta=None)


def _record_prefix(state: dict, U: Tensor, ranks: list[int]) -> None:
    """Round-to-round subspace distance of each dispatched rank-r column prefix (same diagnostic as FedAbA)."""
    from . import linalg

    prev = state.get("U_ref")
    row = {"prefix_distance": {}}
    if prev is not None:
        for r in sorted(set(ranks)):
            row["prefix_distance"][r] = linalg.subspace_distance(U[:, :r], prev[:, :r])
    state.setdefault("history", []).append(row)
    state["U_ref"] = U.detach().double().clone()
