"""FedAbA: basis-consistent aggregation of heterogeneous-rank LoRA factors.

Per layer, client i sends B_i (m x r_i), A_i (r_i x n) with data size n_i. The server keeps a global
reference basis U_ref (m x R, R = max rank) from the previous round.

1. Basis extraction: thin SVD of the client's update from its factors (coefficient space),
   Delta W_i = B_i A_i = U_i S_i V_i^T; it does not depend on the client's gauge (B_i R, R^{-1} A_i).
2. Alignment to the prefix P_i = U_ref[:, :r_i]: O_i = argmin_{O orthogonal} ||U_i O - P_i||_F
   = polar(U_i^T P_i); aligned basis U~_i = U_i O_i.
3. Basis-consistent reconstruction: coefficients C_i = U~_i^T Delta W_i (r_i x n) in the aligned
   basis, Delta W^_i = U~_i C_i (equal to Delta W_i in exact arithmetic: the alignment is a change of
   coordinates that lines up client direction j with reference direction j).
4. Consistency score c_i = ||P_i^T Delta W_i||_F^2 / ||Delta W_i||_F^2 in [0, 1] (share of the update's
   energy inside the reference prefix the client was dispatched), and weights
   w_i = n_i max(c_i, c_min)^beta / sum_j n_j max(c_j, c_min)^beta (first round: c_i = 1).
5. Exact coefficient-space SVD refactorization of sum_i w_i U~_i C_i: QR of the stacked U~_i and of the
   stacked C_i^T, SVD of the small core (no dense m x n SVD); truncated to rank R.
6. Gauge fixing of the global rank-R factorization (free up to B R, R^-1 A). Three readings of
   the abstract's "gauge fixing (sign/rotation convention)" run side by side, each its own aggregator
   (declared in claims.yaml before their numbers were read):
   - full rotation (`fedaba`): O = polar(U^T U_ref), U' = U O, V' = V O, so column j of the new basis
     is the direction of the new subspace that continues reference direction j; the singular-value
     order is given up, and a rank-r client receives the part closest to last round's prefix;
   - order-preserving gauge (`fedaba_svd`): signs, and rotations only inside near-degenerate singular
     groups (relative gap < rel_gap), so the rank-r prefix stays the top-r singular directions;
   - lossy prefix projection (`fedaba_proj`): step 3 keeps only the part of each client's update
     inside its reference prefix, dW^_i = P_i P_i^T dW_i (a lossy reconstruction; the first round,
     with no reference, is exact), with the order-preserving gauge of step 6.
   Signs agree with U_ref (linalg.gauge_fix); U' becomes the next U_ref.
7. Rank-prefix dispatch: with the core K = U'^T Delta W V' (R x R) and D = |diag K|, the global factors
   are B = U' D^{1/2}, A = D^{-1/2} K V'^T (B A = the rank-R truncation exactly); client i receives the
   first r_i columns of B and rows of A, i.e. B_i A_i = U'_{:r_i} U'_{:r_i}^T Delta W_R.

The compose-aggregate-factorize-dispatch loop without basis alignment (`CAFD`) is the same code path
with steps 2-4 and 6 switched off (weights n_i, raw SVD gauge).
"""

from __future__ import annotations

import torch
from torch import Tensor

from neurips26.papers.fed_harness.aggregators import Dispatch, register

from . import linalg


def _normalize(w: list[float]) -> list[float]:
    t = sum(w)
    return [x / t for x in w] if t > 0 else [1.0 / len(w)] * len(w)


class _PrefixDispatchLoop:
    """Compose (in coefficient space) -> aggregate -> factorize exactly -> gauge -> rank-prefix dispatch."""

    name = "prefix_loop"
    align = True
    fix_gauge = True
    project = False  # lossy prefix projection of each client's update (the `fedaba_proj` reading)

    def __init__(self, beta: float = 1.0, score_floor: float = 0.05, rel_gap: float = 1e-3,
                 rotate_to_reference: bool = True):
        self.beta, self.score_floor, self.rel_gap = beta, score_floor, rel_gap
        self.rotate_to_reference = rotate_to_reference

    def client_terms(self, B: list[Tensor], A: list[Tensor], ranks: list[int], ref: Tensor | None):
        """Per client: (basis, coefficients, consistency score), the basis aligned to the reference prefix."""
        terms = []
        for b, a, r in zip(B, A, ranks):
            U, s, V = linalg.thin_svd_of_sum([b], [a])
            C = s[:, None] * V.T  # coefficients of Delta W_i in the basis U
            score = 1.0
            if self.align and ref is not None:
                P = ref[:, : min(r, ref.shape[1])].to(linalg.DTYPE)
                if U.shape[1] and P.shape[1]:
                    if U.shape[1] == P.shape[1]:  # full-rank update: Procrustes rotation onto the prefix
                        O = linalg.polar(U.T @ P)
                        U, C = U @ O, O.T @ C
                    energy = float(C.pow(2).sum())
                    inside = P.T @ U @ C  # coefficients of the update's part inside the prefix
                    score = float(inside.pow(2).sum()) / energy if energy > 0 else 1.0
                    if self.project:  # reconstruction P_i P_i^T dW_i: the part outside the prefix is dropped
                        U, C = P, inside
            terms.append((U, C, score))
        return terms

    def __call__(self, B: list[Tensor], A: list[Tensor], sizes: list[int], ranks: list[int],
                 state: dict) -> Dispatch:
        ref = state.get("U_ref")
        R = max(ranks)
        terms = self.client_terms(B, A, ranks, ref)
        if self.align:
            raw = [n * max(c, self.score_floor) ** self.beta for n, (_, _, c) in zip(sizes, terms)]
        else:
            raw = [float(n) for n in sizes]
        w = _normalize(raw)
        U, s, V = linalg.thin_svd_of_sum([t[0] for t in terms], [t[1] for t in terms], w)
        U, s, V = U[:, :R], s[:R], V[:, :R]
        if self.fix_gauge:
            U, K, V = linalg.gauge_fix(U, s, V, ref, self.rel_gap, self.rotate_to_reference)
        else:
            K = torch.diag(s)
        Bg, Ag = linalg.balanced_factors(U, K, V)
        m, n = B[0].shape[0], A[0].shape[1]
        if Bg.shape[1] < R:  # numerical rank below R: pad with zeros (a zero direction dispatches nothing)
            Bg = torch.cat([Bg, torch.zeros(m, R - Bg.shape[1], dtype=Bg.dtype)], 1)
            Ag = torch.cat([Ag, torch.zeros(R - Ag.shape[0], n, dtype=Ag.dtype)], 0)
        self._record(state, U, ranks, [t[2] for t in terms], w)
        state["U_ref"] = U.detach().clone()
        dt = B[0].dtype
        return Dispatch(B=[Bg[:, :r].to(dt).contiguous() for r in ranks],
                        A=[Ag[:r].to(dt).contiguous() for r in ranks], base_delta=None)

    @staticmethod
    def _record(state: dict, U: Tensor, ranks: list[int], scores: list[float], w: list[float]) -> None:
        """Round-to-round subspace distance of each dispatched rank-r prefix (the paper's diagnostic)."""
        prev = state.get("U_ref")
        row = {"scores": scores, "weights": w, "prefix_distance": {}}
        if prev is not None:
            for r in sorted(set(ranks)):
                k = min(r, U.shape[1], prev.shape[1])
                if k:
                    row["prefix_distance"][r] = linalg.subspace_distance(U[:, :k], prev[:, :k])
        state.setdefault("history", []).append(row)


@register("fedaba")
class FedAbA(_PrefixDispatchLoop):
    """FedAbA (basis-consistent federated LoRA with heterogeneous ranks; NeurIPS 2026 submission, `fedaba`)."""

    name = "fedaba"
    align = True
    fix_gauge = True


@register("fedaba_svd")
class FedAbASVDGauge(_PrefixDispatchLoop):
    """FedAbA, order-preserving gauge reading: rotations only inside near-degenerate singular groups
    (relative gap < rel_gap), so the rank-r_i prefix stays the top-r_i singular directions of the
    aggregate; alignment, consistency weights and signs as in FedAbA."""

    name = "fedaba_svd"
    align = True
    fix_gauge = True

    def __init__(self, beta: float = 1.0, score_floor: float = 0.05, rel_gap: float = 1e-3,
                 rotate_to_reference: bool = False):
        super().__init__(beta, score_floor, rel_gap, rotate_to_reference)


@register("fedaba_proj")
class FedAbAProjection(FedAbASVDGauge):
    """FedAbA, lossy prefix projection reading: each client's update enters the aggregate as its part
    inside the reference prefix, P_i P_i^T dW_i (exact in the first round); order-preserving gauge."""

    name = "fedaba_proj"
    project = True


@register("cafd")
class CAFD(_PrefixDispatchLoop):
    """Compose-aggregate-factorize-dispatch without basis alignment (the ablation FedAbA is built against):
    size-weighted sum of B_i A_i, exact SVD refactorization, raw SVD gauge, rank-prefix dispatch."""

    name = "cafd"
    align = False
    fix_gauge = False

