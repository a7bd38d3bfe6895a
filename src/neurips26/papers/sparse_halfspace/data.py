"""s-sparse halfspaces under malicious noise: the clean distribution and the adversary.

Clean examples: x ~ N(0, I_d) conditioned on the margin |w*.x| >= gamma (Gaussian inputs
satisfy the concentration condition; gamma = 0 is the plain isotropic Gaussian), label
y = sign(w*.x), with w* a unit s-sparse vector.

Malicious noise at rate eta: a fraction eta of the sample is replaced by points the adversary
chooses (x and y). Ours put their mass where it hurts a sparse learner most: along a decoy
s-sparse direction v, with support disjoint from w*'s, at a typical l_inf norm so a coordinate
filter keeps them, and on the wrong side of w* with label +1:
    x_bad = g_perp + t v - beta w*,  y_bad = +1,   g_perp ~ N(0, I) off span{w*, v}.
For the averaging estimator E[y x] this adds eta (t v - beta w*); for hinge losses each such
point pulls w towards v and away from w*.

A second adversary, boundary label flips: clean-looking points just outside the margin,
|w*.x| in [gamma, gamma + width], with the label flipped, and their coordinate along the decoy
v drawn on the side of the flipped label:
    x_bad = g_perp + z w* - sign(z) |t| v,  y_bad = -sign(z),   z = +-U(gamma, gamma + width).
Each looks like a clean point (typical norms, inside the support of the clean law); together
they tilt the boundary towards v.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm


def sparse_unit(d: int, support: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    w = np.zeros(d)
    w[support] = rng.choice([-1.0, 1.0], size=len(support)) * (0.5 + rng.random(len(support)))
    return w / np.linalg.norm(w)


@dataclass
class SparseHalfspace:
    d: int
    s: int
    margin: float
    w_star: np.ndarray
    decoy: np.ndarray

    @classmethod
    def make(cls, d: int, s: int, margin: float, rng: np.random.Generator) -> "SparseHalfspace":
        if 2 * s > d:
            raise ValueError(f"need 2 s <= d for a disjoint decoy support (s={s}, d={d})")
        perm = rng.permutation(d)
        return cls(d, s, margin, sparse_unit(d, perm[:s], rng), sparse_unit(d, perm[s:2 * s], rng))

    @property
    def support(self) -> np.ndarray:
        return np.flatnonzero(self.w_star)

    def clean(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n clean examples: Gaussian x conditioned on |w*.x| >= margin, y = sign(w*.x)."""
        g = rng.standard_normal((n, self.d))
        g -= np.outer(g @ self.w_star, self.w_star)
        # |z| from the standard normal truncated to [margin, inf), by inverse CDF
        u = rng.random(n)
        z = norm.isf(norm.sf(self.margin) * u) * rng.choice([-1.0, 1.0], size=n)
        x = g + np.outer(z, self.w_star)
        return x, np.sign(z)

    def adversarial(self, n: int, decoy_scale: float, flip_scale: float,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n malicious examples along the decoy direction, on the wrong side of w*, labelled +1."""
        g = rng.standard_normal((n, self.d))
        for direction in (self.w_star, self.decoy):
            g -= np.outer(g @ direction, direction)
        t = decoy_scale * (1 + 0.1 * rng.standard_normal(n))
        x = g + np.outer(t, self.decoy) - flip_scale * np.outer(np.ones(n), self.w_star)
        return x, np.ones(n)

    def boundary_flips(self, n: int, width: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n malicious examples near the boundary with flipped labels, tilted towards the decoy."""
        g = rng.standard_normal((n, self.d))
        for direction in (self.w_star, self.decoy):
            g -= np.outer(g @ direction, direction)
        z = rng.choice([-1.0, 1.0], size=n) * (self.margin + width * rng.random(n))
        t = np.abs(rng.standard_normal(n))
        x = g + np.outer(z, self.w_star) - np.outer(np.sign(z) * t, self.decoy)
        return x, -np.sign(z)

    def malicious(self, n: int, adversary: dict, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n malicious examples of `adversary["kind"]` ("decoy" or "boundary_flip")."""
        kind = adversary.get("kind", "decoy")
        if kind == "decoy":
            return self.adversarial(n, adversary["decoy_scale"], adversary["flip_scale"], rng)
        if kind == "boundary_flip":
            return self.boundary_flips(n, adversary["boundary_width"], rng)
        raise ValueError(f"config key 'sparse_halfspace.adversary.kind': unknown adversary {kind!r}")

    def sample(self, n: int, noise_rate: float, adversary: dict,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """n examples, round(noise_rate * n) of them malicious, shuffled; also the is-malicious mask."""
        n_bad = int(round(noise_rate * n))
        xc, yc = self.clean(n - n_bad, rng)
        xb, yb = self.malicious(n_bad, adversary, rng)
        x, y = np.vstack([xc, xb]), np.concatenate([yc, yb])
        bad = np.concatenate([np.zeros(n - n_bad, bool), np.ones(n_bad, bool)])
        order = rng.permutation(n)
        return x[order], y[order], bad[order]


def gaussian_error(w: np.ndarray, w_star: np.ndarray) -> float:
    """Error of sign(w.x) against sign(w*.x) for x ~ N(0, I): angle(w, w*) / pi."""
    nw = np.linalg.norm(w)
    if nw == 0:
        return 0.5
    cos = np.clip(w @ w_star / (nw * np.linalg.norm(w_star)), -1.0, 1.0)
    return float(np.arccos(cos) / np.pi)


def support_recovered(w: np.ndarray, support: np.ndarray) -> bool:
    """Whether the s largest |w_i| are exactly the support of w*."""
    top = np.argsort(-np.abs(w), kind="stable")[:len(support)]
    return set(top.tolist()) == set(np.asarray(support).tolist())
