"""Small linear algebra of factored updates: every routine works on LoRA factors, never on a dense m x n SVD.

A rank-r update is Delta W = B A with B in R^{m x r}, A in R^{r x n}. Its thin SVD comes from two QR
factorizations and the SVD of an r x r core,

    B = Q_B R_B,  A^T = Q_A R_A,  R_B R_A^T = u s v^T   =>   Delta W = (Q_B u) diag(s) (Q_A v)^T,

and a weighted sum sum_i w_i B_i A_i is the same computation on the stacked factors
[B_1 ... B_N] and [w_1 A_1; ...; w_N A_N] (cost O((m+n) K^2 + K^3), K = sum_i r_i).

Gauge: (U, S, V) is fixed up to a sign per singular pair and a rotation inside every group of equal
singular values. `gauge_fix` picks one representative: inside near-degenerate groups the rotation that
best matches a reference basis (orthogonal Procrustes), then the sign that makes each column agree with
the reference column (or, without one, that makes its largest-magnitude entry positive).
"""

from __future__ import annotations

import torch
from torch import Tensor

DTYPE = torch.float64


def thin_svd_of_sum(Bs: list[Tensor], As: list[Tensor], weights: list[float] | None = None,
                    tol: float = 1e-12) -> tuple[Tensor, Tensor, Tensor]:
    """Exact thin SVD of sum_i w_i B_i A_i in coefficient space: (U (m,k), s (k,), V (n,k)).

    QR of the stacked B's and of the stacked (weighted) A's transposed, then the SVD of the small
    core R_B R_A^T. Components with s <= tol * s_max are dropped, so k is the numerical rank.
    """
    if weights is None:
        weights = [1.0] * len(Bs)
    B = torch.cat([b.to(DTYPE) for b in Bs], dim=1)
    A = torch.cat([w * a.to(DTYPE) for w, a in zip(weights, As)], dim=0)
    qb, rb = torch.linalg.qr(B, mode="reduced")
    qa, ra = torch.linalg.qr(A.T, mode="reduced")
    u, s, vh = torch.linalg.svd(rb @ ra.T, full_matrices=False)
    keep = s > tol * max(float(s[0]) if s.numel() else 0.0, 1e-300)
    return qb @ u[:, keep], s[keep], qa @ vh[keep].T


def polar(M: Tensor) -> Tensor:
    """Orthogonal polar factor of a square M: argmax_O tr(O^T M) over orthogonal O (Procrustes)."""
    x, _, yh = torch.linalg.svd(M)
    return x @ yh


def degenerate_groups(s: Tensor, rel_gap: float) -> list[list[int]]:
    """Consecutive indices whose singular values differ by less than rel_gap (relative to the larger)."""
    groups: list[list[int]] = []
    for j in range(s.numel()):
        if groups and float(s[groups[-1][-1]] - s[j]) <= rel_gap * max(float(s[groups[-1][-1]]), 1e-300):
            groups[-1].append(j)
        else:
            groups.append([j])
    return groups


def gauge_fix(U: Tensor, s: Tensor, V: Tensor, ref: Tensor | None = None, rel_gap: float = 1e-6,
              rotate_to_reference: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """One representative (U', K, V') of the SVD gauge class: U' K V'^T = U diag(s) V^T.

    K is diagonal unless a rotation mixed unequal singular values (only by less than rel_gap, or with
    rotate_to_reference, which aligns the whole top-k basis to the reference by Procrustes).
    Sign: column j of U' has a nonnegative inner product with ref[:, j]; without a reference column,
    its largest-magnitude entry (first one on ties) is positive.
    """
    U, s, V = U.to(DTYPE), s.to(DTYPE), V.to(DTYPE)
    k = s.numel()
    Ur, Vr = U.clone(), V.clone()
    refk = ref.to(DTYPE)[:, :k] if ref is not None else None
    kr = 0 if refk is None else refk.shape[1]
    if refk is not None and rotate_to_reference and kr == k:
        O = polar(U.T @ refk)
        Ur, Vr = U @ O, V @ O
    elif refk is not None:
        for g in degenerate_groups(s, rel_gap):
            g = [j for j in g if j < kr]
            if len(g) > 1:
                O = polar(U[:, g].T @ refk[:, g])
                Ur[:, g], Vr[:, g] = U[:, g] @ O, V[:, g] @ O
    for j in range(k):
        if j < kr:
            flip = float(Ur[:, j] @ refk[:, j]) < 0
        else:
            i = int(torch.argmax(Ur[:, j].abs()))
            flip = float(Ur[i, j]) < 0
        if flip:
            Ur[:, j], Vr[:, j] = -Ur[:, j], -Vr[:, j]
    K = (Ur.T @ U) @ torch.diag(s) @ (V.T @ Vr)
    return Ur, K, Vr


def balanced_factors(U: Tensor, K: Tensor, V: Tensor) -> tuple[Tensor, Tensor]:
    """B = U diag(d)^{1/2}, A = diag(d)^{-1/2} K V^T with d = |diag K|: B A = U K V^T exactly.

    With K = diag(s) this is the usual split B = U S^{1/2}, A = S^{1/2} V^T.
    """
    d = K.diagonal().abs().clamp_min(1e-30).sqrt()
    return U * d, (K / d[:, None]) @ V.T


def orthonormal_basis(B: Tensor) -> Tensor:
    """Orthonormal basis of the column space of B (QR; columns kept in order)."""
    q, _ = torch.linalg.qr(B.to(DTYPE), mode="reduced")
    return q


def subspace_distance(U1: Tensor, U2: Tensor) -> float:
    """Normalized chordal distance ||sin Theta||_F / sqrt(r) in [0, 1] between two column spaces of dim r.

    0 for the same subspace, 1 for orthogonal ones (Theta: principal angles; bases need not be orthonormal).
    """
    q1, q2 = orthonormal_basis(U1), orthonormal_basis(U2)
    r = min(q1.shape[1], q2.shape[1])
    if r == 0:
        return 0.0
    cos2 = float((q1.T @ q2).pow(2).sum())
    return max(0.0, r - cos2) ** 0.5 / r ** 0.5
