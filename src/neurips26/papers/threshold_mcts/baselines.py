"""Baselines: uniform sampling (round-robin, same GLR stopping; in method.track_and_stop with
rule="uniform") and an LUCB-style MCTS for thresholding (after LUCB-MCTS of Kaufmann & Koolen 2017).

LUCB-MCTS keeps a confidence interval [L_i, U_i] per leaf, {lambda : N_i d(mu_hat_i, lambda) <= b(N_i)}
with b(n) = log(K (1 + log n) / delta) (calibration "k", as in LUCB-MCTS: a union bound over the K
leaves) or b(n) = log((1 + log n) / delta) (calibration "matched": the same log(1/delta) + log log
term as Track-and-Stop's practical GLR threshold, without the factor K), and propagates it up (U_n = max/min of the children's U, same
for L). It stops when L_root >= theta (answer yes) or U_root < theta (answer no); otherwise it samples the
root's representative leaf, found as in LUCB-MCTS by following the child with the highest U at MAX nodes
and the lowest L at MIN nodes. For thresholding this leaf is the right one for both answers: to prove
"yes" a MAX node needs its most promising child (highest U) and a MIN node its bottleneck (lowest L);
to prove "no" a MAX node needs its bottleneck (highest U) and a MIN node its most promising (lowest L).
"""

from __future__ import annotations

import math

import numpy as np

from . import tree as T
from .method import RewardSource

CALIBRATIONS = ("k", "matched")


def _kl_bounds(mu: float, n: int, level: float, family: int, sigma: float) -> tuple[float, float]:
    if family == T.GAUSSIAN:
        w = sigma * math.sqrt(2.0 * level / n)
        return mu - w, mu + w

    def search(lo, hi, upward):
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            inside = n * T.divergence_scalar(mu, mid, T.BERNOULLI) <= level
            if inside == upward:
                lo = mid
            else:
                hi = mid
        return lo if upward else hi

    upper = 1.0 if mu >= 1.0 else search(mu, 1.0, True)
    lower = 0.0 if mu <= 0.0 else search(0.0, mu, False)
    return lower, upper


class LucbState:
    """Confidence intervals of the leaves and their MAX/MIN propagation, updated along one path."""

    def __init__(self, tree: T.Tree, family, theta: float, delta: float, sigma: float = 1.0,
                 calibration: str = "k"):
        if calibration not in CALIBRATIONS:
            raise ValueError(f"LUCB calibration {calibration!r}: use one of {CALIBRATIONS}")
        self.tree, self.theta, self.delta, self.sigma = tree, theta, delta, sigma
        self.k_factor = tree.n_leaves if calibration == "k" else 1
        K = tree.n_leaves
        self.fam = [int(f) for f in np.broadcast_to(np.asarray(family), (K,))]
        self.children = [list(tree.children(n)) for n in range(tree.n_nodes)]
        self.parent = [int(p) for p in tree.parent]
        self.is_max = [bool(x) for x in tree.is_max]
        self.leaf_node = [int(x) for x in tree.leaf_nodes]
        self.leaf_of = [int(x) for x in tree.leaf_of]
        self.N, self.S = [0] * K, [0.0] * K
        self.L, self.U = [0.0] * tree.n_nodes, [0.0] * tree.n_nodes
        self.t = 0

    def level(self, n: int) -> float:
        """Exploration level b(n) of a leaf sampled n times."""
        return math.log(self.k_factor * (1.0 + math.log(n)) / self.delta)

    def _refresh_leaf(self, i: int) -> None:
        level = self.level(self.N[i])
        node = self.leaf_node[i]
        self.L[node], self.U[node] = _kl_bounds(self.S[i] / self.N[i], self.N[i], level, self.fam[i], self.sigma)

    def _refresh_node(self, n: int) -> None:
        ch, L, U = self.children[n], self.L, self.U
        if self.is_max[n]:
            L[n], U[n] = max(L[c] for c in ch), max(U[c] for c in ch)
        else:
            L[n], U[n] = min(L[c] for c in ch), min(U[c] for c in ch)

    def initialise(self, rewards) -> None:
        for i, r in enumerate(rewards):
            self.S[i], self.N[i] = float(r), 1
            self._refresh_leaf(i)
        for d in range(len(self.tree.levels) - 2, -1, -1):
            start, stop = self.tree.levels[d]
            for n in range(start, stop):
                if self.children[n]:
                    self._refresh_node(n)
        self.t = self.tree.n_leaves

    def add(self, i: int, reward: float) -> None:
        self.S[i] += reward
        self.N[i] += 1
        self._refresh_leaf(i)
        node = self.parent[self.leaf_node[i]]
        while node >= 0:
            self._refresh_node(node)
            node = self.parent[node]
        self.t += 1

    def decided(self) -> bool:
        return self.L[0] >= self.theta or self.U[0] < self.theta

    def answer(self) -> bool:
        if self.decided():
            return self.L[0] >= self.theta
        return (self.L[0] + self.U[0]) / 2 >= self.theta

    def representative(self) -> int:
        n = 0
        while self.children[n]:
            ch = self.children[n]
            if self.is_max[n]:
                vals = [self.U[c] for c in ch]
                n = ch[vals.index(max(vals))]
            else:
                vals = [self.L[c] for c in ch]
                n = ch[vals.index(min(vals))]
        return self.leaf_of[n]


def lucb_mcts(tree: T.Tree, mu, family, theta: float, delta: float, rng: np.random.Generator,
              max_samples: int = 10 ** 6, sigma: float = 1.0, calibration: str = "k") -> dict:
    src = RewardSource(mu, family, rng, sigma)
    st = LucbState(tree, family, theta, delta, sigma, calibration)
    st.initialise(src.draw_all())
    while not st.decided() and st.t < max_samples:
        leaf = st.representative()
        st.add(leaf, src.draw(leaf))
    return {"answer": bool(st.answer()), "samples": st.t, "truncated": st.t >= max_samples}
