"""Parallel deflation of a low-rank matrix by rank-1 components, the mechanism of AdaPaD (adapad).

An adapter Delta W = sum_k b_k a_k^T is built from rank-1 components. Component k is a worker
that minimises its own deflation objective against the latest estimates of its predecessors,

    f_k(b_k, a_k) = 1/2 || M - sum_{j<k, active} b_j a_j^T - b_k a_k^T ||_F^2,

with one gradient step per round, all workers at once (Jacobi: every gradient is taken at the
estimates of the round before):

    E_k = M - sum_{j<k, active} b_j a_j^T - b_k a_k^T,   b_k <- b_k + eta E_k a_k,   a_k <- a_k + eta E_k^T b_k.

Schedules (`component_schedule`): `parallel` trains every component from round 0; `sequential`
(the classical deflation baseline) trains component k alone for T / r rounds and freezes it, so
its error at freezing stays in every later residual; `adapad` activates component k at round
k tau (growth) and lets it train privately on its deflation target for `advance` rounds before
(advance learning): until activation it is in no successor's target. Errors of component k are
measured against the k-th singular triplet of the observed matrix (the algorithmic term, which
parallel deflation drives to 0) and against the planted triplet (which adds the statistical floor
|| s_k u_k v_k^T - sigma_k u*_k v*_k^T ||_F of the observation noise). Near the fixed point the
linearised update of component k contracts the error by 1 - eta (s_k - s_{k+1}) per round (the
slowest mode, towards the next singular pair of its residual); a successor inherits the slower
contraction of its predecessors, so the predicted rate is

    rho_k = min_{j <= k} -log(1 - eta (s_j - s_{j+1})).

Also here: the per-module rank-growth rule of the fine-tuning experiment (`grow_choice`) and the
deployed-size count of an adapter (`adapter_size`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Planted:
    """Observed M = U* diag(sigma) V*^T + N (N iid Gaussian, entries of variance noise^2 / max(m, n))
    and the SVD (u, s, v) of the observation."""
    observed: np.ndarray
    true_u: np.ndarray
    true_s: np.ndarray
    true_v: np.ndarray
    u: np.ndarray
    s: np.ndarray
    v: np.ndarray

    def triplet(self, k: int, observed: bool = True) -> np.ndarray:
        if observed:
            return self.s[k] * np.outer(self.u[:, k], self.v[:, k])
        return self.true_s[k] * np.outer(self.true_u[:, k], self.true_v[:, k])


def planted_matrix(rows: int, cols: int, spectrum, noise: float, seed: int) -> Planted:
    rng = np.random.default_rng(seed)
    spectrum = np.asarray(spectrum, dtype=float)
    r = spectrum.size
    qu, _ = np.linalg.qr(rng.standard_normal((rows, r)))
    qv, _ = np.linalg.qr(rng.standard_normal((cols, r)))
    m = qu @ np.diag(spectrum) @ qv.T + noise / math.sqrt(max(rows, cols)) * rng.standard_normal((rows, cols))
    u, s, vt = np.linalg.svd(m, full_matrices=False)
    return Planted(m, qu, spectrum, qv, u, s, vt.T)


def component_schedule(kind: str, rank: int, rounds: int, interval: int = 0, advance: int = 0):
    """(start, activation, stop) round of every component: trained for start <= t < stop, part of
    its successors' targets (and of the deployed adapter) from its activation on."""
    if kind == "parallel":
        return [(0, 0, rounds) for _ in range(rank)]
    if kind == "sequential":
        stage = rounds // rank
        return [(k * stage, k * stage, (k + 1) * stage) for k in range(rank)]
    if kind == "adapad":
        return [(max(0, k * interval - advance), k * interval, rounds) for k in range(rank)]
    raise KeyError(f"unknown deflation schedule '{kind}'; known: parallel, sequential, adapad")


def run_deflation(problem: Planted, rank: int, lr: float, rounds: int, schedule, init_scale: float, seed: int) -> dict:
    """Gradient rounds of rank-1 deflation workers; returns per-round errors (rounds + 1, rank):
    `algorithmic` ||b_k a_k^T - s_k u_k v_k^T||_F / s_k, `statistical` the same against the planted
    triplet / sigma_k, and `deployed` ||M_r - sum_active b_k a_k^T||_F / ||M_r||_F (M_r the top-r
    truncated SVD of the observation). LoRA initialisation: b_k = 0, a_k ~ N(0, init^2 / n)."""
    m = problem.observed
    rows, cols = m.shape
    rng = np.random.default_rng(seed)
    b = np.zeros((rank, rows))
    a = init_scale / math.sqrt(cols) * rng.standard_normal((rank, cols))
    targets = [problem.triplet(k) for k in range(rank)]
    truths = [problem.triplet(k, observed=False) for k in range(rank)]
    m_r = sum(targets)
    alg, stat, dep = [], [], []

    def record(t):
        prods = [np.outer(b[k], a[k]) for k in range(rank)]
        alg.append([np.linalg.norm(prods[k] - targets[k]) / problem.s[k] for k in range(rank)])
        stat.append([np.linalg.norm(prods[k] - truths[k]) / problem.true_s[k] for k in range(rank)])
        active = sum((prods[k] for k in range(rank) if schedule[k][1] <= t), np.zeros_like(m))
        dep.append(np.linalg.norm(m_r - active) / np.linalg.norm(m_r))

    record(0)
    for t in range(rounds):
        prods = [np.outer(b[k], a[k]) for k in range(rank)]
        new_b, new_a = b.copy(), a.copy()
        deflated = m.copy()
        for k in range(rank):
            start, active, stop = schedule[k]
            if start <= t < stop:
                err = deflated - prods[k]
                new_b[k] = b[k] + lr * err @ a[k]
                new_a[k] = a[k] + lr * err.T @ b[k]
            if active <= t:
                deflated = deflated - prods[k]
        b, a = new_b, new_a
        record(t + 1)
    return {"algorithmic": np.asarray(alg), "statistical": np.asarray(stat), "deployed": np.asarray(dep)}


def predicted_rates(s, lr: float, rank: int) -> list[float]:
    """rho_k = min_{j <= k} -log(1 - eta (s_j - s_{j+1})) per round (see the module docstring)."""
    own = [-math.log(max(1 - lr * (s[k] - s[k + 1]), 1e-300)) for k in range(rank)]
    return [min(own[:k + 1]) for k in range(rank)]


def warmup_round(errors, start: int, threshold: float) -> int | None:
    """First round at or after `start` whose error is at most `threshold` (None: never)."""
    idx = np.nonzero(np.asarray(errors)[start:] <= threshold)[0]
    return int(start + idx[0]) if idx.size else None


def decay_fit(errors, warm: int, floor: float, min_points: int = 5) -> dict | None:
    """Least-squares fit of log error = c - rho t over the rounds from the warm-up round `warm` to
    the first round the error reaches `floor` (precision floor): the rate rho and the fit's R^2."""
    e = np.asarray(errors, dtype=float)
    below = np.nonzero(e[warm:] <= floor)[0]
    end = warm + (int(below[0]) if below.size else e.size - warm)
    t = np.arange(warm, end)
    if t.size < min_points:
        return None
    y = np.log(e[warm:end])
    slope, intercept = np.polyfit(t, y, 1)
    resid = y - (slope * t + intercept)
    ss = float(((y - y.mean()) ** 2).sum())
    return {"rate": float(-slope), "r2": float(1 - (resid ** 2).sum() / ss) if ss > 0 else 1.0,
            "first": int(warm), "last": int(end - 1)}


# ---------------------------------------------------------------- rank growth and sizes

def grow_choice(ranks: dict, importance: dict, budget: int, max_rank: int, cost: dict | None = None,
                min_score: float = 0.0) -> str | None:
    """The module whose candidate component is activated next, or None: the candidate of highest
    importance among modules below `max_rank` whose growth keeps the total spend within `budget`
    (spend = sum_m ranks_m * cost_m, cost 1 per rank when `cost` is None, i.e. a total-rank
    budget); None when no candidate fits or the best importance is below `min_score`."""
    cost = cost or {m: 1 for m in ranks}
    spent = sum(ranks[m] * cost[m] for m in ranks)
    fits = [m for m in ranks if ranks[m] < max_rank and spent + cost[m] <= budget]
    if not fits:
        return None
    best = max(fits, key=lambda m: (importance[m], -sorted(ranks).index(m)))
    return best if importance[best] >= min_score else None


def adapter_size(shapes: dict, ranks: dict, per_rank_extra: int = 0) -> int:
    """Parameters of a deployed adapter: sum over modules of rank x (n_in + n_out + extra) (extra = 1
    for AdaLoRA's singular value per kept triplet)."""
    return int(sum(ranks[m] * (shapes[m][0] + shapes[m][1] + per_rank_extra) for m in ranks))
