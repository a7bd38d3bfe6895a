"""The steps the CLI calls for sparse_halfspace: train (one job per seed) -> evaluate -> figures.

train: for each seed, every method on every cell of the (d, n) grid at the default noise rate,
and on the noise-rate sweep at one (d, n); the clean test error is angle(w, w*) / pi, exact for
isotropic Gaussian inputs. evaluate: all seeds in metrics.json, with the error growth from the
smallest to the largest d. figures: error against n per d, against d, against the noise rate;
claims.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking

from .baselines import averaging, l1_svm, svm
from .claims import claim_rows
from .data import SparseHalfspace, gaussian_error, support_recovered
from .method import learn_sparse_halfspace

PAPER = "sparse_halfspace"
METHODS = ("ours", "filter_dense", "l1_svm", "svm", "averaging")
LABELS = {"ours": "ours: sparse filter + l1/l2-constrained hinge", "filter_dense": "filter without sparsity (dense, l2 ball)",
          "l1_svm": "l1-regularised SVM", "svm": "SVM (l2)", "averaging": "averaging"}
COLOURS = {"ours": "#d62728", "filter_dense": "#2ca02c", "l1_svm": "#1f77b4", "svm": "#9467bd", "averaging": "#444444"}


def fit_all(x, y, malicious, problem: SparseHalfspace, a: dict, b: dict, seed: int) -> dict:
    """Every method on one sample; the error and whether the top-s coordinates are the support."""
    common = dict(margin=problem.margin, tau=a["hinge_scale"], hard_slack=a["hard_filter_slack"],
                  filter_slack=a["filter_slack"], max_rounds=a["filter_rounds"], min_mass=a["min_weight_mass"],
                  iterations=a["hinge_iterations"], malicious=malicious)
    learned = {"ours": learn_sparse_halfspace(x, y, problem.s, **common),
               "filter_dense": learn_sparse_halfspace(x, y, None, **common)}
    ws = {k: v.w for k, v in learned.items()}
    ws["l1_svm"] = l1_svm(x, y, b["l1_svm_c"], seed)
    ws["svm"] = svm(x, y, b["svm_c"], seed)
    ws["averaging"] = averaging(x, y)
    out = {m: {"error": gaussian_error(ws[m], problem.w_star), "support": support_recovered(ws[m], problem.support)}
           for m in METHODS}
    for m, r in learned.items():
        out[m]["malicious_weight_share"] = r.malicious_mass
        out[m]["filter_rounds"] = r.filter_rounds
    return out


def _problem(p: dict, d: int, seed: int) -> SparseHalfspace:
    return SparseHalfspace.make(d, p["sparsity"], p["margin"], np.random.default_rng([p["data_seed"], d, seed]))


# ---------------------------------------------------------------- train
def train(params, inputs, out: Path):
    from threadpoolctl import threadpool_limits

    p, a, b, seed = params["problem"], params["algorithm"], params["baselines"], params["seed"]
    adv = params["adversary"]
    result = {"seed": seed, "grid": [], "noise_sweep": []}
    with threadpool_limits(params.get("threads", 1)):  # BLAS threads fixed: same floats every run
        for d in p["dims"]:
            problem = _problem(p, d, seed)
            for n in p["sample_sizes"]:
                rng = np.random.default_rng([p["data_seed"], d, n, seed, 1])
                x, y, bad = problem.sample(n, adv["noise_rate"], adv["decoy_scale"], adv["flip_scale"], rng)
                res = fit_all(x, y, bad, problem, a, b, seed)
                result["grid"].append({"d": d, "n": n, "noise_rate": adv["noise_rate"], "methods": res})
                tracking.active().log_metrics({f"d{d}/{m}_error": r["error"] for m, r in res.items()}, step=n)
                print(f"d={d} n={n}: " + "  ".join(f"{m} {r['error']:.3f}" for m, r in res.items()), flush=True)
        sweep = params["noise_sweep"]
        problem = _problem(p, sweep["d"], seed)
        for eta in sweep["noise_rates"]:
            rng = np.random.default_rng([p["data_seed"], sweep["d"], sweep["n"], seed, 2, int(round(eta * 1e6))])
            x, y, bad = problem.sample(sweep["n"], eta, adv["decoy_scale"], adv["flip_scale"], rng)
            res = fit_all(x, y, bad, problem, a, b, seed)
            result["noise_sweep"].append({"d": sweep["d"], "n": sweep["n"], "noise_rate": eta, "methods": res})
            print(f"eta={eta}: " + "  ".join(f"{m} {r['error']:.3f}" for m, r in res.items()), flush=True)
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
    rates = [c["noise_rate"] for c in runs[0]["noise_sweep"]]
    sweep = {m: {str(eta): [r["noise_sweep"][i]["methods"][m]["error"] for r in runs] for i, eta in enumerate(rates)}
             for m in METHODS}
    support = {m: {str(eta): [bool(r["noise_sweep"][i]["methods"][m]["support"]) for r in runs]
                   for i, eta in enumerate(rates)} for m in METHODS}
    n_top = str(sizes[-1])
    growth = {m: [grid[m][str(dims[-1])][n_top][s] / max(grid[m][str(dims[0])][n_top][s], 1e-12)
                  for s in range(len(runs))] for m in METHODS}
    malicious_share = {m: {str(d): [cell(r, d, sizes[-1])["methods"][m]["malicious_weight_share"] for r in runs]
                           for d in dims} for m in ("ours", "filter_dense")}
    metrics = {"seeds": params["seeds"], "dims": dims, "sample_sizes": sizes, "noise_rates": rates,
               "noise_sweep_d": runs[0]["noise_sweep"][0]["d"] if rates else None,
               "noise_sweep_n": runs[0]["noise_sweep"][0]["n"] if rates else None,
               "error": grid, "noise_sweep_error": sweep, "noise_sweep_support_recovered": support,
               "error_growth_smallest_to_largest_d": growth, "malicious_weight_share_after_filter": malicious_share}
    tracking.active().log_metrics({f"error_growth/{m}": float(np.mean(v)) for m, v in growth.items()})
    io.write_json(out / "metrics.json", metrics)
    return [out / "metrics.json"]


# ---------------------------------------------------------------- figures
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
        ax.set_title(f"d = {d}, s = {params['problem']['sparsity']}, eta = {eta}")
    axes[0, 0].legend()
    plotting.save(fig, figdir / "error_vs_n.png")

    # error against d at each n, one panel per method: the log d dependence
    shown = ("ours", "filter_dense", "l1_svm")
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
        ax.set_title(LABELS[meth].split(":")[0] + f" ({scale} scale)")
        ax.legend()
    plotting.save(fig, figdir / "error_vs_d.png")

    # error against the noise rate
    fig, axes = plotting.figure()
    ax = axes[0, 0]
    for meth in METHODS:
        runs = [[sweep[meth][str(r)][s] for r in rates] for s in range(seeds)]
        plotting.mean_band(ax, rates, runs, LABELS[meth], COLOURS[meth])
    ax.set_xlabel("malicious noise rate eta")
    ax.set_ylabel("clean test error angle(w, w*)/pi")
    ax.set_title(f"error vs noise rate (d = {m['noise_sweep_d']}, n = {m['noise_sweep_n']})")
    ax.legend()
    plotting.save(fig, figdir / "error_vs_noise.png")

    # table
    rows = []
    for d in dims:
        for n in sizes:
            rows.append({"experiment": "grid", "d": d, "n": n, "noise_rate": eta,
                         **{meth: claims.fmt(err[meth][str(d)][str(n)]) for meth in METHODS}})
    for r in rates:
        rows.append({"experiment": "noise sweep", "d": m["noise_sweep_d"], "n": m["noise_sweep_n"], "noise_rate": r,
                     **{meth: claims.fmt(sweep[meth][str(r)]) for meth in METHODS}})
    io.write_csv(out / "summary.csv", rows)

    claims.write_claims(out / "claims.csv", claim_rows({**m, "noise_rate": eta}, scale))
    return [*sorted(figdir.glob("*.png")), out / "summary.csv", out / "claims.csv"]
