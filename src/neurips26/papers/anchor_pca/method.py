"""Anchor PCA: PCA on a modified target matrix that trades pooled explained variance against
agreement of the shared embedding's variance across domains.

With per-domain covariances S_e (each domain centred by its own mean), weights w_e = n_e / n,
pooled covariance S = sum_e w_e S_e and heterogeneity matrix H = sum_e w_e |S_e - S| (|A| the
matrix absolute value, PSD), Anchor PCA with tuning parameter gamma >= 0 solves

    max_{V in R^{p x k}, V^T V = I}  tr(V^T S V) - gamma * tr(V^T H V)  =  tr(V^T (S - gamma H) V),

i.e. PCA (top-k eigenvectors) of the target S - gamma H. Since |tr(V^T (S_e - S) V)| <=
tr(V^T |S_e - S| V), the penalty bounds the average disagreement between the variance the shared
embedding V^T x has in each domain and its pooled variance. gamma = 0 is pooled PCA; one domain
gives H = 0, i.e. plain PCA; as gamma grows the solution is pushed into the null space of H,
{v : S_e v = S v for all e}, the maximal subspace on which every domain acts the same. It is a
maximin problem: tr(V^T (S - gamma H) V) = min over -gamma H <= D <= gamma H of tr(V^T (S + D) V),
the worst explained variance over unseen covariances whose deviation from the pool is bounded by
gamma times the observed heterogeneity (and by the reconstruction identity, the worst-case
reconstruction error tr(S + D) - tr(V^T (S + D) V) up to the constant trace).
"""

from __future__ import annotations

import numpy as np


def domain_covariances(domains: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """Each domain's covariance about its own mean (divided by n_e) and the weights n_e / n."""
    covs = []
    for X in domains:
        Xc = X - X.mean(axis=0, keepdims=True)
        covs.append(Xc.T @ Xc / len(X))
    sizes = np.array([len(X) for X in domains], dtype=float)
    return covs, sizes / sizes.sum()


def matrix_abs(A: np.ndarray) -> np.ndarray:
    lam, V = np.linalg.eigh(0.5 * (A + A.T))
    return (V * np.abs(lam)) @ V.T


def pooled_covariance(covs: list[np.ndarray], weights: np.ndarray) -> np.ndarray:
    return sum(w * S for w, S in zip(weights, covs))


def heterogeneity(covs: list[np.ndarray], weights: np.ndarray) -> np.ndarray:
    """H = sum_e w_e |S_e - S|."""
    pooled = pooled_covariance(covs, weights)
    return sum(w * matrix_abs(S - pooled) for w, S in zip(weights, covs))


def anchor_target(covs: list[np.ndarray], weights: np.ndarray, gamma: float) -> np.ndarray:
    return pooled_covariance(covs, weights) - gamma * heterogeneity(covs, weights)


def top_eigenvectors(M: np.ndarray, k: int) -> np.ndarray:
    """Orthonormal eigenvectors of the k largest eigenvalues, signs fixed (largest entry > 0)."""
    lam, V = np.linalg.eigh(0.5 * (M + M.T))
    V = V[:, np.argsort(lam)[::-1][:k]]
    signs = np.sign(V[np.abs(V).argmax(axis=0), np.arange(k)])
    return V * np.where(signs == 0, 1.0, signs)


def anchor_pca(covs: list[np.ndarray], weights: np.ndarray, k: int, gamma: float) -> np.ndarray:
    """The Anchor PCA loadings V (p x k): top-k eigenvectors of S - gamma H."""
    return top_eigenvectors(anchor_target(covs, weights, gamma), k)


def anchor_objective(V: np.ndarray, covs: list[np.ndarray], weights: np.ndarray, gamma: float) -> float:
    return float(np.trace(V.T @ anchor_target(covs, weights, gamma) @ V))


def explained_fraction(V: np.ndarray, cov: np.ndarray) -> float:
    """Share of a domain's total variance the subspace spanned by V explains."""
    return float(np.trace(V.T @ cov @ V) / np.trace(cov))


def largest_principal_angle(A: np.ndarray, B: np.ndarray) -> float:
    """Largest principal angle between span(A) and span(B), in degrees."""
    Qa, _ = np.linalg.qr(A)
    Qb, _ = np.linalg.qr(B)
    s = np.linalg.svd(Qa.T @ Qb, compute_uv=False)
    return float(np.degrees(np.arccos(np.clip(s.min(), -1.0, 1.0))))


def validate_gamma(domains: list[np.ndarray], k: int, gammas: list[float],
                   criterion: str = "worst") -> tuple[float, list[float]]:
    """gamma by held-out-domain validation inside the training domains: for each gamma, fit
    Anchor PCA on all training domains but one and score the explained-variance share of the
    left-out domain; the score is the worst (criterion="worst", the minimax reading: the share an
    unseen domain is guaranteed) or the mean (criterion="mean") over the left-out domains.
    Returns (the gamma of the best score, smallest gamma on ties, and the scores). With two
    training domains each fit sees one domain (H = 0), every gamma scores the same and
    gamma = min(gammas) is returned."""
    if criterion not in ("worst", "mean"):
        raise ValueError(f"config key 'anchor_pca.validation': 'worst' or 'mean', got {criterion!r}")
    reduce = np.min if criterion == "worst" else np.mean
    covs, _ = domain_covariances(domains)
    scores = []
    for g in gammas:
        fold = []
        for e in range(len(domains)):
            rest = [X for i, X in enumerate(domains) if i != e]
            c, w = domain_covariances(rest)
            fold.append(explained_fraction(anchor_pca(c, w, k, g), covs[e]))
        scores.append(float(reduce(fold)))
    best = max(scores)
    order = np.argsort(gammas, kind="stable")
    chosen = next(gammas[i] for i in order if scores[i] >= best - 1e-12)
    return float(chosen), scores


def tune_gamma(domains: list[np.ndarray], k: int, gammas: list[float], criterion: str = "worst",
               extensions: int = 3) -> tuple[float, list[float], list[float], int]:
    """`validate_gamma` under the tuning protocol: while the chosen gamma is the grid's largest, the
    grid grows by one step of its own top spacing (ratio of its two largest values), up to
    `extensions` steps. gamma = 0 (pooled PCA) is the grid's natural lower end and is never
    extended past. Returns (chosen, grid, scores, extensions used)."""
    grid = sorted(float(g) for g in gammas)
    used = 0
    while True:
        chosen, scores = validate_gamma(domains, k, grid, criterion)
        if chosen == grid[-1] and used < extensions and len(grid) >= 2 and grid[-2] > 0:
            grid.append(float(f"{grid[-1] * grid[-1] / grid[-2]:.6g}"))
            used += 1
            continue
        return chosen, grid, scores, used
