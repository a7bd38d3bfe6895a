"""Attribute-efficient learning of an s-sparse halfspace under malicious noise.

The algorithm of the abstract, in three stages (our reading, following the localisation line of
Awasthi, Balcan and Long (2017) with sparsity constraints):

1. hard filter: drop points with ||x||_inf above the level clean Gaussian points stay under
   (sqrt(2 log(2 n d)) times a slack);
2. soft outlier removal: weights q in [0, 1]^n such that no s-sparse direction has a weighted
   second moment above what clean data allow,
       max_{||u||_2 = 1, ||u||_0 <= s}  sum_i q_i (u.x_i)^2 / sum_i q_i  <=  m_gamma + c sqrt(s log d / n),
   reached by a filter: find the worst sparse direction (truncated power method), shrink
   q_i <- q_i (1 - (u.x_i)^2 / max_j (u.x_j)^2), repeat;
3. hinge loss minimisation under the sparsity-admitting constraints
       min_w  sum_i q_i max(0, 1 - y_i w.x_i / tau) / sum_i q_i   s.t.  ||w||_2 <= 1,  ||w||_1 <= sqrt(s),
   by projected subgradient descent (the exact Euclidean projection onto the l1 and l2 balls'
   intersection is a soft-threshold followed by a rescaling, the threshold found by bisection).

With `sparsity=None` stage 2 uses the top eigenvector (dense directions, threshold at the
Wishart edge) and stage 3 only the l2 ball: the filter without the sparsity constraint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm


# ---------------------------------------------------------------- projections
def soft_threshold(v: np.ndarray, lam: float) -> np.ndarray:
    return np.sign(v) * np.maximum(np.abs(v) - lam, 0.0)


def project_l2(v: np.ndarray, radius: float = 1.0) -> np.ndarray:
    n = np.linalg.norm(v)
    return v if n <= radius else v * (radius / n)


def project_l1_l2(v: np.ndarray, l1_radius: float, l2_radius: float = 1.0, tol: float = 1e-10) -> np.ndarray:
    """Euclidean projection onto {||w||_2 <= l2_radius, ||w||_1 <= l1_radius}.

    KKT: w = soft(v, lam) / max(1, ||soft(v, lam)||_2 / l2_radius), with lam = 0 if that is
    l1-feasible, else the lam at which ||w||_1 = l1_radius (found by bisection)."""
    def at(lam):
        return project_l2(soft_threshold(v, lam), l2_radius)

    w = at(0.0)
    if np.abs(w).sum() <= l1_radius:
        return w
    lo, hi = 0.0, float(np.abs(v).max())
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if np.abs(at(mid)).sum() > l1_radius:
            lo = mid
        else:
            hi = mid
        if hi - lo <= tol * max(1e-3, hi):
            break
    return at(hi)


# ---------------------------------------------------------------- filters
def hard_filter(x: np.ndarray, slack: float) -> np.ndarray:
    """Keep-mask: ||x||_inf <= slack * sqrt(2 log(2 n d)) (clean Gaussian points stay under it w.h.p.)."""
    n, d = x.shape
    return np.abs(x).max(1) <= slack * np.sqrt(2 * np.log(2 * n * d))


def truncated_power(x: np.ndarray, q: np.ndarray, k: int | None, iterations: int = 25,
                    tol: float = 1e-6, starts: int = 4) -> tuple[np.ndarray, float]:
    """Top direction of the weighted second moment S = sum q_i x_i x_i^T / sum q with at most k
    non-zeros: the truncated power method (Yuan and Zhang 2013) run from several starts at
    once (the top-k-diagonal indicator and each of the starts * k largest diagonal coordinates),
    keeping the best Rayleigh quotient. k=None: the plain top eigenvector (power iteration)."""
    total = q.sum()
    d = x.shape[1]

    dt = x.dtype
    qd = q.astype(dt)

    def moment(u):
        return (x.T @ (qd[:, None] * (x @ u.astype(dt)))).astype(float) / total

    diag = (qd @ (x * x)).astype(float) / total
    if k is None:
        u = np.random.default_rng(0).standard_normal((d, 1))
    else:
        order = np.argsort(-diag, kind="stable")
        m = min(d, starts * k)
        u = np.zeros((d, m + 1))
        u[order[:m], np.arange(m)] = 1.0
        u[order[:k], m] = 1.0
    u /= np.linalg.norm(u, axis=0)
    values = np.zeros(u.shape[1])
    su = moment(u)
    for _ in range(iterations):
        v = su
        if k is not None and k < d:
            drop = np.argpartition(-np.abs(v), k, axis=0)[k:]
            np.put_along_axis(v, drop, 0.0, axis=0)
        v /= np.linalg.norm(v, axis=0)
        su = moment(v)  # S v: the Rayleigh quotient now and the next power step
        new_values = np.einsum("ij,ij->j", v, su)
        done = np.abs(new_values - values).max() <= tol * max(1.0, new_values.max())
        u, values = v, new_values
        if done:
            break
    best = int(np.argmax(values))
    return u[:, best], float(values[best])


def clean_second_moment(margin: float) -> float:
    """E[z^2 | |z| >= margin] for z ~ N(0, 1): the clean variance along w* (1 elsewhere)."""
    tail = norm.sf(margin)
    return float(1 + margin * norm.pdf(margin) / tail) if tail > 0 else float(margin ** 2)


@dataclass
class FilterResult:
    weights: np.ndarray
    rounds: int
    final_variance: float
    threshold: float


def soft_outlier_removal(x: np.ndarray, sparsity: int | None, margin: float, slack: float,
                         max_rounds: int, min_mass: float) -> FilterResult:
    """Weights q with max_{u in directions} sum q (u.x)^2 / sum q under the clean level plus
    slack * sqrt(s log d / n) (sparse) or at the Wishart edge (1 + sqrt(d / n))^2 (dense)."""
    n, d = x.shape
    level = clean_second_moment(margin)
    if sparsity is None:
        threshold = level * (1 + np.sqrt(d / n)) ** 2 * (1 + slack * np.sqrt(1 / n))
    else:
        threshold = level + slack * np.sqrt(sparsity * np.log(d) / n)
    q = np.ones(n)
    value, rounds = float("inf"), 0
    for rounds in range(1, max_rounds + 1):
        u, value = truncated_power(x, q, sparsity)
        if value <= threshold or q.sum() <= min_mass * n:
            break
        tau = (x @ u.astype(x.dtype)).astype(float) ** 2
        q = q * (1 - tau / tau[q > 0].max())
    return FilterResult(q, rounds, value, float(threshold))


# ---------------------------------------------------------------- hinge minimisation
def hinge_objective(w: np.ndarray, x: np.ndarray, y: np.ndarray, q: np.ndarray, tau: float) -> float:
    return float(q @ np.maximum(0.0, 1 - y * (x @ w) / tau) / q.sum())


def constrained_hinge(x: np.ndarray, y: np.ndarray, q: np.ndarray, tau: float, l1_radius: float | None,
                      iterations: int, step: float = 1.0) -> np.ndarray:
    """min weighted hinge s.t. ||w||_2 <= 1 (and ||w||_1 <= l1_radius): projected subgradient with
    normalised steps step / sqrt(t); returns the best iterate seen."""
    total = q.sum()

    def project(v):
        return project_l2(v) if l1_radius is None else project_l1_l2(v, l1_radius)

    dt = x.dtype
    w = project(((q * y).astype(dt) @ x).astype(float) / total)  # start at the (weighted) average, feasible
    best, best_value = w, np.inf
    for t in range(1, iterations + 2):
        margins = y * (x @ w.astype(dt)).astype(float)
        value = float(q @ np.maximum(0.0, 1 - margins / tau) / total)
        if value < best_value:
            best, best_value = w, value
        if t > iterations:
            break
        grad = -((q * y * (margins < tau)).astype(dt) @ x).astype(float) / (tau * total)
        gnorm = np.linalg.norm(grad)
        if gnorm == 0:
            break
        w = project(w - step / np.sqrt(t) * grad / gnorm)
    return best


@dataclass
class Learned:
    w: np.ndarray
    kept: int
    weight_mass: float
    malicious_mass: float  # share of the final weight on malicious points (diagnostic; needs the mask)
    filter_rounds: int


def learn_sparse_halfspace(x: np.ndarray, y: np.ndarray, sparsity: int | None, margin: float, tau: float,
                           hard_slack: float, filter_slack: float, max_rounds: int, min_mass: float,
                           iterations: int, malicious: np.ndarray | None = None,
                           soft_filter: bool = True) -> Learned:
    """The three stages; sparsity=None gives the dense filter + l2-constrained hinge baseline,
    soft_filter=False the constrained hinge on the hard-filtered sample with unit weights (the
    ablation without soft outlier removal). Computed in float32 (the matrix-vector products
    dominate the cost; the errors compared are far above float32 rounding)."""
    keep = hard_filter(x, hard_slack)
    xk, yk = np.asarray(x[keep], dtype=np.float32), y[keep]
    if soft_filter:
        filt = soft_outlier_removal(xk, sparsity, margin, filter_slack, max_rounds, min_mass)
    else:
        filt = FilterResult(np.ones(len(yk)), 0, float("nan"), float("nan"))
    radius = None if sparsity is None else float(np.sqrt(sparsity))
    w = constrained_hinge(xk, yk, filt.weights, tau, radius, iterations)
    bad_mass = float("nan")
    if malicious is not None:
        bad_mass = float(filt.weights[malicious[keep]].sum() / filt.weights.sum())
    return Learned(w, int(keep.sum()), float(filt.weights.sum()), bad_mass, filt.rounds)


# ---------------------------------------------------------------- sample complexity
def sample_size_for_target(error_at, target: float, n_low: int, n_high: int, steps: int) -> tuple[int, bool]:
    """Smallest n (to a factor (n_high / n_low)^(2^-steps)) with error_at(n) <= target, by
    bisection on log n; assumes error_at decreases in n. Returns (n, reached): reached is False
    when even n_high misses the target (n is then n_high, a lower bound on the true value)."""
    if error_at(n_high) > target:
        return int(n_high), False
    lo, hi = float(n_low), float(n_high)
    if error_at(int(round(lo))) <= target:
        return int(round(lo)), True
    for _ in range(steps):
        mid = int(round(np.sqrt(lo * hi)))
        if mid <= lo or mid >= hi:
            break
        if error_at(mid) <= target:
            hi = mid
        else:
            lo = mid
    return int(round(hi)), True


def fit_exponents(sparsities, dims, n_needed) -> dict:
    """Least squares of log n on [1, log s, log log d]: {"s": exponent of s, "log_d": exponent of
    log d, "intercept"} (n = e^a s^b (log d)^c)."""
    s, d, n = (np.asarray(v, dtype=float) for v in (sparsities, dims, n_needed))
    A = np.column_stack([np.ones_like(s), np.log(s), np.log(np.log(d))])
    coef, *_ = np.linalg.lstsq(A, np.log(n), rcond=None)
    return {"intercept": float(coef[0]), "s": float(coef[1]), "log_d": float(coef[2])}
