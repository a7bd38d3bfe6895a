"""Independent reference for T*: the max-min game solved numerically with scipy.

The inner infimum over alternatives is a minimum over flipping leaf sets S (brute force over all
2^K subsets: set the leaves of S to theta, re-evaluate the tree, keep S if the root's side flips), so

    1 / T* = max_{w in simplex} min_{S flips} sum_{i in S} w_i d(mu_i, theta)

is a linear program (scipy.optimize.linprog). Only for small trees (K <= 12).
"""

from __future__ import annotations

import itertools

import numpy as np

from . import tree as T


def flipping_sets(tree: T.Tree, mu, theta: float) -> list[tuple[int, ...]]:
    mu = np.asarray(mu, float)
    K = tree.n_leaves
    if K > 12:
        raise ValueError("reference.flipping_sets enumerates 2^K leaf sets; use K <= 12")
    above = T.tree_value(tree, mu)[0] >= theta
    side = mu >= theta
    out = []
    for r in range(1, K + 1):
        for S in itertools.combinations(range(K), r):
            moved = side.copy()
            moved[list(S)] = not above  # leaves in S cross theta towards the other answer
            # a leaf exactly at theta counts as >= theta, so moving "up" sets it to theta
            probe = np.where(moved, theta + 1.0, theta - 1.0)
            if (T.tree_value(tree, probe)[0] >= theta) != above:
                out.append(S)
    return out


def characteristic_time_lp(tree: T.Tree, mu, theta: float, family, sigma: float = 1.0):
    """(T*, w*) from the LP over the brute-force flipping sets."""
    from scipy.optimize import linprog

    d = T.divergence(mu, theta, family, sigma)
    sets = flipping_sets(tree, mu, theta)
    K = tree.n_leaves
    # variables (w_1..w_K, s); maximise s  s.t. s - sum_{i in S} w_i d_i <= 0, sum w = 1, w >= 0
    A = np.zeros((len(sets), K + 1))
    for j, S in enumerate(sets):
        A[j, list(S)] = -d[list(S)]
        A[j, K] = 1.0
    res = linprog(c=np.r_[np.zeros(K), -1.0], A_ub=A, b_ub=np.zeros(len(sets)),
                  A_eq=np.r_[np.ones(K), 0.0][None, :], b_eq=[1.0],
                  bounds=[(0, None)] * K + [(None, None)], method="highs")
    if not res.success:
        raise RuntimeError(f"linprog failed: {res.message}")
    value = -res.fun
    return (1.0 / value if value > 0 else np.inf), res.x[:K]


def glr_bruteforce(tree: T.Tree, mu_hat, counts, theta: float, family, sigma: float = 1.0) -> float:
    """The GLR statistic as min over flipping sets of sum_{i in S} N_i d(mu_hat_i, theta)."""
    d = T.divergence(mu_hat, theta, family, sigma) * np.asarray(counts, float)
    return min(float(d[list(S)].sum()) for S in flipping_sets(tree, mu_hat, theta))
