"""The steps the CLI calls for anchor_pca: evaluate (one job per experiment, every seed) -> figures.

evaluate fits Anchor PCA over the gamma grid, pooled PCA and maximin PCA on the training
domains of an experiment and measures the explained-variance share on each unseen domain (and,
for simulated data, the largest principal angle to the planted invariant subspace). figures
plots them against gamma and writes summary.csv and claims.csv.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking

from . import baselines, data, method
from .claims import claim_rows

P = "anchor_pca"
LABELS = {"simulated": "simulated domains", "wine": "wine (held-out cultivar)",
          "gas_sensor": "gas sensor drift (later batches)"}
# What a seed keeps fixed, per kind of experiment (simulated domains are redrawn whole).
HOLDS_FIXED = {"wine": "the wine data and its held-out cultivars (seeds redraw an 80% subsample of the training cultivars)"}
# Experiments whose seeds change nothing (one fixed split): their seeds are not replicates.
UNREPLICATED = {"gas_sensor": "one fixed split of the gas sensor batches: the seeds change nothing"}


def _round(x: float, digits: int = 10) -> float:
    x = float(x)
    return x if not np.isfinite(x) or x == 0.0 else float(f"{x:.{digits}g}")


def _splits(settings: dict, seed: int) -> list[data.MultiDomainData]:
    """The train/unseen splits of one seed: one for simulated and gas sensor data, one per
    held-out cultivar for wine."""
    kind = settings["kind"]
    if kind == "simulated":
        rng = np.random.default_rng([int(settings.get("data_seed", 0)), int(seed)])
        return [data.simulate(settings["p"], settings["k"], settings["invariant_variances"],
                              settings["spurious_pool"], settings["inflated_per_domain"],
                              tuple(settings["inflation"]), settings["train_domains"],
                              settings["test_domains"], settings["samples_per_domain"], rng)]
    if kind == "wine":
        return [data.wine_domains(h, settings["subsample"], np.random.default_rng([int(seed), h]))
                for h in range(3)]
    if kind == "gas_sensor":
        if not settings.get("gas_dir"):
            raise ValueError("config key 'anchor_pca.data.gas_dir': the folder of batch*.dat files is not set")
        return [data.gas_sensor_domains(settings["gas_dir"], settings["train_batches"], settings["test_batches"])]
    raise ValueError(f"config key 'anchor_pca.variants.*.kind': unknown experiment kind {kind!r}")


def _measure(V: np.ndarray, split: data.MultiDomainData, test_covs) -> dict:
    shares = [method.explained_fraction(V, S) for S in test_covs]
    out = {"shares": shares}
    if split.planted is not None:
        out["angle"] = method.largest_principal_angle(V, split.planted)
    return out


def run_seed(settings: dict, gammas: list[float], maximin_iters: int, seed: int) -> dict:
    k = settings["k"]
    per_split = []
    for split in _splits(settings, seed):
        covs, weights = method.domain_covariances(split.train)
        test_covs, _ = method.domain_covariances(split.test)
        V_max, info = baselines.maximin_pca(covs, k, iterations=maximin_iters)
        per_split.append({
            "anchor": [_measure(method.anchor_pca(covs, weights, k, g), split, test_covs) for g in gammas],
            "pooled": _measure(baselines.pooled_pca(covs, weights, k), split, test_covs),
            "maximin": _measure(V_max, split, test_covs),
            "maximin_duality_gap": info["dual_bound"] - info["relaxed_value"],
        })

    def summarise(items: list[dict]) -> dict:
        shares = [s for item in items for s in item["shares"]]
        out = {"mean_share": _round(np.mean(shares)), "worst_share": _round(np.min(shares)),
               "shares": [_round(s) for s in shares]}
        if "angle" in items[0]:
            out["angle_deg"] = _round(np.mean([item["angle"] for item in items]))
        return out

    anchor = [summarise([sp["anchor"][i] for sp in per_split]) for i in range(len(gammas))]
    result = {
        "seed": seed,
        "anchor": {key: [a[key] for a in anchor] for key in anchor[0]},
        "pooled": summarise([sp["pooled"] for sp in per_split]),
        "maximin": summarise([sp["maximin"] for sp in per_split]),
        "maximin_duality_gap": _round(max(sp["maximin_duality_gap"] for sp in per_split)),
        "unseen_domains": sum(len(sp["pooled"]["shares"]) for sp in per_split),
    }
    for i, g in enumerate(gammas):
        tracking.active().log_metrics({f"seed{seed}/anchor_mean_share": anchor[i]["mean_share"],
                                       f"seed{seed}/anchor_worst_share": anchor[i]["worst_share"]}, step=i)
    return result


# ---------------------------------------------------------------- evaluate
def evaluate(params, inputs, out: Path):
    """Every seed of one experiment: Anchor PCA over the gamma grid, pooled and maximin PCA."""
    from threadpoolctl import threadpool_limits

    settings = {**params["variant_settings"], "gas_dir": params["data"].get("gas_dir")}
    with threadpool_limits(limits=int(params.get("threads", 1))):
        seeds = [run_seed(settings, params["gammas"], params["maximin_iterations"], s) for s in params["seeds"]]
    io.write_json(out / "metrics.json", {"experiment": params["variant"], "settings": settings,
                                         "gammas": params["gammas"], "seeds": seeds})
    return [out / "metrics.json"]


# ---------------------------------------------------------------- figures
def figures(params, inputs, out: Path):
    experiments, scale, claim_gamma = params["run_variants"], params["scale"], params["claim_gamma"]
    runs = {e: io.read_json(inputs["evals"] / e / "metrics.json") for e in experiments}
    figdir = out / "figures"
    gammas = params["gammas"]
    # gamma = 0 is drawn at the left end of the log axis
    xs = [g if g > 0 else min(x for x in gammas if x > 0) / 4 for g in gammas]

    def gamma_axis(ax):
        ax.set_xscale("log")
        ax.set_xticks(xs, [f"{g:g}" for g in gammas], minor=False)
        ax.set_xticks([], minor=True)
        ax.set_xlabel("gamma (log scale; leftmost point gamma = 0 = pooled PCA)")
    gi = gammas.index(claim_gamma)

    def baseline_line(ax, values, label, color):
        m = float(np.mean(values))
        ax.axhline(m, color=color, ls="--", lw=1.2, label=f"{label} (mean of n={len(values)})")

    # principal angles to the planted subspace (experiments that have one)
    planted = [e for e in experiments if "angle_deg" in runs[e]["seeds"][0]["anchor"]]
    if planted:
        fig, axes = plotting.figure(ncols=len(planted))
        for i, e in enumerate(planted):
            ax, seeds = axes[0, i], runs[e]["seeds"]
            plotting.mean_band(ax, xs, [s["anchor"]["angle_deg"] for s in seeds], "Anchor PCA")
            baseline_line(ax, [s["pooled"]["angle_deg"] for s in seeds], "pooled PCA", "#d62728")
            baseline_line(ax, [s["maximin"]["angle_deg"] for s in seeds], "maximin PCA", "#2ca02c")
            gamma_axis(ax)
            ax.set_ylabel("largest principal angle to the\nplanted subspace (deg, lower is better)")
            ax.set_title(f"anchor_pca: {LABELS.get(e, e)} ({scale} scale)")
            ax.legend()
        plotting.save(fig, figdir / "principal_angles.png")

    # explained variance on unseen domains, mean and worst case, against gamma
    fig, axes = plotting.figure(ncols=2, nrows=len(experiments), height=3.4)
    for r, e in enumerate(experiments):
        seeds = runs[e]["seeds"]
        for c, (key, what) in enumerate((("mean_share", "mean"), ("worst_share", "worst case"))):
            ax = axes[r, c]
            plotting.mean_band(ax, xs, [s["anchor"][key] for s in seeds], "Anchor PCA")
            baseline_line(ax, [s["pooled"][key] for s in seeds], "pooled PCA", "#d62728")
            baseline_line(ax, [s["maximin"][key] for s in seeds], "maximin PCA", "#2ca02c")
            ax.axvline(xs[gi], color="#888888", ls=":", lw=1, label=f"claim gamma = {claim_gamma:g}")
            gamma_axis(ax)
            ax.set_ylabel(f"{what} explained-variance share\non unseen domains (higher is better)")
            ax.set_title(f"{LABELS.get(e, e)}: {what}", fontsize=10)
            ax.legend(fontsize=7)
    fig.suptitle(f"anchor_pca: explained variance on unseen domains vs gamma ({scale} scale)")
    plotting.save(fig, figdir / "unseen_variance.png")

    rows, summary = [], {"claim_gamma": claim_gamma, "experiments": {}}
    for e in experiments:
        seeds = runs[e]["seeds"]
        anchor_at = {key: [s["anchor"][key][gi] for s in seeds] for key in seeds[0]["anchor"] if key != "shares"}
        best_mean = int(np.argmax(np.mean([s["anchor"]["mean_share"] for s in seeds], axis=0)))
        for name, values in (("anchor", anchor_at), ("pooled", None), ("maximin", None)):
            vals = values or {key: [s[name][key] for s in seeds] for key in seeds[0][name] if key != "shares"}
            rows.append({"experiment": e, "method": name if name != "anchor" else f"anchor (gamma={claim_gamma:g})",
                         **{key: claims.fmt(v) for key, v in sorted(vals.items())},
                         "unseen_domains_per_seed": seeds[0]["unseen_domains"],
                         "best_gamma_for_mean_share": gammas[best_mean]})
        kind = runs[e]["settings"]["kind"]
        summary["experiments"][e] = {
            "label": LABELS.get(e, e), "holds_fixed": HOLDS_FIXED.get(kind, ""), "unreplicated": UNREPLICATED.get(kind, ""),
            "anchor": {**anchor_at, "shares": [s["anchor"]["shares"][gi] for s in seeds]},
            **{b: {key: [s[b][key] for s in seeds] for key in seeds[0][b]} for b in ("pooled", "maximin")}}
    columns = list(dict.fromkeys(key for row in rows for key in row))
    io.write_csv(out / "summary.csv", rows, columns)
    claims.write_claims(out / "claims.csv", claim_rows(summary, scale))
    return [*sorted(figdir.glob("*.png")), out / "summary.csv", out / "claims.csv"]
