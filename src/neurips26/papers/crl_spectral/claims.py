"""Claims rows of crl_spectral from the evaluate step's metrics.

`summary` = {"discrete": metrics["discrete"] (per kernel: dims, tail, tail_next, norm, rank and,
per method, "error" / "retrieval_excess" as [per D][per seed]), "continuous": metrics["continuous"]
(rank, singular values, norm, fits keyed "<loss>_w<width>_d<dim>" with per-seed "relative_error"),
"calibration_exponent": [per seed], "slow_rate_exponent": float, "min_tail": float, "candidates": int,
"tsybakov_alpha": {joint: alpha}}; discrete[k]["infonce"]["error_earlier"] is the error one doubling of
L-BFGS iterations before the end.
"""

from __future__ import annotations

import math

import numpy as np

from neurips26.core import claims

PAPER = "crl_spectral"
METHODS = ("infonce", "spectral", "truncated_svd")
# Eckart-Young-Schmidt sandwich, relative to ||PMI||: float64 round-off only.
SANDWICH_TOL = 1e-6
# "Fitted exactly": relative PMI error at D >= rank after the configured L-BFGS iterations.
EXACT_FIT_TOL = 1e-2
# "Error controlled by the tail": error <= C tail_D with C at most this. A score that does not
# follow the tail reaches ||PMI|| / tail_D, over 40 at the largest D counted here.
TAIL_CONSTANT_MAX = 5.0
# "Converged": the InfoNCE error changes by at most this fraction over the last chunk of iterations.
CONVERGED_TOL = 1e-3
# Minimum effects in the metrics' units.
RETRIEVAL_MIN_EFFECT = 0.01       # one point of excess retrieval error (K candidates)
RELATIVE_ERROR_MIN_EFFECT = 0.05  # 5% of ||PMI||
HOLDS_JOINTS = "the discrete joints (seeds vary the tables' random initialisation only)"


def _mean_interval(values: list[float]) -> tuple[float, tuple[float, float] | None]:
    vals = [v for v in values if not math.isnan(v)]
    if len(vals) < 2:
        return (vals[0] if vals else float("nan")), None
    mean, lo, hi = claims.paired_t_interval(vals)
    return mean, (lo, hi)


def _sandwich_violation(summary: dict) -> tuple[float, int]:
    """Largest breach, relative to ||PMI||, of tail_{D+1} <= error (every D-dimensional score plus
    a constant) and of error <= tail_D (the truncated SVD), over kernels, D, methods and seeds."""
    worst, count = 0.0, 0
    for e in summary["discrete"].values():
        for i, _ in enumerate(e["dims"]):
            for method in METHODS:
                for err in e[method]["error"][i]:
                    worst = max(worst, (e["tail_next"][i] - err) / e["norm"])
                    count += 1
            for err in e["truncated_svd"]["error"][i]:
                worst = max(worst, (err - e["tail"][i]) / e["norm"])
    return worst, count


def _tail_constant(summary: dict, seed: int) -> float:
    """max over kernels and D (tail_D above min_tail * ||PMI||) of the InfoNCE error / tail_D."""
    ratios = [e["infonce"]["error"][i][seed] / t for e in summary["discrete"].values()
              for i, t in enumerate(e["tail"]) if t > summary["min_tail"] * e["norm"]]
    return max(ratios) if ratios else float("nan")


def claim_rows(summary: dict, scale: str) -> list[dict]:
    discrete, cont = summary["discrete"], summary["continuous"]
    kernels = list(discrete)
    n_seeds = len(discrete[kernels[0]]["infonce"]["error"][0])
    rows = []

    violation, count = _sandwich_violation(summary)
    rows.append(claims.check(
        PAPER, "D-dimensional inner-product scores are rank-D spectral approximations: error in [tail_{D+1}, tail_D]",
        "largest breach of tail_{D+1} <= error (all three fits) and of error <= tail_D (truncated SVD), / ||PMI||",
        "InfoNCE, spectral, truncated SVD tables", violation, SANDWICH_TOL, scale, "error_vs_dim.png",
        reference="Eckart-Young-Schmidt", n=count, digits=2,
        how=f"{len(kernels)} joints x every D x {n_seeds} seeds; 0 when no bound is breached"))

    worst_ratio = max(_tail_constant(summary, s) for s in range(n_seeds))
    rows.append(claims.check(
        PAPER, "the InfoNCE fit's PMI error is controlled by the spectral tail at every D (error_D <= C tail_D, C fixed)",
        "max over seeds, joints and D of InfoNCE error_D / tail_D (D with tail_D > "
        f"{summary['min_tail']:g} ||PMI||)", "InfoNCE tables", worst_ratio, TAIL_CONSTANT_MAX, scale,
        "tail_ratio.png", reference=f"C = {TAIL_CONSTANT_MAX:g}, fixed before the run", n=n_seeds, digits=3,
        how=f"every D separately, {n_seeds} seeds; seeds hold fixed {HOLDS_JOINTS}"))

    drift = max(abs(err - early) / max(err, 1e-12) for e in discrete.values()
                for i, t in enumerate(e["tail"]) if t > summary["min_tail"] * e["norm"]
                for err, early in zip(e["infonce"]["error"][i], e["infonce"]["error_earlier"][i]))
    rows.append(claims.check(
        PAPER, "the InfoNCE fits are converged: the per-D ratios are approximation, not optimisation, error",
        "max relative change of the InfoNCE error over the last chunk of L-BFGS iterations", "InfoNCE tables",
        drift, CONVERGED_TOL, scale, "tail_ratio.png", reference="0 (converged)", n=n_seeds, digits=2))

    gap = max(max(e["spectral_gap_to_closed_form"]) for e in discrete.values())
    rows.append(claims.check(
        PAPER, "the spectral contrastive tables reach their own target (rank-D truncation of the density ratio)",
        "max excess spectral loss over its rank-D optimum, / ||p / (p_X p_Y)||^2, over joints, D and seeds",
        "spectral contrastive tables", gap, EXACT_FIT_TOL, scale, "error_vs_dim.png",
        reference="weighted truncated SVD of p / (p_X p_Y)", n=n_seeds, digits=2))

    for name, e in discrete.items():
        exact = [i for i, dim in enumerate(e["dims"]) if dim >= e["rank"]]
        if not exact:
            continue
        worst = max(err / e["norm"] for i in exact for err in e["infonce"]["error"][i])
        rows.append(claims.check(
            PAPER, f"finite-rank PMI ({name.split('_')[0]} joint) is fitted exactly once D reaches its rank",
            "max relative PMI error of the InfoNCE tables at D >= rank", "InfoNCE tables", worst,
            EXACT_FIT_TOL, scale, "error_vs_dim.png", reference="0 (tail_D = 0)", n=len(exact) * n_seeds, digits=2,
            how=f"rank {e['rank']}; D in {[e['dims'][i] for i in exact]} x {n_seeds} seeds"))

    def retrieval(method: str) -> list[float]:
        return [float(np.mean([v[s] for k in kernels for v in discrete[k][method]["retrieval_excess"]]))
                for s in range(n_seeds)]

    rows.append(claims.comparison(
        PAPER, "InfoNCE scores retrieve better than the spectral contrastive loss at the same D",
        f"excess retrieval error over Bayes ({summary['candidates']} candidates, exact), mean over D and joints",
        "InfoNCE tables", retrieval("infonce"), "spectral contrastive tables", retrieval("spectral"),
        higher_is_better=False, scale=scale, figure="error_vs_dim.png", min_effect=RETRIEVAL_MIN_EFFECT,
        holds_fixed=HOLDS_JOINTS))

    fits, rank = cont["fits"], cont["rank"]
    widths = sorted(f["width"] for f in fits.values() if f["loss"] == "infonce" and f["dim"] == rank)
    widest = widths[-1]
    rel = {key: f["relative_error"] for key, f in fits.items()}
    rows.append(claims.comparison(
        PAPER, "moderate-width encoders fit the low-rank Gaussian PMI; the error falls with width",
        "relative PMI error at D = rank, widest vs narrowest encoder",
        "InfoNCE, widest encoder", rel[f"infonce_w{widest}_d{rank}"], "InfoNCE, narrowest encoder",
        rel[f"infonce_w{widths[0]}_d{rank}"], higher_is_better=False, scale=scale, figure="neural.png",
        min_effect=RELATIVE_ERROR_MIN_EFFECT))

    # the largest D below the rank whose best possible error, tail_{D+1}, is clearly above 0
    below = [f["dim"] for f in fits.values() if f["loss"] == "infonce" and f["width"] == widest
             and f["dim"] < rank and f["tail_next"] > summary["min_tail"] * cont["norm"]]
    if below:
        k = max(below)
        rows.append(claims.comparison(
            PAPER, "finite-rank Gaussian PMI: encoders of dimension D = rank fit it better than a smaller D can",
            "relative PMI error, widest encoder, D = rank vs the largest D below it whose best possible error "
            "tail_{D+1} / ||PMI|| is above 0", "InfoNCE, D = rank", rel[f"infonce_w{widest}_d{rank}"],
            "InfoNCE, smaller D", rel[f"infonce_w{widest}_d{k}"], higher_is_better=False, scale=scale,
            figure="neural.png", min_effect=RELATIVE_ERROR_MIN_EFFECT, paper_value="0 for D >= rank"))
    else:
        rows.append(claims.untested(
            PAPER, "finite-rank Gaussian PMI: encoders of dimension D = rank fit it better than a smaller D can",
            "relative PMI error, widest encoder, D = rank vs the largest D below it whose best possible error "
            "tail_{D+1} / ||PMI|| is above 0", "InfoNCE, D = rank",
            "no configured D below the rank has a positive lower bound tail_{D+1}",
            scale, "neural.png"))

    slow = summary["slow_rate_exponent"]
    value, interval = _mean_interval(summary["calibration_exponent"])
    rows.append(claims.target(
        PAPER, "fast calibration from contrastive excess risk to retrieval error (faster than the slow rate)",
        "exponent beta in excess retrieval error ~ (excess InfoNCE risk)^beta, perturbations of the optimum",
        "fitted exponent", value,
        (slow, None), scale, "calibration.png", interval=interval, n=len(summary["calibration_exponent"]),
        paper_value=f"beta > {slow:g} under Tsybakov noise", baseline="slow rate (Pinsker)", baseline_value=f"{slow:g}",
        how=("scores PMI + t ||PMI|| Delta, random centred unit tables Delta drawn per seed, t on a geometric grid; "
             "least-squares slope of log excess retrieval on log excess risk per seed; mean and t interval over "
             f"seeds; seeds hold fixed {HOLDS_JOINTS}; Tsybakov exponents of the joints: "
             + ", ".join(f"{k} " + ("inf (hard margin)" if v is None else f"{v:.2f}")
                         for k, v in summary.get("tsybakov_alpha", {}).items()))))

    rows.append(claims.untested(
        PAPER, "deep network scores are universally consistent, with rates set by the smoothness of PMI",
        "PMI error against sample size and network size", "neural InfoNCE",
        "needs general (not low-rank) PMI and a sweep of sample and network sizes; the experiment fits one "
        "low-rank Gaussian family at one sample size", scale, "neural.png"))
    return rows
