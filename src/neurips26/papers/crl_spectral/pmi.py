"""Population PMI of a known joint distribution, seen as a compact operator, and its spectrum.

For a joint density p(x, y) with marginals p_X, p_Y the PMI kernel
    PMI(x, y) = log p(x, y) / (p_X(x) p_Y(y))
defines the integral operator (T h)(x) = E_{y ~ p_Y}[PMI(x, y) h(y)] from L2(p_Y) to L2(p_X).
Contrastive losses (InfoNCE) identify the score only up to an additive constant, so the
target we approximate is the centred kernel K = PMI - E_{p_X x p_Y}[PMI]. With its singular
values s_1 >= s_2 >= ..., the best rank-D approximation of K in L2(p_X x p_Y) has error
    tail_D = sqrt(sum_{k > D} s_k^2)                                  (Eckart-Young-Schmidt)
and an inner-product score f(x)^T g(y) of dimension D, free up to a constant, has an error
between tail_{D+1} and tail_D.

Discrete case: n states on a cycle, p(x, y) = (1 - eps) a_x k(x, y) a_y / Z + eps p_X p_Y
(a kernel channel mixed with independent noise, so PMI is bounded). In weighted coordinates
M = diag(sqrt p_X) K diag(sqrt p_Y) the operator's singular values are those of M.

Continuous case: x, y in R^m standard Gaussian with corr(x_i, y_i) = rho. Then
    PMI = -m/2 log(1 - rho^2) + a (|x|^2 + |y|^2) + b x.y,  a = -rho^2 / (2(1 - rho^2)), b = rho / (1 - rho^2),
and in the orthonormal basis {x_i, u = (|x|^2 - m) / sqrt(2m)} the centred kernel is
b sum_i x_i y_i + a sqrt(2m) (u(x) + u(y)): finite rank m + 2 with singular values
b (m times) and |a| sqrt(2m) (twice).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


# ---------------------------------------------------------------- discrete joints
def cycle_distance(n: int) -> np.ndarray:
    i = np.arange(n)
    d = np.abs(i[:, None] - i[None, :])
    return np.minimum(d, n - d).astype(float)


def kernel_matrix(kind: str, n: int, bandwidth: float) -> np.ndarray:
    """Symmetric non-negative kernel k(x, y) on n states arranged on a cycle."""
    d = cycle_distance(n)
    if kind == "gaussian":
        return np.exp(-d ** 2 / (2 * bandwidth ** 2))
    if kind == "laplace":
        return np.exp(-d / bandwidth)
    if kind == "block":  # states in clusters of `bandwidth` consecutive states
        block = np.arange(n) // max(1, int(bandwidth))
        return (block[:, None] == block[None, :]).astype(float)
    if kind == "independent":
        return np.ones((n, n))
    raise ValueError(f"unknown kernel '{kind}' (gaussian, laplace, block, independent)")


@dataclass
class DiscreteJoint:
    """A joint distribution on n x n states with its marginals."""

    joint: np.ndarray

    def __post_init__(self):
        self.joint = np.asarray(self.joint, dtype=float)
        if np.any(self.joint <= 0):
            raise ValueError("the joint must be strictly positive for PMI to be finite")
        self.joint = self.joint / self.joint.sum()
        self.px = self.joint.sum(1)
        self.py = self.joint.sum(0)

    @property
    def n(self) -> tuple[int, int]:
        return self.joint.shape

    def pmi(self) -> np.ndarray:
        return np.log(self.joint) - np.log(self.px)[:, None] - np.log(self.py)[None, :]

    def density_ratio(self) -> np.ndarray:
        return self.joint / np.outer(self.px, self.py)

    def mean(self, f: np.ndarray) -> float:
        """E_{p_X x p_Y}[f]."""
        return float(self.px @ f @ self.py)

    def centred(self, f: np.ndarray) -> np.ndarray:
        return f - self.mean(f)

    def weighted(self, f: np.ndarray) -> np.ndarray:
        """diag(sqrt p_X) f diag(sqrt p_Y): L2(p_X x p_Y) norms become Frobenius norms."""
        return np.sqrt(self.px)[:, None] * f * np.sqrt(self.py)[None, :]

    def unweighted(self, m: np.ndarray) -> np.ndarray:
        return m / np.sqrt(self.px)[:, None] / np.sqrt(self.py)[None, :]

    def l2(self, f: np.ndarray) -> float:
        return float(np.linalg.norm(self.weighted(f)))

    def error_mod_constant(self, score: np.ndarray) -> float:
        """min_c ||score + c - PMI||_{L2(p_X x p_Y)}."""
        return self.l2(self.centred(score - self.pmi()))


def discrete_joint(kind: str, n: int, bandwidth: float, noise: float, marginal_spread: float,
                   rng: np.random.Generator) -> DiscreteJoint:
    """(1 - noise) * a_x k(x, y) a_y / Z + noise * p_X p_Y, with state weights a = exp(spread * N(0, 1))."""
    k = kernel_matrix(kind, n, bandwidth)
    a = np.exp(marginal_spread * rng.standard_normal(n))
    channel = a[:, None] * k * a[None, :]
    channel /= channel.sum()
    px, py = channel.sum(1), channel.sum(0)
    return DiscreteJoint((1 - noise) * channel + noise * np.outer(px, py))


def spectrum(joint: DiscreteJoint) -> np.ndarray:
    """Singular values of the centred PMI operator, descending."""
    return np.linalg.svd(joint.weighted(joint.centred(joint.pmi())), compute_uv=False)


def spectral_tails(singular_values: np.ndarray, dims) -> np.ndarray:
    """tail_D = sqrt(sum_{k > D} s_k^2) for each D in dims."""
    s2 = np.asarray(singular_values, dtype=float) ** 2
    return np.array([np.sqrt(s2[int(d):].sum()) for d in dims])


def truncated_svd(joint: DiscreteJoint, target: np.ndarray, rank: int) -> np.ndarray:
    """Best rank-`rank` approximation of `target` in L2(p_X x p_Y) (weighted Eckart-Young)."""
    u, s, vt = np.linalg.svd(joint.weighted(target))
    return joint.unweighted((u[:, :rank] * s[:rank]) @ vt[:rank])


def numerical_rank(singular_values: np.ndarray, tol: float = 1e-8) -> int:
    s = np.asarray(singular_values)
    return int((s > tol * max(1.0, s.max(initial=0.0))).sum())


# ---------------------------------------------------------------- correlated Gaussians
@dataclass
class GaussianPair:
    """x, y ~ N(0, I_m) with corr(x_i, y_i) = rho and independent coordinates."""

    dim: int
    rho: float

    def sample(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        x = rng.standard_normal((count, self.dim))
        y = self.rho * x + np.sqrt(1 - self.rho ** 2) * rng.standard_normal((count, self.dim))
        return x, y

    @property
    def a(self) -> float:
        return -self.rho ** 2 / (2 * (1 - self.rho ** 2))

    @property
    def b(self) -> float:
        return self.rho / (1 - self.rho ** 2)

    def pmi(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """PMI(x_i, y_j) for every pair of rows: the (len(x), len(y)) matrix."""
        c = -0.5 * self.dim * np.log(1 - self.rho ** 2)
        qx, qy = (x ** 2).sum(1), (y ** 2).sum(1)
        return c + self.a * (qx[:, None] + qy[None, :]) + self.b * x @ y.T

    def mean_pmi(self) -> float:
        """E_{p_X x p_Y}[PMI] = -m/2 log(1 - rho^2) + 2 a m."""
        return -0.5 * self.dim * np.log(1 - self.rho ** 2) + 2 * self.a * self.dim

    def spectrum(self) -> np.ndarray:
        """Singular values of the centred PMI operator (closed form), descending; rank m + 2."""
        s = [abs(self.b)] * self.dim + [abs(self.a) * np.sqrt(2 * self.dim)] * 2
        return np.sort(np.array(s))[::-1]

    @property
    def rank(self) -> int:
        return self.dim + 2


def error_mod_constant_samples(score: np.ndarray, pmi: np.ndarray) -> float:
    """Monte Carlo min_c ||score + c - PMI||_{L2(p_X x p_Y)} on a grid of independent x and y."""
    diff = score - pmi
    return float(np.sqrt(np.mean((diff - diff.mean()) ** 2)))
