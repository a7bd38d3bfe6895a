"""The paper's diagnostic, for any aggregator: stability of what low-rank clients receive.

`Recorder` wraps an aggregator and, per layer and round, measures the subspace distance
(linalg.subspace_distance: ||sin Theta||_F / sqrt(r), 0 = same, 1 = orthogonal) between the column
space of the B'_i dispatched to each client this round and the one dispatched to it the round
before. A dispatch of B'_i = 0 (FLoRA restarts every client's adapter) has no column space: nan.
It also keeps the last round's client factors of every layer, which the run's checks reuse.
"""

from __future__ import annotations

import math

import torch

from . import linalg


class Recorder:
    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        if hasattr(inner, "client_options"):
            self.client_options = inner.client_options
        self.prefix: dict[str, list[list[float]]] = {}  # layer -> per round -> per client distance
        self.last_inputs: dict[str, tuple] = {}
        self._prev: dict[str, list] = {}

    def __call__(self, B, A, sizes, ranks, state):
        layer = state.get("layer", "layer")
        d = self.inner(B, A, sizes, ranks, state)
        self.last_inputs[layer] = ([b.clone() for b in B], [a.clone() for a in A], list(sizes), list(ranks))
        prev = self._prev.get(layer)
        if prev is not None:
            row = []
            for b_new, b_old in zip(d.B, prev):
                if float(b_new.abs().max()) == 0.0 or float(b_old.abs().max()) == 0.0:
                    row.append(math.nan)
                else:
                    row.append(linalg.subspace_distance(b_new, b_old))
            self.prefix.setdefault(layer, []).append(row)
        self._prev[layer] = [b.detach().clone() for b in d.B]
        return d

    def mean_distance(self, clients: list[int]) -> float:
        """Mean over layers, rounds (from the second dispatch on) and the given clients; nan if undefined."""
        vals = [row[i] for rows in self.prefix.values() for row in rows for i in clients]
        vals = [v for v in vals if not math.isnan(v)]
        return sum(vals) / len(vals) if vals else math.nan

    def per_round(self, clients: list[int]) -> list[float]:
        rounds = max((len(r) for r in self.prefix.values()), default=0)
        out = []
        for t in range(rounds):
            vals = [rows[t][i] for rows in self.prefix.values() if t < len(rows) for i in clients]
            vals = [v for v in vals if not math.isnan(v)]
            out.append(sum(vals) / len(vals) if vals else math.nan)
        return out


def refactorization_error(B, A, weights) -> float:
    """Relative Frobenius error of the coefficient-space SVD against torch's dense SVD (values and product)."""
    U, s, V = linalg.thin_svd_of_sum(B, A, weights)
    W = sum(w * b.double() @ a.double() for w, b, a in zip(weights, B, A))
    sd = torch.linalg.svdvals(W)
    k = s.numel()
    scale = float(torch.linalg.matrix_norm(W)) or 1.0
    e1 = float(torch.linalg.vector_norm(s - sd[:k])) / scale + float(torch.linalg.vector_norm(sd[k:])) / scale
    e2 = float(torch.linalg.matrix_norm(U @ torch.diag(s) @ V.T - W)) / scale
    return max(e1, e2)


def gauge_error(make, B, A, sizes, ranks, seed: int = 0) -> float:
    """Largest relative deviation of the dispatched factors when client 0 sends (B R, R^-1 A) instead."""
    g = torch.Generator().manual_seed(seed)
    r = B[0].shape[1]
    q, _ = torch.linalg.qr(torch.randn(r, r, generator=g, dtype=torch.float64))
    R = q @ torch.diag(torch.linspace(0.5, 2.0, r, dtype=torch.float64))
    B2, A2 = list(B), list(A)
    B2[0], A2[0] = B[0].double() @ R, torch.linalg.solve(R, A[0].double())
    d1 = make()([b.double() for b in B], [a.double() for a in A], sizes, ranks, {})
    d2 = make()(B2, [a.double() for a in A2[:1]] + [a.double() for a in A[1:]], sizes, ranks, {})
    err = 0.0
    for x, y in zip(d1.B + d1.A, d2.B + d2.A):
        err = max(err, float(torch.linalg.matrix_norm(x - y)) / max(float(torch.linalg.matrix_norm(x)), 1e-30))
    return err
