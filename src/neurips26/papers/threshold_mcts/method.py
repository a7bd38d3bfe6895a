"""Track-and-Stop for thresholding MCTS: GLR stopping, D-tracking, and ratio-based D-tracking.

Stopping (GLR): stop at the first t with Z(t) = F_root(N(t); mu_hat(t)) > beta(t, delta) and answer
"root >= theta" iff the empirical root value is >= theta (see tree.py for F).

D-tracking (Garivier & Kaufmann 2016) over the leaves: if some leaf has N_i < sqrt(t) - K/2 pull the
least-sampled leaf, else pull argmax_i t w*_i(mu_hat) - N_i. Computing w* is a full pass: O(K) per round.

Ratio-based D-tracking: w* factorises along the tree (each internal node splits its weight among its
children in ratios r_c), so the same rule is applied locally while walking down from the root: at node
n with N_n samples in its subtree, force the least-sampled child if N_c < sqrt(N_n) - b_n/2, else go to
argmax_c N_n r_c - N_c. The per-node statistics (values, GLR, costs) are kept incrementally, updated
only along the sampled leaf's path, so a round costs O(branching x depth) = O(log #leaves).
"""

from __future__ import annotations

import math

import numpy as np

from . import tree as T

INF = float("inf")


def beta(t: int, delta: float, kind: str = "practical", n_leaves: int = 1) -> float:
    """Stopping threshold. practical: log((1 + log t) / delta), the usual Track-and-Stop choice;
    union: a provable, conservative choice (per-leaf Chernoff bound + union over sample sizes
    and leaves, summed over all leaves that can be on the wrong side): K (log(K/delta) + 2 log t + 0.5)."""
    if kind == "practical":
        return math.log((1.0 + math.log(max(t, 1))) / delta)
    if kind == "union":
        return n_leaves * (math.log(n_leaves / delta) + 2.0 * math.log(max(t, 1)) + 0.5)
    raise ValueError(f"config key 'threshold_mcts.stopping.beta': unknown threshold {kind!r} (practical, union)")


class State:
    """Counts, empirical means and the incremental per-node statistics of one run."""

    def __init__(self, tree: T.Tree, theta: float, family, sigma: float = 1.0):
        self.tree, self.theta, self.sigma = tree, float(theta), float(sigma)
        K = tree.n_leaves
        self.family = [int(f) for f in np.broadcast_to(np.asarray(family), (K,))]
        self.children = [list(tree.children(n)) for n in range(tree.n_nodes)]
        self.parent = [int(p) for p in tree.parent]
        self.is_max = [bool(x) for x in tree.is_max]
        self.leaf_node = [int(x) for x in tree.leaf_nodes]
        self.leaf_of = [int(x) for x in tree.leaf_of]
        self.N = [0] * tree.n_nodes
        self.S = [0.0] * K
        self.val = [0.0] * tree.n_nodes
        self.glr = [0.0] * tree.n_nodes
        self.cost = [INF] * tree.n_nodes
        self.t = 0

    # ---------------------------------------------------------------- statistics
    def initialise(self, rewards) -> None:
        """One sample per leaf, then every node's statistics by one vectorised pass."""
        rewards = np.asarray(rewards, dtype=float)
        K = self.tree.n_leaves
        self.S = rewards.tolist()
        counts = np.zeros(self.tree.n_nodes, dtype=np.int64)
        counts[self.tree.leaf_nodes] = 1
        for d in range(len(self.tree.levels) - 2, -1, -1):
            start, stop = self.tree.levels[d]
            for n in range(start, stop):
                if self.tree.n_children[n]:
                    counts[n] = counts[self.tree.first_child[n]:self.tree.first_child[n] + self.tree.n_children[n]].sum()
        self.N = counts.tolist()
        sol = T.solve(self.tree, rewards, self.theta, np.asarray(self.family), counts=np.ones(K), sigma=self.sigma)
        self.val, self.glr, self.cost = sol.values.tolist(), sol.glr.tolist(), sol.cost.tolist()
        self.t = K

    def means(self) -> np.ndarray:
        N = np.asarray(self.N)[self.tree.leaf_nodes]
        return np.asarray(self.S) / N

    def leaf_counts(self) -> np.ndarray:
        return np.asarray(self.N)[self.tree.leaf_nodes]

    def add(self, leaf: int, reward: float) -> None:
        """Record one sample and update the statistics on the leaf's path to the root."""
        node = self.leaf_node[leaf]
        self.S[leaf] += reward
        self.N[node] += 1
        n = self.N[node]
        mu = self.S[leaf] / n
        d = T.divergence_scalar(mu, self.theta, self.family[leaf], self.sigma)
        self.val[node], self.glr[node], self.cost[node] = mu, n * d, (1.0 / d if d > 0 else INF)
        node = self.parent[node]
        while node >= 0:
            self.N[node] += 1
            self._update_node(node)
            node = self.parent[node]
        self.t += 1

    def _update_node(self, n: int) -> None:
        ch, val, glr, cost, theta = self.children[n], self.val, self.glr, self.cost, self.theta
        vals = [val[c] for c in ch]
        V = max(vals) if self.is_max[n] else min(vals)
        above = V >= theta
        self.val[n] = V
        if self.is_max[n] == above:  # agree: every same-side child must flip
            g, cm = 0.0, INF
            for c, v in zip(ch, vals):
                if (v >= theta) == above:
                    g += glr[c]
                    if cost[c] < cm:
                        cm = cost[c]
            self.glr[n], self.cost[n] = g, cm
        else:  # disagree: one child flipping suffices
            self.glr[n] = min(glr[c] for c in ch)
            self.cost[n] = sum(cost[c] for c in ch)

    def ratios(self, n: int) -> list[float]:
        """Optimal shares r_c of n's children (tree.py: argmin same-side child, or c_c / c_n)."""
        ch, cost, theta = self.children[n], self.cost, self.theta
        above = self.val[n] >= theta
        if self.is_max[n] == above:
            same = [(self.val[c] >= theta) == above for c in ch]
            finite = [s and cost[c] < INF for c, s in zip(ch, same)]
            if any(finite):
                cm = min(cost[c] for c, f in zip(ch, finite) if f)
                pick = [f and cost[c] == cm for c, f in zip(ch, finite)]
            else:
                pick = same
            k = sum(pick)
            return [p / k for p in pick]
        total = sum(cost[c] for c in ch)
        if total < INF:
            return [cost[c] / total for c in ch] if total > 0 else [1.0 / len(ch)] * len(ch)
        infs = [cost[c] == INF for c in ch]
        k = sum(infs)
        return [x / k for x in infs]

    def stop_statistic(self) -> float:
        return self.glr[0]

    def answer(self) -> bool:
        return self.val[0] >= self.theta

    # ---------------------------------------------------------------- sampling rules
    def select_ratio(self) -> int:
        """Ratio-based D-tracking: walk down the tree, O(branching) per level."""
        n, N = 0, self.N
        while self.children[n]:
            ch = self.children[n]
            Nn = N[n]
            counts = [N[c] for c in ch]
            low = min(counts)
            if low < math.sqrt(Nn) - len(ch) / 2:
                n = ch[counts.index(low)]
                continue
            r = self.ratios(n)
            best, arg = -INF, ch[0]
            for c, rc, nc in zip(ch, r, counts):
                s = Nn * rc - nc
                if s > best:
                    best, arg = s, c
            n = arg
        return self.leaf_of[n]

    def select_dtracking(self) -> int:
        """Classical D-tracking: w* from a full pass over every leaf, O(#leaves)."""
        counts = self.leaf_counts()
        K, t = len(counts), self.t
        under = counts < math.sqrt(t) - K / 2
        if under.any():
            return int(np.argmin(np.where(under, counts, np.iinfo(np.int64).max)))
        w = T.solve(self.tree, self.means(), self.theta, np.asarray(self.family), sigma=self.sigma).weights
        return int(np.argmax(t * w - counts))


class RewardSource:
    """Samples from the leaves' distributions (Gaussian N(mu, sigma^2) or Bernoulli(mu)), drawn in blocks."""

    def __init__(self, mu, family, rng: np.random.Generator, sigma: float = 1.0, block: int = 4096):
        self.mu = [float(m) for m in mu]
        self.family = [int(f) for f in np.broadcast_to(np.asarray(family), (len(self.mu),))]
        self.rng, self.sigma, self.block = rng, sigma, block
        self._z, self._u, self._i = [], [], 0

    def _refill(self):
        self._z = self.rng.standard_normal(self.block).tolist()
        self._u = self.rng.random(self.block).tolist()
        self._i = 0

    def draw(self, leaf: int) -> float:
        if self._i >= len(self._z):
            self._refill()
        i = self._i
        self._i += 1
        if self.family[leaf] == T.GAUSSIAN:
            return self.mu[leaf] + self.sigma * self._z[i]
        return 1.0 if self._u[i] < self.mu[leaf] else 0.0

    def draw_all(self) -> np.ndarray:
        return np.array([self.draw(i) for i in range(len(self.mu))])


def track_and_stop(tree: T.Tree, mu, family, theta: float, delta: float, rng: np.random.Generator,
                   rule: str = "ratio", beta_kind: str = "practical", max_samples: int = 10 ** 6,
                   sigma: float = 1.0) -> dict:
    """One run: sample by `rule` (ratio, dtracking, uniform) until the GLR exceeds beta(t, delta)."""
    src = RewardSource(mu, family, rng, sigma)
    st = State(tree, theta, family, sigma)
    st.initialise(src.draw_all())
    K = tree.n_leaves
    select = {"ratio": st.select_ratio, "dtracking": st.select_dtracking,
              "uniform": lambda: st.t % K}.get(rule)
    if select is None:
        raise ValueError(f"unknown sampling rule {rule!r} (ratio, dtracking, uniform)")
    while st.glr[0] <= beta(st.t, delta, beta_kind, K) and st.t < max_samples:
        leaf = select()
        st.add(leaf, src.draw(leaf))
    return {"answer": st.answer(), "samples": st.t, "truncated": st.t >= max_samples}
