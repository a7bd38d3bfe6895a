"""The steps the CLI calls for abmf: evaluate (one job per problem, every seed) -> figures.

evaluate builds the problem, its reference optimum and its threshold gamma*, runs sBMF and
aBMF (alternating convex solver) from the same random start at gamma = ratio * gamma* for each
configured ratio, and writes the measurements to metrics.json. figures plots them against
gamma / gamma* and writes summary.csv and claims.csv.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning
from neurips26.core.io import significant

from . import method
from .claims import CRITICAL_TOL, claim_rows, second_order_certified

P = "abmf"
# The second-order search (`_socp_search`) at every grid ratio, per seed: starts of each start
# family (method.SOCP_FAMILIES), their scale, the L-BFGS budget, the Levenberg-Marquardt polish and
# the norm past which a start counts as diverged: the defaults of `search.second_order` in the
# config schema, for callers that pass no config (a run's mapping overrides them)
SECOND_ORDER_SEARCH = {"starts_per_family": 4, "start_scale": 1.0, "max_iters": 5000, "polish_evals": 20,
                       "blowup": 1000.0}
# residuals (asymmetry, gradient norm, objective gap, distances) below this are round-off: their
# last bits differ between two runs of the same job, so metrics.json writes them as 0
ROUND_OFF = 1e-12
LABELS = {"psd_approximation": "low-rank PSD approximation", "matrix_sensing": "matrix sensing",
          "maxcut": "MaxCut SDP (penalised)"}


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


def _search(problem, gamma: float, ratio: float, label: str, search: dict, rng: np.random.Generator) -> dict:
    """Critical points of F_gamma: the family (u e1^T, -u e1^T) (polished by the least-squares
    search) and the least-squares search on grad F from `search['starts']` random starts."""
    points = []
    fam = method.family_critical_point(problem, gamma, rng)
    if fam is not None:
        polished = method.stationary_search(problem, gamma, fam.X, fam.Y, max_evals=search["max_evals"])
        if polished is not None and polished.gradient_norm < fam.gradient_norm:
            polished.source, fam = fam.source, polished
        points.append(fam)
    for k in range(search["starts"]):
        scale = search["start_scales"][k % len(search["start_scales"])]
        X0 = scale * rng.standard_normal((problem.n, problem.rank))
        Y0 = scale * rng.standard_normal((problem.n, problem.rank))
        found = method.stationary_search(problem, gamma, X0, Y0, max_evals=search["max_evals"])
        if found is not None:
            points.append(found)
    return {"ratio": significant(ratio), "gamma": significant(gamma), "label": label,
            "family_found": fam is not None,
            "points": [{"source": c.source, "gradient_norm": significant(c.gradient_norm, 3, ROUND_OFF),
                        "asymmetry": significant(c.asymmetry, 4, ROUND_OFF),
                        "size": significant(0.5 * (np.linalg.norm(c.X) + np.linalg.norm(c.Y)), 4)} for c in points],
            "tries": search["starts"] + 1}


def _socp_search(problem, gamma: float, ratio: float, W_ref: np.ndarray, f_ref: float, socp: dict,
                 rng: np.random.Generator) -> dict:
    """Second-order search at one gamma: `socp['starts_per_family']` starts of each start family
    (method.SOCP_FAMILIES), each run to a local minimiser and certified by its gradient norm and
    the smallest eigenvalue of the exact Hessian (claims.py decides the certificate)."""
    fam = method.family_critical_point(problem, gamma, rng)
    u_family = None if fam is None else fam.X[:, 0]
    points, diverged = [], 0
    scale = max(1.0, abs(f_ref))
    for family in method.SOCP_FAMILIES:
        for _ in range(socp["starts_per_family"]):
            X0, Y0 = method.socp_start(problem, family, W_ref, socp["start_scale"], rng, u_family)
            found = method.local_minimum(problem, gamma, X0, Y0, max_iters=socp["max_iters"],
                                         polish_evals=socp["polish_evals"], blowup=socp["blowup"])
            if found is None:
                diverged += 1
                continue
            c = method.certify_point(problem, *found, gamma)
            points.append({"family": family, "gradient_norm": significant(c.gradient_norm, 3, ROUND_OFF),
                           "min_eigenvalue": significant(c.min_eigenvalue, 3, ROUND_OFF),
                           "hessian_norm": significant(c.hessian_norm, 4),
                           "asymmetry": significant(c.asymmetry, 4, ROUND_OFF), "size": significant(c.size, 4),
                           "objective_gap": significant((problem.value(method.sym(c.X @ c.Y.T)) - f_ref) / scale,
                                                        4, ROUND_OFF)})
    return {"ratio": significant(ratio), "gamma": significant(gamma), "family_point": fam is not None,
            "starts": socp["starts_per_family"] * len(method.SOCP_FAMILIES), "diverged": diverged,
            "points": points}


def run_seed(settings: dict, solver: dict, ratios: list[float], seed: int, search: dict | None = None,
             objective_tol: float = 1e-6, socp: dict | None = None) -> dict:
    import time

    problem = build_problem(settings, seed)
    W_ref, reference = reference_optimum(problem, solver["reference_iters"])
    f_ref = problem.value(W_ref)
    gamma_star = method.exactness_threshold(problem, W_ref)
    gamma_zero = method.zero_threshold(problem)
    gamma_apriori = method.apriori_threshold(problem)
    lam = np.linalg.eigvalsh(W_ref)
    ref_rank = int(np.sum(lam > 1e-6 * max(1.0, lam[-1])))
    rng = np.random.default_rng([int(settings.get("data_seed", 0)), int(seed), 1])
    X0 = solver["init_scale"] * rng.standard_normal((problem.n, problem.rank))
    Y0 = solver["init_scale"] * rng.standard_normal((problem.n, problem.rank))
    scale = max(1.0, abs(f_ref))

    Xs, values, times = method.sbmf_trace(problem, X0)
    sbmf_gap = (problem.value(Xs @ Xs.T) - f_ref) / scale
    hit = method.first_within(values, f_ref, objective_tol, scale)
    sbmf = {"objective_gap": significant(sbmf_gap, 4, ROUND_OFF),
            "distance_to_reference": significant(np.linalg.norm(Xs @ Xs.T - W_ref) / max(1e-12, np.linalg.norm(W_ref)), 4, ROUND_OFF),
            "iterations_to_tol": None if hit is None else hit + 1,
            "seconds_to_tol": None if hit is None else significant(times[hit], 3)}

    runs = []
    for ratio in ratios:
        gamma = ratio * gamma_star
        start = time.perf_counter()
        res = method.solve_abmf(problem, X0, Y0, gamma, max_iters=solver["max_iters"], tol=solver["tol"],
                                blowup=solver["blowup"])
        seconds = time.perf_counter() - start
        X, Y = res.X, res.Y
        W = method.sym(X @ Y.T)
        gx, gy = method.abmf_gradients(problem, X, Y, gamma)
        asym = np.linalg.norm(X - Y) / max(1e-12, 0.5 * (np.linalg.norm(X) + np.linalg.norm(Y)))
        # trace[k] is F after k sweeps; F >= h(sym XY^T) >= h*, so F within tol of h* bounds the gap
        hit = None if res.diverged else method.first_within(res.objective_trace, f_ref, objective_tol, scale)
        runs.append({
            "ratio": ratio, "gamma": significant(gamma), "iterations": res.iterations, "diverged": res.diverged,
            "asymmetry": significant(asym, 4, ROUND_OFF),
            "critical_asymmetry": significant(method.critical_asymmetry(X, Y), 4, ROUND_OFF),
            "objective_gap": significant((problem.value(W) - f_ref) / scale, 4, ROUND_OFF),
            "distance_to_reference": significant(np.linalg.norm(W - W_ref) / max(1e-12, np.linalg.norm(W_ref)), 4, ROUND_OFF),
            "distance_to_sbmf": significant(np.linalg.norm(W - Xs @ Xs.T) / max(1e-12, np.linalg.norm(Xs @ Xs.T)), 4, ROUND_OFF),
            "gradient_norm": significant(np.sqrt(np.sum(gx ** 2) + np.sum(gy ** 2)), 4, ROUND_OFF),
            "iterations_to_tol": hit,
            "seconds_to_tol": None if hit is None else significant(seconds * hit / max(1, res.iterations), 3),
            "monotone": bool(np.all(np.diff(res.objective_trace) <= 1e-9 * (1 + np.abs(res.objective_trace[:-1])))),
        })
        tracking.active().log_metrics({f"seed{seed}/asymmetry": asym, f"seed{seed}/gamma": gamma},
                                      step=int(round(1000 * ratio)))

    searches = []
    if search:
        srng = np.random.default_rng([int(settings.get("data_seed", 0)), int(seed), 2])
        targets = [(r, "grid") for r in ratios if r >= search["min_ratio"]]
        top = max(gamma_star, gamma_zero)
        targets.append((search["margin"] * top / gamma_star, "above max(gamma*, gamma_0)"))
        if np.isfinite(gamma_apriori):
            targets.append((search["margin"] * gamma_apriori / gamma_star, "above the a-priori bound"))
        for ratio, label in targets:
            searches.append(_search(problem, ratio * gamma_star, ratio, label, search, srng))
    second_order = []
    if socp:
        orng = np.random.default_rng([int(settings.get("data_seed", 0)), int(seed), 3])
        for ratio in ratios:
            second_order.append(_socp_search(problem, ratio * gamma_star, ratio, W_ref, f_ref, socp, orng))
    kkt = method.kkt_residuals(problem, W_ref)
    return {"seed": seed, "gamma_star": significant(gamma_star), "gamma_zero": significant(gamma_zero),
            "gamma_apriori": significant(gamma_apriori) if np.isfinite(gamma_apriori) else None, "reference": reference, "reference_value": significant(f_ref),
            "reference_kkt": {k: significant(v, 3) for k, v in kkt.items()},
            "reference_rank": ref_rank, "factor_rank": problem.rank, "n": problem.n, "sbmf": sbmf, "abmf": runs,
            "search": searches, "second_order": second_order}


# ---------------------------------------------------------------- evaluate
def evaluate(params, inputs, out: Path):
    """Every seed of one problem: reference optimum, threshold, sBMF, aBMF across gamma."""
    from threadpoolctl import threadpool_limits

    settings = params["variant_settings"]
    search = params.get("search")
    second_order = {**SECOND_ORDER_SEARCH, **search.get("second_order", {})} if search else None
    with threadpool_limits(limits=int(params.get("threads", 1))):
        seeds = [run_seed(settings, params["solver"], list(params["gamma_ratios"]), s, params.get("search"),
                          params.get("objective_tol", 1e-6), second_order) for s in params["seeds"]]
    # wall times go to their own file, so metrics.json is reproducible bit for bit
    timing = [{"seed": s["seed"], "sbmf": s["sbmf"].pop("seconds_to_tol"),
               "abmf": [r.pop("seconds_to_tol") for r in s["abmf"]]} for s in seeds]
    io.write_json(out / "metrics.json", {"problem": params["variant"], "settings": settings, "seeds": seeds})
    io.write_json(out / "timing.json", {"seconds_to_tol": timing})
    return [out / "metrics.json", out / "timing.json"]


# ---------------------------------------------------------------- tuning
def tuning_records(solver: dict, cost_ratio: float) -> list[tuning.Record]:
    """Every knob of aBMF and of sBMF, the baseline of the measured cost. Nothing is tuned: the
    paper's method has no step size (each half step is an exact linear solve), its gamma is the
    variable the experiment sweeps, sBMF's L-BFGS steps come from a line search, and both
    solvers start from the same random point with stopping rules stated before the run."""
    same = "the same for every problem and seed; not tuned"
    return [
        tuning.fixed("aBMF", "gamma / gamma* (cost figure)", cost_ratio,
                     "the theorem's regime is any gamma above gamma*; the measured cost (cost.png, no claims row) reads "
                     "aBMF at one ratio above it stated before the run (cost_ratio), the threshold rows sweep gamma "
                     "itself (gamma_ratios)"),
        tuning.fixed("aBMF", "step size", "none",
                     "alternating exact minimisation: each half step solves a strongly convex quadratic exactly"),
        tuning.fixed("aBMF", "max_iters", solver["max_iters"], f"sweep budget; {same}"),
        tuning.fixed("aBMF", "tol", solver["tol"], f"stop at this relative change of (X, Y); {same}"),
        tuning.fixed("aBMF", "blowup", solver["blowup"],
                     "a run whose factors pass this norm is marked diverged (F unbounded below); not tuned"),
        tuning.fixed("sBMF (L-BFGS)", "step size", "line search",
                     "scipy L-BFGS-B chooses each step by a Wolfe line search: no learning rate"),
        tuning.fixed("sBMF (L-BFGS)", "maxcor", method.SBMF_MAXCOR, f"L-BFGS memory (corrections kept); {same}"),
        tuning.fixed("sBMF (L-BFGS)", "max_iters", method.SBMF_MAX_ITERS,
                     f"iteration budget; {same}"),
        tuning.fixed("sBMF (L-BFGS)", "ftol", method.SBMF_FTOL, f"relative decrease at which L-BFGS stops; {same}"),
        tuning.fixed("sBMF (L-BFGS)", "gtol", method.SBMF_GTOL, f"projected-gradient norm at which L-BFGS stops; {same}"),
        *(tuning.fixed(name, "init_scale", solver["init_scale"],
                       "both solvers start from the same random point of this scale (paired over seeds)")
          for name in ("aBMF", "sBMF (L-BFGS)")),
    ]


# ---------------------------------------------------------------- figures
def _apriori(seed: dict) -> float:
    return float("inf") if seed["gamma_apriori"] is None else seed["gamma_apriori"]


def _cost(seeds: list[dict], ratio: float) -> dict:
    """Seconds (and sweeps / iterations) to the objective tolerance: aBMF at the grid ratio
    closest to `ratio`, sBMF from the same start; None where a run never reached it."""
    idx = int(np.argmin([abs(r["ratio"] - ratio) for r in seeds[0]["abmf"]]))
    return {"abmf": [s["abmf"][idx]["seconds_to_tol"] for s in seeds],
            "sbmf": [s["sbmf"]["seconds_to_tol"] for s in seeds],
            "abmf_iterations": [s["abmf"][idx]["iterations_to_tol"] for s in seeds],
            "sbmf_iterations": [s["sbmf"]["iterations_to_tol"] for s in seeds]}


def _second_order_by_ratio(seeds: list[dict], sym_tol: float) -> dict:
    """Per searched ratio over the seeds: starts, diverged, certified, asymmetric among the certified."""
    out = {}
    for s in seeds:
        for srch in s.get("second_order", []):
            d = out.setdefault(srch["ratio"], {"starts": 0, "diverged": 0, "certified": 0, "asymmetric": 0})
            d["starts"] += srch["starts"]
            d["diverged"] += srch["diverged"]
            certified = [c for c in srch["points"] if second_order_certified(c)]
            d["certified"] += len(certified)
            d["asymmetric"] += sum(c["asymmetry"] > sym_tol for c in certified)
    return dict(sorted(out.items()))


def _plot_second_order(ax, seeds: list[dict], sym_tol: float, first: bool) -> None:
    by_ratio = _second_order_by_ratio(seeds, sym_tol)
    if not by_ratio:
        ax.set_axis_off()
        return
    xs = [r for r, d in by_ratio.items() if d["certified"]]
    share = [by_ratio[r]["asymmetric"] / by_ratio[r]["certified"] for r in xs]
    bounds = [claims.clopper_pearson(by_ratio[r]["asymmetric"], by_ratio[r]["certified"]) for r in xs]
    ax.errorbar(xs, share, yerr=[[v - b[0] for v, b in zip(share, bounds)], [b[1] - v for v, b in zip(share, bounds)]],
                fmt="o", color="#1f77b4", capsize=3, label="asymmetric share of certified points, 95% Clopper-Pearson")
    div = list(by_ratio)
    ax.plot(div, [by_ratio[r]["diverged"] / by_ratio[r]["starts"] for r in div], "kx", ms=7,
            label="share of starts that diverged (F unbounded below)")
    for r, d in by_ratio.items():
        ax.annotate(f"{d['asymmetric']}/{d['certified']}", (r, 1.02), textcoords="offset points", xytext=(0, 4),
                    fontsize=6, ha="center")
    ax.axhline(0.05, color="#2ca02c", ls=":", lw=1, label="level of the claim rows (0.05)")
    ax.axvline(1.0, color="#888888", ls="--", lw=1, label="gamma*")
    ax.set_xscale("log")
    ax.set_xticks(list(by_ratio), [f"{r:g}" for r in by_ratio], minor=False)
    ax.set_xticks([], minor=True)
    ax.set_ylim(-0.05, 1.15)
    ax.set_xlabel("gamma / gamma*")
    ax.set_ylabel("share (asymmetric / certified)" if first else "")
    ax.legend(fontsize=6, loc="center left")


def figures(params, inputs, out: Path):
    import matplotlib.ticker

    problems, scale = params["run_variants"], params["scale"]
    data = {p: io.read_json(inputs["evals"] / p / "metrics.json") for p in problems}
    for p in problems:
        for seed, t in zip(data[p]["seeds"], io.read_json(inputs["evals"] / p / "timing.json")["seconds_to_tol"]):
            seed["sbmf"]["seconds_to_tol"] = t["sbmf"]
            for run, sec in zip(seed["abmf"], t["abmf"]):
                run["seconds_to_tol"] = sec
    figdir = out / "figures"

    def ratio_axis(ax, ratios):
        ax.axvline(1.0, color="#888888", ls="--", lw=1, label="gamma* = lambda_max(grad h(W*))/2")
        ax.set_xscale("log")
        ax.set_xticks(ratios, [f"{r:g}" for r in ratios], minor=False)
        ax.set_xticks([], minor=True)
        ax.set_xlabel("gamma / gamma*")

    # asymmetry of the solver's end point against gamma / gamma*
    fig, axes = plotting.figure(ncols=len(problems), width=4.3)
    for i, p in enumerate(problems):
        ax, seeds = axes[0, i], data[p]["seeds"]
        ratios = [r["ratio"] for r in seeds[0]["abmf"]]
        vals = [[max(abs(r["asymmetry"]), 1e-16) if not r["diverged"] else np.nan for r in s["abmf"]] for s in seeds]
        plotting.mean_band(ax, ratios, vals, "aBMF (alternating convex), converged runs")
        div = sorted({r["ratio"] for s in seeds for r in s["abmf"] if r["diverged"]})
        if div:
            counts = [sum(r["diverged"] for s in seeds for r in s["abmf"] if r["ratio"] == d) for d in div]
            ax.plot(div, [1.0] * len(div), "kx", ms=8, label="diverged (F unbounded below)")
            for d, c in zip(div, counts):
                ax.annotate(f"{c}/{len(seeds)}", (d, 1.0), textcoords="offset points", xytext=(0, 6), fontsize=7, ha="center")
        ax.axhline(params["symmetric_tol"], color="#2ca02c", ls=":", lw=1, label="symmetric tolerance")
        ratio_axis(ax, ratios)
        ax.set_yscale("log")
        ax.set_ylabel("||X - Y|| / ||X|| at the solver's end (log)" if i == 0 else "")
        gs = ", ".join(f"{s['gamma_star']:.3g}" for s in seeds)
        ax.set_title(f"{LABELS.get(p, p)}\ngamma* per seed: {gs}", fontsize=9)
        ax.legend(fontsize=7, loc="center left")
    fig.suptitle(f"abmf: the alternating solver from one random start ({scale} scale)")
    plotting.save(fig, figdir / "asymmetry.png")

    # signed objective gap; diverged runs once, marked
    fig, axes = plotting.figure(ncols=len(problems), width=4.3)
    for i, p in enumerate(problems):
        ax, seeds = axes[0, i], data[p]["seeds"]
        ratios = [r["ratio"] for r in seeds[0]["abmf"]]
        for k, s in enumerate(seeds):
            gaps = [r["objective_gap"] if not r["diverged"] else np.nan for r in s["abmf"]]
            ax.plot(ratios, gaps, "o-", color="#1f77b4", alpha=0.6, ms=3,
                    label="aBMF, one line per seed (converged runs)" if k == 0 else None)
            ax.plot([ratios[-1] * 1.15], [s["sbmf"]["objective_gap"]], "s", color="#d62728", ms=4,
                    label="sBMF (L-BFGS), same start" if k == 0 else None)
        div = sorted({r["ratio"] for s in seeds for r in s["abmf"] if r["diverged"]})
        if div:
            ax.plot(div, [-1.0] * len(div), "kx", ms=8, label="diverged: h -> -inf (plotted once per ratio)")
        ax.axhspan(-params["objective_tol"], params["objective_tol"], color="#2ca02c", alpha=0.2,
                   label="objective tolerance")
        ratio_axis(ax, ratios)
        ax.set_yscale("symlog", linthresh=1e-12)
        ticks = [-1.0, -1e-3, -1e-6, -1e-9, 0.0, 1e-9, 1e-6, 1e-3]
        ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
        ax.set_yticks([], minor=True)
        ax.set_ylabel("signed (h(sym XY^T) - h*) / max(1, |h*|)" if i == 0 else "")
        kkt = max(max(s["reference_kkt"].values()) for s in seeds)
        ax.set_title(f"{LABELS.get(p, p)}\nreference: {seeds[0]['reference']}, KKT residual <= {kkt:.1e}", fontsize=8)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"abmf: objective gap to the convex optimum ({scale} scale)")
    plotting.save(fig, figdir / "objective_gap.png")

    # critical points found by the search, with the three thresholds; below, the second-order search
    fig, axes = plotting.figure(ncols=len(problems), nrows=2, width=4.3)
    for i, p in enumerate(problems):
        ax, seeds = axes[0, i], data[p]["seeds"]
        ratios = sorted({c["ratio"] for s in seeds for c in s["search"]})
        for k, s in enumerate(seeds):
            for c in ({**c, "ratio": srch["ratio"]} for srch in s["search"] for c in srch["points"]):
                if c["gradient_norm"] > CRITICAL_TOL * max(1.0, c["size"]):
                    continue
                family = c["source"].startswith("family")
                ax.plot(c["ratio"] * (1.03 if family else 1.0), max(c["asymmetry"], 1e-16),
                        "D" if family else "o", color="#d62728" if family else "#1f77b4", alpha=0.6, ms=4)
        ax.plot([], [], "D", color="#d62728", label="family (u e1^T, -u e1^T)")
        ax.plot([], [], "o", color="#1f77b4", label="least squares on grad F, random starts")
        zero = np.mean([max(1.0, s["gamma_zero"] / s["gamma_star"]) for s in seeds])
        ax.axvline(zero, color="#9467bd", ls="-.", lw=1.2, label="max(gamma*, gamma_0), mean over seeds")
        apr = [_apriori(s) / s["gamma_star"] for s in seeds]
        if all(np.isfinite(apr)):
            ax.axvline(np.mean(apr), color="#ff7f0e", ls="-", lw=1.2, label="a-priori bound ||A|| ||b|| / 2, mean")
        ax.axhline(params["symmetric_tol"], color="#2ca02c", ls=":", lw=1, label="symmetric tolerance")
        ax.axvline(1.0, color="#888888", ls="--", lw=1, label="gamma* = lambda_max(grad h(W*))/2")
        ax.set_xscale("log")
        ax.set_xlabel("gamma / gamma* (log)")
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_yscale("log")
        ax.set_ylim(1e-17, 10)
        ax.set_ylabel("||X - Y|| / max(1, size) at critical points (log)" if i == 0 else "")
        ax.set_title(LABELS.get(p, p), fontsize=9)
        ax.legend(fontsize=6, loc="center left")
        _plot_second_order(axes[1, i], seeds, params["symmetric_tol"], i == 0)
    fig.suptitle(f"abmf: critical points of F_gamma found by search ({scale} scale); bottom: certified "
                 "second-order critical points")
    plotting.save(fig, figdir / "critical_points.png")

    # cost to the same accuracy
    fig, axes = plotting.figure(ncols=1, width=5.5)
    ax = axes[0, 0]
    for i, p in enumerate(problems):
        seeds = data[p]["seeds"]
        cost = _cost(seeds, params["cost_ratio"])
        for k, (a, b) in enumerate(zip(cost["abmf"], cost["sbmf"])):
            ax.plot([i - 0.15], [a if a is not None else np.nan], "o", color="#1f77b4",
                    label="aBMF (alternating convex)" if i == k == 0 else None)
            ax.plot([i + 0.15], [b if b is not None else np.nan], "s", color="#d62728",
                    label="sBMF (L-BFGS)" if i == k == 0 else None)
    ax.set_xticks(range(len(problems)), [LABELS.get(p, p) for p in problems], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("seconds to the objective tolerance (one point per seed)")
    ax.set_title(f"abmf: cost to the same accuracy, aBMF at {params['cost_ratio']:g} gamma* ({scale} scale)", fontsize=9)
    ax.legend(fontsize=7)
    plotting.save(fig, figdir / "cost.png")

    # summary table
    rows, summary = [], {"symmetric_tol": params["symmetric_tol"], "objective_tol": params["objective_tol"],
                         "problems": {}}
    for p in problems:
        seeds = data[p]["seeds"]
        above = [max(r["asymmetry"] for r in s["abmf"] if r["ratio"] > 1) for s in seeds]
        below = [max(r["asymmetry"] for r in s["abmf"] if r["ratio"] < 1) for s in seeds]
        gap_above = [max(abs(r["objective_gap"]) for r in s["abmf"] if r["ratio"] > 1) for s in seeds]
        gap_sbmf = [abs(s["sbmf"]["objective_gap"]) for s in seeds]
        cost = _cost(seeds, params["cost_ratio"])
        rows.append({
            "problem": p, "n": seeds[0]["n"], "factor_rank": seeds[0]["factor_rank"],
            "reference": seeds[0]["reference"], "reference_rank": claims.fmt([s["reference_rank"] for s in seeds]),
            "gamma_star": claims.fmt([s["gamma_star"] for s in seeds]),
            "max_asymmetry_above": claims.fmt(above), "max_asymmetry_below": claims.fmt(below),
            "max_objective_gap_above": claims.fmt(gap_above), "sbmf_objective_gap": claims.fmt(gap_sbmf),
            "runs_diverged_below": sum(r["diverged"] for s in seeds for r in s["abmf"] if r["ratio"] < 1),
            "runs_diverged_above": sum(r["diverged"] for s in seeds for r in s["abmf"] if r["ratio"] > 1),
            "all_monotone": all(r["monotone"] for s in seeds for r in s["abmf"] if not r["diverged"]),
            "gamma_zero_over_gamma_star": claims.fmt([s["gamma_zero"] / s["gamma_star"] for s in seeds]),
            "apriori_over_gamma_star": claims.fmt([_apriori(s) / s["gamma_star"] for s in seeds]),
            "largest_ratio_with_asymmetric_critical_point": claims.fmt([max(
                [srch["ratio"] for srch in s["search"] for c in srch["points"]
                 if c["gradient_norm"] <= CRITICAL_TOL * max(1.0, c["size"]) and c["asymmetry"] > params["symmetric_tol"]]
                or [0.0]) for s in seeds]),
            "critical_points_found": sum(c["gradient_norm"] <= CRITICAL_TOL * max(1.0, c["size"])
                                         for s in seeds for srch in s["search"] for c in srch["points"]),
            "reference_kkt": claims.fmt([max(s["reference_kkt"].values()) for s in seeds]),
            **{f"second_order_{side}": "; ".join(f"{r:g}: {d['asymmetric']}/{d['certified']} asymmetric, "
                                                 f"{d['diverged']}/{d['starts']} diverged"
                                                 for r, d in _second_order_by_ratio(seeds, params["symmetric_tol"]).items()
                                                 if (r > 1) == (side == "above"))
               for side in ("below", "above")},
            "abmf_seconds_to_tol": claims.fmt([v for v in cost["abmf"] if v is not None]),
            "sbmf_seconds_to_tol": claims.fmt([v for v in cost["sbmf"] if v is not None]),
            "abmf_sweeps_to_tol": claims.fmt([v for v in cost["abmf_iterations"] if v is not None]),
            "sbmf_iterations_to_tol": claims.fmt([v for v in cost["sbmf_iterations"] if v is not None]),
        })
        summary["problems"][p] = {
            "label": LABELS.get(p, p), "reference": seeds[0]["reference"],
            "ratios": [r["ratio"] for r in seeds[0]["abmf"]],
            **{key: [[r[key] for r in s["abmf"]] for s in seeds] for key in ("asymmetry", "diverged", "objective_gap")},
            "sbmf_gap": [s["sbmf"]["objective_gap"] for s in seeds],
            "critical": [[{**c, "ratio": srch["ratio"]} for srch in s["search"] for c in srch["points"]] for s in seeds],
            "zero_ratio": [s["gamma_zero"] / s["gamma_star"] for s in seeds],
            "apriori_ratio": [_apriori(s) / s["gamma_star"] for s in seeds],
            "second_order": [s.get("second_order", []) for s in seeds],
            "kkt": [max(s["reference_kkt"].values()) for s in seeds]}
    written = claims.write_tables(out, rows, claim_rows(summary, scale))
    return [*written, tuning.write_csv(out / "tuning.csv", P, tuning_records(params["solver"], params["cost_ratio"]))]
