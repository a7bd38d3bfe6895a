"""Z-score ES on a planted quadratic and the SDE of its continuous-time limit (es_dynamics).

Z-score ES steps theta <- theta + alpha / (N sigma) sum_i z_i eps_i with z the standardised
population rewards (zo_harness.es). On a quadratic reward R(theta) = -1/2 (theta - theta*)^T H
(theta - theta*) (+ evaluation noise of std sigma_n) the population rewards are
R_i = R + sigma g^T eps_i - sigma^2 / 2 (eps_i^T H eps_i - tr H) + noise, whose variance is

    V(theta) = sigma^2 ||g||^2 + sigma^4 tr(H^2) / 2 + sigma_n^2       (gradient, curvature, noise)

(exact for Gaussian eps). With rho = sigma g / sqrt(V) = E[z eps] the Z-scored update has, per
generation, mean and covariance

    mu(theta) = c_N alpha g / sqrt(V),     Sigma(theta) = alpha^2 / (N sigma^2) (I + kappa_N rho rho^T),

c_N = E[population std of N standard normals] = sqrt(2 / N) Gamma(N / 2) / Gamma((N - 1) / 2) and
kappa_N = N (1 - c_N^2) - 2. Both are exact when the population rewards are Gaussian with
correlation |rho| to the gradient direction's coordinate a_i = u^T eps_i (u = g / ||g||): writing
a_i = |rho| y_i + sqrt(1 - rho^2) w_i with y the standardised rewards and w independent of them,
sum_i z_i a_i = |rho| N s_y + sqrt(1 - rho^2) sum_i z_i w_i (s_y the population std of y), so the
step along u has mean c_N alpha |rho| / sigma and variance
alpha^2 / sigma^2 (rho^2 ((N - 1) / N - c_N^2) + (1 - rho^2) / N) = alpha^2 / (N sigma^2) (1 + kappa_N rho^2);
every direction orthogonal to u gets alpha^2 / (N sigma^2), uncorrelated with u. At rho = 1 the
variance along u is alpha^2 ((N - 1) / N - c_N^2) / sigma^2, about a quarter of the isotropic
alpha^2 / (N sigma^2) (kappa_N -> -1/2 as N grows). The curvature part of the rewards is not
Gaussian, so away from the gradient-dominated regime this is the Gaussian approximation. The
continuous-time limit (one generation = one unit of time) is the SDE

    d theta = mu(theta) dt + Sigma(theta)^{1/2} dW,

integrated here by Euler-Maruyama with `substeps` steps per generation. Regimes: which term of V
dominates, the gradient split into its task part (the planted rank-k block) and its off-task part
(a weakly curved block of m directions that the basin-local low-rank picture treats as flat, where
the diffusion accumulates and the reward decays). The remaining d - k - m directions are flat.
"""

from __future__ import annotations

import math

import numpy as np

from neurips26.papers.zo_harness import es, zo


def c_population(n: int) -> float:
    """E[sqrt(mean((x - xbar)^2))] for n standard normals."""
    return math.sqrt(2.0 / n) * math.exp(math.lgamma(n / 2) - math.lgamma((n - 1) / 2))


def kappa_population(n: int) -> float:
    """kappa_N = N (1 - c_N^2) - 2: Sigma's factor along rho (module docstring); in (-1, 0)."""
    return n * (1.0 - c_population(n) ** 2) - 2.0


def gradient_step_variance(n: int, sigma: float, alpha: float, rho: float = 1.0) -> float:
    """Variance of one Z-score ES step along the gradient direction, alpha^2 / (N sigma^2) (1 + kappa_N rho^2);
    at rho = 1 it is alpha^2 ((N - 1) / N - c_N^2) / sigma^2."""
    return alpha ** 2 / (n * sigma ** 2) * (1.0 + kappa_population(n) * rho ** 2)


class Quadratic:
    """R(theta) = -1/2 sum_j h_j (theta_j - theta*_j)^2 in the Hessian's eigenbasis (isotropic ES is
    rotation invariant, so the basis is the coordinate one): h = task eigenvalues (rank k,
    geometric from lam_max to lam_min) on the first k coordinates, `lam_off` on the next m, 0 on the
    rest; the full-rank control gives every non-task direction `lam_full`. theta_0 = 0, theta* lies
    in the task block at distance `dist0`."""

    def __init__(self, dim: int, rank: int, off_dim: int, lam_max: float, lam_min: float, lam_off: float,
                 dist0: float, seed: int, full_rank: float | None = None, noise: float = 0.0):
        if rank + off_dim > dim:
            raise ValueError(f"rank + off_dim = {rank + off_dim} exceeds dim = {dim}")
        rng = np.random.default_rng(seed)
        self.dim, self.rank, self.off_dim, self.noise = dim, rank, off_dim, float(noise)
        h = np.zeros(dim)
        h[:rank] = np.geomspace(lam_max, lam_min, rank)
        h[rank:rank + off_dim] = lam_off
        if full_rank is not None:
            h[rank:] = full_rank
        self.h = h
        a = rng.standard_normal(rank)
        self.opt = np.zeros(dim)
        self.opt[:rank] = a / np.linalg.norm(a) * dist0
        self.theta0 = np.zeros(dim)
        self.trace_h2 = float((h * h).sum())

    def reward(self, x: np.ndarray) -> np.ndarray:
        """Noise-free reward of one point (d,) or of a population (N, d)."""
        return -0.5 * ((x - self.opt) ** 2 * self.h).sum(-1)

    def task_gap(self, x: np.ndarray) -> float:
        """The task part of the suboptimality, 1/2 sum_{j < k} h_j (x_j - x*_j)^2."""
        k = self.rank
        return float(0.5 * ((x[:k] - self.opt[:k]) ** 2 * self.h[:k]).sum())

    def gradient(self, x: np.ndarray) -> np.ndarray:
        return -self.h * (x - self.opt)

    def variance_terms(self, x: np.ndarray, sigma: float) -> dict:
        """The terms of the population reward variance V at x."""
        g = self.gradient(x)
        k = self.rank
        return {"task_gradient": sigma ** 2 * float((g[:k] ** 2).sum()),
                "off_task_gradient": sigma ** 2 * float((g[k:] ** 2).sum()),
                "curvature": sigma ** 4 * self.trace_h2 / 2, "noise": self.noise ** 2}


TERMS = ("task_gradient", "off_task_gradient", "curvature", "noise")


def _record(land: Quadratic, x: np.ndarray, sigma: float, rec: dict) -> None:
    rec["reward"].append(float(land.reward(x)))
    rec["task_gap"].append(land.task_gap(x))
    rec["drift"].append(float(np.linalg.norm(x - land.theta0)))
    for name, v in land.variance_terms(x, sigma).items():
        rec[name].append(v)


def _empty() -> dict:
    return {k: [] for k in ("reward", "task_gap", "drift", *TERMS)}


def run_es(land: Quadratic, n: int, sigma: float, alpha: float, generations: int, seed: int,
           shaping: str = "zscore") -> dict:
    """ES on `land`; member i of generation t replays eps from es.member_seed(seed, t, i). Records
    the noise-free reward, task gap, drift ||theta_t - theta_0|| and the variance terms at every
    generation t = 0..T."""
    x = land.theta0.copy()
    rec = _empty()
    shape = [(land.dim,)]
    coef = alpha / (n * sigma)
    for t in range(generations):
        _record(land, x, sigma, rec)
        eps = np.stack([e[0].double().numpy() for e in es.population(shape, seed, t, n)])
        r = land.reward(x + sigma * eps)
        if land.noise > 0:
            r = r + land.noise * np.random.default_rng(zo.step_seed(seed, t)).standard_normal(n)
        w = es.shape_fitness(r, shaping)
        x = x + coef * (w @ eps)
    _record(land, x, sigma, rec)
    return rec


def run_sde(land: Quadratic, n: int, sigma: float, alpha: float, generations: int, seed: int,
            substeps: int = 4) -> dict:
    """Euler-Maruyama of d theta = mu dt + Sigma^{1/2} dW (module docstring) from theta_0, one unit
    of time per generation, recorded at whole generations."""
    rng = np.random.default_rng(seed)
    x = land.theta0.copy()
    rec = _empty()
    c, kappa = c_population(n), kappa_population(n)
    dt = 1.0 / substeps
    scale = alpha / (sigma * math.sqrt(n))
    for t in range(generations):
        _record(land, x, sigma, rec)
        for _ in range(substeps):
            g = land.gradient(x)
            v = sigma ** 2 * float(g @ g) + sigma ** 4 * land.trace_h2 / 2 + land.noise ** 2
            noise = rng.standard_normal(land.dim)
            gn = float(np.linalg.norm(g))
            if gn > 0:
                # Sigma^{1/2} = I + (sqrt(1 + kappa rho^2) - 1) u u^T with rho^2 = sigma^2 ||g||^2 / V
                u = g / gn
                noise = noise + (math.sqrt(1.0 + kappa * sigma ** 2 * gn ** 2 / v) - 1.0) * float(u @ noise) * u
            x = x + c * alpha * g / math.sqrt(v) * dt + scale * math.sqrt(dt) * noise
    _record(land, x, sigma, rec)
    return rec


def sde_linear_closed_form(grad: np.ndarray, n: int, sigma: float, alpha: float, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of theta_t - theta_0 under the SDE for a linear reward g^T theta without
    noise (rho = g_hat: constant drift c_N alpha g_hat / sigma, constant Sigma = alpha^2 / (N sigma^2)(I + kappa_N g_hat g_hat^T))."""
    u = grad / np.linalg.norm(grad)
    mean = c_population(n) * alpha / sigma * u * t
    cov = alpha ** 2 / (n * sigma ** 2) * (np.eye(len(u)) + kappa_population(n) * np.outer(u, u)) * t
    return mean, cov


def random_walk_drift2(dim: int, n: int, sigma: float, alpha: float, t: float) -> float:
    """E ||theta_t - theta_0||^2 of Z-score ES on a flat (noise-only) objective: each generation adds
    (alpha / (N sigma))^2 sum_i z_i^2 ||eps_i||^2 in expectation, with sum_i z_i^2 = N, so t alpha^2 d / (N sigma^2)."""
    return t * alpha ** 2 * dim / (n * sigma ** 2)


def generations_to_fraction(gaps, fraction: float) -> int | None:
    """The first generation t with gaps[t] <= fraction * gaps[0] (None if the run never gets there)."""
    g = np.asarray(gaps, dtype=float)
    hit = np.flatnonzero(g <= fraction * g[0])
    return int(hit[0]) if hit.size else None


def dominant(terms: dict, start: int, stop: int) -> str:
    """The term of V with the largest mean over generations [start, stop)."""
    return max(TERMS, key=lambda k: float(np.mean(terms[k][start:stop])))


def regime_sequence(terms: dict, window: int) -> list[str]:
    """The dominant term of each window of generations."""
    total = len(terms["curvature"])
    return [dominant(terms, s, min(s + window, total)) for s in range(0, total - 1, window)]


def shows_sequence(seq: list[str], order=("task_gradient", "curvature", "off_task_gradient")) -> bool:
    """True when the windows start in order[0], end in order[-1], and each term of `order` first
    dominates after the one before it."""
    if not seq or seq[0] != order[0] or seq[-1] != order[-1]:
        return False
    firsts = [seq.index(o) if o in seq else None for o in order]
    return all(f is not None for f in firsts) and all(a < b for a, b in zip(firsts, firsts[1:]))
