"""The steps the CLI calls for abmf: evaluate (one job per problem, every seed) -> figures.

evaluate builds the problem, its reference optimum and its threshold gamma*, runs sBMF and
aBMF (alternating convex solver) from the same random start at gamma = ratio * gamma* for each
configured ratio, and writes the measurements to metrics.json. figures plots them against
gamma / gamma* and writes summary.csv and claims.csv.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking

from . import method
from .claims import claim_rows

P = "abmf"
LABELS = {"psd_approximation": "low-rank PSD approximation", "matrix_sensing": "matrix sensing",
          "maxcut": "MaxCut SDP (penalised)"}


def _round(x: float, digits: int = 10) -> float:
    """Fixed significant digits, so metrics.json does not carry last-bit noise."""
    x = float(x)
    if not np.isfinite(x) or x == 0.0:
        return x
    return float(f"{x:.{digits}g}")


def build_problem(settings: dict, seed: int) -> method.QuadraticPSDProblem:
    """The problem a variant names, drawn from a generator seeded by (data seed, run seed)."""
    rng = np.random.default_rng([int(settings.get("data_seed", 0)), int(seed)])
    kind = settings["kind"]
    if kind == "psd_approximation":
        return method.psd_approximation(settings["n"], settings["rank"], settings["negative"], rng)
    if kind == "matrix_sensing":
        problem = method.matrix_sensing(settings["n"], settings["planted_rank"], settings["measurements"],
                                        settings["negative"], settings["noise"], rng)
        problem.rank = settings["factor_rank"]
        return problem
    if kind == "maxcut":
        return method.maxcut(settings["n"], settings["rank"], settings["edge_prob"], settings["penalty"], rng)
    raise ValueError(f"config key 'abmf.variants.*.kind': unknown problem kind {kind!r}")


def reference_optimum(problem: method.QuadraticPSDProblem, iters: int) -> tuple[np.ndarray, str]:
    """Closed form (eigen-truncation) for PSD approximation, the convex PSD program otherwise."""
    if problem.name == "psd_approximation":
        return method.psd_truncation(problem.target.reshape(problem.n, problem.n), problem.rank), "closed form"
    return method.convex_optimum(problem, iters=iters), "convex PSD program (FISTA)"


def run_seed(settings: dict, solver: dict, ratios: list[float], seed: int) -> dict:
    problem = build_problem(settings, seed)
    W_ref, reference = reference_optimum(problem, solver["reference_iters"])
    f_ref = problem.value(W_ref)
    gamma_star = method.exactness_threshold(problem, W_ref)
    lam = np.linalg.eigvalsh(W_ref)
    ref_rank = int(np.sum(lam > 1e-6 * max(1.0, lam[-1])))
    rng = np.random.default_rng([int(settings.get("data_seed", 0)), int(seed), 1])
    X0 = solver["init_scale"] * rng.standard_normal((problem.n, problem.rank))
    Y0 = solver["init_scale"] * rng.standard_normal((problem.n, problem.rank))
    scale = max(1.0, abs(f_ref))

    Xs = method.solve_sbmf(problem, X0)
    sbmf_gap = (problem.value(Xs @ Xs.T) - f_ref) / scale
    sbmf = {"objective_gap": _round(sbmf_gap),
            "distance_to_reference": _round(np.linalg.norm(Xs @ Xs.T - W_ref) / max(1e-12, np.linalg.norm(W_ref)))}

    runs = []
    for ratio in ratios:
        gamma = ratio * gamma_star
        res = method.solve_abmf(problem, X0, Y0, gamma, max_iters=solver["max_iters"], tol=solver["tol"],
                                blowup=solver["blowup"])
        X, Y = res.X, res.Y
        W = method.sym(X @ Y.T)
        gx, gy = method.abmf_gradients(problem, X, Y, gamma)
        asym = np.linalg.norm(X - Y) / max(1e-12, 0.5 * (np.linalg.norm(X) + np.linalg.norm(Y)))
        runs.append({
            "ratio": ratio, "gamma": _round(gamma), "iterations": res.iterations, "diverged": res.diverged,
            "asymmetry": _round(asym),
            "objective_gap": _round((problem.value(W) - f_ref) / scale),
            "distance_to_reference": _round(np.linalg.norm(W - W_ref) / max(1e-12, np.linalg.norm(W_ref))),
            "distance_to_sbmf": _round(np.linalg.norm(W - Xs @ Xs.T) / max(1e-12, np.linalg.norm(Xs @ Xs.T))),
            "gradient_norm": _round(np.sqrt(np.sum(gx ** 2) + np.sum(gy ** 2))),
            "monotone": bool(np.all(np.diff(res.objective_trace) <= 1e-9 * (1 + np.abs(res.objective_trace[:-1])))),
        })
        tracking.active().log_metrics({f"seed{seed}/asymmetry": asym, f"seed{seed}/gamma": gamma},
                                      step=int(round(1000 * ratio)))
    return {"seed": seed, "gamma_star": _round(gamma_star), "reference": reference, "reference_value": _round(f_ref),
            "reference_rank": ref_rank, "factor_rank": problem.rank, "n": problem.n, "sbmf": sbmf, "abmf": runs}


# ---------------------------------------------------------------- evaluate
def evaluate(params, inputs, out: Path):
    """Every seed of one problem: reference optimum, threshold, sBMF, aBMF across gamma."""
    from threadpoolctl import threadpool_limits

    settings = params["variant_settings"]
    with threadpool_limits(limits=int(params.get("threads", 1))):
        seeds = [run_seed(settings, params["solver"], list(params["gamma_ratios"]), s) for s in params["seeds"]]
    io.write_json(out / "metrics.json", {"problem": params["variant"], "settings": settings, "seeds": seeds})
    return [out / "metrics.json"]


# ---------------------------------------------------------------- figures
def figures(params, inputs, out: Path):
    problems, scale = params["run_variants"], params["scale"]
    data = {p: io.read_json(inputs["evals"] / p / "metrics.json") for p in problems}
    figdir = out / "figures"

    # asymmetry and objective gap against gamma / gamma*
    for name, key, ylabel in (
        ("asymmetry", "asymmetry", "||X - Y|| / ||X|| at the end (log)"),
        ("objective_gap", "objective_gap", "|h(sym XY^T) - h*| / max(1, |h*|) (log)"),
    ):
        fig, axes = plotting.figure(ncols=len(problems), width=4.3)
        for i, p in enumerate(problems):
            ax = axes[0, i]
            seeds = data[p]["seeds"]
            ratios = [r["ratio"] for r in seeds[0]["abmf"]]
            vals = [[max(abs(r[key]), 1e-16) for r in s["abmf"]] for s in seeds]
            plotting.mean_band(ax, ratios, vals, "aBMF (alternating convex)")
            if key == "objective_gap":
                sb = np.mean([max(abs(s["sbmf"]["objective_gap"]), 1e-16) for s in seeds])
                ax.axhline(sb, color="#d62728", ls=":", lw=1.2, label="sBMF (L-BFGS), same start")
            diverged = [(r["ratio"]) for s in seeds for r in s["abmf"] if r["diverged"]]
            if diverged:
                ax.plot(diverged, [1e2] * len(diverged), "kx", label="diverged (F unbounded below)")
            ax.axvline(1.0, color="#888888", ls="--", lw=1, label="gamma* (derived threshold)")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(ratios, [f"{r:g}" for r in ratios], minor=False)
            ax.set_xticks([], minor=True)
            ax.set_xlabel("gamma / gamma*")
            ax.set_ylabel(ylabel if i == 0 else "")
            gs = ", ".join(f"{s['gamma_star']:.3g}" for s in seeds)
            ax.set_title(f"{LABELS.get(p, p)}\ngamma* per seed: {gs}", fontsize=9)
            ax.legend(fontsize=7)
        fig.suptitle(f"abmf: {name.replace('_', ' ')} across the exactness threshold ({scale} scale)")
        plotting.save(fig, figdir / f"{name}.png")

    # summary table
    rows, summary = [], {"symmetric_tol": params["symmetric_tol"], "objective_tol": params["objective_tol"],
                         "problems": {}}
    for p in problems:
        seeds = data[p]["seeds"]
        above = [max(r["asymmetry"] for r in s["abmf"] if r["ratio"] > 1) for s in seeds]
        below = [max(r["asymmetry"] for r in s["abmf"] if r["ratio"] < 1) for s in seeds]
        gap_above = [max(abs(r["objective_gap"]) for r in s["abmf"] if r["ratio"] > 1) for s in seeds]
        gap_sbmf = [abs(s["sbmf"]["objective_gap"]) for s in seeds]
        rows.append({
            "problem": p, "n": seeds[0]["n"], "factor_rank": seeds[0]["factor_rank"],
            "reference": seeds[0]["reference"], "reference_rank": claims.fmt([s["reference_rank"] for s in seeds]),
            "gamma_star": claims.fmt([s["gamma_star"] for s in seeds]),
            "max_asymmetry_above": claims.fmt(above), "max_asymmetry_below": claims.fmt(below),
            "max_objective_gap_above": claims.fmt(gap_above), "sbmf_objective_gap": claims.fmt(gap_sbmf),
            "runs_diverged_below": sum(r["diverged"] for s in seeds for r in s["abmf"] if r["ratio"] < 1),
            "runs_diverged_above": sum(r["diverged"] for s in seeds for r in s["abmf"] if r["ratio"] > 1),
            "all_monotone": all(r["monotone"] for s in seeds for r in s["abmf"] if not r["diverged"]),
        })
        summary["problems"][p] = {
            "label": LABELS.get(p, p), "reference": seeds[0]["reference"],
            "ratios": [r["ratio"] for r in seeds[0]["abmf"]],
            **{key: [[r[key] for r in s["abmf"]] for s in seeds] for key in ("asymmetry", "diverged", "objective_gap")},
            "sbmf_gap": [s["sbmf"]["objective_gap"] for s in seeds]}
    io.write_csv(out / "summary.csv", rows)
    claims.write_claims(out / "claims.csv", claim_rows(summary, scale))
    return [*sorted(figdir.glob("*.png")), out / "summary.csv", out / "claims.csv"]
