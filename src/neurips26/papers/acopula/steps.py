"""The steps the CLI calls for acopula: speed, simulate (per seed), stocks, survival, figures."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning

from . import claims as paper_claims
from . import data as D

CURVES = ("ours", "nacll", "nacll_r", "naive")


def _sectors(d: int, sector: int) -> list[int]:
    """Two equal sectors for small d, else sectors of `sector` leaves (the last one shorter)."""
    if d < 2 * sector:
        return [d // 2, d - d // 2]
    sizes = [sector] * (d // sector)
    if d % sector:
        sizes.append(d % sector)
    return sizes


def _bench_case(d: int, sector: int, theta0: float, rng) -> tuple[M.Node, dict, list[int], list[float]]:
    from . import method as M

    sizes = _sectors(d, sector)
    thetas = [theta0 + 0.5 + 0.25 * (s % 4) for s in range(len(sizes))]
    root = M.two_level("clayton", sizes, theta0, thetas)
    return root, M.generators_from_thetas(root), sizes, thetas


def _time(fn, repeats: int, clock=time.perf_counter) -> tuple[float, object, list[float]]:
    """Best time of `repeats` calls by `clock` (wall time by default), the last output and every
    call's time."""
    times, out = [], None
    for _ in range(repeats):
        start = clock()
        out = fn()
        times.append(clock() - start)
    return min(times), out, times


# ---------------------------------------------------------------- speed
def measure_speed(cfg: dict, on_dim=None) -> tuple[dict, dict]:
    """Per-density seconds of ours / the two nacLL ports (vectorised; dnac.R's per-element
    products) / naive autograd for each d, and the largest log-density disagreement between
    them; `timing["ours_repeats"]`, `["nacll_repeats"]` and `["nacll_r_repeats"]` keep every
    repeat (the replicates of the speedups).
    `on_dim(d, timing)` is called per d."""
    import torch

    from . import baselines as B
    from . import method as M

    rng = np.random.default_rng(int(cfg["seed"]))
    theta0, sector = float(cfg["theta0"]), int(cfg["sector_size"])
    r_dims = cfg["nacll_r_dims"]
    dims = sorted(set(cfg["naive_dims"]) | set(cfg["nacll_dims"]) | set(r_dims) | set(cfg["ours_dims"]))
    timing = {"ours": {}, "nacll": {}, "nacll_r": {}, "naive": {}, "ours_repeats": {}, "nacll_repeats": {},
              "nacll_r_repeats": {}}
    metrics = {"max_abs_diff_vs_nacll": 0.0, "max_abs_diff_vs_naive": 0.0}
    for d in dims:
        root, gens, sizes, thetas = _bench_case(d, sector, theta0, rng)
        n = int(cfg["rows_small"] if d <= max(cfg["nacll_dims"]) else cfg["rows_large"])
        u = rng.uniform(0.02, 0.98, size=(n, d))
        ut = torch.as_tensor(u)
        with torch.no_grad():
            t_ours, ll, t_all = _time(lambda: M.log_density(root, gens, ut), int(cfg["repeats"]))
        timing["ours"][str(d)] = t_ours / n
        timing["ours_repeats"][str(d)] = [t / n for t in t_all]
        if d in cfg["nacll_dims"]:
            t_nac, ll_nac, every = _time(lambda: B.nacll_log_density("clayton", theta0, thetas, sizes, u), int(cfg["repeats"]))
            timing["nacll"][str(d)] = t_nac / n
            timing["nacll_repeats"][str(d)] = [t / n for t in every]
            metrics["max_abs_diff_vs_nacll"] = max(metrics["max_abs_diff_vs_nacll"],
                                                   float(np.abs(ll.numpy() - ll_nac).max()))
        if d in r_dims:
            m = min(n, int(cfg["rows_nacll_r"]))
            t_r, ll_r, every = _time(lambda: B.nacll_log_density("clayton", theta0, thetas, sizes, u[:m],
                                                              per_element_prod=True), int(cfg["repeats"]))
            timing["nacll_r"][str(d)] = t_r / m
            timing["nacll_r_repeats"][str(d)] = [t / m for t in every]
            metrics["max_abs_diff_vs_nacll"] = max(metrics["max_abs_diff_vs_nacll"],
                                                   float(np.abs(ll[:m].numpy() - ll_r).max()))
        if d in cfg["naive_dims"]:
            m = min(n, int(cfg["rows_naive"]))
            t_nai, ll_nai, _ = _time(lambda: B.naive_log_density(root, gens, ut[:m]), 1)
            timing["naive"][str(d)] = t_nai / m
            metrics["max_abs_diff_vs_naive"] = max(metrics["max_abs_diff_vs_naive"],
                                                   float((ll[:m] - ll_nai).abs().max()))
        metrics[f"mean_loglik_d{d}"] = float(ll.mean())
        if on_dim is not None:
            on_dim(d, timing)
    # the workflow's config always has these sections; a bare timing config (the benchmark script)
    # may leave them out
    if cfg.get("scaling_dims"):
        scaling_series(cfg, rng, timing, on_dim)
    if cfg.get("precision_dim"):
        precision_check(cfg, rng, metrics)
    if cfg.get("grad_dims"):
        gradient_check(cfg, rng, timing, metrics)
    return timing, metrics


def scaling_series(cfg: dict, rng, timing: dict, on_dim=None) -> None:
    """Per-density cost of ours with the same number of rows (`scaling_rows`) at every d in
    `scaling_dims`: the points of the scaling fit (every repeat kept). The cost is the process's
    CPU time (`time.process_time`), which other jobs on a shared machine inflate far less than
    wall time; the wall time is kept beside it."""
    import torch

    from . import method as M

    rows = int(cfg["scaling_rows"])
    timing["scaling"], timing["scaling_repeats"], timing["scaling_wall"] = {}, {}, {}
    for d in cfg["scaling_dims"]:
        root, gens, _, _ = _bench_case(d, int(cfg["sector_size"]), float(cfg["theta0"]), rng)
        ut = torch.as_tensor(rng.uniform(0.02, 0.98, size=(rows, d)))
        start = time.perf_counter()
        with torch.no_grad():
            best, _, every = _time(lambda: M.log_density(root, gens, ut), int(cfg["repeats"]), time.process_time)
        wall = (time.perf_counter() - start) / int(cfg["repeats"])
        timing["scaling"][str(d)] = best / rows
        timing["scaling_repeats"][str(d)] = [t / rows for t in every]
        timing["scaling_wall"][str(d)] = wall / rows
        print(f"scaling d={d:5d} ({rows} rows): {best / rows:.3e} CPU s per density "
              f"(mean wall {wall / rows:.3e} s)", flush=True)
        if on_dim is not None:
            tracking.active().log_metrics({"seconds_per_density_scaling": best / rows}, step=d)


def _unequal_case(d: int, sector: int, theta0: float) -> tuple[list[int], list[float]]:
    """Sectors of `sector` leaves with pairwise different parameters theta0 + 0.4 + 0.3 s."""
    sizes = _sectors(d, sector)
    return sizes, [theta0 + 0.4 + 0.3 * s for s in range(len(sizes))]


def precision_check(cfg: dict, rng, metrics: dict) -> None:
    """Log-densities at d = precision_dim (two-level Clayton, every sector its own theta) against
    the `precision_digits`-digit mpmath evaluation of the closed-form Faa di Bruno sum."""
    import torch

    from . import baselines as B
    from . import method as M

    d, theta0 = int(cfg["precision_dim"]), float(cfg["theta0"])
    sizes, thetas = _unequal_case(d, int(cfg["sector_size"]), theta0)
    root = M.two_level("clayton", sizes, theta0, thetas)
    u = rng.uniform(0.02, 0.98, size=(int(cfg["precision_rows"]), d))
    with torch.no_grad():
        ours = M.log_density(root, M.generators_from_thetas(root), torch.as_tensor(u)).numpy()
    ref = B.mpmath_clayton_log_density(theta0, thetas, sizes, u, dps=int(cfg["precision_digits"]))
    metrics["precision"] = {"d": d, "rows": len(u), "thetas": [theta0, *thetas], "digits": int(cfg["precision_digits"]),
                            "max_abs_diff": float(np.abs(ours - ref).max()),
                            "mean_loglik": float(ref.mean())}
    print(f"precision d={d}: max |ours - mpmath| = {metrics['precision']['max_abs_diff']:.2e}", flush=True)


def _grad_case(d: int, cfg: dict):
    import torch

    from . import method as M

    sizes, thetas = _unequal_case(d, int(cfg["sector_size"]), float(cfg["theta0"]))
    root = M.two_level("clayton", sizes, float(cfg["theta0"]), thetas)
    params = {id(n): torch.tensor(float(n.theta), dtype=torch.float64, requires_grad=True) for n in root.nodes()}
    return root, params


def gradient_check(cfg: dict, rng, timing: dict, metrics: dict) -> None:
    """Gradient of the summed log-likelihood in every theta: time per density of ours (autograd
    through the Taylor-mode density) at `grad_dims`; at `naive_dims` also autograd through the naive
    nested mixed partial, its time and the largest relative gradient difference."""
    import torch

    from . import baselines as B
    from . import method as M

    timing["grad_ours"], timing["grad_naive"] = {}, {}
    metrics["grad_max_rel_diff_vs_naive"] = 0.0
    for d in sorted(set(cfg["grad_dims"]) | set(cfg["naive_dims"])):
        root, params = _grad_case(d, cfg)
        keys = list(params)
        m = int(cfg["rows_naive"]) if d in cfg["naive_dims"] else int(cfg["grad_rows"])
        ut = torch.as_tensor(rng.uniform(0.02, 0.98, size=(m, d)))

        def ours():
            ll = M.log_density(root, M.generators_from_thetas(root, params), ut, check=False).sum()
            return torch.stack(torch.autograd.grad(ll, [params[k] for k in keys]))

        t_ours, g_ours, _ = _time(ours, int(cfg["repeats"]))
        timing["grad_ours"][str(d)] = t_ours / m
        if d in cfg["naive_dims"]:
            def naive():
                ll = B.naive_log_density(root, M.generators_from_thetas(root, params), ut, differentiable=True).sum()
                return torch.stack(torch.autograd.grad(ll, [params[k] for k in keys]))

            t_nai, g_nai, _ = _time(naive, 1)
            timing["grad_naive"][str(d)] = t_nai / m
            rel = float(((g_ours - g_nai).abs() / g_nai.abs().clamp_min(1.0)).max())
            metrics["grad_max_rel_diff_vs_naive"] = max(metrics["grad_max_rel_diff_vs_naive"], rel)
        print(f"gradient d={d:4d}: ours {t_ours / m:.3e} s per density"
              + (f", naive autograd {timing['grad_naive'][str(d)]:.3e}" if str(d) in timing["grad_naive"] else ""),
              flush=True)


def speed(params, inputs, out: Path):
    """Per-density time against d: ours, the nacLL port and naive autograd, on two-level
    nested Clayton copulas; agreement of the three log-densities where they overlap."""
    def report(d, timing):
        best = {k: v[str(d)] for k, v in timing.items() if k in CURVES and str(d) in v}
        tracking.active().log_metrics({f"seconds_per_density_{k}": v for k, v in best.items()}, step=d)
        print(f"d={d:5d} " + "  ".join(f"{k}={v:.3e}s" for k, v in best.items()), flush=True)

    timing, metrics = measure_speed(params["speed"], report)
    io.write_json(out / "metrics.json", metrics)
    io.write_json(out / "timing.json", timing)


def loglog_slope(timing: dict[str, float], lo: int, hi: int) -> float:
    ds = sorted(int(d) for d in timing if lo <= int(d) <= hi)
    if len(ds) < 2:
        return float("nan")
    x = np.log([float(d) for d in ds])
    y = np.log([timing[str(d)] for d in ds])
    return float(np.polyfit(x, y, 1)[0])


# ---------------------------------------------------------------- simulation with censoring
def _sim_tree(cfg) -> dict:
    fam, start, children = cfg["family"], 0, []
    for g, (size, th) in enumerate(zip(cfg["group_sizes"], cfg["group_thetas"])):
        children.append({"family": fam, "theta": th, "children": list(range(start, start + size)), "name": f"group{g}"})
        start += size
    return {"family": fam, "theta": cfg["root_theta"], "children": children, "name": "root"}


def _node_taus(root: M.Node, thetas: dict[str, float]) -> dict[str, float]:
    from . import generators as G

    return {n.name: G.make(n.family, thetas[n.name]).tau() for n in root.nodes()}


def simulate(params, inputs, out: Path):
    """Censored MLE on simulated nested data vs ignoring censoring vs a flat copula."""
    import torch

    from . import method as M
    from .sampling import sample

    cfg, seed = params["simulate"], int(params["seed"])
    rng = np.random.default_rng(1000 + seed)
    spec = _sim_tree(cfg)
    truth = M.Node.from_spec(spec)
    gens = M.generators_from_thetas(truth)
    u = sample(truth, gens, int(cfg["n"]), rng)
    # independent censoring in copula scale: U_i is censored when U_i < W_i, W_i ~ U(0, 2 rate)
    w = rng.uniform(0, 2 * float(cfg["censor_rate"]), size=u.shape)
    observed = u >= w
    u_rec = np.where(observed, u, w)
    ut, ot = torch.as_tensor(u_rec), torch.as_tensor(observed)
    true_taus = _node_taus(truth, {n.name: float(n.theta) for n in truth.nodes()})

    def fresh(s):
        node = M.Node.from_spec(s)
        for n in node.nodes():
            n.theta = None
        return node

    results = {}
    fits = {
        "censored_mle": (fresh(spec), ot),
        "ignore_censoring": (fresh(spec), torch.ones_like(ot)),
        "flat_censored_mle": (M.Node(cfg["family"], None, list(range(u.shape[1])), name="root"), ot),
    }
    for name, (tree, obs) in fits.items():
        thetas, ll = M.fit(tree, ut, obs, max_iter=int(cfg["max_iter"]), log_every=10, metric_prefix=f"{name}_")
        taus = _node_taus(tree, thetas)
        # a flat copula has one tau for every pair: compare it with each true node tau
        errs = [abs((taus[n] if n in taus else taus["root"]) - t) for n, t in true_taus.items()]
        results[name] = {"thetas": thetas, "taus": taus, "mean_loglik": ll,
                         "tau_mae": float(np.mean(errs))}
        tracking.active().log_metrics({f"{name}_tau_mae": float(np.mean(errs))})
    metrics = {"seed": seed, "censored_fraction": float(1 - observed.mean()), "true_taus": true_taus,
               "results": results}
    io.write_json(out / "metrics.json", metrics)


# ---------------------------------------------------------------- stocks
def stocks(params, inputs, out: Path):
    """Hierarchical (sector-nested) vs flat copulas of daily stock returns, by LL and AIC."""
    import torch

    from . import method as M

    cfg = params["stocks"]
    if cfg["source"] == "smi":
        returns, tickers, sectors = D.smi_returns()
    else:
        returns, tickers, sectors = D.load_prices(cfg["prices_path"], cfg["sectors_path"])

    def fits(part, log):
        u = torch.as_tensor(D.pseudo_observations(part))
        rows = {}
        for family in cfg["families"]:
            for kind in ("nested", "flat"):
                spec = D.sector_tree_spec(tickers, sectors, family) if kind == "nested" else \
                    {"family": family, "children": list(range(len(tickers))), "name": "market"}
                tree = M.Node.from_spec(spec)
                thetas, ll = M.fit(tree, u, None, max_iter=int(cfg["max_iter"]))
                k = len(tree.nodes())
                total = ll * u.shape[0]
                rows[f"{family}_{kind}"] = {"family": family, "kind": kind, "params": k, "loglik": total,
                                            "aic": 2 * k - 2 * total, "thetas": thetas}
                if log:
                    tracking.active().log_metrics({f"{family}_{kind}_aic": 2 * k - 2 * total})
        return rows

    # replicates: consecutive blocks of days, each with its own pseudo-observations
    blocks = np.array_split(np.arange(returns.shape[0]), int(cfg["parts"]))
    io.write_json(out / "metrics.json", {"n": int(returns.shape[0]), "d": int(returns.shape[1]),
                                         "fits": fits(returns, True),
                                         "parts": [{"n": len(b), "fits": fits(returns[b], False)} for b in blocks],
                                         "sectors": sorted(set(sectors.values()))})


# ---------------------------------------------------------------- survival
def survival(params, inputs, out: Path):
    """Family-agnostic censored MLE: every family in the config on one censored data set."""
    import torch

    from . import generators as G
    from . import method as M

    cfg = params["survival"]
    if cfg["source"] == "recur":
        times, events, names = D.recur_clusters(int(cfg["recur_gaps"]))
    else:
        times, events, names = D.load_survival_table(cfg["survival_path"])
    u, observed = D.survival_to_copula_scale(times, events)
    ut, ot = torch.as_tensor(u), torch.as_tensor(observed)

    def fits(rows_idx, log):
        rows = {}
        for family in cfg["families"]:
            tree = M.Node(family, None, list(range(u.shape[1])), name="root")
            thetas, ll = M.fit(tree, ut[rows_idx], ot[rows_idx], max_iter=int(cfg["max_iter"]))
            total = ll * len(rows_idx)
            rows[family] = {"theta": thetas["root"], "loglik": total, "aic": 2 - 2 * total,
                            "tau": G.make(family, thetas["root"]).tau()}
            if log:
                tracking.active().log_metrics({f"{family}_aic": 2 - 2 * total})
        return rows

    rows = fits(np.arange(u.shape[0]), True)
    # replicates: a random partition of the subjects (margins estimated once on all of them)
    perm = np.random.default_rng(int(cfg["split_seed"])).permutation(u.shape[0])
    parts = [{"n": len(idx), "fits": fits(np.sort(idx), False)} for idx in np.array_split(perm, int(cfg["parts"]))]
    neural = None
    if int(cfg["neural_components"]) > 0:
        k = int(cfg["neural_components"])
        params_nn, ll = M.fit_neural(ut, ot, k, max_iter=int(cfg["max_iter"]))
        total = ll * u.shape[0]
        neural = {"components": k, "params": 2 * k - 1, "loglik": total, "aic": 2 * (2 * k - 1) - 2 * total,
                  **params_nn}
        tracking.active().log_metrics({"neural_aic": neural["aic"], "neural_loglik": total})
    data = (f"lifelines load_recur, first {u.shape[1]} gap times of the {u.shape[0]} subjects with at least "
            f"{u.shape[1]} records" if cfg["source"] == "recur" else str(cfg["survival_path"]))
    io.write_json(out / "metrics.json", {"n": int(u.shape[0]), "d": int(u.shape[1]), "variables": names, "data": data,
                                         "censored_fraction": float(1 - observed.mean()), "fits": rows,
                                         "parts": parts, "neural": neural})


# ---------------------------------------------------------------- tuning
def tuning_records(params: dict, survival_summary: dict) -> list[tuning.Record]:
    """Every knob of the fits the claims compare, and the family each survival part is judged
    with. Nothing is tuned: every maximum-likelihood fit, ours and the baselines' alike (censoring
    ignored, flat copulas, every family), runs the same L-BFGS with a strong-Wolfe line search and
    the same iteration budget of its experiment; the density ports of the speed rows evaluate the
    same closed form and have no knob. The survival row's family is chosen on the other parts of
    the subjects (cross-fitting), never on the part it is then scored on."""
    sim, stk, srv = params["simulate"], params["stocks"], params["survival"]
    line = "torch L-BFGS with a strong-Wolfe line search (lr 1 is the trial step): no learning rate"
    fits = [("nested, censored MLE (ours)", sim["max_iter"], "simulate"),
            ("nested, censoring ignored", sim["max_iter"], "simulate"),
            ("flat, censored MLE", sim["max_iter"], "simulate"),
            ("nested (sector) copula", stk["max_iter"], "stocks"),
            ("flat copula", stk["max_iter"], "stocks"),
            ("every family, censored MLE", srv["max_iter"], "survival")]
    out = []
    for name, max_iter, setting in fits:
        out += [tuning.fixed(name, "step size", "line search", line, setting),
                tuning.fixed(name, "max_iter", max_iter,
                             f"L-BFGS budget, the same for every fit of the {setting} experiment; not tuned", setting)]
    if int(srv["neural_components"]) > 0:
        out += [tuning.fixed("neural generator", "components", srv["neural_components"],
                             "mixture size stated before the run; the row checks the fit, it compares with no baseline",
                             "survival"),
                tuning.fixed("neural generator", "max_iter", srv["max_iter"], "the survival experiment's L-BFGS budget",
                             "survival")]
    out.append(tuning.fixed("nacLL ports, naive autograd", "none", "exact evaluation",
                            "the speed baselines evaluate the same density in closed form: no knob", "speed"))
    choices = paper_claims.family_choices(survival_summary) if "clayton" in survival_summary["families"] else []
    for k, (chosen, scores) in enumerate(choices):
        out.append(tuning.Record("family-agnostic censored MLE", "family", "choice", list(scores),
                                 [scores[f] for f in scores], chosen, scores[chosen], "AIC summed over the other parts",
                                 "lower", setting=f"survival part {k}", split="the other parts of the subjects",
                                 note="Clayton (the baseline) and failed fits excluded; chosen before the part's own "
                                      "AIC is read"))
    return out


# ---------------------------------------------------------------- figures and claims
def figures(params, inputs, out: Path):
    figdir = out / "figures"
    speed_m = io.read_json(inputs["speed"] / "metrics.json")
    timing = io.read_json(inputs["speed"] / "timing.json")
    sims = [io.read_json(inputs["simulate"] / f"seed{s}" / "metrics.json") for s in params["seeds"]]
    stock = io.read_json(inputs["stocks"] / "metrics.json")
    surv = io.read_json(inputs["survival"] / "metrics.json")
    scfg = params["speed"]
    scale = params["scale"]

    # speed figure
    fig, axes = plotting.figure()
    ax = axes[0][0]
    for key, label in (("ours", "acopula (ours, PyTorch)"),
                       ("nacll_r", "nacLL port, dnac.R structure (per-element products)"),
                       ("nacll", "nacLL port, vectorised numpy (stronger)"),
                       ("naive", "naive nested autograd"),
                       ("scaling", f"acopula (ours), {scfg['scaling_rows']} rows at every d, CPU time (scaling fit)")):
        ds = sorted(int(d) for d in timing[key])
        if ds:
            ax.plot(ds, [timing[key][str(d)] for d in ds], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dimension d (two-level nested Clayton)")
    ax.set_ylabel("seconds per density evaluation")
    ax.set_title("Per-density time against dimension")
    ax.legend(loc="lower right", fontsize=8)
    plotting.save(fig, figdir / "speed.png")

    # censoring figure
    methods = ["censored_mle", "ignore_censoring", "flat_censored_mle"]
    labels = {"censored_mle": "nested, censored MLE (ours)", "ignore_censoring": "nested, censoring ignored",
              "flat_censored_mle": "flat, censored MLE"}
    mae = {m: [s["results"][m]["tau_mae"] for s in sims] for m in methods}
    fig, axes = plotting.figure()
    ax = axes[0][0]
    for i, m in enumerate(methods):
        ax.scatter([i] * len(mae[m]), mae[m], alpha=0.6)
        ax.bar(i, np.mean(mae[m]), alpha=0.4, label=f"{labels[m]} (n={len(mae[m])})")
    ax.set_xticks(range(len(methods)), ["censored", "ignored", "flat"])
    ax.set_ylabel("mean |tau_hat - tau| over nodes")
    ax.set_title(f"Simulated nested data, {100 * np.mean([s['censored_fraction'] for s in sims]):.0f}% censored")
    ax.legend()
    plotting.save(fig, figdir / "censoring.png")

    # stocks figure
    fig, axes = plotting.figure()
    ax = axes[0][0]
    fams = sorted({r["family"] for r in stock["fits"].values()})
    for j, kind in enumerate(("nested", "flat")):
        ax.bar(np.arange(len(fams)) + 0.4 * j, [stock["fits"][f"{f}_{kind}"]["aic"] for f in fams], width=0.4,
               label=f"{kind} ({'sectors' if kind == 'nested' else 'one parameter'})")
    ax.set_xticks(np.arange(len(fams)) + 0.2, fams)
    ax.set_ylabel("AIC (lower is better)")
    ax.set_title(f"Stock returns, d={stock['d']}, n={stock['n']}")
    ax.legend()
    plotting.save(fig, figdir / "stocks.png")

    # survival figure
    fig, axes = plotting.figure(width=7)
    ax = axes[0][0]
    fams_s = list(surv["fits"])
    aics = [surv["fits"][f]["aic"] for f in fams_s]
    if surv.get("neural"):
        fams_s.append(f"neural (K={surv['neural']['components']})")
        aics.append(surv["neural"]["aic"])
    finite = [a for a in aics if np.isfinite(a)]
    ok = [i for i, a in enumerate(aics) if np.isfinite(a)]
    failed = [i for i, a in enumerate(aics) if not np.isfinite(a)]
    # AIC bars start at the best AIC minus a margin, so that differences are visible; a family whose
    # fit has log-likelihood -inf gets no bar but a marked "failed fit" slot
    floor = (min(finite) - 0.1 * (max(finite) - min(finite) + 1.0)) if finite else 0.0
    ax.bar(ok, [aics[i] - floor for i in ok], bottom=floor, color="#1f77b4", label="finite fit")
    if failed:
        top = max(finite) if finite else 1.0
        ax.scatter(failed, [floor] * len(failed), marker="x", color="red", s=60, zorder=3,
                   label="failed fit (log-likelihood -inf, no AIC)")
        for i in failed:
            ax.text(i, floor + 0.05 * (top - floor + 1.0), "failed fit", rotation=90, ha="center", va="bottom",
                    fontsize=7, color="red")
    ax.set_xticks(range(len(fams_s)), fams_s, rotation=45)
    ax.legend(fontsize=7)
    ax.set_ylabel("AIC (lower is better; bars from below the best)")
    ax.set_title(f"Censored MLE across families ({100 * surv['censored_fraction']:.0f}% censored, n={surv['n']})")
    plotting.save(fig, figdir / "survival.png")

    # summary table
    d_ref = int(scfg["speedup_dim"])
    ours_ref = timing["ours"].get(str(d_ref), float("nan"))
    nac_ref = timing["nacll"].get(str(d_ref), float("nan"))
    nac_r_ref = timing["nacll_r"].get(str(d_ref), float("nan"))
    speedup, speedup_r = nac_ref / ours_ref, nac_r_ref / ours_ref
    slope = loglog_slope(timing["scaling"], int(scfg["slope_range"][0]), int(scfg["slope_range"][1]))
    columns = {"ours": "ours", "nacll_port_r_structure": "nacll_r", "nacll_port_vectorised": "nacll",
               "naive_autograd": "naive"}
    summary = [{"item": f"seconds per density, d={d}",
                **{col: timing[key].get(str(d), "") for col, key in columns.items()}}
               for d in sorted({int(x) for k in CURVES for x in timing[k]})]
    summary += [{"item": f"tau MAE ({m})", "ours": claims.fmt(mae[m])} for m in methods]
    summary += [{"item": f"AIC stocks {k}", "ours": f"{v['aic']:.2f}"} for k, v in stock["fits"].items()]
    summary += [{"item": f"AIC survival {k}", "ours": f"{v['aic']:.2f}" if math.isfinite(v["aic"]) else "failed fit (LL -inf)"}
                for k, v in surv["fits"].items()]
    prec = speed_m["precision"]
    summary += [{"item": f"max |log-density - mpmath {prec['digits']} digits|, d={prec['d']}, unequal thetas",
                 "ours": prec["max_abs_diff"]},
                {"item": "gradient max relative difference vs autograd through the naive formula",
                 "ours": speed_m["grad_max_rel_diff_vs_naive"]}]
    summary += [{"item": f"gradient seconds per density, d={d}", "ours": timing["grad_ours"][d],
                 "naive_autograd": timing["grad_naive"].get(d, "")} for d in sorted(timing["grad_ours"], key=int)]
    summary += [{"item": f"CPU seconds per density, same {scfg['scaling_rows']} rows at every d, d={d}",
                 "ours": timing["scaling"][d]} for d in sorted(timing["scaling"], key=int)]
    summary += [{"item": f"wall seconds per density (mean), same {scfg['scaling_rows']} rows at every d, d={d}",
                 "ours": timing["scaling_wall"][d]} for d in sorted(timing["scaling_wall"], key=int)]
    summary = [{col: r.get(col, "") for col in ["item", *columns]} for r in summary]

    best_fam = max(surv["fits"], key=lambda f: surv["fits"][f]["loglik"])
    neural = surv.get("neural")
    # per-repeat seconds at d_ref (absent from a timing.json written before they were kept)
    ref_repeats = {k: timing.get(f"{k}_repeats", {}).get(str(d_ref)) for k in ("ours", "nacll", "nacll_r")}
    claim_input = {"speed": {"d_ref": d_ref, "speedup_r": speedup_r, "speedup": speedup, "ref_repeats": ref_repeats,
                         "slope_range": scfg["slope_range"], "ours_repeats": timing["scaling_repeats"],
                         "scaling_rows": scfg["scaling_rows"],
                         "max_diff_nacll": speed_m["max_abs_diff_vs_nacll"],
                         "max_diff_naive": speed_m["max_abs_diff_vs_naive"],
                         "precision": prec, "grad_max_rel_diff": speed_m["grad_max_rel_diff_vs_naive"],
                         "grad_ours": timing["grad_ours"], "grad_naive": timing["grad_naive"]},
               "simulate": mae,
               "stocks": {"d": stock["d"], "families": sorted({r["family"] for r in stock["fits"].values()}),
                          "parts": [{k: v["aic"] for k, v in p["fits"].items()} for p in stock["parts"]]},
               "survival": {"families": list(surv["fits"]), "full_aic": {k: v["aic"] for k, v in surv["fits"].items()},
                            "parts": [{k: v["aic"] for k, v in p["fits"].items()} for p in surv["parts"]],
                            "best_family": best_fam, "best_loglik": surv["fits"][best_fam]["loglik"],
                            "data": surv.get("data", ""),
                            "neural_components": neural["components"] if neural else None,
                            "neural_loglik": neural["loglik"] if neural else None}}
    tracking.active().log_metrics({"speedup_at_ref_dim": speedup_r, "speedup_at_ref_dim_vectorised": speedup,
                                   "loglog_slope": slope})
    written = claims.write_tables(out, summary, paper_claims.claim_rows(claim_input, scale))
    records = tuning_records(params, claim_input["survival"])
    return [*written, tuning.write_csv(out / "tuning.csv", paper_claims.P, records)]
