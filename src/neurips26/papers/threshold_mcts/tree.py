"""MAX/MIN trees, leaf divergences, the characteristic time T* and its optimal weights.

A tree's root value is the MAX/MIN recursion over its leaves' means mu. For the question
"is the root value >= theta?", an alternative lambda is a leaf vector whose root value lies on
the other side. Since the root's side only depends on which leaves are >= theta (a monotone
boolean formula), the cheapest alternative moves a set of leaves to theta, and

    inf_{lambda in Alt(mu)} sum_i w_i d(mu_i, lambda_i) = F_root(w),

with F_leaf = w_i d(mu_i, theta), and at an internal node n (side a_n = [V_n >= theta]):
    "agree" (MAX above or MIN below): every child on n's side must flip -> F_n = sum_{c same side} F_c
    "disagree" (MAX below or MIN above): one child flipping suffices  -> F_n = min_c F_c.
Each F_c is concave and 1-homogeneous, so with c_n = min weight needed for F_n >= 1,
    c_leaf = 1 / d(mu_i, theta),   c_n = min_{c same side} c_c (agree),   c_n = sum_c c_c (disagree),
T*(mu) = c_root, and w* follows the recursion down: an agree node hands all of its weight to its
cheapest same-side child, a disagree node splits it in proportion c_c / c_n. The GLR statistic
is the same F_root with w = N (counts) at the empirical means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

GAUSSIAN, BERNOULLI = 0, 1
FAMILIES = {"gaussian": GAUSSIAN, "bernoulli": BERNOULLI}
_EPS = 1e-12


def kl_bernoulli(p, q):
    p = np.clip(p, _EPS, 1 - _EPS)
    q = np.clip(q, _EPS, 1 - _EPS)
    return p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))


def divergence(mu, theta, family, sigma: float = 1.0):
    """d(mu, theta): Gaussian (known variance sigma^2) or Bernoulli KL, elementwise."""
    mu = np.asarray(mu, dtype=float)
    family = np.broadcast_to(np.asarray(family), mu.shape)
    gauss = (mu - theta) ** 2 / (2 * sigma ** 2)
    return np.where(family == GAUSSIAN, gauss, kl_bernoulli(mu, theta))


def divergence_scalar(mu: float, theta: float, family: int, sigma: float = 1.0) -> float:
    if family == GAUSSIAN:
        return (mu - theta) ** 2 / (2 * sigma * sigma)
    p = min(max(mu, _EPS), 1 - _EPS)
    q = min(max(theta, _EPS), 1 - _EPS)
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


@dataclass
class Tree:
    """A tree in breadth-first order: the children of node n are first_child[n] ... + n_children[n] - 1,
    so every depth level is a contiguous block and its children form the next block in order."""

    is_max: np.ndarray        # bool per node (ignored at leaves)
    n_children: np.ndarray    # int per node, 0 at leaves
    first_child: np.ndarray   # int per node, -1 at leaves
    parent: np.ndarray        # int per node, -1 at the root
    depth: np.ndarray
    leaf_nodes: np.ndarray    # node index of leaf i
    leaf_of: np.ndarray       # leaf index of node n, -1 at internal nodes
    levels: list = field(default_factory=list)  # (start, stop) node range per depth

    @property
    def n_nodes(self) -> int:
        return len(self.is_max)

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_nodes)

    def children(self, n: int) -> range:
        return range(self.first_child[n], self.first_child[n] + self.n_children[n])

    def path_to_root(self, node: int) -> list[int]:
        out = []
        while node >= 0:
            out.append(int(node))
            node = self.parent[node]
        return out


def from_nested(spec, root_is_max: bool = True) -> Tree:
    """Build a tree from nested lists: a list is an internal node, anything else a leaf; labels
    alternate MAX/MIN by depth starting with `root_is_max`. Leaves are numbered in BFS order."""
    nodes = [(spec, 0, -1)]
    is_max, n_children, first_child, parent, depth = [], [], [], [], []
    i = 0
    while i < len(nodes):
        item, d, par = nodes[i]
        parent.append(par)
        depth.append(d)
        is_max.append(root_is_max if d % 2 == 0 else not root_is_max)
        if isinstance(item, (list, tuple)):
            if not item:
                raise ValueError("tree spec: an internal node needs at least one child")
            first_child.append(len(nodes))
            n_children.append(len(item))
            nodes.extend((c, d + 1, i) for c in item)
        else:
            first_child.append(-1)
            n_children.append(0)
        i += 1
    return _finish(is_max, n_children, first_child, parent, depth)


def regular(branching: int, depth: int, root_is_max: bool = True) -> Tree:
    """Complete tree: `branching` children per internal node, leaves at `depth` (alternating MAX/MIN)."""
    spec: object = 0
    for _ in range(depth):
        spec = [spec] * branching
    return from_nested(spec, root_is_max)


def _finish(is_max, n_children, first_child, parent, depth) -> Tree:
    is_max = np.asarray(is_max, dtype=bool)
    n_children = np.asarray(n_children, dtype=np.int64)
    depth = np.asarray(depth, dtype=np.int64)
    leaf_nodes = np.flatnonzero(n_children == 0)
    leaf_of = -np.ones(len(is_max), dtype=np.int64)
    leaf_of[leaf_nodes] = np.arange(len(leaf_nodes))
    levels = []
    for d in range(int(depth.max()) + 1):
        idx = np.flatnonzero(depth == d)
        levels.append((int(idx[0]), int(idx[-1]) + 1))
    return Tree(is_max, n_children, np.asarray(first_child, dtype=np.int64), np.asarray(parent, dtype=np.int64),
                depth, leaf_nodes, leaf_of, levels)


def tree_value(tree: Tree, leaf_values) -> np.ndarray:
    """Value of every node (MAX/MIN recursion), vectorised level by level."""
    val = np.zeros(tree.n_nodes)
    val[tree.leaf_nodes] = leaf_values
    for d in range(len(tree.levels) - 2, -1, -1):
        _pass_level(tree, d, val, None, None, None)
    return val


def _pass_level(tree: Tree, d: int, val, glr, cost, theta):
    """Recompute the internal nodes of level d from level d+1 (values; and GLR / cost when given)."""
    start, stop = tree.levels[d]
    cstart, cstop = tree.levels[d + 1]
    nodes = np.arange(start, stop)
    internal = nodes[tree.n_children[start:stop] > 0]
    if len(internal) == 0:
        return None
    offs = tree.first_child[internal] - cstart
    counts = tree.n_children[internal]
    vch = val[cstart:cstop]
    vmax = np.maximum.reduceat(vch, offs)
    vmin = np.minimum.reduceat(vch, offs)
    ismax = tree.is_max[internal]
    V = np.where(ismax, vmax, vmin)
    val[internal] = V
    if theta is None:
        return None
    above = V >= theta
    agree = ismax == above
    same = (vch >= theta) == np.repeat(above, counts)
    gch, cch = glr[cstart:cstop], cost[cstart:cstop]
    glr[internal] = np.where(agree, np.add.reduceat(np.where(same, gch, 0.0), offs), np.minimum.reduceat(gch, offs))
    cmin = np.minimum.reduceat(np.where(same, cch, np.inf), offs)
    with np.errstate(invalid="ignore"):
        csum = np.add.reduceat(cch, offs)
    cost[internal] = np.where(agree, cmin, csum)
    return internal, offs, counts, agree, same, cmin, csum


@dataclass
class Solution:
    values: np.ndarray    # node values
    glr: np.ndarray       # F_n at the given weights
    cost: np.ndarray      # c_n (T* of the subtree), inf when some leaf sits at theta
    weights: np.ndarray   # optimal leaf weights w*
    above: bool           # root value >= theta

    @property
    def t_star(self) -> float:
        return float(self.cost[0])


def solve(tree: Tree, mu, theta: float, family, counts=None, sigma: float = 1.0) -> Solution:
    """One full pass (O(#leaves), vectorised): node values, F at `counts` (the GLR when mu are
    empirical means and counts the sample counts), the characteristic time and w*."""
    mu = np.asarray(mu, dtype=float)
    d_leaf = divergence(mu, theta, family, sigma)
    n = tree.n_nodes
    val, glr, cost = np.zeros(n), np.zeros(n), np.zeros(n)
    val[tree.leaf_nodes] = mu
    glr[tree.leaf_nodes] = (np.ones_like(mu) if counts is None else np.asarray(counts, float)) * d_leaf
    with np.errstate(divide="ignore"):
        cost[tree.leaf_nodes] = np.where(d_leaf > 0, 1.0 / np.maximum(d_leaf, 1e-300), np.inf)
    cache = {}
    for d in range(len(tree.levels) - 2, -1, -1):
        cache[d] = _pass_level(tree, d, val, glr, cost, theta)
    w = np.zeros(n)
    w[0] = 1.0
    for d in range(len(tree.levels) - 1):
        if cache[d] is None:
            continue
        internal, offs, counts_, agree, same, cmin, csum = cache[d]
        cstart, cstop = tree.levels[d + 1]
        w[cstart:cstop] = np.repeat(w[internal], counts_) * _child_ratios(cost[cstart:cstop], offs, counts_,
                                                                           agree, same, cmin, csum)
    return Solution(val, glr, cost, w[tree.leaf_nodes], bool(val[0] >= theta))


def _child_ratios(cch, offs, counts, agree, same, cmin, csum):
    """The optimal share r_c of each child inside its parent (see the module docstring)."""
    agree_r = np.repeat(agree, counts)
    pick = same & (cch == np.repeat(cmin, counts)) & np.isfinite(cch)
    n_pick = np.repeat(np.add.reduceat(pick.astype(float), offs), counts)
    # an agree node whose same-side children all have infinite cost: share them equally
    inf_same = same & ~np.isfinite(cch)
    n_inf_same = np.repeat(np.add.reduceat(inf_same.astype(float), offs), counts)
    r_agree = np.where(n_pick > 0, pick / np.maximum(n_pick, 1), inf_same / np.maximum(n_inf_same, 1))
    cs = np.repeat(csum, counts)
    inf_child = ~np.isfinite(cch)
    n_inf = np.repeat(np.add.reduceat(inf_child.astype(float), offs), counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        r_dis = np.where(np.isfinite(cs), cch / np.where(cs > 0, cs, 1.0), inf_child / np.maximum(n_inf, 1))
    return np.where(agree_r, r_agree, r_dis)


def characteristic_time(tree: Tree, mu, theta: float, family, sigma: float = 1.0) -> tuple[float, np.ndarray]:
    """T*(mu) and the optimal weights w* (leaf order)."""
    sol = solve(tree, mu, theta, family, sigma=sigma)
    return sol.t_star, sol.weights
