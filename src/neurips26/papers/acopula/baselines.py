"""Baselines: R's nacLL ported to Python (two-level nested Clayton/Gumbel via the partition
sums of Hofert & Pham 2013, arXiv:1204.2410), and naive nested autograd of the mixed partial.

nacLL (R package copula, inst/Rsource/dnac.R) writes the density of a two-level nested copula
with root psi_0 and sectors s = 1..S (sizes d_s, alpha_s = theta_0/theta_s) as

    c(u) = prod_i |(psi_{s(i)}^{-1})'(u_i)| * sum_{k=d_0}^{d} (-1)^{d-k} b_k |psi_0^{(k)}(eta_0)|,
    b_k  = sum_{j in Q_k} prod_s a_{s, d_s j_s}(t_s),   Q_k = {j : sum j = k, 1 <= j_s <= d_s},
    a_{s,d_s k}(t) = (-1)^{d_s-k} coeffG(d_s, alpha_s)_k * (1+t)^{alpha_s k - d_s}   (Clayton)
                   = (-1)^{d_s-k} coeffG(d_s, alpha_s)_k * t^{alpha_s k - d_s}       (Gumbel),
    coeffG(d, alpha)_k = (-1)^{d-k} sum_{l=k}^{d} alpha^l s(d,l) S(l,k)   (Stirling numbers).

The sum over Q_k enumerates every vector j (prod_s d_s of them): exponential in the number
of sectors, which is what acopula's polynomial powering replaces.

High-precision reference (`mpmath_clayton_log_density`): the same two-level Clayton density in
arbitrary-precision arithmetic from closed forms only, for checking accuracy at d ~ 100 where no
float64 formula is trustworthy. With h_s(t) = psi_0^{-1}(psi_s(t)) = (1+t)^{alpha_s} - 1,

    c(u) = prod_i |(psi_s^{-1})'(u_i)| (-1)^d sum_K psi_0^{(K)}(eta) [z^K] prod_s sum_k z^k B_{d_s,k}(t_s),
    B_{n,k}(t) = n!/k! [w^n] (h_s(t+w) - h_s(t))^k,  h_s(t+w) - h_s(t) = (1+t)^{alpha_s} sum_{j>=1} binom(alpha_s, j) (w/(1+t))^j,
    psi_0^{(K)}(eta) = prod_{i<K} (-1/theta_0 - i) (1+eta)^{-1/theta_0 - K},

(multivariate Faa di Bruno), evaluated with mpmath at `dps` digits so that the alternating sums
cancel without loss.

Naive autograd with a graph (`naive_log_density(..., differentiable=True)`) is the reference
for the parameter gradients: autograd through the nested mixed partial itself.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
from scipy.special import gammaln, logsumexp


# ---------------------------------------------------------------- nacLL port
@lru_cache(maxsize=None)
def _stirling1(n: int) -> tuple:
    """Signed Stirling numbers of the first kind s(n, l), l = 0..n (exact integers)."""
    row = [1]
    for m in range(n):
        new = [0] * (len(row) + 1)
        for l, v in enumerate(row):
            new[l + 1] += v
            new[l] -= m * v
        row = new
    return tuple(row)


@lru_cache(maxsize=None)
def _stirling2(n: int) -> tuple:
    """Stirling numbers of the second kind S(n, k), k = 0..n."""
    row = [1]
    for m in range(n):
        new = [0] * (len(row) + 1)
        for k, v in enumerate(row):
            new[k] += k * v
            new[k + 1] += v
        row = new
    return tuple(row)


def coeff_g(d: int, alpha: float) -> np.ndarray:
    """coeffG(d, alpha)_k, k = 1..d (copula:::coeffG, direct Stirling sum)."""
    s1 = _stirling1(d)
    out = np.zeros(d)
    for k in range(1, d + 1):
        total = 0.0
        for l in range(k, d + 1):
            total += alpha ** l * s1[l] * _stirling2(l)[k]
        out[k - 1] = (-1) ** (d - k) * total
    return out


@lru_cache(maxsize=None)
def _blockparts(sizes: tuple) -> dict[int, np.ndarray]:
    """For every k: all j with sum(j) = k and 1 <= j_s <= sizes_s, as an (S, m) integer matrix
    (partitions::blockparts; enumerated once per sector layout and cached, which favours the
    baseline: R enumerates them on every call)."""
    grid = np.stack(np.meshgrid(*[np.arange(1, s + 1) for s in sizes], indexing="ij"), 0).reshape(len(sizes), -1)
    total = grid.sum(0)
    return {k: grid[:, total == k] for k in range(len(sizes), sum(sizes) + 1)}


def _abs_dpsi_log(family: str, theta: float, t: np.ndarray, k: int) -> np.ndarray:
    """log |psi^{(k)}(t)| (copula's absdPsi)."""
    if family == "clayton":
        a = 1 / theta
        return gammaln(k + a) - gammaln(a) - (k + a) * np.log1p(t)
    if family == "gumbel":
        a = 1 / theta
        if k == 0:
            return -t ** a
        c = coeff_g(k, a)
        j = np.arange(1, k + 1)
        terms = np.log(np.abs(c))[None, :] + a * j[None, :] * np.log(t)[:, None]
        return -t ** a - k * np.log(t) + logsumexp(terms, axis=1, b=np.sign(c)[None, :])
    raise ValueError(f"nacLL supports clayton and gumbel, not {family}")


def _ipsi(family, theta, u):
    return u ** (-theta) - 1 if family == "clayton" else (-np.log(u)) ** theta


def _log_abs_dipsi(family, theta, u):
    if family == "clayton":
        return np.log(theta) - (theta + 1) * np.log(u)
    lu = -np.log(u)
    return np.log(theta) + (theta - 1) * np.log(lu) - np.log(u)


def _psi(family, theta, t):
    return (1 + t) ** (-1 / theta) if family == "clayton" else np.exp(-t ** (1 / theta))


def nacll_log_density(family: str, theta0: float, sector_thetas: list[float], sizes: list[int],
                      u: np.ndarray, per_element_prod: bool = False) -> np.ndarray:
    """Per-row log-density of a two-level nested Clayton or Gumbel copula (sectors in column order).

    per_element_prod=False multiplies the sector factors of b_k as whole numpy columns (a
    vectorised port, stronger than the original); True keeps dnac.R's evaluation structure,
    `apply(factor.t.s.js, MARGIN=c(1,3), FUN=prod)`: one interpreted product call per
    (observation, index vector j), as R's nacLL runs it."""
    u = np.atleast_2d(np.asarray(u, dtype=float))
    n, d = u.shape
    if sum(sizes) != d:
        raise ValueError(f"sector sizes {sizes} do not add up to d={d}")
    if theta0 > min(sector_thetas):
        raise ValueError("nacLL: sufficient nesting condition theta_0 <= theta_s violated")
    S = len(sizes)
    starts = np.cumsum([0] + list(sizes))
    t = np.empty((n, S))
    eta_parts = np.empty((n, S))
    log_dipsi = np.zeros(n)
    A = []
    for s in range(S):
        us = u[:, starts[s]:starts[s + 1]]
        ths = sector_thetas[s]
        t[:, s] = _ipsi(family, ths, us).sum(1)
        log_dipsi += _log_abs_dipsi(family, ths, us).sum(1)
        eta_parts[:, s] = _ipsi(family, theta0, _psi(family, ths, t[:, s]))
        ds, a = sizes[s], theta0 / ths
        k = np.arange(1, ds + 1)
        base = 1 + t[:, s] if family == "clayton" else t[:, s]
        A.append(base[:, None] ** (a * k[None, :] - ds) * ((-1.0) ** (ds - k) * coeff_g(ds, a))[None, :])
    eta0 = eta_parts.sum(1)
    x = np.empty((n, d - S + 1))
    parts = _blockparts(tuple(sizes))
    for k in range(S, d + 1):
        Q = parts[k]
        if per_element_prod:
            factors = np.stack([A[s][:, Q[s] - 1] for s in range(S)], 1)  # n x S x |Q_k|
            prods = np.apply_along_axis(np.prod, 1, factors)
        else:
            prods = np.ones((n, Q.shape[1]))
            for s in range(S):
                prods *= A[s][:, Q[s] - 1]
        b = prods.sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            x[:, k - S] = np.log((-1.0) ** (d - k) * b) + _abs_dpsi_log(family, theta0, eta0, k)
    return logsumexp(x, axis=1) + log_dipsi


# ---------------------------------------------------------------- naive nested autograd
def naive_log_density(root, gens, u: torch.Tensor, observed: torch.Tensor | None = None,
                      differentiable: bool = False) -> torch.Tensor:
    """Mixed partial over the observed columns by repeated autograd of C(u) (cost grows
    exponentially with the number of derivatives). One observation pattern per call row-wise.
    differentiable=True keeps the graph, so the result can be differentiated in the parameters."""
    from .method import cdf

    u = torch.as_tensor(u, dtype=torch.float64)
    if observed is None:
        observed = torch.ones_like(u, dtype=torch.bool)
    out = torch.empty(u.shape[0], dtype=torch.float64)
    parts = []
    patterns = {}
    for i, row in enumerate(observed.tolist()):
        patterns.setdefault(tuple(row), []).append(i)
    for pattern, rows in patterns.items():
        x = u[rows].clone().requires_grad_(True)
        f = cdf(root, gens, x)
        cols = [j for j, o in enumerate(pattern) if o]
        for j in cols:
            (g,) = torch.autograd.grad(f.sum(), x, create_graph=True)
            f = g[:, j]
        if differentiable:
            parts.append((rows, torch.log(f)))
        else:
            out[rows] = torch.log(f.detach())
    if differentiable:
        idx = torch.tensor([i for rows, _ in parts for i in rows])
        vals = torch.cat([v for _, v in parts])
        return vals[torch.argsort(idx)]
    return out


def mpmath_clayton_log_density(theta0: float, sector_thetas: list[float], sizes: list[int], u: np.ndarray,
                               dps: int = 80) -> np.ndarray:
    """Per-row log-density of a two-level nested Clayton copula in `dps`-digit arithmetic (see the
    module docstring); rows of u in sector column order."""
    import mpmath as mp

    u = np.atleast_2d(np.asarray(u, dtype=float))
    if sum(sizes) != u.shape[1]:
        raise ValueError(f"sector sizes {sizes} do not add up to d={u.shape[1]}")
    out = np.empty(u.shape[0])
    with mp.workdps(dps):
        th0 = mp.mpf(theta0)
        d = sum(sizes)
        for r, row in enumerate(u):
            start, eta, log_jac, total = 0, mp.mpf(0), mp.mpf(0), [mp.mpf(1)]
            for size, ths in zip(sizes, sector_thetas):
                ths = mp.mpf(ths)
                us = [mp.mpf(x) for x in row[start:start + size]]
                start += size
                t = mp.fsum(x ** (-ths) - 1 for x in us)
                log_jac += mp.fsum(mp.log(ths) - (ths + 1) * mp.log(x) for x in us)  # |d/du (u^-th - 1)|
                a = th0 / ths
                eta += (1 + t) ** a - 1
                # increment series of h_s: coefficients of w^j, j = 0..size
                inc = [mp.mpf(0)] + [(1 + t) ** a * mp.binomial(a, j) / (1 + t) ** j for j in range(1, size + 1)]
                power, poly = [mp.mpf(1)] + [mp.mpf(0)] * size, [mp.mpf(0)] * (size + 1)
                for k in range(1, size + 1):
                    power = [mp.fsum(power[i] * inc[n - i] for i in range(n + 1)) for n in range(size + 1)]
                    poly[k] = mp.factorial(size) / mp.factorial(k) * power[size]
                total = [mp.fsum(total[i] * poly[n - i] for i in range(max(0, n - size), min(n, len(total) - 1) + 1))
                         for n in range(len(total) + size)]
            dens = mp.fsum(total[K] * mp.rf(-1 / th0 - K + 1, K) * (1 + eta) ** (-1 / th0 - K)
                           for K in range(1, len(total)))
            out[r] = float(mp.log((-1) ** d * dens) + log_jac)
    return out
