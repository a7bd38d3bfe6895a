"""Archimedean generators: ten classical families and a neural one, each usable on tensors
and on truncated series (so Taylor mode gives every derivative a density needs).

An Archimedean copula is C(u) = psi(sum_i psi^{-1}(u_i)) with psi completely monotone
(psi = Laplace transform of a positive frailty V, Marshall-Olkin). All ten families below
are Laplace transforms, so they are valid in any dimension and can be sampled by frailty
(except Nelsen 19 and 20, whose frailty has no simple sampler; they are fitted, not sampled).
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod

import numpy as np
import torch
import torch.nn.functional as F

from .series import LogSeries


def _exp(x):
    return x.exp() if isinstance(x, LogSeries) else torch.exp(x)


def _log(x):
    return x.log_() if isinstance(x, LogSeries) else torch.log(x)


def _pow(x, a):
    return x.pow(a) if isinstance(x, LogSeries) else torch.pow(x, a)



@functools.lru_cache(maxsize=4)
def _gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights (an eigenvalue problem of size n: computed once per n)."""
    x, w = np.polynomial.legendre.leggauss(n)
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


class UnsupportedOperation(ValueError):
    """A family that has no such operation: no known frailty distribution to sample (Nelsen 19,
    20), no sufficient nesting condition for a mixed pair of families, or the neural generator's
    inverse on power series (so it cannot be a parent). Raised with the family's name."""


class Generator(ABC):
    """psi with parameter theta (a float64 tensor). Subclasses define psi/psi_inv generically."""

    name = "base"
    lower, upper = 0.0, math.inf  # open/closed bounds handled by the free-parameter map
    theta_default = 1.0
    nesting_family = True  # same-family nesting psi_0^{-1} o psi_1 is Bernstein iff theta_0 <= theta_1

    def __init__(self, theta):
        self.theta = torch.as_tensor(theta, dtype=torch.float64)
        lo, hi = float(self.theta.detach().min()), float(self.theta.detach().max())
        if not (self.lower <= lo and hi <= self.upper) or (lo == self.lower and not self.lower_closed) \
                or (hi == self.upper and not self.upper_closed):
            raise ValueError(f"{self.name}: theta={self.theta.detach().tolist()} is outside its range "
                             f"{self.range_text()}")

    lower_closed = False
    upper_closed = False

    @classmethod
    def range_text(cls):
        lo = "[" if cls.lower_closed else "("
        hi = "]" if cls.upper_closed else ")"
        return f"{lo}{cls.lower}, {cls.upper}{hi}"

    # --- free parameter <-> theta (for unconstrained L-BFGS)
    @classmethod
    def theta_from_free(cls, x, lower=None):
        lo = cls.lower if lower is None else lower
        if math.isinf(cls.upper):
            return lo + F.softplus(x) + 1e-6
        return lo + (cls.upper - lo) * torch.sigmoid(x) * (1 - 1e-9)

    @classmethod
    def free_from_theta(cls, theta, lower=None):
        lo = cls.lower if lower is None else lower
        theta = torch.as_tensor(theta, dtype=torch.float64)
        if math.isinf(cls.upper):
            y = (theta - lo - 1e-6).clamp_min(1e-9)
            return y + torch.log(-torch.expm1(-y))
        p = ((theta - lo) / ((cls.upper - lo) * (1 - 1e-9))).clamp(1e-9, 1 - 1e-9)
        return torch.log(p) - torch.log1p(-p)

    # --- the generator, generic over tensors and series
    @abstractmethod
    def psi(self, t):
        """The generator at t (a tensor or a LogSeries)."""

    @abstractmethod
    def psi_inv(self, u):
        """Its inverse at u."""

    def psi_series(self, t0: torch.Tensor, order: int) -> LogSeries:
        """Taylor coefficients of psi(t0 + w), w^0..w^order."""
        return self.psi(LogSeries.variable(t0, order))

    def log_neg_dpsi_inv(self, u: torch.Tensor) -> torch.Tensor:
        """log(-(psi^{-1})'(u)), from the order-1 series of psi^{-1} at u."""
        s = self.psi_inv(LogSeries.variable(u, 1))
        return s.log[..., 1]

    def inner(self, child: "Generator", t, order: int | None = None):
        """psi_self^{-1}(psi_child(t)): on a tensor t, or its Taylor series at t to `order`."""
        closed = self._inner_closed(child, t if order is None else LogSeries.variable(t, order))
        if closed is not None:
            return closed
        if order is None:
            return self.psi_inv(child.psi(t))
        return self.psi_inv(child.psi_series(t, order))

    def _inner_closed(self, child, x):
        return None

    def check_nesting(self, child: "Generator") -> None:
        """Raise a clear error unless psi_self^{-1} o psi_child has a CM derivative."""
        if type(child) is not type(self) or not self.nesting_family:
            raise ValueError(f"nesting {child.name} under {self.name}: no known sufficient nesting condition "
                             f"(supported: the same family, parent theta <= child theta, for "
                             f"{', '.join(n for n, c in FAMILIES.items() if c.nesting_family)})")
        if float(self.theta) > float(child.theta) + 1e-12:
            raise ValueError(f"nesting condition violated: {self.name} parent theta={float(self.theta):.4g} "
                             f"> child theta={float(child.theta):.4g} (need parent <= child)")

    # --- dependence and frailty
    def tau(self) -> float:
        """Kendall's tau = 1 + 4 int_0^1 phi(u)/phi'(u) du, phi = psi^{-1} (numerical quadrature)."""
        x, w = _gauss_legendre(400)
        s = torch.as_tensor((x + 1) / 2, dtype=torch.float64)
        u = s ** 3 * (10 - 15 * s + 6 * s ** 2)  # smooth map clustering nodes at 0 and 1
        du = 30 * s ** 2 * (1 - s) ** 2
        with torch.no_grad():
            phi = self.psi_inv(u)
            dphi = -torch.exp(self.log_neg_dpsi_inv(u))
            integrand = torch.nan_to_num(phi / dphi) * du
        return float(1 + 4 * (integrand * torch.as_tensor(w / 2)).sum())

    def sample_frailty(self, n: int, rng: np.random.Generator) -> np.ndarray:
        raise UnsupportedOperation(f"{self.name}: no frailty distribution to sample from")

    def sample_inner_frailty(self, child: "Generator", v0: np.ndarray, rng) -> np.ndarray:
        """V_child with Laplace transform exp(-v0 * psi_self^{-1}(psi_child(t))) (McNeil 2008)."""
        raise UnsupportedOperation(f"nested sampling of {child.name} under {self.name}: no inner frailty law for this pair")

    def __repr__(self):
        return f"{self.name}({float(self.theta):.4g})"


# ---------------------------------------------------------------- frailty helpers
def positive_stable(alpha: float, size, rng) -> np.ndarray:
    """S with E exp(-tS) = exp(-t^alpha), 0 < alpha <= 1 (Kanter's representation)."""
    if alpha >= 1.0:
        return np.ones(size)
    u = rng.uniform(0, np.pi, size)
    e = rng.exponential(1.0, size)
    return (np.sin(alpha * u) / np.sin(u) ** (1 / alpha)) * (np.sin((1 - alpha) * u) / e) ** ((1 - alpha) / alpha)


def tilted_stable(alpha: float, scale: np.ndarray, rng) -> np.ndarray:
    """V with E exp(-tV) = exp(-scale ((1+t)^alpha - 1)): a sum of ceil(scale) pieces, each by
    rejection from a positive stable with acceptance exp(-S) (probability >= e^-1)."""
    scale = np.asarray(scale, dtype=float)
    if alpha >= 1.0:
        return scale.copy()
    pieces = np.maximum(1, np.ceil(scale)).astype(int)
    owner = np.repeat(np.arange(scale.size), pieces)
    piece_scale = (scale / pieces)[owner]
    out = np.empty(owner.size)
    todo = np.arange(owner.size)
    while todo.size:
        s = piece_scale[todo] ** (1 / alpha) * positive_stable(alpha, todo.size, rng)
        ok = rng.uniform(size=todo.size) <= np.exp(-s)
        out[todo[ok]] = s[ok]
        todo = todo[~ok]
    return np.bincount(owner, weights=out, minlength=scale.size)


# ---------------------------------------------------------------- the ten families
class Clayton(Generator):
    name, lower, theta_default = "clayton", 0.0, 2.0

    def psi(self, t):
        return _pow(1 + t, -1 / self.theta)

    def psi_inv(self, u):
        return _pow(u, -self.theta) - 1

    def log_neg_dpsi_inv(self, u):
        return torch.log(self.theta) - (self.theta + 1) * torch.log(u)

    def _inner_closed(self, child, x):
        return _pow(1 + x, self.theta / child.theta) - 1 if type(child) is Clayton else None

    def sample_frailty(self, n, rng):
        return rng.gamma(1 / float(self.theta), 1.0, n)

    def sample_inner_frailty(self, child, v0, rng):
        self.check_nesting(child)
        return tilted_stable(float(self.theta / child.theta), v0, rng)


class Gumbel(Generator):
    name, lower, lower_closed, theta_default = "gumbel", 1.0, True, 2.0

    def psi(self, t):
        return _exp(-_pow(t, 1 / self.theta))

    def psi_inv(self, u):
        return _pow(-_log(u), self.theta)

    def log_neg_dpsi_inv(self, u):
        lu = -torch.log(u)
        return torch.log(self.theta) + (self.theta - 1) * torch.log(lu) - torch.log(u)

    def _inner_closed(self, child, x):
        return _pow(x, self.theta / child.theta) if type(child) is Gumbel else None

    def sample_frailty(self, n, rng):
        return positive_stable(1 / float(self.theta), n, rng)

    def sample_inner_frailty(self, child, v0, rng):
        self.check_nesting(child)
        a = float(self.theta / child.theta)
        return v0 ** (1 / a) * positive_stable(a, v0.size, rng)


class Frank(Generator):
    name, lower, theta_default = "frank", 0.0, 5.0

    def psi(self, t):
        c = -torch.expm1(-self.theta)  # 1 - e^{-theta}
        return -_log(1 - c * _exp(-t)) / self.theta

    def psi_inv(self, u):
        # -log((1 - e^{-theta u}) / (1 - e^{-theta}))
        if isinstance(u, LogSeries):
            return -_log(1 - _exp(u * (-self.theta))) + torch.log(-torch.expm1(-self.theta))
        return -torch.log(torch.expm1(-self.theta * u) / torch.expm1(-self.theta))

    def sample_frailty(self, n, rng):
        return rng.logseries(-math.expm1(-float(self.theta)), n).astype(float)


class Joe(Generator):
    name, lower, lower_closed, theta_default = "joe", 1.0, True, 2.0

    def psi(self, t):
        return 1 - _pow(1 - _exp(-t), 1 / self.theta)

    def psi_inv(self, u):
        return -_log(1 - _pow(1 - u, self.theta))

    def sample_frailty(self, n, rng):
        a = 1 / float(self.theta)
        if a >= 1:
            return np.ones(n)
        p = rng.beta(a, 1 - a, n).clip(1e-15, 1)
        return rng.geometric(p).astype(float)


class AMH(Generator):
    name, lower, upper, lower_closed, theta_default = "amh", 0.0, 1.0, True, 0.5

    def psi(self, t):
        return (1 - self.theta) / (_exp(t) - self.theta) if not isinstance(t, LogSeries) else \
            _pow(_exp(t) - self.theta, -1.0) * (1 - self.theta)

    def psi_inv(self, u):
        if isinstance(u, LogSeries):
            return _log((1 - self.theta) * _pow(u, -1.0) + self.theta)
        return torch.log((1 - self.theta) / u + self.theta)

    def sample_frailty(self, n, rng):
        return rng.geometric(1 - float(self.theta), n).astype(float)


class Nelsen12(Generator):
    """psi(t) = 1 / (1 + t^{1/theta}), theta >= 1 (Mittag-Leffler frailty)."""
    name, lower, lower_closed, theta_default = "nelsen12", 1.0, True, 1.5

    def psi(self, t):
        return _pow(1 + _pow(t, 1 / self.theta), -1.0)

    def psi_inv(self, u):
        return _pow(_pow(u, -1.0) - 1, self.theta)

    def _inner_closed(self, child, x):
        return _pow(x, self.theta / child.theta) if type(child) is Nelsen12 else None

    def sample_frailty(self, n, rng):
        a = 1 / float(self.theta)
        return rng.exponential(1.0, n) ** (1 / a) * positive_stable(a, n, rng)


class Nelsen13(Generator):
    """psi(t) = exp(1 - (1+t)^{1/theta}), theta >= 1 (exponentially tilted stable frailty)."""
    name, lower, lower_closed, theta_default = "nelsen13", 1.0, True, 2.0

    def psi(self, t):
        return _exp(1 - _pow(1 + t, 1 / self.theta))

    def psi_inv(self, u):
        return _pow(1 - _log(u), self.theta) - 1

    def _inner_closed(self, child, x):
        return _pow(1 + x, self.theta / child.theta) - 1 if type(child) is Nelsen13 else None

    def sample_frailty(self, n, rng):
        return tilted_stable(1 / float(self.theta), np.ones(n), rng)

    def sample_inner_frailty(self, child, v0, rng):
        self.check_nesting(child)
        return tilted_stable(float(self.theta / child.theta), v0, rng)


class Nelsen14(Generator):
    """psi(t) = (1 + t^{1/theta})^{-theta}, theta >= 1 (gamma-stable frailty)."""
    name, lower, lower_closed, theta_default, nesting_family = "nelsen14", 1.0, True, 1.5, False

    def psi(self, t):
        return _pow(1 + _pow(t, 1 / self.theta), -self.theta)

    def psi_inv(self, u):
        return _pow(_pow(u, -1 / self.theta) - 1, self.theta)

    def sample_frailty(self, n, rng):
        a = 1 / float(self.theta)
        return rng.gamma(float(self.theta), 1.0, n) ** (1 / a) * positive_stable(a, n, rng)


class Nelsen19(Generator):
    """psi(t) = theta / log(t + e^theta), theta > 0."""
    name, lower, theta_default = "nelsen19", 0.0, 1.0

    def psi(self, t):
        return _pow(_log(t + torch.exp(self.theta)), -1.0) * self.theta

    def psi_inv(self, u):
        return _exp(self.theta * _pow(u, -1.0)) - torch.exp(self.theta)

    def log_neg_dpsi_inv(self, u):
        return torch.log(self.theta) + self.theta / u - 2 * torch.log(u)

    def _inner_closed(self, child, x):
        if type(child) is not Nelsen19:
            return None
        return _pow(x + torch.exp(child.theta), self.theta / child.theta) - torch.exp(self.theta)


class Nelsen20(Generator):
    """psi(t) = log(t + e)^{-1/theta}, theta > 0."""
    name, lower, theta_default, nesting_family = "nelsen20", 0.0, 1.0, False

    def psi(self, t):
        return _pow(_log(t + math.e), -1 / self.theta)

    def psi_inv(self, u):
        return _exp(_pow(u, -self.theta)) - math.e

    def log_neg_dpsi_inv(self, u):
        return torch.log(self.theta) + u ** (-self.theta) - (self.theta + 1) * torch.log(u)


FAMILIES: dict[str, type[Generator]] = {c.name: c for c in (
    Clayton, Gumbel, Frank, Joe, AMH, Nelsen12, Nelsen13, Nelsen14, Nelsen19, Nelsen20)}


def make(family: str, theta) -> Generator:
    if family not in FAMILIES and family != "neural":
        raise ValueError(f"unknown generator family '{family}'; known: {', '.join(FAMILIES)}, neural")
    return FAMILIES[family](theta)


# ---------------------------------------------------------------- neural generator
class NeuralGenerator(Generator):
    """psi(t) = sum_k w_k exp(-lambda_k t): the Laplace transform of a learned discrete positive
    measure, completely monotone by construction (w = softmax, lambda = softplus).
    psi^{-1} by bisection + one differentiable Newton step (exact first-order gradients)."""

    name, nesting_family = "neural", False

    def __init__(self, logits: torch.Tensor, raw_rates: torch.Tensor):
        self.logits, self.raw_rates = logits, raw_rates
        self.theta = torch.zeros((), dtype=torch.float64)

    @property
    def log_w(self):
        return torch.log_softmax(self.logits, -1)

    @property
    def rates(self):
        return F.softplus(self.raw_rates) + 1e-4

    def psi(self, t):
        if isinstance(t, LogSeries):
            return self.psi_series(t.value0(), t.order)
        return torch.exp(torch.logsumexp(self.log_w - self.rates * t[..., None], -1))

    def psi_series(self, t0, order):
        n = torch.arange(order + 1, dtype=torch.float64)
        lr = torch.log(self.rates)
        log = torch.logsumexp(self.log_w[:, None] - self.rates[:, None] * t0[..., None, None]
                              + n * lr[:, None], -2) - torch.lgamma(n + 1)
        return LogSeries(log, ((-1.0) ** n).expand_as(log).clone())

    def _dpsi(self, t):
        return -torch.exp(torch.logsumexp(self.log_w + torch.log(self.rates) - self.rates * t[..., None], -1))

    def psi_inv(self, u):
        if isinstance(u, LogSeries):
            raise UnsupportedOperation("neural generator: psi^{-1} of a power series is not available, so it cannot be a parent node")
        with torch.no_grad():
            lo = torch.zeros_like(u)
            hi = torch.full_like(u, 1.0)
            for _ in range(200):
                grow = self.psi(hi) > u
                if not bool(grow.any()):
                    break
                hi = torch.where(grow, hi * 4, hi)
            for _ in range(40):
                mid = (lo + hi) / 2
                big = self.psi(mid) > u
                lo, hi = torch.where(big, mid, lo), torch.where(big, hi, mid)
            t = (lo + hi) / 2
            for _ in range(4):  # Newton polish (psi is convex and decreasing), kept in the bracket
                t = (t - (self.psi(t) - u) / self._dpsi(t)).clamp(lo, hi)
        return t - (self.psi(t) - u) / self._dpsi(t).detach() if torch.is_grad_enabled() else t

    def log_neg_dpsi_inv(self, u):
        return -torch.log(-self._dpsi(self.psi_inv(u)))

    def sample_frailty(self, n, rng):
        w = torch.exp(self.log_w).detach().numpy()
        return self.rates.detach().numpy()[rng.choice(w.size, size=n, p=w / w.sum())]

    def __repr__(self):
        return f"neural(K={self.logits.numel()})"
