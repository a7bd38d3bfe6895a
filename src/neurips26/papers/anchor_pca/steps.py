"""The steps the CLI calls for anchor_pca: evaluate (one job per experiment, every seed) -> figures.

evaluate fits Anchor PCA over the gamma grid, pooled PCA and maximin PCA on the training
domains of an experiment and measures the explained-variance share on each unseen domain (and,
for simulated data, the largest principal angle to the planted invariant subspace). The gamma
the claims use is chosen per seed and split by held-out-domain validation inside the training
domains (`method.validate_gamma`); the unseen domains play no part in it. Simulated experiments
also sweep the samples per domain (recovery against n). figures plots them against gamma and n
and writes summary.csv and claims.csv.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning
from neurips26.core.io import significant

from . import baselines, data, method
from .claims import ANGLE_TOLERANCE_DEG, claim_rows

P = "anchor_pca"
LABELS = {"simulated": "simulated domains", "wine": "wine (held-out cultivar)",
          "digits": "digits (held-out digit classes)", "gas_sensor": "gas sensor drift (later batches)"}
# What a seed keeps fixed, per kind of experiment (simulated domains are redrawn whole).
HOLDS_FIXED = {"wine": "the wine data and its held-out cultivars (seeds redraw an 80% subsample of the training cultivars)",
               "digits": "the digits data (seeds redraw which classes are unseen and a subsample of the training classes)"}
# Experiments whose seeds change nothing (one fixed split): their seeds are not replicates.
UNREPLICATED = {"gas_sensor": "one fixed split of the gas sensor batches: the seeds change nothing"}


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
    if kind == "digits":
        return [data.digits_domains(settings["train_classes"], settings["subsample"],
                                    np.random.default_rng([int(settings.get("data_seed", 0)), int(seed), 7]))]
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


def run_seed(settings: dict, gammas: list[float], maximin_iters: int, seed: int,
             extensions: int = tuning.DEFAULT_EXTENSIONS) -> dict:
    k = settings["k"]
    per_split = []
    for split in _splits(settings, seed):
        covs, weights = method.domain_covariances(split.train)
        test_covs, _ = method.domain_covariances(split.test)
        V_max, info = baselines.maximin_pca(covs, k, iterations=maximin_iters)
        chosen, grid, scores, used = method.tune_gamma(split.train, k, gammas, settings["validation"], extensions)
        other = "mean" if settings["validation"] == "worst" else "worst"
        chosen_other, grid_other, scores_other, used_other = method.tune_gamma(split.train, k, gammas, other,
                                                                               extensions)
        per_split.append({
            "gamma_tuning": [{"criterion": settings["validation"], "grid": grid, "scores": scores, "chosen": chosen,
                              "extensions": used},
                             {"criterion": other, "grid": grid_other, "scores": scores_other, "chosen": chosen_other,
                              "extensions": used_other}],
            "baseline_validation": baselines.held_out_domain_scores(split.train, k, maximin_iters),
            "validated_other": _measure(method.anchor_pca(covs, weights, k, chosen_other), split, test_covs),
            "chosen_gamma_other": chosen_other,
            "anchor": [_measure(method.anchor_pca(covs, weights, k, g), split, test_covs) for g in gammas],
            "validated": _measure(method.anchor_pca(covs, weights, k, chosen), split, test_covs),
            "chosen_gamma": chosen, "validation_scores": scores,
            "pooled": _measure(baselines.pooled_pca(covs, weights, k), split, test_covs),
            "maximin": _measure(V_max, split, test_covs),
            "maximin_duality_gap": info["dual_bound"] - info["relaxed_value"],
            "train_domains": len(split.train),
        })

    def summarise(items: list[dict]) -> dict:
        shares = [s for item in items for s in item["shares"]]
        out = {"mean_share": significant(np.mean(shares)), "worst_share": significant(np.min(shares)),
               "shares": [significant(s) for s in shares]}
        if "angle" in items[0]:
            out["angle_deg"] = significant(np.mean([item["angle"] for item in items]))
        return out

    anchor = [summarise([sp["anchor"][i] for sp in per_split]) for i in range(len(gammas))]
    result = {
        "seed": seed,
        "anchor": {key: [a[key] for a in anchor] for key in anchor[0]},
        "validated": summarise([sp["validated"] for sp in per_split]),
        "chosen_gamma": [sp["chosen_gamma"] for sp in per_split],
        "validated_other": summarise([sp["validated_other"] for sp in per_split]),
        "chosen_gamma_other": [sp["chosen_gamma_other"] for sp in per_split],
        "validation_scores": [[significant(v) for v in sp["validation_scores"]] for sp in per_split],
        "gamma_tuning": [sp["gamma_tuning"] for sp in per_split],
        # per baseline, the held-out-domain validation share (mean / worst over left-out training
        # domains), averaged over the seed's splits: what the strongest baseline is named by
        "baseline_validation": {b: {c: significant(np.mean([sp["baseline_validation"][b][c] for sp in per_split]))
                                    for c in ("mean", "worst")} for b in ("pooled", "maximin")},
        "pooled": summarise([sp["pooled"] for sp in per_split]),
        "maximin": summarise([sp["maximin"] for sp in per_split]),
        "maximin_duality_gap": significant(max(sp["maximin_duality_gap"] for sp in per_split)),
        "unseen_domains": sum(len(sp["pooled"]["shares"]) for sp in per_split),
        "train_domains": [sp["train_domains"] for sp in per_split],
    }
    if settings["kind"] == "simulated" and settings.get("sample_sweep"):
        result["sample_sweep"] = sample_sweep(settings, gammas, seed)
    for i, g in enumerate(gammas):
        tracking.active().log_metrics({f"seed{seed}/anchor_mean_share": anchor[i]["mean_share"],
                                       f"seed{seed}/anchor_worst_share": anchor[i]["worst_share"]}, step=i)
    return result


def sample_sweep(settings: dict, gammas: list[float], seed: int) -> dict:
    """Recovery against the samples per domain: fresh simulated domains at each n (same law),
    the largest principal angle to the planted subspace of Anchor PCA at its validated gamma and
    of pooled PCA."""
    out = {"n": [], "anchor_angle": [], "pooled_angle": [], "chosen_gamma": []}
    k = settings["k"]
    for n in settings["sample_sweep"]:
        rng = np.random.default_rng([int(settings.get("data_seed", 0)), int(seed), int(n), 11])
        split = data.simulate(settings["p"], k, settings["invariant_variances"], settings["spurious_pool"],
                              settings["inflated_per_domain"], tuple(settings["inflation"]),
                              settings["train_domains"], 1, int(n), rng)
        covs, weights = method.domain_covariances(split.train)
        chosen, _ = method.validate_gamma(split.train, k, gammas, settings["validation"])
        out["n"].append(int(n))
        out["chosen_gamma"].append(chosen)
        out["anchor_angle"].append(significant(method.largest_principal_angle(
            method.anchor_pca(covs, weights, k, chosen), split.planted)))
        out["pooled_angle"].append(significant(method.largest_principal_angle(
            baselines.pooled_pca(covs, weights, k), split.planted)))
    return out


# ---------------------------------------------------------------- evaluate
def evaluate(params, inputs, out: Path):
    """Every seed of one experiment: Anchor PCA over the gamma grid, pooled and maximin PCA."""
    from threadpoolctl import threadpool_limits

    settings = {**params["variant_settings"], "gas_dir": params["data"].get("gas_dir"),
                "validation": params.get("validation", "worst")}
    with threadpool_limits(limits=int(params.get("threads", 1))):
        ext = tuning.settings(params)["extensions"]
        seeds = [run_seed(settings, params["gammas"], params["maximin_iterations"], s, ext) for s in params["seeds"]]
    io.write_json(out / "metrics.json", {"experiment": params["variant"], "settings": settings,
                                         "gammas": params["gammas"], "maximin_iterations": params["maximin_iterations"],
                                         "seeds": seeds})
    return [out / "metrics.json"]


def _train_domains(settings: dict) -> int:
    """Training domains per split, from the experiment's settings (for metrics written before the
    evaluate step recorded them)."""
    kind = settings["kind"]
    if kind == "simulated":
        return int(settings["train_domains"])
    if kind == "wine":
        return 2  # three cultivars, one held out
    if kind == "digits":
        return int(settings["train_classes"])
    return len(settings["train_batches"])


# ---------------------------------------------------------------- figures
def _baseline_band(ax, values, label, color):
    """A baseline that does not depend on gamma: its mean over seeds as a dashed line and its
    min-max over seeds as a band."""
    v = np.asarray(values, float)
    ax.axhspan(float(v.min()), float(v.max()), color=color, alpha=0.15, lw=0)
    ax.axhline(float(v.mean()), color=color, ls="--", lw=1.2, label=f"{label} (n={len(v)}; band min-max)")


def figures(params, inputs, out: Path):
    experiments, scale = params["run_variants"], params["scale"]
    runs = {e: io.read_json(inputs["evals"] / e / "metrics.json") for e in experiments}
    figdir = out / "figures"
    gammas = params["gammas"]
    # gamma = 0 is drawn at the left end of the log axis
    xs = [g if g > 0 else min(x for x in gammas if x > 0) / 4 for g in gammas]
    x_of = dict(zip(gammas, xs))

    def gamma_axis(ax):
        ax.set_xscale("log")
        ax.set_xticks(xs, [f"{g:g}" for g in gammas], minor=False)
        ax.set_xticks([], minor=True)
        ax.set_xlabel("gamma (log scale; leftmost: gamma = 0, pooled PCA)", fontsize=9)

    def chosen_marks(ax, seeds):
        chosen = [g for s in seeds for g in s["chosen_gamma"]]
        for g in sorted(set(chosen)):
            ax.axvline(x_of[g], color="#888888", ls=":", lw=1 + chosen.count(g) / len(chosen) * 2)
        ax.plot([], [], color="#888888", ls=":", label="gamma chosen by validation (width: share of seeds)")

    # principal angles to the planted subspace (experiments that have one)
    planted = [e for e in experiments if "angle_deg" in runs[e]["seeds"][0]["anchor"]]
    if planted:
        fig, axes = plotting.figure(ncols=len(planted), width=8.5)
        for i, e in enumerate(planted):
            ax, seeds = axes[0, i], runs[e]["seeds"]
            plotting.mean_band(ax, xs, [s["anchor"]["angle_deg"] for s in seeds], "Anchor PCA")
            _baseline_band(ax, [s["pooled"]["angle_deg"] for s in seeds], "pooled PCA", "#d62728")
            _baseline_band(ax, [s["maximin"]["angle_deg"] for s in seeds], "maximin PCA", "#2ca02c")
            chosen_marks(ax, seeds)
            ax.axhline(ANGLE_TOLERANCE_DEG, color="k", lw=0.8, label=f"tolerance {ANGLE_TOLERANCE_DEG:g} deg")
            gamma_axis(ax)
            ax.set_ylabel("largest principal angle to the\nplanted subspace (deg, lower is better)")
            ax.set_title(f"anchor_pca: {LABELS.get(e, e)} ({scale} scale)")
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        plotting.save(fig, figdir / "principal_angles.png")

    # recovery against the samples per domain
    swept = [e for e in planted if "sample_sweep" in runs[e]["seeds"][0]]
    if swept:
        fig, axes = plotting.figure(ncols=len(swept))
        for i, e in enumerate(swept):
            ax, seeds = axes[0, i], runs[e]["seeds"]
            ns = seeds[0]["sample_sweep"]["n"]
            plotting.mean_band(ax, ns, [s["sample_sweep"]["anchor_angle"] for s in seeds],
                               "Anchor PCA (validated gamma)", "#1f77b4")
            plotting.mean_band(ax, ns, [s["sample_sweep"]["pooled_angle"] for s in seeds], "pooled PCA", "#d62728")
            ax.axhline(ANGLE_TOLERANCE_DEG, color="k", lw=0.8, label=f"tolerance {ANGLE_TOLERANCE_DEG:g} deg")
            ax.set_xscale("log")
            ax.set_xticks(ns, [str(n) for n in ns])
            ax.minorticks_off()
            ax.set_yscale("log")
            ax.set_xlabel("samples per domain (log scale)")
            ax.set_ylabel("largest principal angle to the\nplanted subspace (deg, log scale)")
            ax.set_title(f"anchor_pca: recovery vs n, {LABELS.get(e, e)} ({scale} scale)", fontsize=10)
            ax.legend(fontsize=7, loc="best")
        plotting.save(fig, figdir / "recovery_vs_n.png")

    # explained variance on unseen domains, mean and worst case, against gamma
    fig, axes = plotting.figure(ncols=2, nrows=len(experiments), height=3.4, width=5.6)
    for r, e in enumerate(experiments):
        seeds = runs[e]["seeds"]
        for c, (key, what) in enumerate((("mean_share", "mean"), ("worst_share", "worst case"))):
            ax = axes[r, c]
            plotting.mean_band(ax, xs, [s["anchor"][key] for s in seeds], "Anchor PCA")
            _baseline_band(ax, [s["pooled"][key] for s in seeds], "pooled PCA", "#d62728")
            _baseline_band(ax, [s["maximin"][key] for s in seeds], "maximin PCA", "#2ca02c")
            chosen_marks(ax, seeds)
            gamma_axis(ax)
            ax.set_ylabel(f"{what} explained-variance share\non unseen domains (higher is better)")
            ax.set_title(f"{LABELS.get(e, e)}: {what}", fontsize=10)
        axes[r, 1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(f"anchor_pca: explained variance on unseen domains vs gamma ({scale} scale)")
    plotting.save(fig, figdir / "unseen_variance.png")

    rows, summary, records = [], {"experiments": {}}, []
    for e in experiments:
        seeds = runs[e]["seeds"]
        best_mean = int(np.argmax(np.mean([s["anchor"]["mean_share"] for s in seeds], axis=0)))
        chosen = [g for s in seeds for g in s["chosen_gamma"]]
        crit = runs[e]["settings"].get("validation", "worst")
        names = {"validated": f"anchor (gamma by validation, {crit} held-out share)",
                 "validated_other": f"anchor (gamma by validation, {'mean' if crit == 'worst' else 'worst'} held-out share)",
                 "pooled": "pooled", "maximin": "maximin"}
        for name in names:
            vals = {key: [s[name][key] for s in seeds] for key in seeds[0][name] if key != "shares"}
            gam = {"validated": "chosen_gamma", "validated_other": "chosen_gamma_other"}.get(name)
            rows.append({"experiment": e, "method": names[name],
                         **{key: claims.fmt(v) for key, v in sorted(vals.items())},
                         "unseen_domains_per_seed": seeds[0]["unseen_domains"],
                         "chosen_gammas": " ".join(f"{g:g}" for s in seeds for g in s[gam]) if gam else "",
                         "best_gamma_on_unseen_for_mean_share": gammas[best_mean]})
        kind = runs[e]["settings"]["kind"]
        entry = {
            "label": LABELS.get(e, e), "holds_fixed": HOLDS_FIXED.get(kind, ""), "unreplicated": UNREPLICATED.get(kind, ""),
            "chosen_gamma": chosen,
            **{b: {key: [s[b][key] for s in seeds] for key in seeds[0][b]} for b in ("pooled", "maximin")},
            "anchor": {key: [s["validated"][key] for s in seeds] for key in seeds[0]["validated"]},
            # the first validation criterion, kept as a row of its own (claims.yaml, history)
            "anchor_other": {key: [s["validated_other"][key] for s in seeds] for key in seeds[0]["validated_other"]},
            "chosen_gamma_other": [g for s in seeds for g in s["chosen_gamma_other"]],
            "train_domains": min(d for s in seeds for d in s.get("train_domains", [_train_domains(runs[e]["settings"])]))}
        if "sample_sweep" in seeds[0]:
            sw = [s["sample_sweep"] for s in seeds]
            entry["sample_sweep"] = {"n": sw[0]["n"], "anchor_angle": [x["anchor_angle"] for x in sw],
                                     "pooled_angle": [x["pooled_angle"] for x in sw]}
            for j, n in enumerate(sw[0]["n"]):
                rows.append({"experiment": f"{e} (samples per domain = {n})", "method": "anchor (gamma by validation)",
                             "angle_deg": claims.fmt([x["anchor_angle"][j] for x in sw]),
                             "chosen_gammas": " ".join(f"{x['chosen_gamma'][j]:g}" for x in sw)})
                rows.append({"experiment": f"{e} (samples per domain = {n})", "method": "pooled",
                             "angle_deg": claims.fmt([x["pooled_angle"][j] for x in sw])})
        recs, entry["strongest"] = experiment_tuning(e, runs[e])
        entry["method_capped"] = tuning.capped_note(recs, f"Anchor PCA ({crit} held-out share)")
        records += recs
        summary["experiments"][e] = entry
    tuning.write_csv(out / "tuning.csv", P, records)
    return claims.write_tables(out, rows, claim_rows(summary, scale))


def gamma_record(e: str, seed, split: int, splits: int, t: dict) -> tuning.Record:
    """One validated gamma as the tuning protocol records it (the grid holds gamma = 0, pooled
    PCA, its natural lower end, so it is extended at its top edge only: method.tune_gamma)."""
    grid, scores, chosen = t["grid"], t["scores"], t["chosen"]
    status, edge, note = "tuned", "", ""
    if len(set(round(v, 12) for v in scores)) == 1:
        note = "every gamma scores the same (fewer than 3 training domains): the smallest gamma"
    elif chosen == grid[-1]:
        status, edge = "capped", "high"
        note = f"best on the high edge after {t['extensions']} extension(s)"
    elif chosen == grid[0] == 0:
        note = "gamma = 0 (pooled PCA) is the grid's natural lower end"
    return tuning.Record(f"Anchor PCA ({t['criterion']} held-out share)", "gamma", status, list(grid), list(scores),
                         chosen, max(scores), f"{t['criterion']} held-out-domain explained-variance share", "higher",
                         edge, t["extensions"], e + (f", split {split + 1} of {splits}" if splits > 1 else ""), seed,
                         "held-out training domains", note)


def experiment_tuning(e: str, run: dict) -> tuple[list, dict]:
    """The gamma records, the fixed knobs and, per seed, the strongest baseline of the mean and the
    worst-case rows, named on held-out-domain validation inside the training domains."""
    records = [tuning.fixed("maximin PCA", "iterations", run.get("maximin_iterations", ""),
                            "the solver's iteration budget (anchor_pca.maximin_iterations), not a modelling knob",
                            setting=e)]
    strongest = {"mean_share": [], "worst_share": []}
    for s in run["seeds"]:
        for i, pair in enumerate(s.get("gamma_tuning", [])):
            records += [gamma_record(e, s["seed"], i, len(s["gamma_tuning"]), t) for t in pair]
        val = s.get("baseline_validation")
        if not val:
            strongest = {}
            continue
        for key, crit in (("mean_share", "mean"), ("worst_share", "worst")):
            name, rec = tuning.strongest({b: val[b][crit] for b in ("pooled", "maximin")},
                                         candidates=["pooled", "maximin"], setting=f"{e}: unseen-domain {crit} share",
                                         metric=f"{crit} held-out-domain explained-variance share", seed=s["seed"],
                                         split="held-out training domains")
            strongest[key].append(name)
            records.append(rec)
    return records, strongest
