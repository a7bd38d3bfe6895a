"""Baselines: uniform sampling (round-robin, same GLR stopping; in method.track_and_stop with
rule="uniform") and an LUCB-style MCTS for thresholding (after LUCB-MCTS of Kaufmann & Koolen 2017).

LUCB-MCTS keeps a confidence interval [L_i, U_i] per leaf, {lambda : N_i d(mu_hat_i, lambda) <= b(N_i)}
with b(n) = log(K (1 + log n) / delta), and propagates it up (U_n = max/min of the children's U, same
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


def lucb_mcts(tree: T.Tree, mu, family, theta: float, delta: float, rng: np.random.Generator,
              max_samples: int = 10 ** 6, sigma: float = 1.0) -> dict:
    src = RewardSource(mu, family, rng, sigma)
    K = tree.n_leaves
    fam = src.family
    children = [list(tree.children(n)) for n in range(tree.n_nodes)]
    parent = [int(p) for p in tree.parent]
    is_max = [bool(x) for x in tree.is_max]
    leaf_node = [int(x) for x in tree.leaf_nodes]
    leaf_of = [int(x) for x in tree.leaf_of]
    N, S = [0] * K, [0.0] * K
    L, U = [0.0] * tree.n_nodes, [0.0] * tree.n_nodes

    def refresh_leaf(i):
        level = math.log(K * (1.0 + math.log(N[i])) / delta)
        L[leaf_node[i]], U[leaf_node[i]] = _kl_bounds(S[i] / N[i], N[i], level, fam[i], sigma)

    def refresh_up(node):
        node = parent[node]
        while node >= 0:
            ch = children[node]
            if is_max[node]:
                L[node], U[node] = max(L[c] for c in ch), max(U[c] for c in ch)
            else:
                L[node], U[node] = min(L[c] for c in ch), min(U[c] for c in ch)
            node = parent[node]

    def pull(i):
        S[i] += src.draw(i)
        N[i] += 1
        refresh_leaf(i)
        refresh_up(leaf_node[i])

    for i in range(K):
        S[i] += src.draw(i)
        N[i] = 1
        refresh_leaf(i)
    for d in range(len(tree.levels) - 2, -1, -1):  # initial bottom-up pass
        start, stop = tree.levels[d]
        for n in range(start, stop):
            ch = children[n]
            if ch:
                agg = max if is_max[n] else min
                L[n], U[n] = agg(L[c] for c in ch), agg(U[c] for c in ch)

    def representative(n=0):
        while children[n]:
            ch = children[n]
            if is_max[n]:
                vals = [U[c] for c in ch]
                n = ch[vals.index(max(vals))]
            else:
                vals = [L[c] for c in ch]
                n = ch[vals.index(min(vals))]
        return leaf_of[n]

    t = K
    while L[0] < theta <= U[0] and t < max_samples:
        pull(representative())
        t += 1
    decided = L[0] >= theta or U[0] < theta
    answer = L[0] >= theta if decided else (L[0] + U[0]) / 2 >= theta
    return {"answer": bool(answer), "samples": t, "truncated": t >= max_samples}
