"""Contrastive excess risk and downstream retrieval error, exact on a discrete joint.

Population InfoNCE (the many-negatives limit), direction x -> y:
    L(s) = -E_p[s(x, y)] + E_{p_X} log E_{p_Y} exp s(x, y),
minimised by s = PMI + c(x); its excess risk is E_{p_X} KL(p(.|x) || q_s(.|x)) with
q_s(y|x) proportional to p_Y(y) exp s(x, y). The symmetric loss averages both directions.

Retrieval with K candidates: given x, one positive y+ ~ p(.|x) and K - 1 negatives from p_Y;
the candidate with the highest score is returned (ties broken at random). The Bayes rule ranks
by PMI. With F = P_{y-}(s(x, y-) < s(x, y+)) and E = P_{y-}(s(x, y-) = s(x, y+)), the positive
wins with probability ((F + E)^K - F^K) / (K E): an exact error, no sampling.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from .pmi import DiscreteJoint


def infonce_excess_risk(joint: DiscreteJoint, score: np.ndarray, direction: str = "xy") -> float:
    """E_x KL(p(.|x) || q_s(.|x)) for 'xy', the mirror for 'yx', their mean for 'sym'."""
    if direction == "sym":
        return 0.5 * (infonce_excess_risk(joint, score, "xy") + infonce_excess_risk(joint, score, "yx"))
    if direction == "yx":
        return infonce_excess_risk(DiscreteJoint(joint.joint.T), score.T, "xy")
    cond = joint.joint / joint.px[:, None]
    log_q = np.log(joint.py)[None, :] + score
    log_q = log_q - logsumexp(log_q, axis=1, keepdims=True)
    kl = (cond * (np.log(cond) - log_q)).sum(1)
    return float(joint.px @ kl)


def infonce_risk(joint: DiscreteJoint, score: np.ndarray) -> float:
    """The symmetric population InfoNCE loss itself (its minimum is -I(X; Y))."""
    fit = -(joint.joint * score).sum()
    row = joint.px @ logsumexp(score + np.log(joint.py)[None, :], axis=1)
    col = joint.py @ logsumexp(score + np.log(joint.px)[:, None], axis=0)
    return float(fit + 0.5 * (row + col))


def retrieval_error(joint: DiscreteJoint, score: np.ndarray, candidates: int, tol: float = 1e-9) -> float:
    """Exact x -> y retrieval error among `candidates` candidates (ties broken at random)."""
    k = int(candidates)
    win = 0.0
    for i in range(joint.n[0]):
        s = score[i]
        gap = s[None, :] - s[:, None]  # gap[j, l] = s_l - s_j
        below = (joint.py[None, :] * (gap < -tol)).sum(1)
        tied = (joint.py[None, :] * (np.abs(gap) <= tol)).sum(1)
        p_win = ((below + tied) ** k - below ** k) / (k * tied)
        win += joint.joint[i] @ p_win
    return float(1.0 - win)


def retrieval_error_bruteforce(joint: DiscreteJoint, score: np.ndarray, candidates: int) -> float:
    """The same by enumerating every candidate tuple (tiny n only; for tests)."""
    import itertools

    n_x, n_y = joint.n
    k = int(candidates)
    win = 0.0
    for i in range(n_x):
        for j in range(n_y):
            for negs in itertools.product(range(n_y), repeat=k - 1):
                prob = joint.joint[i, j] * np.prod(joint.py[list(negs)])
                scores = np.array([score[i, j]] + [score[i, l] for l in negs])
                best = scores.max()
                ties = np.isclose(scores, best, rtol=0, atol=1e-9)
                win += prob * (ties[0] / ties.sum())
    return float(1.0 - win)


def ranking_margins(joint: DiscreteJoint) -> tuple[np.ndarray, np.ndarray]:
    """The Bayes ranking's margins |PMI(x, y+) - PMI(x, y-)| over x ~ p_X, y+ ~ p(.|x), y- ~ p_Y,
    with their probabilities (pairs with y+ = y- left out): the law behind the density-ratio
    Tsybakov noise condition P(|margin| <= t) <= C t^alpha."""
    pmi = joint.pmi()
    gaps = np.abs(pmi[:, :, None] - pmi[:, None, :])                     # [x, y+, y-]
    weights = joint.joint[:, :, None] * joint.py[None, None, :]
    keep = ~np.eye(joint.n[1], dtype=bool)[None, :, :].repeat(joint.n[0], 0)
    return gaps[keep], weights[keep]


def tsybakov_exponent(joint: DiscreteJoint, quantiles: tuple[float, float] = (0.02, 0.3), points: int = 12) -> dict:
    """alpha in P(0 < |margin| <= t) ~ t^alpha: least-squares slope of log P(|margin| <= t) on log t
    over t between the two quantiles of the margin law (its lower tail, where the condition bites).
    Also returns the margin mass at 0 (exact ties, which no score can order) and the curve.

    alpha is None, with the reason in `degenerate`, where the condition is degenerate and a slope
    would be an artefact: the nonzero margins have no lower tail (the two quantiles coincide: a hard
    margin, for which the condition holds with every alpha), or the window holds fewer distinct
    margins than the fit has points (an atomic law, whose cdf is a few steps there)."""
    gaps, weights = ranking_margins(joint)
    order = np.argsort(gaps)
    gaps, weights = gaps[order], weights[order]
    cdf = np.cumsum(weights) / weights.sum()
    zero = 1e-9 * max(1.0, gaps[-1])
    tied = float(weights[gaps <= zero].sum() / weights.sum())
    lo = gaps[np.searchsorted(cdf, tied + max(quantiles[0], 1e-9))]
    hi = gaps[min(len(gaps) - 1, np.searchsorted(cdf, tied + quantiles[1]))]
    window = gaps[(gaps >= lo) & (gaps <= hi)]
    atoms = int(len(np.unique(np.round(window / zero)))) if len(window) else 0
    smallest = float(gaps[gaps > zero].min()) if (gaps > zero).any() else float("nan")
    base = {"alpha": None, "degenerate": "", "tied_mass": tied, "smallest_margin": smallest, "atoms": atoms,
            "t": [], "mass": []}
    if hi <= lo * (1 + 1e-6):
        return {**base, "degenerate": f"hard margin: the nonzero margins' lower tail is one value, {lo:.3g}"}
    if atoms < points:
        return {**base, "degenerate": (f"atomic margin law: {atoms} distinct margins between its {quantiles[0]:g} and "
                                       f"{quantiles[1]:g} quantiles, fewer than the {points} points of the fit; "
                                       f"the nonzero margins are >= {smallest:.3g} (a hard margin)")}
    ts = np.geomspace(max(lo, 1e-12), max(hi, 2e-12), points)
    mass = np.array([weights[gaps <= t].sum() / weights.sum() for t in ts]) - tied
    ok = mass > 0
    alpha = float(np.polyfit(np.log(ts[ok]), np.log(mass[ok]), 1)[0]) if ok.sum() >= 3 else float("nan")
    return {**base, "alpha": alpha, "t": ts.tolist(), "mass": mass.tolist()}
