"""The steps the CLI calls for adap: synthetic (one job per success-function shape, every seed)
and lm (train a tiny LM, sample candidate pools, evaluate) -> figures.

Each evaluation takes training prompts (to tune the baselines' n) and test prompts; for every
verify/generate cost ratio it computes the distribution-aware optimum (exact) and the Monte Carlo
expected cost of ADAP, the tuned fixed best-of-n and the difficulty-adaptive best-of-n.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning
from neurips26.core.io import significant

from . import baselines, method
from . import claims as paper_claims
from .claims import POLICIES

COLORS = {"adap": "#1f77b4", "fixed_n": "#ff7f0e", "difficulty": "#2ca02c"}


def synthetic_prompt(settings: dict, difficulty: float) -> method.Instance:
    """Scores on a grid, N(-shift * d, 1); success sigmoid(slope (s - offset - spread d)) (monotone) or a
    bump around the typical score whose highest scores rarely pass (non-monotone)."""
    s = np.linspace(-5.0, 5.0, settings["grid"])
    centre = -settings["score_shift"] * difficulty
    f = np.exp(-0.5 * (s - centre) ** 2)
    if settings["success"] == "monotone":
        p = 1.0 / (1.0 + np.exp(-settings["slope"] * (s - settings["offset"] - settings["spread"] * difficulty)))
    else:
        peak = settings["peak"] * (1 - 0.8 * difficulty)
        floor = settings["floor"]
        p = peak * (floor + (1 - floor) * np.exp(-0.5 * ((s - centre) / settings["bump_width"]) ** 2))
    return method.Instance(s, f, p)


N_CAP = 1024  # the largest n the tuning may extend to (config key adap.evaluation.n_cap)


def _n_records(records: list, grid_floor: int) -> list:
    """n = 1 is the smallest n there is: a choice on that edge is interior to every possible grid,
    not a cap (the protocol's search records a knob's bound as a cap)."""
    for r in records:
        if r.status == "capped" and r.edge == "low" and r.chosen == grid_floor == 1:
            r.status, r.edge = "tuned", ""
            r.note = "n = 1 is the smallest n: the grid is complete on its low side"
    return records


def tune_n(cost_of, grid, *, method: str, setting: str, seed, extensions: int, cap: int, split: str):
    """The cost-minimising n on training prompts by the tuning protocol: the config grid, extended
    (doubling) while the best n sits on its top edge, up to `extensions` steps and n <= cap."""
    chosen, recs = tuning.search(lambda n: cost_of(int(n)), {"n": list(grid)}, method=method, setting=setting,
                                 metric="mean cost on training prompts (units of c_g)", maximize=False,
                                 extensions=extensions, integer=["n"], bounds={"n": (1, cap)}, seed=seed,
                                 split=split)
    return int(chosen["n"]), _n_records(recs, int(min(grid)))


def evaluate_prompts(train: list, test: list, cfg: dict, rng: np.random.Generator, *, setting: str = "",
                     seed=0, extensions: int = tuning.DEFAULT_EXTENSIONS) -> dict:
    """Both baselines' n are tuned on the training prompts (train_runs Monte Carlo runs each) by the
    tuning protocol; the test prompts are scored with the chosen values."""
    grid = [int(n) for n in cfg["n_grid"]]
    cap = int(cfg.get("n_cap", N_CAP))
    split = f"training prompts ({len(train)}, {cfg['train_runs']} runs each)"
    out = {"cost_ratios": cfg["cost_ratios"], "per_ratio": []}
    for ratio in cfg["cost_ratios"]:
        c_g, c_v = 1.0, float(ratio)
        reuse = bool(cfg.get("reuse_probe", True))
        where = f"{setting + ', ' if setting else ''}c_v/c_g = {float(ratio):g}"
        # the config grid first, in the order it was always drawn; n past its edge on demand
        fixed_cost = {(i, n): baselines.best_of_n_cost(inst, n, c_g, c_v, cfg["train_runs"], rng).mean()
                      for i, inst in enumerate(train) for n in grid}
        # the difficulty-adaptive bins are tuned on what they pay: probe + best-of-n (probe reused)
        probe_cost = {(i, n): baselines.probe_best_of_n_cost(inst, n, cfg["n_probe"], c_g, c_v, cfg["train_runs"],
                                                             rng, reuse).mean()
                      for i, inst in enumerate(train) for n in grid}
        train_probe = np.array([baselines.probe_score(inst, cfg["n_probe"], rng, 1)[0] for inst in train])

        def fixed_mean(n, prompts=range(len(train))):
            for i in prompts:
                if (i, n) not in fixed_cost:
                    fixed_cost[(i, n)] = baselines.best_of_n_cost(train[i], n, c_g, c_v, cfg["train_runs"], rng).mean()
            return float(np.mean([fixed_cost[(i, n)] for i in prompts]))

        def probe_mean(n, prompts):
            for i in prompts:
                if (i, n) not in probe_cost:
                    probe_cost[(i, n)] = baselines.probe_best_of_n_cost(train[i], n, cfg["n_probe"], c_g, c_v,
                                                                         cfg["train_runs"], rng, reuse).mean()
            return float(np.mean([probe_cost[(i, n)] for i in prompts]))

        fixed_n, records = tune_n(fixed_mean, grid, method=POLICIES["fixed_n"], setting=where, seed=seed,
                                  extensions=extensions, cap=cap, split=split)
        edges = np.quantile(train_probe, np.linspace(0, 1, cfg["bins"] + 1)[1:-1])
        which = np.searchsorted(edges, train_probe)
        bin_n = []
        for b in range(cfg["bins"]):
            members = [int(i) for i in np.flatnonzero(which == b)]
            name = f"{POLICIES['difficulty']}, bin {b + 1} of {cfg['bins']}"
            if not members:
                bin_n.append(grid[0])
                records.append(tuning.fixed(name, "n", grid[0], "no training prompt fell in this bin: the "
                                            "grid's smallest n", setting=where))
                continue
            n_b, recs = tune_n(lambda n, m=members: probe_mean(n, m), grid, method=name, setting=where, seed=seed,
                               extensions=extensions, cap=cap, split=split)
            bin_n.append(n_b)
            records += recs
        rows = []
        for inst in test:
            opt, _ = method.optimal_policy(inst, c_g, c_v)
            costs = {"adap": method.adap_cost(inst, c_g, c_v, cfg["runs"], rng),
                     "fixed_n": baselines.best_of_n_cost(inst, fixed_n, c_g, c_v, cfg["runs"], rng),
                     "difficulty": baselines.difficulty_adaptive_cost(inst, edges, bin_n, cfg["n_probe"], c_g, c_v,
                                                                      cfg["runs"], rng, reuse)}
            rows.append({"optimum": significant(opt, 8), "base_rate": significant(inst.base_rate, 8),
                         **{k: significant(v.mean(), 8) for k, v in costs.items()}})
        summary = {"ratio": ratio, "fixed_n": fixed_n, "bin_n": bin_n,
                   "mean_optimum": significant(np.mean([r["optimum"] for r in rows]), 8)}
        summary["base_rate_min"] = significant(min(r["base_rate"] for r in rows), 8)
        summary["base_rate_max"] = significant(max(r["base_rate"] for r in rows), 8)
        for k in POLICIES:
            summary[f"mean_{k}"] = significant(np.mean([r[k] for r in rows]), 8)
            summary[f"ratio_{k}"] = significant(np.mean([r[k] / r["optimum"] for r in rows]), 8)
            summary[f"max_ratio_{k}"] = significant(np.max([r[k] / r["optimum"] for r in rows]), 8)
        summary["tuning"] = [r.to_json() for r in records]
        out["per_ratio"].append({**summary, "prompts": rows})
    return out


def synthetic(params, inputs, out: Path):
    settings, cfg = params["variant_settings"], params["evaluation"]
    seeds = []
    for seed in params["seeds"]:
        rng = np.random.default_rng([int(seed), 11])
        difficulties = rng.uniform(0, 1, settings["train_prompts"] + settings["test_prompts"])
        prompts = [synthetic_prompt(settings, d) for d in difficulties]
        res = evaluate_prompts(prompts[:settings["train_prompts"]], prompts[settings["train_prompts"]:], cfg, rng,
                               setting=params["variant"], seed=seed,
                               extensions=tuning.settings(params)["extensions"])
        for i, row in enumerate(res["per_ratio"]):
            tracking.active().log_metrics({f"seed{seed}/{k}": row[f"ratio_{k}"] for k in POLICIES}, step=i)
        seeds.append({"seed": seed, **res})
    io.write_json(out / "metrics.json", {"variant": params["variant"], "settings": settings,
                                         "evaluation": cfg, "seeds": seeds})
    return [out / "metrics.json"]


def lm(params, inputs, out: Path):
    """Train the tiny addition LM, sample a candidate pool per held-out problem, evaluate."""
    import torch

    from . import lm as L

    settings, cfg = params["lm"], params["evaluation"]
    torch.set_num_threads(int(params.get("threads", 1)))
    train_pairs, test_pairs = L.split_problems(settings["max_operand"], settings["test_problems"], settings["seed"])
    model = L.train(settings, train_pairs, out, settings["seed"])
    pool = L.sample_pool(model, test_pairs, settings["samples_per_problem"], settings["temperature"], settings["seed"])
    solvable = np.flatnonzero(pool["correct"].any(1))
    if len(solvable) < 4:
        raise ValueError(f"config keys 'adap.lm.steps' / 'adap.lm.samples_per_problem': only {len(solvable)} test "
                         "problems have a correct sampled answer; train longer or sample more")

    def auc_mean(scores):
        """How well a cheap score ranks: AUC of correct against wrong samples, mean over problems."""
        aucs = []
        for i in solvable:
            c, s = pool["correct"][i], scores[i]
            if 0 < c.sum() < len(c):
                pos, neg = s[c], s[~c]
                aucs.append(float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()))
        return significant(np.mean(aucs), 8) if aucs else None

    def run_seeds(scores, stream, tag):
        insts = [L.pool_instance(pool["answers"][i], scores[i], pool["correct"][i]) for i in solvable]
        seeds = []
        for seed in params["seeds"]:
            rng = np.random.default_rng([int(seed), stream])
            perm = rng.permutation(len(insts))
            half = len(insts) // 2
            res = evaluate_prompts([insts[i] for i in perm[:half]], [insts[i] for i in perm[half:]], cfg, rng,
                                   setting="lm_rm" if tag else "lm", seed=seed,
                                   extensions=tuning.settings(params)["extensions"])
            for i, row in enumerate(res["per_ratio"]):
                tracking.active().log_metrics({f"{tag}seed{seed}/{k}": row[f"ratio_{k}"] for k in POLICIES}, step=i)
            seeds.append({"seed": seed, **res})
            print(f"{tag or 'logprob '}seed {seed}: " + ", ".join(
                f"c_v/c_g={r['ratio']:g} ADAP {r['ratio_adap']:.3f}" for r in res["per_ratio"]), flush=True)
        return seeds

    metrics = {"variant": "lm", "settings": settings, "evaluation": cfg,
               "seeds": run_seeds(pool["scores"], 23, ""),
               "test_problems": len(test_pairs), "solvable_problems": int(len(solvable)),
               "sample_accuracy": significant(pool["correct"].mean(), 8),
               "per_problem_accuracy": [significant(x, 8) for x in pool["correct"].mean(1)],
               "score_auc_mean": auc_mean(pool["scores"]), "reward_model": None}
    if settings.get("reward_model", True):
        rm, rm_info = L.train_reward_model(model, train_pairs, settings, settings["seed"])
        rm_scores = L.reward_scores(rm, test_pairs, pool["answers"], settings["max_operand"])
        metrics["reward_model"] = {"seeds": run_seeds(rm_scores, 29, "rm/"), "score_auc_mean": auc_mean(rm_scores),
                                   **rm_info}
    io.write_json(out / "metrics.json", metrics)
    return [out / "metrics.json"]


# ---------------------------------------------------------------- figures
def figures(params, inputs, out: Path):
    variants, scale = params["run_variants"], params["scale"]
    runs = {v: io.read_json(inputs["evals"] / v / "metrics.json") for v in variants}
    if "lm" in runs and runs["lm"].get("reward_model"):
        rm = runs["lm"]["reward_model"]
        runs["lm_rm"] = {**runs["lm"], "variant": "lm_rm", "seeds": rm["seeds"], "score_auc_mean": rm["score_auc_mean"]}
        variants = [*variants, "lm_rm"]
    figdir = out / "figures"
    labels = {"monotone": "synthetic, monotone success", "nonmonotone": "synthetic, NON-monotone success",
              "lm": "tiny LM on addition (log-prob score)", "lm_rm": "tiny LM on addition (reward-model score)"}

    def optimum_label(v):
        # on the LM the answers are distinct atoms that pass with probability 0 or 1: the
        # "distribution-aware" optimum then knows which answers are right
        return "correctness oracle (DP)" if v.startswith("lm") else "distribution-aware optimum (DP)"

    fig, axes = plotting.figure(ncols=len(variants))
    for i, v in enumerate(variants):
        ax, m = axes[0, i], runs[v]
        ratios = m["seeds"][0]["cost_ratios"]
        for k, name in POLICIES.items():
            plotting.mean_band(ax, ratios, [[r[f"ratio_{k}"] for r in s["per_ratio"]] for s in m["seeds"]],
                               name, COLORS[k])
        ax.axhline(1.0, color="k", ls="--", lw=1, label=optimum_label(v))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("verify / generate cost ratio c_v / c_g (log scale)")
        ax.set_ylabel(f"expected cost / {optimum_label(v).split(' (')[0]} (mean over test prompts)")
        ax.set_title(f"{labels.get(v, v)} ({scale})", fontsize=10)
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "cost_ratio.png")

    fig, axes = plotting.figure(ncols=len(variants))
    for i, v in enumerate(variants):
        ax, m = axes[0, i], runs[v]
        ratios = m["seeds"][0]["cost_ratios"]
        plotting.mean_band(ax, ratios, [[r["mean_optimum"] for r in s["per_ratio"]] for s in m["seeds"]],
                           optimum_label(v), "k")
        for k, name in POLICIES.items():
            plotting.mean_band(ax, ratios, [[r[f"mean_{k}"] for r in s["per_ratio"]] for s in m["seeds"]],
                               name, COLORS[k])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("verify / generate cost ratio c_v / c_g (log scale)")
        ax.set_ylabel("mean expected cost per prompt (units of c_g)")
        ax.set_title(f"{labels.get(v, v)} ({scale})", fontsize=10)
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "expected_cost.png")

    rows = []
    for v in variants:
        seeds = runs[v]["seeds"]
        ratios = seeds[0]["cost_ratios"]
        for j, ratio in enumerate(ratios):
            per = [s["per_ratio"][j] for s in seeds]
            rows.append({"variant": v, "cost_ratio": ratio, "optimum": claims.fmt([p["mean_optimum"] for p in per]),
                         **{f"{k}_cost": claims.fmt([p[f"mean_{k}"] for p in per]) for k in POLICIES},
                         **{f"{k}_over_opt": claims.fmt([p[f"ratio_{k}"] for p in per]) for k in POLICIES},
                         "adap_worst_prompt_over_opt": claims.fmt([p["max_ratio_adap"] for p in per]),
                         "base_rate_range": f"{min(p['base_rate_min'] for p in per):.3g}-"
                                            f"{max(p['base_rate_max'] for p in per):.3g}",
                         "fixed_n": "/".join(str(p["fixed_n"]) for p in per)})
    if "lm" in runs:
        m = runs["lm"]
        rm = m.get("reward_model") or {}
        rows.append({"variant": "lm", "cost_ratio": "",
                     "optimum": f"{m['solvable_problems']}/{m['test_problems']} problems with a correct sample; "
                                f"sample accuracy {m['sample_accuracy']:.3f}; log-prob AUC {m['score_auc_mean']}"
                                + (f"; reward-model AUC {rm['score_auc_mean']} (trained on {rm['rm_train_answers']} "
                                   f"answers, training accuracy {rm['rm_train_accuracy']:.3f})" if rm else "")})
    records = tuning_records(runs, variants, params)
    summary = {v: {"label": labels.get(v, v), "success": runs[v]["settings"].get("success", "lm"),
                   "capped": capped_notes(records, v, runs[v]["seeds"][0]["cost_ratios"]),
                   "optimum": optimum_label(v).split(" (")[0],
                   "holds_fixed": ("the trained LM, its sampled answer pools and the reward model (adap.lm.seed)"
                                   if v.startswith("lm") else ""),
                   "cost_ratios": runs[v]["seeds"][0]["cost_ratios"],
                   "items": {k: [[[p[k] / p["optimum"] for p in r["prompts"]] for r in s["per_ratio"]]
                                 for s in runs[v]["seeds"]] for k in POLICIES}}
               for v in variants}
    tuning.write_csv(out / "tuning.csv", "adap", records)
    return claims.write_tables(out, rows, paper_claims.claim_rows(summary, scale))


def tuning_records(runs: dict, variants: list, params: dict) -> list:
    """Every tuned n (per variant, cost ratio, seed; one record per baseline and difficulty bin) and
    the knobs nobody tunes."""
    cfg = next(iter(runs.values()))["evaluation"]
    records = [tuning.fixed(POLICIES["adap"], "shell schedule", "B_k = (c_g + c_v) 2^k, even split",
                            "ADAP has no knob: its shell sizes follow from the two costs (method.shell_sizes)"),
               tuning.fixed(POLICIES["difficulty"], "n_probe", cfg["n_probe"],
                            "the baseline's design (adap.evaluation.n_probe): the probe that estimates difficulty"),
               tuning.fixed(POLICIES["difficulty"], "bins", cfg["bins"],
                            "the baseline's design (adap.evaluation.bins): quantile bins of the probe score")]
    for v in variants:
        for s in runs[v]["seeds"]:
            for r in s["per_ratio"]:
                records += [tuning.Record.from_json(d) for d in r.get("tuning", [])]
    return records


def capped_notes(records: list, variant: str, ratios: list) -> dict:
    """Per baseline, per cost ratio: the tuning protocol's note when a tuned n stayed on a capped edge
    in any seed (the difficulty-adaptive baseline's bins together)."""
    out = {}
    for key, name in (("fixed_n", POLICIES["fixed_n"]), ("difficulty", POLICIES["difficulty"])):
        notes = []
        for ratio in ratios:
            where = f"{variant}, c_v/c_g = {float(ratio):g}"
            hits = [r for r in records if r.setting == where and r.capped
                    and (r.method == name or r.method.startswith(name + ", bin"))]
            notes.append("; ".join(sorted({f"{r.method}'s n = {r.chosen:g} on the {r.edge} edge of its capped grid "
                                           f"(seed {r.seed})" for r in hits})))
        out[key] = notes
    return out
