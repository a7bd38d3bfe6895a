"""ALIGN: geometry-aware federated LoRA that aligns the clients' column subspaces at the server
and keeps local updates near the shared subspace (our reading; the README states it).

Server, per LoRA module and round, with client updates dW_i = B_i A_i = U_i S_i V_i^T
(thin SVD, rank r_i) and data shares p_i:
1. Reference basis: U_ref = top-r left singular vectors of [sqrt(p_1) dW_1, ..., sqrt(p_N) dW_N],
   i.e. the r-dimensional column space that best holds the clients' updates
   (argmax_U sum_i p_i ||U^T dW_i||_F^2).
2. Alignment: orthogonal Procrustes of each client's column basis onto the reference,
   Q_i = argmin_{Q Q^T = I} ||U_i Q - U_ref||_F = W_i Z_i^T with U_i^T U_ref = W_i Sigma_i Z_i^T;
   the aligned update moves the client's column space onto the reference and keeps its
   spectrum and row space: dW_i' = U_ref Q_i^T S_i V_i^T (with strength beta in [0, 1]:
   (1 - beta) dW_i + beta dW_i'). Equal column spaces are left unchanged (U_ref Q_i^T = U_i).
3. Aggregation: M = sum_i p_i dW_i', refactorised exactly (rank <= r when beta = 1) by its SVD,
   B = U S^(1/2), A = S^(1/2) V^T, the rank prefix to each client; U_ref is kept in the state.
Client: the local objective adds the drift constraint (mu / 2) ||(I - U_ref U_ref^T) B_i||_F^2,
which penalises the part of the client's column space that leaves the shared subspace
(`drift_mu`, read by the harness from `client_options`).
"""

from __future__ import annotations

import torch

from neurips26.papers.fed_harness.aggregators import Dispatch, balanced_factors, register, weights


def thin_svd(B: torch.Tensor, A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """U, S, V (m x r, r, n x r) of B A from the factors (QR of B and A^T, SVD of the r x r core)."""
    Q1, R1 = torch.linalg.qr(B)
    Q2, R2 = torch.linalg.qr(A.T)
    u, s, vh = torch.linalg.svd(R1 @ R2.T)
    return Q1 @ u, s, Q2 @ vh.T


def procrustes(M: torch.Tensor) -> torch.Tensor:
    """The orthogonal polar factor W Z^T of M = W Sigma Z^T (argmax_Q tr(Q^T M), Q Q^T = I)."""
    W, _, Zh = torch.linalg.svd(M, full_matrices=False)
    return W @ Zh


@register("align")
class ALIGN:
    """ALIGN (the fedlora_align paper): reference column basis, Procrustes alignment of each
    client's column space onto it, exact refactorisation, and the local drift constraint."""

    def __init__(self, drift_mu: float = 1.0, beta: float = 1.0):
        self.drift_mu, self.beta = float(drift_mu), float(beta)
        self.client_options = {"drift_mu": self.drift_mu} if self.drift_mu else {}

    def __call__(self, B, A, sizes, ranks, state):
        p = weights(sizes)
        r = max(ranks)
        svds = [thin_svd(b.double(), a.double()) for b, a in zip(B, A)]
        stacked = torch.cat([w ** 0.5 * U * S for w, (U, S, _) in zip(p, svds)], 1)
        U_ref = torch.linalg.svd(stacked, full_matrices=False)[0][:, :r]
        M = torch.zeros(B[0].shape[0], A[0].shape[1], dtype=torch.float64)
        for w, (U, S, V), b, a in zip(p, svds, B, A):
            Q = procrustes(U.T @ U_ref)              # r_i x r
            aligned = (U_ref @ Q.T) * S @ V.T         # U_ref Q^T S V^T
            M = M + w * ((1 - self.beta) * (b.double() @ a.double()) + self.beta * aligned)
        b, a = balanced_factors(M, r)
        state["reference_basis"] = U_ref.to(B[0].dtype).clone()
        return Dispatch([b[:, :k].to(B[0].dtype).clone() for k in ranks],
                        [a[:k].to(A[0].dtype).clone() for k in ranks], None)
