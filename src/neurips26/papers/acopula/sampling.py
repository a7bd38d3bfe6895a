"""Sampling nested Archimedean copulas with Marshall-Olkin frailties (McNeil 2008).

Root frailty V_0 ~ F_0 (Laplace transform psi_0); a child node v of parent p draws
V_v with Laplace transform exp(-V_p * psi_p^{-1}(psi_v(t))) (requires the nesting
condition, checked); a leaf under node v is psi_v(E / V_v) with E ~ Exp(1).
"""

from __future__ import annotations

import numpy as np
import torch

from .method import Node, check_tree


def sample(root: Node, gens, n: int, rng: np.random.Generator) -> np.ndarray:
    check_tree(root, gens)
    d = len(root.leaves())
    u = np.empty((n, d))

    def visit(node: Node, v: np.ndarray):
        g = gens[id(node)]
        for c in node.children:
            if isinstance(c, int):
                e = rng.exponential(1.0, n)
                with torch.no_grad():
                    u[:, c] = g.psi(torch.as_tensor(e / v)).numpy()
            else:
                visit(c, g.sample_inner_frailty(gens[id(c)], v, rng))

    visit(root, np.asarray(gens[id(root)].sample_frailty(n, rng), dtype=float))
    return np.clip(u, 1e-12, 1 - 1e-12)


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import kendalltau

    return float(kendalltau(x, y).statistic)
