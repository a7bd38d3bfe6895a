"""Principal angles between subspaces, the geometry ALIGN's diagnostic is built on.

For orthonormal bases U (m x k) and V (m x l), the cosines of the principal angles are the
singular values of U^T V (Bjorck and Golub, 1973): cos theta_j = sigma_j(U^T V). The
projection (chordal) distance used as the conflict score is
    d(U, V) = 1 - ||U^T V||_F^2 / min(k, l) = mean_j sin^2 theta_j  in [0, 1],
0 for equal subspaces and 1 for orthogonal ones. For a LoRA update dW = B A, the column space
is spanned by the top-k left singular vectors of dW and the row space by the top-k right ones.
"""

from __future__ import annotations

import itertools

import torch
from torch import Tensor


def orth(X: Tensor, k: int | None = None, tol: float = 1e-10) -> Tensor:
    """Orthonormal basis of the column space of X (top-k left singular vectors; directions with
    singular value below tol * the largest are dropped)."""
    U, S, _ = torch.linalg.svd(X.double(), full_matrices=False)
    keep = int((S > tol * S.max().clamp_min(1e-300)).sum()) if S.numel() else 0
    if k is not None:
        keep = min(keep, k)
    return U[:, :keep]


def principal_cosines(U: Tensor, V: Tensor) -> Tensor:
    """cos of the principal angles between span(U) and span(V) (orthonormal bases), descending."""
    if U.shape[1] == 0 or V.shape[1] == 0:
        return U.new_zeros(0)
    return torch.linalg.svdvals(U.T.double() @ V.double()).clamp(0, 1)


def principal_angles(U: Tensor, V: Tensor) -> Tensor:
    """The principal angles in radians, ascending."""
    return torch.arccos(principal_cosines(U, V))


def projection_distance(U: Tensor, V: Tensor) -> float:
    """1 - ||U^T V||_F^2 / min(k, l): mean sin^2 of the principal angles."""
    c = principal_cosines(U, V)
    k = min(U.shape[1], V.shape[1])
    return float(1 - (c ** 2).sum() / k) if k else float("nan")


def update_bases(dW: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Orthonormal bases of the column and row spaces of dW, rank k at most."""
    return orth(dW, k), orth(dW.T, k)


def lowrank_bases(L: Tensor, R: Tensor, k: int, tol: float = 1e-10) -> tuple[Tensor, Tensor]:
    """The same bases as `update_bases(L @ R, k)` for dW = L R (L: m x q, R: q x n) without
    forming dW: QR of L and of R^T, then the SVD of the small q x q core."""
    Q1, R1 = torch.linalg.qr(L.double())
    Q2, R2 = torch.linalg.qr(R.double().T)
    u, s, vh = torch.linalg.svd(R1 @ R2.T)
    keep = min(k, int((s > tol * s.max().clamp_min(1e-300)).sum()) if s.numel() else 0)
    return Q1 @ u[:, :keep], Q2 @ vh[:keep].T


def pairwise_conflict(updates: list, k: int, weights: list[float] | None = None) -> dict:
    """Mean over client pairs of the projection distance between the column spaces and between
    the row spaces of their updates (weights p_i p_j when given), and the mean principal angle
    in degrees. An update is a matrix dW or a pair (L, R) with dW = L R."""
    bases = [lowrank_bases(*d, k) if isinstance(d, tuple) else update_bases(d, k) for d in updates]
    out = {"column": 0.0, "row": 0.0, "column_angle_deg": 0.0, "row_angle_deg": 0.0}
    total = 0.0
    for i, j in itertools.combinations(range(len(updates)), 2):
        w = 1.0 if weights is None else weights[i] * weights[j]
        for side, s in (("column", 0), ("row", 1)):
            U, V = bases[i][s], bases[j][s]
            out[side] += w * projection_distance(U, V)
            ang = principal_angles(U, V)
            out[f"{side}_angle_deg"] += w * (float(torch.rad2deg(ang).mean()) if ang.numel() else 90.0)
        total += w
    return {key: v / total for key, v in out.items()} if total else out
