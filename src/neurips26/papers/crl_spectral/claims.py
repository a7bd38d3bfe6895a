"""Claims rows of crl_spectral from the evaluate step's metrics.

`summary` = {"discrete": metrics["discrete"] (per kernel: dims, tail, tail_next, norm, rank and,
per method, "error" / "retrieval_excess" as [per D][per seed]), "continuous": metrics["continuous"]
(rank, singular values, norm, fits keyed "<loss>_w<width>_d<dim>" with per-seed "relative_error"),
"calibration_exponent": [per seed], "calibration_null_exponent": [per seed], "slow_rate_exponent": float,
"min_tail": float, "candidates": int, "max_iterations": int, "tsybakov_alpha": {joint: alpha or None},
"tsybakov_degenerate": {joint: reason}}; discrete[k]["infonce"]["error_earlier"] is the error at the start
of the last chunk of L-BFGS iterations, and "iterations" / "converged" say where and how each fit stopped. The entries, tolerances, margins and controls are declared in
`claims.yaml`, and `core.claims.Sheet` decides. The neural comparisons lean on the regime control
"the widest encoder learns the PMI"; the calibration exponent is a check, because its null (the
spectral contrastive risk, a surrogate without the paper's idea, scored on the same points) passes
the same band.
"""

from __future__ import annotations

import math

import numpy as np

from neurips26.core import claims

PAPER = "crl_spectral"
METHODS = ("infonce", "spectral", "truncated_svd")
# "Error controlled by the tail": error <= C tail_D with C at most this (the tolerance of claims.yaml).
TAIL_CONSTANT_MAX = float(next(e for e in claims.load_spec(PAPER) if e["id"] == "tail_controls_error")["tolerance"])
# the table fits stop when their error changed by at most this share over the last chunk of
# iterations: the tolerance of the check `infonce_converged`, which then reads the stopping state
CONVERGENCE_TOLERANCE = float(next(e for e in claims.load_spec(PAPER) if e["id"] == "infonce_converged")["tolerance"])
HOLDS_JOINTS = "the discrete joints (seeds vary the tables' random initialisation only)"


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


def claim_rows(summary: dict, scale: str, spec=None) -> list[dict]:
    discrete, cont = summary["discrete"], summary["continuous"]
    kernels = list(discrete)
    n_seeds = len(discrete[kernels[0]]["infonce"]["error"][0])
    sheet = claims.Sheet(PAPER, scale, spec)

    violation, count = _sandwich_violation(summary)
    sheet.check("sandwich", violation, n=count, how=f"{len(kernels)} joints x every D x {n_seeds} seeds; 0 when no bound is breached")

    worst_ratio = max(_tail_constant(summary, s) for s in range(n_seeds))
    sheet.check("tail_controls_error", worst_ratio, n=n_seeds,
                how=f"every D separately (tail_D > {summary['min_tail']:g} ||PMI||), {n_seeds} seeds; seeds hold fixed {HOLDS_JOINTS}")

    counted = [(err, early) for e in discrete.values() for i, t in enumerate(e["tail"]) if t > summary["min_tail"] * e["norm"]
               for err, early in zip(e["infonce"]["error"][i], e["infonce"]["error_earlier"][i])]
    drift = max(abs(err - early) / max(err, 1e-12) for err, early in counted)
    fits = [(its, ok) for e in discrete.values() for its_d, ok_d in zip(e["infonce"].get("iterations", []),
                                                                       e["infonce"].get("converged", []))
            for its, ok in zip(its_d, ok_d)]
    stop = (f"; stopping rule: relative change <= {CONVERGENCE_TOLERANCE:g} over a chunk, cap "
            f"{summary.get('max_iterations', '?')} iterations; {sum(ok for _, ok in fits)} of {len(fits)} InfoNCE fits "
            f"stopped on the rule, {sum(not ok for _, ok in fits)} at the cap; most iterations "
            f"{max(its for its, _ in fits)}") if fits else ""
    sheet.check("infonce_converged", drift, n=n_seeds,
                how=f"{len(counted)} fits counted (D with tail_D > {summary['min_tail']:g} ||PMI||, every seed){stop}")

    gap = max(max(e["spectral_gap_to_closed_form"]) for e in discrete.values())
    sheet.check("spectral_own_target", gap, n=n_seeds)

    exact = {name: [i for i, dim in enumerate(e["dims"]) if dim >= e["rank"]] for name, e in discrete.items()}
    exact = {name: idx for name, idx in exact.items() if idx}
    if exact:
        worst = max(err / discrete[k]["norm"] for k, idx in exact.items() for i in idx
                    for err in discrete[k]["infonce"]["error"][i])
        sheet.check("exact_fit_finite_rank", worst, n=sum(len(i) for i in exact.values()) * n_seeds,
                    how="; ".join(f"{k}: rank {discrete[k]['rank']}, D in {[discrete[k]['dims'][i] for i in idx]}"
                                  for k, idx in exact.items()) + f"; {n_seeds} seeds")
    else:
        sheet.untested("exact_fit_finite_rank", "no joint's rank is reached by the configured D")

    def retrieval(method: str) -> list[float]:
        return [float(np.mean([v[s] for k in kernels for v in discrete[k][method]["retrieval_excess"]]))
                for s in range(n_seeds)]

    sheet.comparison("retrieval_beats_spectral", retrieval("infonce"), retrieval("spectral"),
                     how=f"{summary['candidates']} candidates; replicates hold fixed: {HOLDS_JOINTS}")

    fits, rank = cont["fits"], cont["rank"]
    widths = sorted(f["width"] for f in fits.values() if f["loss"] == "infonce" and f["dim"] == rank)
    widest = widths[-1]
    rel = {key: f["relative_error"] for key, f in fits.items()}
    sheet.target("neural_learns", values=rel[f"infonce_w{widest}_d{rank}"], how=f"width {widest}, D = rank = {rank}")
    sheet.comparison("width_helps", rel[f"infonce_w{widest}_d{rank}"], rel[f"infonce_w{widths[0]}_d{rank}"],
                     how=f"width {widest} vs {widths[0]}, D = rank = {rank}")

    # the largest D below the rank whose best possible error, tail_{D+1}, is clearly above 0
    below = [f["dim"] for f in fits.values() if f["loss"] == "infonce" and f["width"] == widest
             and f["dim"] < rank and f["tail_next"] > summary["min_tail"] * cont["norm"]]
    if below:
        k = max(below)
        sheet.comparison("rank_dim_fits", rel[f"infonce_w{widest}_d{rank}"], rel[f"infonce_w{widest}_d{k}"],
                         how=f"width {widest}, D = {rank} vs D = {k}")
    else:
        sheet.untested("rank_dim_fits", "no configured D below the rank has a positive lower bound tail_{D+1}")

    exps = [v for v in summary["calibration_exponent"] if not math.isnan(v)]
    nulls = [v for v in summary.get("calibration_null_exponent", []) if not math.isnan(v)]
    degenerate = summary.get("tsybakov_degenerate", {})
    alphas = ", ".join(f"{k} " + (f"{v:.2f}" if v is not None else f"untested ({degenerate.get(k) or 'degenerate margin law'})")
                       for k, v in summary.get("tsybakov_alpha", {}).items())
    sheet.check("fast_calibration", min(exps) if exps else None, n=len(exps),
                how=("scores PMI + t ||PMI|| Delta, random centred unit tables Delta drawn per seed, t on a geometric grid; "
                     "least-squares slope of log excess retrieval on log excess risk per seed, the smallest over seeds "
                     f"(per seed: {', '.join(f'{v:.3g}' for v in exps)}); seeds hold fixed {HOLDS_JOINTS}; "
                     "the null fast_calibration_null (the spectral contrastive excess risk on the same points) "
                     + (f"smallest {min(nulls):.3g} (per seed: {', '.join(f'{v:.3g}' for v in nulls)})" if nulls else "n/a")
                     + f"; Tsybakov exponents of the joints: {alphas}"),
                untested="" if exps else "no seed has three calibration points in range")
    sheet.target("fast_calibration_null", values=nulls,
                 how="the points of fast_calibration, excess spectral contrastive risk of exp(s) in place of the InfoNCE risk")

    sheet.untested("universal_consistency",
                   "needs general (not low-rank) PMI and a sweep of sample and network sizes; the experiment fits one "
                   "low-rank Gaussian family at one sample size")
    return sheet.rows()
