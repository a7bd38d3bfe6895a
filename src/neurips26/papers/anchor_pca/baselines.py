"""Baselines of Anchor PCA: pooled PCA and worst-case (maximin) PCA.

Pooled PCA: top-k eigenvectors of the pooled covariance S = sum_e w_e S_e (domains centred by
their own means), the same as PCA of the concatenated, domain-centred data.
Maximin PCA: max over k-dimensional subspaces of min_e tr(V^T S_e V) / tr(S_e), the worst
explained-variance share over the training domains. Its convex relaxation over the Fantope
{F : 0 <= F <= I, tr F = k} is a zero-sum game, max_F min_{w in simplex} sum_e w_e <F, S_e/tr S_e>,
solved by exponentiated-gradient descent for w against exact best responses F (the top-k
projector of sum_e w_e S_e / tr S_e); the average best response approximates the optimal F,
which is rounded to its top-k eigenvectors.
"""

from __future__ import annotations

import numpy as np

from .method import pooled_covariance, top_eigenvectors


def pooled_pca(covs: list[np.ndarray], weights: np.ndarray, k: int) -> np.ndarray:
    return top_eigenvectors(pooled_covariance(covs, weights), k)


def maximin_pca(covs: list[np.ndarray], k: int, iterations: int = 2000) -> tuple[np.ndarray, dict]:
    """Loadings V (p x k) of maximin PCA and diagnostics: the relaxed value min_e <F_bar, S_e~>,
    the dual bound min_t KyFan_k(S_w_t) (the game value lies between them) and final weights."""
    normalised = [S / np.trace(S) for S in covs]
    E, p = len(covs), covs[0].shape[0]
    w = np.full(E, 1.0 / E)
    step = np.sqrt(8.0 * np.log(max(E, 2)) / iterations)
    F_sum = np.zeros((p, p))
    dual = np.inf
    for _ in range(iterations):
        mix = sum(we * S for we, S in zip(w, normalised))
        lam, U = np.linalg.eigh(mix)
        top = U[:, np.argsort(lam)[::-1][:k]]
        dual = min(dual, float(np.sort(lam)[::-1][:k].sum()))
        F = top @ top.T
        F_sum += F
        gains = np.array([np.sum(F * S) for S in normalised])
        w = w * np.exp(-step * gains)
        w /= w.sum()
    F_bar = F_sum / iterations
    primal = min(float(np.sum(F_bar * S)) for S in normalised)
    return top_eigenvectors(F_bar, k), {"relaxed_value": primal, "dual_bound": dual, "weights": w.tolist()}


def held_out_domain_scores(domains: list[np.ndarray], k: int, maximin_iterations: int) -> dict:
    """The validation the strongest baseline is named by: pooled and maximin PCA fitted on all
    training domains but one, scored by the explained-variance share of the left-out domain; per
    baseline the mean and the worst over the left-out domains (the unseen domains play no part)."""
    from .method import domain_covariances, explained_fraction

    covs, _ = domain_covariances(domains)
    folds = {"pooled": [], "maximin": []}
    for e in range(len(domains)):
        rest = [X for i, X in enumerate(domains) if i != e]
        c, w = domain_covariances(rest)
        folds["pooled"].append(explained_fraction(pooled_pca(c, w, k), covs[e]))
        folds["maximin"].append(explained_fraction(maximin_pca(c, k, iterations=maximin_iterations)[0], covs[e]))
    return {b: {"mean": float(np.mean(v)), "worst": float(np.min(v))} for b, v in folds.items()}
