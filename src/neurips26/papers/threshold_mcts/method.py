"""Track-and-Stop for thresholding MCTS: GLR stopping, D-tracking, and ratio-based tracking.

Stopping (GLR): stop at the first t with Z(t) = F_root(N(t); mu_hat(t)) > beta(t, delta) and answer
"root >= theta" iff the empirical root value is >= theta (see tree.py for F).

D-tracking (Garivier & Kaufmann 2016) over the leaves: if some leaf has N_i < sqrt(t) - K/2 pull the
least-sampled leaf, else pull argmax_i t w*_i(mu_hat) - N_i. Computing w* is a full pass: O(K) per round.

Ratio-based tracking: w* factorises along the tree (each internal node n splits its weight among its
children in ratios r_c), so D-tracking's rule is applied locally while walking down from the root: at
node n with N_n samples in its subtree, force the least-sampled child if N_c < sqrt(N_n) - b_n/2
(per-node forced exploration), else go to the child with the largest gap N_n r_c - N_c (the child
furthest behind its share in samples). At an "agree" node r_c is 1 for the cheapest same-side child
(shared on ties), 0 for the rest, so the gap picks the least-sampled of the cheapest same-side
children: an argmin of (c_c, N_c). At a "disagree" node r_c = c_c / C with C = sum_c c_c, so the gap is
the line c_c s - N_c of the child read at s = N_n / C; its argmax, the upper envelope at s, is kept by
a kinetic tournament (`_Children.gap_winner`): each position of a tournament tree over the children
holds its range's winner and the interval of s on which it is certified; a sample updates one child's
line and empties the certificates of its O(log b_n) ancestors, and a query repairs only the
positions whose certificate misses s. Every node also keeps the aggregates its own statistics need
(max/min value, sums and minima of the GLR and cost terms). A round thus touches O(log b_n) positions
at each node of its path plus the certificates that failed in between (about 14 positions per round
at a disagree root of 1024 children, log2 1024 = 10; a test counts them). That second term has no
worst-case bound here (s can move back and forth); it is measured, and the timing rows test the
per-round cost on trees up to 10^4 leaves. `select_ratio_scan` is the same rule by a linear scan
over the children (the reference of the tests). The "global" variant replaces per-node forcing by
D-tracking's global schedule (pull the least-sampled leaf while some N_i < sqrt(t) - K/2, found by a
tournament tree over the leaves). The "quotient" key, the smallest N_c / r_c, is an ablation: a
different child in general (r = (.6, .3, .1), N = (114, 48, 15): the gap picks the second child, the
quotient the third).
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


_NONE3 = (INF, INF, INF)     # empty slot of an (cost, N, slot) argmin
_NONE_D = (2, 0.0, 0)          # empty slot of a disagree-key argmin
_NONE_N = (INF, INF)           # empty slot of an (N, slot) argmin
GAP_MARGIN = 1e-9              # relative margin of a gap certificate (float keys err by ~1e-15)


class _Children:
    """Tournament tree over the children of one internal node (slots 0..b-1, leaves at P + slot).

    Per position: the max (MAX node) or min (MIN node) value, the GLR sums over children >= theta
    (ga) and < theta (gb), the GLR minimum, the cost sum, and the argmins (cost, N, slot) over
    children >= theta (a) and < theta (bl), the quotient key (flag, N / cost or N, slot) (d), (N, slot)
    (n) and (N, slot) over the children of infinite cost (inf). Ties go to the lower slot (tuple
    order), as in the linear scan.

    The gap key of a disagree node, N_n c_c / C - N_c with C = sum_c c_c, is the line
    f_c(s) = c_c s - N_c read at s = N_n / C, so its argmax is the upper envelope of the children's
    lines at s. A kinetic tournament keeps it: position p holds the winner w[p] of its range and an
    interval [lo[p], hi[p]] of s on which that winner is certified (both subtree winners certified,
    and the comparison of their lines decided with a relative margin GAP_MARGIN, far above the
    rounding of the float keys). A child update invalidates its log2(P) ancestors; a query repairs
    only the positions whose interval misses s, comparing the float keys N_n * (c_c / C) - N_c
    exactly as the linear scan computes them."""

    __slots__ = ("P", "is_max", "v", "ga", "gb", "gmin", "csum", "a", "bl", "d", "n", "inf",
                 "lc", "ln", "w", "lo", "hi")

    def __init__(self, b: int, is_max: bool):
        P = 1
        while P < b:
            P *= 2
        self.P, self.is_max = P, is_max
        self.v = [-INF if is_max else INF] * (2 * P)
        self.ga, self.gb, self.gmin, self.csum = [0.0] * (2 * P), [0.0] * (2 * P), [INF] * (2 * P), [0.0] * (2 * P)
        self.a, self.bl, self.d, self.n = [_NONE3] * (2 * P), [_NONE3] * (2 * P), [_NONE_D] * (2 * P), [_NONE_N] * (2 * P)
        self.inf = [_NONE_N] * (2 * P)
        self.lc, self.ln = [INF] * P, [0] * P       # line of each slot: cost c_c and count N_c
        self.w = [-1] * (2 * P)                      # gap winner (slot) of each position, -1: none
        self.lo, self.hi = [-INF] * (2 * P), [INF] * (2 * P)

    def set(self, slot: int, v: float, g: float, c: float, N: int, theta: float) -> None:
        p = self.P + slot
        self.v[p] = v
        self.gmin[p], self.csum[p] = g, c
        if v >= theta:
            self.ga[p], self.gb[p], self.a[p], self.bl[p] = g, 0.0, (c, N, slot), _NONE3
        else:
            self.ga[p], self.gb[p], self.a[p], self.bl[p] = 0.0, g, _NONE3, (c, N, slot)
        self.d[p] = (0, N, slot) if c == INF else (1, N / c, slot)
        self.n[p] = (N, slot)
        self.inf[p] = (N, slot) if c == INF else _NONE_N
        self.lc[slot], self.ln[slot] = c, N
        self.w[p] = -1 if c == INF else slot   # children of infinite cost have no line (C is infinite then)

    def update(self, slot: int, v: float, g: float, c: float, N: int, theta: float) -> None:
        """Set one child's entry and recompute its log2(P) ancestors (the loop body is `pull`, inlined);
        the ancestors' gap certificates are emptied (repaired by the next `gap_winner`)."""
        self.set(slot, v, g, c, N, theta)
        p = (self.P + slot) >> 1
        vv, ga, gb, gmin, csum, a, bl, d, n, inf = (self.v, self.ga, self.gb, self.gmin, self.csum, self.a, self.bl,
                                                  self.d, self.n, self.inf)
        lo, hi = self.lo, self.hi
        if self.is_max:
            while p:
                l = 2 * p
                r = l + 1
                vv[p] = vv[l] if vv[l] >= vv[r] else vv[r]
                ga[p] = ga[l] + ga[r]
                gb[p] = gb[l] + gb[r]
                gmin[p] = gmin[l] if gmin[l] <= gmin[r] else gmin[r]
                csum[p] = csum[l] + csum[r]
                a[p] = a[l] if a[l] <= a[r] else a[r]
                bl[p] = bl[l] if bl[l] <= bl[r] else bl[r]
                d[p] = d[l] if d[l] <= d[r] else d[r]
                n[p] = n[l] if n[l] <= n[r] else n[r]
                inf[p] = inf[l] if inf[l] <= inf[r] else inf[r]
                lo[p], hi[p] = INF, -INF
                p >>= 1
        else:
            while p:
                l = 2 * p
                r = l + 1
                vv[p] = vv[l] if vv[l] <= vv[r] else vv[r]
                ga[p] = ga[l] + ga[r]
                gb[p] = gb[l] + gb[r]
                gmin[p] = gmin[l] if gmin[l] <= gmin[r] else gmin[r]
                csum[p] = csum[l] + csum[r]
                a[p] = a[l] if a[l] <= a[r] else a[r]
                bl[p] = bl[l] if bl[l] <= bl[r] else bl[r]
                d[p] = d[l] if d[l] <= d[r] else d[r]
                n[p] = n[l] if n[l] <= n[r] else n[r]
                inf[p] = inf[l] if inf[l] <= inf[r] else inf[r]
                lo[p], hi[p] = INF, -INF
                p >>= 1

    def pull(self, p: int) -> None:
        """Recompute position p from its two children (its gap certificate is emptied)."""
        l, r = 2 * p, 2 * p + 1
        vv = self.v
        vv[p] = (max if self.is_max else min)(vv[l], vv[r])
        self.ga[p] = self.ga[l] + self.ga[r]
        self.gb[p] = self.gb[l] + self.gb[r]
        self.gmin[p] = min(self.gmin[l], self.gmin[r])
        self.csum[p] = self.csum[l] + self.csum[r]
        for arr in (self.a, self.bl, self.d, self.n, self.inf):
            arr[p] = arr[l] if arr[l] <= arr[r] else arr[r]
        self.lo[p], self.hi[p] = INF, -INF

    def build(self) -> None:
        for p in range(self.P - 1, 0, -1):
            self.pull(p)

    def gap_winner(self, Nn: int, C: float) -> int:
        """The slot with the largest N_n * (c_c / C) - N_c over the children of finite cost (first slot
        on ties; -1 if none), C finite: the root's certificate if it holds at s = N_n / C, else a
        repair of the positions whose certificate misses s."""
        s = Nn / C
        if not self.lo[1] <= s <= self.hi[1]:
            self._repair(s, Nn, C)
        return self.w[1]

    def _repair(self, s: float, Nn: int, C: float) -> int:
        """Recompute, children first, every position whose certificate misses s (leaf positions are
        always certified); returns how many."""
        lo, hi, w, lc, ln, P = self.lo, self.hi, self.w, self.lc, self.ln, self.P
        stack, order = [1], []
        while stack:
            p = stack.pop()
            order.append(p)
            l = 2 * p
            if l < P:
                if not lo[l] <= s <= hi[l]:
                    stack.append(l)
                if not lo[l + 1] <= s <= hi[l + 1]:
                    stack.append(l + 1)
        for p in reversed(order):
            l = 2 * p
            r = l + 1
            wl, wr = w[l], w[r]
            a = lo[l] if lo[l] >= lo[r] else lo[r]
            b = hi[l] if hi[l] <= hi[r] else hi[r]
            if wl < 0 or wr < 0:
                w[p] = wl if wr < 0 else wr
                lo[p], hi[p] = a, b
                continue
            cl, nl, cr, nr = lc[wl], ln[wl], lc[wr], ln[wr]
            if cl == cr:  # parallel lines: the smaller count wins at every s (the lower slot on equal lines)
                w[p] = wl if nl <= nr else wr
                lo[p], hi[p] = a, b
                continue
            if Nn * (cl / C) - nl >= Nn * (cr / C) - nr:  # the scan's float keys, first slot on ties
                w[p] = wl
                cw, nw, co, no = cl, nl, cr, nr
            else:
                w[p] = wr
                cw, nw, co, no = cr, nr, cl, nl
            # the winner's line stays above the other's by more than the margin where
            # (cw - co) s - (nw - no) > GAP_MARGIN ((cw + co) s + nw + no): a half-line in s
            alpha = (cw - co) - GAP_MARGIN * (cw + co)
            beta_ = (nw - no) + GAP_MARGIN * (nw + no)
            if alpha > 0:
                edge = beta_ / alpha
                ja, jb = edge + abs(edge) * 1e-12 + 1e-300, INF
            elif alpha < 0:
                edge = beta_ / alpha
                ja, jb = -INF, edge - abs(edge) * 1e-12 - 1e-300
            else:
                ja, jb = (-INF, INF) if beta_ < 0 else (INF, -INF)
            if not ja <= s <= jb:  # a near tie at this s: certified for no s, recomputed at the next query
                lo[p], hi[p] = INF, -INF
            else:
                lo[p] = a if a >= ja else ja
                hi[p] = b if b <= jb else jb
        return len(order)


class _LeafCounts:
    """Tournament tree of (N_i, i) over the leaves: the least-sampled leaf in O(1), updates in O(log K)."""

    def __init__(self, counts):
        P = 1
        while P < len(counts):
            P *= 2
        self.P = P
        self.m = [_NONE_N] * (2 * P)
        for i, c in enumerate(counts):
            self.m[P + i] = (int(c), i)
        for p in range(P - 1, 0, -1):
            self.m[p] = min(self.m[2 * p], self.m[2 * p + 1])

    def set(self, i: int, c: int) -> None:
        m = self.m
        p = self.P + i
        m[p] = (c, i)
        p >>= 1
        while p:
            l, r = m[2 * p], m[2 * p + 1]
            m[p] = l if l <= r else r
            p >>= 1


class State:
    """Counts, empirical means and the incremental per-node statistics of one run."""

    def __init__(self, tree: T.Tree, theta: float, family, sigma: float = 1.0):
        self.tree, self.theta, self.sigma = tree, float(theta), float(sigma)
        K = tree.n_leaves
        self.family = [int(f) for f in np.broadcast_to(np.asarray(family), (K,))]
        self.children = [list(tree.children(n)) for n in range(tree.n_nodes)]
        self.parent = [int(p) for p in tree.parent]
        self.slot = [int(n - tree.first_child[p]) if p >= 0 else -1 for n, p in enumerate(tree.parent)]
        self.is_max = [bool(x) for x in tree.is_max]
        self.leaf_node = [int(x) for x in tree.leaf_nodes]
        self.leaf_of = [int(x) for x in tree.leaf_of]
        self.N = [0] * tree.n_nodes
        self.S = [0.0] * K
        self.val = [0.0] * tree.n_nodes
        self.glr = [0.0] * tree.n_nodes
        self.cost = [INF] * tree.n_nodes
        self.kids: list = [None] * tree.n_nodes
        self.leafmin = None
        self.forced = 0        # rounds decided by forced exploration (per-node or global)
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
        sol = T.solve(self.tree, rewards, self.theta, np.asarray(self.family), counts=np.ones(K), sigma=self.sigma)
        self.load(counts.tolist(), sol.values.tolist(), sol.glr.tolist(), sol.cost.tolist())
        self.t = K

    def load(self, N, val, glr, cost) -> None:
        """Set every node's statistics (e.g. from a full pass) and rebuild the tournament trees."""
        self.N, self.val, self.glr, self.cost = list(N), list(val), list(glr), list(cost)
        th = self.theta
        for n, ch in enumerate(self.children):
            if not ch:
                continue
            kt = _Children(len(ch), self.is_max[n])
            for j, c in enumerate(ch):
                kt.set(j, self.val[c], self.glr[c], self.cost[c], self.N[c], th)
            kt.build()
            self.kids[n] = kt
        self.leafmin = _LeafCounts([self.N[x] for x in self.leaf_node])
        self.t = sum(self.N[x] for x in self.leaf_node)

    def means(self) -> np.ndarray:
        N = np.asarray(self.N)[self.tree.leaf_nodes]
        return np.asarray(self.S) / N

    def leaf_counts(self) -> np.ndarray:
        return np.asarray(self.N)[self.tree.leaf_nodes]

    def add(self, leaf: int, reward: float) -> None:
        """Record one sample and update the statistics on the leaf's path to the root:
        O(log b_n) tournament-tree entries at each node n of the path."""
        node = self.leaf_node[leaf]
        self.S[leaf] += reward
        self.N[node] += 1
        n = self.N[node]
        mu = self.S[leaf] / n
        d = T.divergence_scalar(mu, self.theta, self.family[leaf], self.sigma)
        self.val[node], self.glr[node], self.cost[node] = mu, n * d, (1.0 / d if d > 0 else INF)
        self.leafmin.set(leaf, n)
        theta, val, glr, cost, N = self.theta, self.val, self.glr, self.cost, self.N
        child, node = node, self.parent[node]
        while node >= 0:
            N[node] += 1
            kt = self.kids[node]
            kt.update(self.slot[child], val[child], glr[child], cost[child], N[child], theta)
            V = kt.v[1]
            val[node] = V
            above = V >= theta
            if self.is_max[node] == above:  # agree: every same-side child must flip
                if above:
                    glr[node], cost[node] = kt.ga[1], kt.a[1][0]
                else:
                    glr[node], cost[node] = kt.gb[1], kt.bl[1][0]
            else:  # disagree: one child flipping suffices
                glr[node], cost[node] = kt.gmin[1], kt.csum[1]
            child, node = node, self.parent[node]
        self.t += 1

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
    def select_ratio(self, forcing: str = "node", key: str = "gap") -> int:
        """Ratio-based tracking by the tournament trees. forcing: 'node' (force the least-sampled child
        when N_c < sqrt(N_n) - b_n/2), 'global' (force the least-sampled leaf when N_i < sqrt(t) - K/2,
        then walk without forcing) or 'none'. key: 'gap' (the child with the largest N_n r_c - N_c,
        D-tracking's rule applied to the child ratios; the method) or 'quotient' (the smallest
        N_c / r_c; an ablation)."""
        if forcing == "global":
            low, leaf = self.leafmin.m[1]
            if low < math.sqrt(self.t) - len(self.leaf_node) / 2:
                self.forced += 1
                return leaf
        per_node = forcing == "node"
        gap = key == "gap"
        n, N, theta = 0, self.N, self.theta
        while True:
            kt = self.kids[n]
            if kt is None:
                return self.leaf_of[n]
            ch = self.children[n]
            if per_node:
                low, j = kt.n[1]
                if low < math.sqrt(N[n]) - len(ch) / 2:
                    self.forced += 1
                    n = ch[j]
                    continue
            above = self.val[n] >= theta
            if self.is_max[n] == above:
                # r_c = 1/k on the k cheapest same-side children, 0 elsewhere: both keys pick the
                # least-sampled of the cheapest (every N_c >= 1, so N_n/k - min N_c >= 0 > -N_other)
                n = ch[(kt.a[1] if above else kt.bl[1])[2]]
            elif not gap:
                n = ch[kt.d[1][2]]
            elif kt.inf[1][0] < INF:
                # C infinite: r_c = 1/k on the children of infinite cost, the least-sampled of them wins
                n = ch[kt.inf[1][1]]
            else:
                n = ch[kt.gap_winner(N[n], kt.csum[1])]

    def select_ratio_scan(self, forcing: str = "node", key: str = "gap") -> int:
        """The same rule by a linear scan over the children (and the leaves): O(b_n) per level, the
        reference of the tournament-tree walk. r_c from `ratios`; gap key N_n r_c - N_c, largest wins;
        quotient key N_c / r_c (infinite where r_c = 0), smallest wins; first child on ties."""
        if forcing == "global":
            counts = [self.N[x] for x in self.leaf_node]
            low = min(counts)
            if low < math.sqrt(self.t) - len(counts) / 2:
                return counts.index(low)
        n, N = 0, self.N
        while self.children[n]:
            ch = self.children[n]
            counts = [N[c] for c in ch]
            low = min(counts)
            if forcing == "node" and low < math.sqrt(N[n]) - len(ch) / 2:
                n = ch[counts.index(low)]
                continue
            r = self.ratios(n)
            best, arg = None, None
            for c, rc, nc in zip(ch, r, counts):
                if key == "gap":
                    k = -(N[n] * rc - nc)
                else:
                    k = nc / rc if rc > 0 else INF
                if arg is None or k < best:
                    best, arg = k, c
            n = arg
        return self.leaf_of[n]

    def select_dtracking(self) -> int:
        """Classical D-tracking: w* from a full pass over every leaf, O(#leaves)."""
        counts = self.leaf_counts()
        K, t = len(counts), self.t
        under = counts < math.sqrt(t) - K / 2
        if under.any():
            self.forced += 1
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


RULES = ("ratio", "ratio_global", "ratio_scan", "ratio_quotient", "dtracking", "uniform")


def selector(st: State, rule: str):
    """The sampling rule `rule` of state `st` as a function of no argument returning a leaf."""
    K = st.tree.n_leaves
    select = {"ratio": st.select_ratio, "ratio_global": lambda: st.select_ratio("global"),
              "ratio_scan": st.select_ratio_scan, "ratio_quotient": lambda: st.select_ratio("node", "quotient"),
              "dtracking": st.select_dtracking,
              "uniform": lambda: st.t % K}.get(rule)
    if select is None:
        raise ValueError(f"config key 'threshold_mcts.algorithms': unknown sampling rule {rule!r} ({', '.join(RULES)})")
    return select


def track_and_stop(tree: T.Tree, mu, family, theta: float, delta: float, rng: np.random.Generator,
                   rule: str = "ratio", beta_kind: str = "practical", max_samples: int = 10 ** 6,
                   sigma: float = 1.0) -> dict:
    """One run: sample by `rule` (see RULES) until the GLR exceeds beta(t, delta)."""
    src = RewardSource(mu, family, rng, sigma)
    st = State(tree, theta, family, sigma)
    st.initialise(src.draw_all())
    K = tree.n_leaves
    select = selector(st, rule)
    while st.glr[0] <= beta(st.t, delta, beta_kind, K) and st.t < max_samples:
        leaf = select()
        st.add(leaf, src.draw(leaf))
    return {"answer": st.answer(), "samples": st.t, "truncated": st.t >= max_samples, "forced": st.forced}
