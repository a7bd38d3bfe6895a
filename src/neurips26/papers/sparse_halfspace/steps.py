"""The steps the CLI calls for sparse_halfspace: train (one job per seed) -> evaluate -> figures.

train: for each seed, every method on every cell of the (d, n) grid at the default noise rate,
on the noise-rate sweep at one (d, n) under each adversary, and the sample complexity of ours:
the n reaching a target error on an (s, d) grid, by bisection; the clean test error is
angle(w, w*) / pi, exact for isotropic Gaussian inputs. evaluate: all seeds in metrics.json,
with the error growth from the smallest to the largest d and the per-seed exponents of log n
against log s and log log d. figures: error against n per d, against d, against the noise
rate, n needed against s and d; claims.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning

from .baselines import averaging, sparse_averaging, tuned_svm
from .claims import BASELINES, claim_rows
from .claims import LABELS as ROW_LABELS
from .data import SparseHalfspace, gaussian_error, support_recovered
from .method import fit_exponents, learn_sparse_halfspace, sample_size_for_target

PAPER = "sparse_halfspace"
METHODS = ("ours", "hinge_no_filter", "filter_dense", "l1_svm", "sparse_averaging", "svm", "averaging")
LABELS = {"ours": "ours: sparse filter + l1/l2-constrained hinge",
          "hinge_no_filter": "constrained hinge without soft filter (ablation)",
          "filter_dense": "filter without sparsity (dense, l2 ball)", "l1_svm": "l1-SVM (C by validation)",
          "sparse_averaging": "sparse (top-s) averaging", "svm": "SVM (l2, C by validation)", "averaging": "averaging"}
COLOURS = {"ours": "#d62728", "hinge_no_filter": "#ff7f0e", "filter_dense": "#2ca02c", "l1_svm": "#1f77b4",
           "sparse_averaging": "#8c564b", "svm": "#9467bd", "averaging": "#444444"}
ADVERSARIES = {"decoy": "decoy direction", "boundary_flip": "boundary label flips"}


def _learner_args(problem: SparseHalfspace, a: dict, malicious=None) -> dict:
    return dict(margin=problem.margin, tau=a["hinge_scale"], hard_slack=a["hard_filter_slack"],
                filter_slack=a["filter_slack"], max_rounds=a["filter_rounds"], min_mass=a["min_weight_mass"],
                iterations=a["hinge_iterations"], malicious=malicious)


def fit_all(x, y, malicious, problem: SparseHalfspace, a: dict, b: dict, seed: int, *, setting: str = "",
            extensions: int = tuning.DEFAULT_EXTENSIONS) -> dict:
    """Every method on one sample; the error and whether the top-s coordinates are the support. Both
    SVMs' C by the tuning protocol on a held-out share of the sample (records under "tuning")."""
    common = _learner_args(problem, a, malicious)
    learned = {"ours": learn_sparse_halfspace(x, y, problem.s, **common),
               "hinge_no_filter": learn_sparse_halfspace(x, y, problem.s, soft_filter=False, **common),
               "filter_dense": learn_sparse_halfspace(x, y, None, **common)}
    ws = {k: v.w for k, v in learned.items()}
    recs = []
    chosen = {}
    for m, kind in (("l1_svm", "l1"), ("svm", "l2")):
        ws[m], chosen[m], r = tuned_svm(kind, x, y, b["c_grid"], b["validation_share"], seed, extensions=extensions,
                                        setting=setting, method=ROW_LABELS[m])
        recs += r
    ws["averaging"] = averaging(x, y)
    ws["sparse_averaging"] = sparse_averaging(x, y, problem.s)
    out = {m: {"error": gaussian_error(ws[m], problem.w_star), "support": support_recovered(ws[m], problem.support)}
           for m in METHODS}
    out["l1_svm"]["chosen_c"] = chosen["l1_svm"]
    out["svm"]["chosen_c"] = chosen["svm"]
    out["tuning"] = [r.to_json() for r in recs]
    for m, r in learned.items():
        out[m]["malicious_weight_share"] = r.malicious_mass
        out[m]["filter_rounds"] = r.filter_rounds
    return out


def _problem(p: dict, d: int, seed: int, s: int | None = None) -> SparseHalfspace:
    s = p["sparsity"] if s is None else s
    key = [p["data_seed"], d, seed] if s == p["sparsity"] else [p["data_seed"], d, seed, s]
    return SparseHalfspace.make(d, s, p["margin"], np.random.default_rng(key))


def sample_complexity(p: dict, adv: dict, a: dict, c: dict, seed: int) -> list[dict]:
    """For each (s, d): the n at which ours reaches c["target_error"], by bisection on log n, and the
    same for the filter without sparsity (the negative control of the exponent rows: its n should
    grow like d, not log d). The samples are nested: prefixes of one pool of clean points and one
    pool of malicious points, round(eta n) of them, so the error is measured along one growing
    sample; both learners see the same pools."""
    cells = []
    eta = adv["noise_rate"]
    for s in c["sparsities"]:
        for d in c["dims"]:
            problem = _problem(p, d, seed, s)
            rng = np.random.default_rng([p["data_seed"], d, s, seed, 3])
            n_max = c["n_high"]
            xc, yc = problem.clean(n_max, rng)
            xb, yb = problem.malicious(int(round(eta * n_max)), adv, rng)
            cell = {"s": s, "d": d}
            for key, sparsity in (("", problem.s), ("_dense", None)):
                errors = {}

                def error_at(n, problem=problem, xc=xc, yc=yc, xb=xb, yb=yb, errors=errors, sparsity=sparsity):
                    n_bad = int(round(eta * n))
                    x, y = np.vstack([xc[:n - n_bad], xb[:n_bad]]), np.concatenate([yc[:n - n_bad], yb[:n_bad]])
                    w = learn_sparse_halfspace(x, y, sparsity, **_learner_args(problem, a)).w
                    errors[int(n)] = gaussian_error(w, problem.w_star)
                    return errors[int(n)]

                n_needed, reached = sample_size_for_target(error_at, c["target_error"], c["n_low"], n_max,
                                                           c["bisection_steps"])
                cell.update({f"n_needed{key}": n_needed, f"reached{key}": reached,
                             f"errors{key}": {str(k): v for k, v in sorted(errors.items())}})
            cells.append(cell)
            print(f"complexity s={s} d={d}: n={cell['n_needed']} reached={cell['reached']}; filter without "
                  f"sparsity n={cell['n_needed_dense']} reached={cell['reached_dense']}", flush=True)
    return cells


# ---------------------------------------------------------------- train
def train(params, inputs, out: Path):
    from threadpoolctl import threadpool_limits

    p, a, b, seed = params["problem"], params["algorithm"], params["baselines"], params["seed"]
    adv = {"kind": "decoy", **params["adversary"]}
    ext = tuning.settings(params)["extensions"]
    result = {"seed": seed, "grid": [], "noise_sweep": {}, "complexity": []}
    with threadpool_limits(params.get("threads", 1)):  # BLAS threads fixed: same floats every run
        for d in p["dims"]:
            problem = _problem(p, d, seed)
            for n in p["sample_sizes"]:
                rng = np.random.default_rng([p["data_seed"], d, n, seed, 1])
                x, y, bad = problem.sample(n, adv["noise_rate"], adv, rng)
                res = fit_all(x, y, bad, problem, a, b, seed, setting=f"d = {d}, n = {n}", extensions=ext)
                result["grid"].append({"d": d, "n": n, "noise_rate": adv["noise_rate"], "methods": res})
                tracking.active().log_metrics({f"d{d}/{m}_error": res[m]["error"] for m in METHODS}, step=n)
                print(f"d={d} n={n}: " + "  ".join(f"{m} {res[m]['error']:.3f}" for m in METHODS), flush=True)
        sweep = params["noise_sweep"]
        problem = _problem(p, sweep["d"], seed)
        for ai, kind in enumerate(sweep.get("adversaries", list(ADVERSARIES))):
            cells = result["noise_sweep"][kind] = []
            for eta in sweep["noise_rates"]:
                rng = np.random.default_rng([p["data_seed"], sweep["d"], sweep["n"], seed, 2, ai, int(round(eta * 1e6))])
                x, y, bad = problem.sample(sweep["n"], eta, {**adv, "kind": kind}, rng)
                res = fit_all(x, y, bad, problem, a, b, seed, setting=f"{kind}, noise rate {eta:g}", extensions=ext)
                cells.append({"d": sweep["d"], "n": sweep["n"], "noise_rate": eta, "methods": res})
                print(f"{kind} eta={eta}: " + "  ".join(f"{m} {res[m]['error']:.3f}" for m in METHODS), flush=True)
        result["complexity"] = sample_complexity(p, adv, a, params["complexity"], seed)
    io.write_json(out / "results.json", result)
    return [out / "results.json"]


# ---------------------------------------------------------------- evaluate
def evaluate(params, inputs, out: Path):
    runs = [io.read_json(inputs["train"] / f"seed{s}" / "results.json") for s in params["seeds"]]
    dims = sorted({c["d"] for c in runs[0]["grid"]})
    sizes = sorted({c["n"] for c in runs[0]["grid"]})

    def cell(run, d, n):
        return next(c for c in run["grid"] if c["d"] == d and c["n"] == n)

    grid = {m: {str(d): {str(n): [cell(r, d, n)["methods"][m]["error"] for r in runs] for n in sizes} for d in dims}
            for m in METHODS}
    adversaries = [k for k in params["noise_sweep"].get("adversaries", list(ADVERSARIES)) if k in runs[0]["noise_sweep"]]
    rates = [c["noise_rate"] for c in runs[0]["noise_sweep"][adversaries[0]]] if adversaries else []

    def per_rate(kind, m, key):
        return {str(eta): [r["noise_sweep"][kind][i]["methods"][m][key] for r in runs] for i, eta in enumerate(rates)}

    sweep = {kind: {m: per_rate(kind, m, "error") for m in METHODS} for kind in adversaries}
    support = {kind: {m: per_rate(kind, m, "support") for m in METHODS} for kind in adversaries}
    n_top = str(sizes[-1])
    growth = {m: [grid[m][str(dims[-1])][n_top][s] / max(grid[m][str(dims[0])][n_top][s], 1e-12)
                  for s in range(len(runs))] for m in METHODS}
    malicious_share = {m: {str(d): [cell(r, d, sizes[-1])["methods"][m]["malicious_weight_share"] for r in runs]
                           for d in dims} for m in ("ours", "filter_dense")}
    chosen_c = [cell(r, d, n)["methods"]["l1_svm"]["chosen_c"] for r in runs for d in dims for n in sizes]
    # sample complexity: per seed, the least-squares exponents of log n against log s and log log d
    comp = [r["complexity"] for r in runs]
    fits = [fit_exponents([c["s"] for c in cs], [c["d"] for c in cs], [c["n_needed"] for c in cs]) for cs in comp]
    complexity = {
        "sparsities": sorted({c["s"] for c in comp[0]}), "dims": sorted({c["d"] for c in comp[0]}),
        "target_error": params["complexity"]["target_error"],
        "n_needed": {f"{c['s']},{c['d']}": [cs[i]["n_needed"] for cs in comp] for i, c in enumerate(comp[0])},
        "unreached": sum(not c["reached"] for cs in comp for c in cs), "cells": sum(len(cs) for cs in comp),
        "exponent_s": [f["s"] for f in fits], "exponent_log_d": [f["log_d"] for f in fits],
        "n_high": params["complexity"]["n_high"], "null_dense": dense_complexity(comp)}
    metrics = {"seeds": params["seeds"], "dims": dims, "sample_sizes": sizes, "noise_rates": rates,
               "adversaries": adversaries,
               "noise_sweep_d": runs[0]["noise_sweep"][adversaries[0]][0]["d"] if rates else None,
               "noise_sweep_n": runs[0]["noise_sweep"][adversaries[0]][0]["n"] if rates else None,
               "error": grid, "noise_sweep_error": sweep, "noise_sweep_support_recovered": support,
               "error_growth_smallest_to_largest_d": growth, "malicious_weight_share_after_filter": malicious_share,
               "l1_svm_chosen_c": chosen_c, "complexity": complexity}
    records = [r for run in runs for c in run["grid"] + [c for cs in run["noise_sweep"].values() for c in cs]
               for r in c["methods"].get("tuning", [])]
    choice, validation, more = choose_strongest(params, dims[-1], sizes[-1], adversaries, rates)
    records = fixed_knobs(params) + records + more
    metrics.update(strongest=choice, validation_error=validation, tuning=records)
    tracking.active().log_metrics({f"error_growth/{m}": float(np.mean(v)) for m, v in growth.items()})
    io.write_json(out / "metrics.json", metrics)
    return [out / "metrics.json"]


def dense_complexity(comp: list[list[dict]]) -> dict:
    """The negative control of the exponent rows: the filter without sparsity's n needed per (s, d)
    and seed, its censored cells (target missed by the largest n) and its per-seed exponents (with
    censored cells at the largest n: lower bounds on n, so not scored when any cell is censored)."""
    if not comp or "n_needed_dense" not in comp[0][0]:
        return {"n_needed": {}, "unreached": 0, "unreached_dims": [], "cells": 0, "exponent_s": [], "exponent_log_d": []}
    fits = [fit_exponents([c["s"] for c in cs], [c["d"] for c in cs], [c["n_needed_dense"] for c in cs])
            for cs in comp]
    return {"n_needed": {f"{c['s']},{c['d']}": [cs[i]["n_needed_dense"] for cs in comp] for i, c in enumerate(comp[0])},
            "unreached": sum(not c["reached_dense"] for cs in comp for c in cs),
            "unreached_dims": sorted({c["d"] for cs in comp for c in cs if not c["reached_dense"]}),
            "cells": sum(len(cs) for cs in comp),
            "exponent_s": [f["s"] for f in fits], "exponent_log_d": [f["log_d"] for f in fits]}


def fixed_knobs(params) -> list[dict]:
    """The knobs nobody tunes (the method's constants are the paper's, fixed by hand)."""
    a = params["algorithm"]
    why = "fixed by hand as in the paper's algorithm, not tuned per cell (no baseline has this knob)"
    return [tuning.fixed(ROW_LABELS["ours"], k, a[k], why).to_json()
            for k in ("hinge_scale", "filter_slack", "hard_filter_slack", "min_weight_mass")]


def choose_strongest(params, d_top: int, n_top: int, adversaries: list, rates: list):
    """The strongest baseline of each "better than the baselines" row, named on a validation seed
    (baselines.validation_seed: its own w*, sample and malicious points, never a test seed) by the
    clean error of each baseline there, before any test number is read. Returns (row id -> choice,
    row id -> {baseline: validation error}, the records)."""
    p, a, b = params["problem"], params["algorithm"], params["baselines"]
    vseed = int(b["validation_seed"])
    if vseed in [int(x) for x in params["seeds"]]:
        raise ValueError(f"config key 'sparse_halfspace.baselines.validation_seed' ({vseed}) is one of the test seeds")
    ext = tuning.settings(params)["extensions"]
    adv = {"kind": "decoy", **params["adversary"]}
    cells = {"beats_baselines": (d_top, n_top, adv["noise_rate"], "decoy",
                                 [p["data_seed"], d_top, n_top, vseed, 1])}
    sweep = params["noise_sweep"]
    if rates:
        for ai, kind in enumerate(sweep.get("adversaries", list(ADVERSARIES))):
            if kind in adversaries:
                eta = rates[-1]
                cells[f"robust_{kind}"] = (sweep["d"], sweep["n"], eta, kind, [p["data_seed"], sweep["d"], sweep["n"],
                                                                               vseed, 2, ai, int(round(eta * 1e6))])
    choice, validation, records = {}, {}, []
    from threadpoolctl import threadpool_limits

    with threadpool_limits(params.get("threads", 1)):
        for row, (d, n, eta, kind, key) in cells.items():
            where = f"validation seed {vseed}: {kind}, d = {d}, n = {n}, noise rate {eta:g}"
            problem = _problem(p, d, vseed)
            x, y, bad = problem.sample(n, eta, {**adv, "kind": kind}, np.random.default_rng(key))
            res = fit_all(x, y, bad, problem, a, b, vseed, setting=where, extensions=ext)
            records += res["tuning"]
            validation[row] = {m: res[m]["error"] for m in BASELINES}
            choice[row], rec = tuning.strongest(validation[row], candidates=list(BASELINES), maximize=False,
                                                setting=f"{row} ({kind}, d = {d}, n = {n}, noise rate {eta:g})",
                                                metric="clean error angle(w, w*)/pi", seed=vseed,
                                                split="validation seed")
            rec.grid = [ROW_LABELS[m] for m in rec.grid]
            rec.chosen = ROW_LABELS[rec.chosen]
            records.append(rec.to_json())
            print(f"{row}: strongest baseline on validation seed {vseed}: {choice[row]} "
                  + " ".join(f"{m} {v:.3f}" for m, v in validation[row].items()), flush=True)
    return choice, validation, records


# ---------------------------------------------------------------- figures
def _legend_outside(axes) -> None:
    """One legend, right of the last panel (off the curves; tight_layout makes room for it)."""
    axes.flat[-1].legend(*axes.flat[0].get_legend_handles_labels(), loc="upper left",
                         bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def figures(params, inputs, out: Path):
    m = io.read_json(inputs["metrics"])
    scale, figdir = params["scale"], out / "figures"
    dims, sizes, rates = m["dims"], m["sample_sizes"], m["noise_rates"]
    err, sweep = m["error"], m["noise_sweep_error"]
    seeds = len(m["seeds"])
    eta = params["adversary"]["noise_rate"]

    # error against n, one panel per d
    fig, axes = plotting.figure(ncols=len(dims), width=4.2)
    for ax, d in zip(axes[0], dims):
        for meth in METHODS:
            runs = [[err[meth][str(d)][str(n)][s] for n in sizes] for s in range(seeds)]
            plotting.mean_band(ax, sizes, runs, LABELS[meth], COLOURS[meth])
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("sample size n (incl. malicious points)")
        ax.set_ylabel("clean test error angle(w, w*)/pi")
        ax.set_title(f"d = {d}, s = {params['problem']['sparsity']}, eta = {eta} (decoy)")
    _legend_outside(axes)
    plotting.save(fig, figdir / "error_vs_n.png")

    # error against d at each n, one panel per method: the log d dependence
    shown = ("ours", "hinge_no_filter", "filter_dense", "l1_svm")
    fig, axes = plotting.figure(ncols=len(shown), width=4.2)
    top = max(np.max(err[meth][str(d)][str(n)]) for meth in shown for d in dims for n in sizes)
    for ax, meth in zip(axes[0], shown):
        for n, shade in zip(sizes, np.linspace(0.35, 1.0, len(sizes))):
            runs = [[err[meth][str(d)][str(n)][s] for d in dims] for s in range(seeds)]
            plotting.mean_band(ax, dims, runs, f"n = {n}", COLOURS[meth])
            ax.lines[-1].set_alpha(shade)
        ax.set_xscale("log")
        ax.set_xticks(dims, [str(d) for d in dims])
        ax.minorticks_off()
        ax.set_ylim(0, 1.05 * top)
        ax.set_xlabel("dimension d (log scale)")
        ax.set_ylabel("clean test error angle(w, w*)/pi")
        ax.set_title(LABELS[meth].split(":")[0] + f" ({scale} scale)", fontsize=9)
        ax.legend(fontsize=7, loc="best")
    plotting.save(fig, figdir / "error_vs_d.png")

    # error against the noise rate, one panel per adversary
    adversaries = m["adversaries"]
    fig, axes = plotting.figure(ncols=max(1, len(adversaries)), width=4.8)
    for ax, kind in zip(axes[0], adversaries):
        for meth in METHODS:
            runs = [[sweep[kind][meth][str(r)][s] for r in rates] for s in range(seeds)]
            plotting.mean_band(ax, rates, runs, LABELS[meth], COLOURS[meth])
        ax.set_xlabel("malicious noise rate eta")
        ax.set_ylabel("clean test error angle(w, w*)/pi")
        ax.set_title(f"{ADVERSARIES.get(kind, kind)} (d = {m['noise_sweep_d']}, n = {m['noise_sweep_n']})")
    _legend_outside(axes)
    plotting.save(fig, figdir / "error_vs_noise.png")

    # sample complexity: n needed against d (one line per s) and against s (one line per d)
    c = m["complexity"]
    need = {k: np.asarray(v, float) for k, v in c["n_needed"].items()}
    fig, axes = plotting.figure(ncols=2, width=4.8)
    for s_, shade in zip(c["sparsities"], np.linspace(0.4, 1.0, len(c["sparsities"]))):
        runs = np.array([need[f"{s_},{d}"] for d in c["dims"]]).T
        plotting.mean_band(axes[0, 0], [np.log(np.log(d)) for d in c["dims"]], runs, f"s = {s_}", (0.8 * (1 - shade), 0.2, shade))
    dense = {k: np.asarray(v, float) for k, v in (c.get("null_dense") or {}).get("n_needed", {}).items()}
    if dense:  # the negative control, censored at the largest n (its points there are lower bounds)
        runs = np.array([[np.mean([dense[f"{s_},{d}"][r] for s_ in c["sparsities"]]) for d in c["dims"]]
                         for r in range(seeds)])
        plotting.mean_band(axes[0, 0], [np.log(np.log(d)) for d in c["dims"]], runs,
                           f"filter without sparsity (mean over s; censored at n = {c.get('n_high')})", "#2ca02c")
        axes[0, 0].lines[-1].set_linestyle("--")
    for d, shade in zip(c["dims"], np.linspace(0.4, 1.0, len(c["dims"]))):
        runs = np.array([need[f"{s_},{d}"] for s_ in c["sparsities"]]).T
        plotting.mean_band(axes[0, 1], c["sparsities"], runs, f"d = {d}", (shade, 0.3, 0.8 * (1 - shade)))
    axes[0, 0].set_xticks([np.log(np.log(d)) for d in c["dims"]], [str(d) for d in c["dims"]])
    axes[0, 0].set_xlabel("dimension d (axis linear in log log d)")
    axes[0, 1].set_xscale("log")
    axes[0, 1].set_xticks(c["sparsities"], [str(v) for v in c["sparsities"]])
    axes[0, 1].set_xlabel("sparsity s (log scale)")
    bs, cs = np.mean(c["exponent_s"]), np.mean(c["exponent_log_d"])
    for ax in axes[0]:
        ax.set_yscale("log")
        ax.minorticks_off()
        ax.set_ylabel(f"n needed for error <= {c['target_error']:g} (ours)")
        ax.legend(fontsize=7, loc="best")
    axes[0, 0].set_title(f"n vs d: fitted exponent of log d = {cs:.2f} (bound 5)", fontsize=10)
    axes[0, 1].set_title(f"n vs s: fitted exponent of s = {bs:.2f} (bound 2)", fontsize=10)
    plotting.save(fig, figdir / "sample_complexity.png")

    # table
    rows = []
    for d in dims:
        for n in sizes:
            rows.append({"experiment": "grid (decoy)", "d": d, "n": n, "noise_rate": eta,
                         **{meth: claims.fmt(err[meth][str(d)][str(n)]) for meth in METHODS}})
    for kind in adversaries:
        for r in rates:
            rows.append({"experiment": f"noise sweep ({kind})", "d": m["noise_sweep_d"], "n": m["noise_sweep_n"],
                         "noise_rate": r, **{meth: claims.fmt(sweep[kind][meth][str(r)]) for meth in METHODS}})
    for key, v in c["n_needed"].items():
        s_, d = key.split(",")
        rows.append({"experiment": f"n needed for error <= {c['target_error']:g}", "d": d, "n": claims.fmt(v),
                     "noise_rate": eta, "ours": f"s = {s_}"})
    for key, v in (c.get("null_dense") or {}).get("n_needed", {}).items():
        s_, d = key.split(",")
        rows.append({"experiment": f"n needed for error <= {c['target_error']:g}, filter without sparsity (censored "
                     f"at {c.get('n_high')})", "d": d, "n": claims.fmt(v), "noise_rate": eta,
                     "filter_dense": f"s = {s_}"})
    tuning.write_csv(out / "tuning.csv", PAPER, [tuning.Record.from_json(r) for r in m.get("tuning", [])])
    return claims.write_tables(out, rows, claim_rows({**m, "noise_rate": eta}, scale))
