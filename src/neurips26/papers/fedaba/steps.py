"""The steps the CLI calls for fedaba: tune (one rank profile: every aggregator's learning rate and the
strongest baseline on a validation split of the tuning seed's clients' data, `tune.py`) -> train (one
rank profile x seed: every Dirichlet alpha x every aggregator, one federation each at its tuned
learning rate, on the shared federated-LoRA harness) -> figures.

A rank profile (variant) gives the clients' LoRA ranks (cycled over `fed.clients`); a seed draws the
task's sentences, the Dirichlet splits, the clients' initialisation and minibatches. All aggregators of
one (profile, alpha, seed) share all of these, so comparisons pair by seed.

A profile with `task: data_to_text` runs the generative task (`fed_harness.generative`) on the
causal LM of the `lm` section (the lm_assets tiny Llama; any Hugging Face causal LM and a
Dolly-style JSONL at paper scale), `lm.fed` over `fed`: its `acc` is the mean token accuracy
(teacher-forced), `exact` the exact match. Its rows and claims are kept apart from the
classification profiles'.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning

from . import claims as paper_claims
from .claims import NAMES

DIGITS = 6


def _aggregator(name: str, settings: dict):
    from neurips26.papers.fed_harness import aggregators as harness

    from . import baselines, method  # noqa: F401  (registers fedaba, cafd, hetlora, flexlora)

    return harness.make(name, **settings.get(name, {}))


def _client_ranks(profile: list[int], clients: int) -> list[int]:
    return [int(profile[i % len(profile)]) for i in range(clients)]


def heterogeneity(ranks: list[int]) -> float:
    """Strength of rank heterogeneity: log2(max rank / min rank) (0 for uniform ranks)."""
    return math.log2(max(ranks) / min(ranks))


def _sig(x):
    return io.rounded(None if x is None else float(x), DIGITS)


def is_lm(variant: dict) -> bool:
    return variant.get("task") == "data_to_text"


def _lm_task(params: dict, inputs: dict, seed: int):
    """(base model, train, test, classes, targets, report) of the generative task."""
    from neurips26.papers.fed_harness import generative

    c = params["lm"]
    source = c.get("model") or (str(inputs["model"]) if inputs.get("model") else "")
    if not source:
        raise ValueError("config key 'fedaba.lm.model': empty, and no lm_assets model folder was given (--input model=...)")
    if c.get("model"):
        from transformers import AutoConfig
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        kind = AutoConfig.from_pretrained(c["model"]).model_type
        if kind not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
            raise ValueError(f"config key 'fedaba.lm.model' ({c['model']}, a {kind} model): the generative clients need a "
                             "causal LM (llama, qwen2, mistral, ...)")
    base, tok = generative.load_base(source, key="fedaba.lm.model")
    report = {}
    if c.get("dataset_file"):
        tr, te, classes, report = generative.dolly(tok, c["dataset_file"], c["train"], c["test"], 1000 + seed, c["max_length"],
                                                   key="fedaba.lm.dataset_file")
    else:
        tr, te, classes = generative.data_to_text(tok, c["train"], c["test"], 1000 + seed, c["max_length"])
    targets = generative.lora_targets(base, c["targets"], key="fedaba.lm.targets")
    return base, tr, te, classes, targets, report


def _task(params: dict, inputs: dict, seed: int):
    """(federation settings, base model, train set, test set, classes, LoRA targets, split labels,
    is_lm, data report) of the job's profile, drawn with `seed`."""
    import torch

    from neurips26.core.lm import load_minilm
    from neurips26.papers.fed_harness import tasks

    fed, data = dict(params["fed"]), params["data"]
    variant = params["variant_settings"]
    lm = is_lm(variant)
    report = {}
    if lm:
        fed.update(params.get("lm", {}).get("fed", {}))
        base, train_set, test_set, classes, targets, report = _lm_task(params, inputs, seed)
        split_labels = train_set.label.numpy()
    else:
        if data.get("model"):
            from transformers import AutoConfig

            kind = AutoConfig.from_pretrained(data["model"]).model_type
            if kind not in ("bert", "roberta", "xlm-roberta"):
                raise ValueError(
                    f"config key 'fedaba.data.model' ({data['model']}, a {kind} model): the classification clients train "
                    "the top layer of a BERT-style encoder (bert, roberta); a causal LM goes under fedaba.lm.model "
                    "with a profile of task data_to_text")
        tok, enc = load_minilm(data.get("model") or None, key="fedaba.data.model")
        torch.manual_seed(seed)
        if data.get("dataset"):  # a real dataset: <dataset>/train.csv and test.csv (sentence, label)
            texts, labels, classes, n_tr = tasks.read_csv_task(data["dataset"], data["train"], data["test"], seed=1000 + seed,
                                                               key="fedaba.data.dataset")
        else:
            classes = tasks.TASKS[data["task"]]
            texts, labels = tasks.generate(data["task"], data["train"] + data["test"], seed=1000 + seed)
            n_tr = data["train"]
        train_set = tasks.encode(tok, enc, texts[:n_tr], labels[:n_tr], 1, data["max_length"])
        test_set = tasks.encode(tok, enc, texts[n_tr:], labels[n_tr:], 1, data["max_length"])
        base = tasks.CLSLayerClassifier(enc.encoder.layer[-1], classes)
        targets = fed["targets"]
        split_labels = train_set.labels.numpy()
    return fed, base, train_set, test_set, classes, targets, split_labels, lm, report


def _client_split(split_labels, fed: dict, alpha: float, seed: int):
    from neurips26.papers.fed_harness import split

    rng = np.random.default_rng([seed, int(round(float(alpha) * 1000)), 7])
    return split.dirichlet_split(split_labels, fed["clients"], float(alpha), rng, min_size=fed["min_client_size"])


def _fed_settings(fed: dict, targets, seed: int, lr: float):
    from neurips26.papers.fed_harness import simulation

    return simulation.FedSettings(rounds=fed["rounds"], local_steps=fed["local_steps"], batch_size=fed["batch_size"],
                                  lr=float(lr), targets=tuple(targets), seed=seed)


def client_scores(res, lm: bool) -> np.ndarray:
    """Each client's score: its balanced accuracy (the generative task: mean token accuracy)."""
    return np.nanmean(res.per_class_acc if not lm else res.per_class_token_acc, axis=1)


def tune(params: dict, inputs: dict, out: Path) -> list[Path]:
    from . import tune as tuning_step

    return tuning_step.run(params, inputs, out)


def train(params: dict, inputs: dict, out: Path) -> list[Path]:
    from neurips26.papers.fed_harness import simulation

    from . import diagnostics
    from .method import FedAbA

    seed = int(params["seed"])
    variant = params["variant_settings"]
    fed, base, train_set, test_set, classes, targets, split_labels, lm, report = _task(params, inputs, seed)
    ranks = _client_ranks(variant["ranks"], fed["clients"])
    low = min(ranks)
    groups = {r: [i for i, x in enumerate(ranks) if x == r] for r in sorted(set(ranks))}
    results, checks = {}, {"svd_rel_err": 0.0, "gauge_rel_err": 0.0}
    alphas = variant.get("alphas", params["alphas"])
    aggregators = list(variant.get("aggregators") or params["aggregators"])
    lrs = tuning.chosen(io.read_json(inputs["tune"] / "tune.json"), "lr", aggregators)
    for ai, alpha in enumerate(alphas):
        parts = _client_split(split_labels, fed, alpha, seed)
        per_agg = {}
        for name in aggregators:
            rec = diagnostics.Recorder(_aggregator(name, params.get("aggregator_settings", {})))
            # the checkpoint key names the inner aggregator's settings (the wrapper hides them from the engine)
            key = {"paper": "fedaba", "variant": params["variant"], "seed": seed, "alpha": alpha, "agg": name,
                   "agg_settings": params.get("aggregator_settings", {}).get(name, {})}
            res = simulation.run_federation(base, train_set, test_set, parts, ranks, rec,
                                            _fed_settings(fed, targets, seed, lrs[name]),
                                            out / "runs" / f"alpha{alpha}_{name}", key, classes)
            client_acc = client_scores(res, lm)
            per_agg[name] = {
                "acc": _sig(float(client_acc.mean())),
                "acc_clients": [_sig(x) for x in client_acc],
                "acc_by_rank": {str(r): _sig(float(client_acc[idx].mean())) for r, idx in groups.items()},
                "prefix_by_rank": {str(r): _sig(rec.mean_distance(idx)) for r, idx in groups.items()},
                "prefix_low_rounds": [_sig(x) for x in rec.per_round(groups[low])],
                "final_loss": _sig(res.rounds[-1]["loss"]) if res.rounds else None,
            }
            if lm:  # acc: mean token accuracy; exact: teacher-forced exact match
                per_agg[name]["exact"] = _sig(float(np.nanmean(res.per_class_acc, axis=1).mean()))
            tracking.active().log_metrics({f"acc_{name}_a{alpha}": float(client_acc.mean())})
            if name == "fedaba" and ai == 0:  # checks on the real last-round client factors
                for layer, (B, A, sizes, rk) in rec.last_inputs.items():
                    total = float(sum(sizes))
                    checks["svd_rel_err"] = max(checks["svd_rel_err"], diagnostics.refactorization_error(
                        B, A, [s / total for s in sizes]))
                    checks["gauge_rel_err"] = max(checks["gauge_rel_err"], diagnostics.gauge_error(
                        lambda: FedAbA(**params.get("aggregator_settings", {}).get("fedaba", {})), B, A, sizes, rk))
        results[str(float(alpha))] = per_agg
    metrics = {"variant": params["variant"], "seed": seed, "ranks": ranks, "heterogeneity": heterogeneity(ranks),
               "alphas": [str(float(a)) for a in alphas], "aggregators": aggregators, "lr": lrs,
               "results": results, "checks": {k: _sig(v) for k, v in checks.items()}}
    if lm:
        metrics["task"] = "data_to_text"
        metrics["score"] = "mean token accuracy (teacher-forced)"
        if report:
            metrics["data"] = report
    io.write_json(out / "metrics.json", metrics)
    return [out / "metrics.json"]


# ---------------------------------------------------------------- figures

COLORS = {"fedaba": "#d62728", "fedaba_svd": "#e377c2", "fedaba_proj": "#bcbd22", "cafd": "#9467bd", "flexlora": "#1f77b4", "hetlora": "#2ca02c",
          "zero_padding": "#ff7f0e", "flora": "#8c564b"}
LABELS = {**NAMES, "zero_padding": NAMES["zeropad"], "cafd": "no basis alignment (CAFD)",
          "fedaba": "FedAbA, full rotation", "fedaba_svd": "FedAbA, order-preserving gauge",
          "fedaba_proj": "FedAbA, lossy prefix projection"}


def _load(folder: Path, variants, seeds) -> dict:
    out = {}
    for v in variants:
        out[v] = [io.read_json(folder / v / f"seed{s}" / "metrics.json") for s in seeds]
    return out


def _mean(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return sum(xs) / len(xs) if xs else math.nan


def figures(params: dict, inputs: dict, out: Path) -> list[Path]:
    all_variants, seeds = params["run_variants"], params["seeds"]
    runs = _load(Path(inputs["train"]), all_variants, seeds)
    tuned = {v: io.read_json(Path(inputs["tune"]) / v / "tune.json") for v in all_variants}
    records = [tuning.Record.from_json(r) for v in all_variants for r in tuned[v]["records"]]
    tuning.write_csv(out / "tuning.csv", "fedaba", records)
    key_of = lambda agg: "zeropad" if agg == "zero_padding" else agg  # noqa: E731  (the claims' names)
    # the strongest baseline of each profile: chosen on validation data in the tune step, before any test number
    chosen = {v: tuned[v]["strongest"] for v in all_variants}
    lm_variants = [v for v in all_variants if runs[v][0].get("task") == "data_to_text"]
    variants = [v for v in all_variants if v not in lm_variants]  # the classification profiles
    figdir = out / "figures"
    first = runs[variants[0]][0]
    aggs = first["aggregators"]
    alphas_of = {v: runs[v][0]["alphas"] for v in variants}
    claim_alpha = str(float(params["claims"]["alpha"]))
    het = {v: runs[v][0]["heterogeneity"] for v in variants}
    strong = max(variants, key=lambda v: het[v])
    uniform = min(variants, key=lambda v: het[v])
    low = min(runs[strong][0]["ranks"])

    def series(v, a, agg, key, sub=None):
        vals = []
        for m in runs[v]:
            x = m["results"][a][agg][key]
            vals.append(x if sub is None else x.get(str(sub)))
        return [math.nan if x is None else x for x in vals]

    # accuracy per aggregator, per alpha (strongest heterogeneity)
    alphas_of.update({v: runs[v][0]["alphas"] for v in lm_variants})
    fig, axes = plotting.figure(ncols=len(all_variants), width=4.6)
    axes = axes.ravel()
    for ax, v in zip(axes, all_variants):
        alphas = alphas_of[v]
        x = np.arange(len(alphas))
        v_aggs = runs[v][0]["aggregators"]
        width = 0.8 / len(v_aggs)
        for k, agg in enumerate(v_aggs):
            vals = [series(v, a, agg, "acc") for a in alphas]
            ax.bar(x + k * width, [np.nanmean(s) for s in vals], width, yerr=[np.nanstd(s) for s in vals],
                   color=COLORS.get(agg), label=LABELS.get(agg, agg))
        ax.set_xticks(x + 0.4 - width / 2, [f"alpha={a}" for a in alphas])
        ax.set_ylabel(f"mean client {runs[v][0].get('score', 'test accuracy')}")
        ax.set_title(f"{v}: ranks {sorted(set(runs[v][0]['ranks']))}")
        ax.set_ylim(0, 1.25 * max(0.05, np.nanmax([np.nanmean(series(v, a, g, "acc")) for a in alphas for g in v_aggs])))
    axes[0].legend(fontsize=6, ncol=2, loc="upper left")
    plotting.save(fig, figdir / "accuracy.png")

    # accuracy by rank group (strongest heterogeneity, claims alpha)
    ranks = sorted(set(runs[strong][0]["ranks"]))
    fig, axes = plotting.figure()
    ax = axes[0, 0]
    for agg in aggs:
        ys = [series(strong, claim_alpha, agg, "acc_by_rank", r) for r in ranks]
        ax.errorbar(ranks, [np.nanmean(y) for y in ys], yerr=[np.nanstd(y) for y in ys], marker="o",
                    color=COLORS.get(agg), label=LABELS.get(agg, agg), capsize=3)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("client LoRA rank")
    ax.set_ylabel("test accuracy of the clients of that rank")
    ax.set_title(f"{strong}, alpha={claim_alpha}: accuracy per rank group ({len(seeds)} seeds)")
    ax.legend(fontsize=7)
    plotting.save(fig, figdir / "accuracy_by_rank.png")

    # prefix stability per round (lowest rank)
    alphas = alphas_of[strong]
    fig, axes = plotting.figure(ncols=len(alphas), width=4.6)
    axes = axes.ravel()
    for ax, a in zip(axes, alphas):
        for agg in aggs:
            per_seed = [m["results"][a][agg]["prefix_low_rounds"] for m in runs[strong]]
            per_seed = [[math.nan if x is None else x for x in s] for s in per_seed]
            if not per_seed[0] or all(math.isnan(x) for s in per_seed for x in s):
                continue
            plotting.mean_band(ax, list(range(2, len(per_seed[0]) + 2)), per_seed, LABELS.get(agg, agg),
                               color=COLORS.get(agg))
        ax.set_xlabel("round (distance to the round before)")
        ax.set_xticks(list(range(2, len(runs[strong][0]["results"][a][aggs[0]]["prefix_low_rounds"]) + 2)))
        ax.set_ylabel(f"rank-{low} prefix subspace distance")
        ax.set_title(f"{strong}, alpha={a}")
    axes[0].legend(fontsize=7)
    plotting.save(fig, figdir / "prefix_stability.png")

    # gain vs heterogeneity
    fig, axes = plotting.figure()
    ax = axes[0, 0]
    order = sorted(variants, key=lambda v: het[v])
    for a in [a for a in alphas_of[strong] if all(a in alphas_of[v] for v in variants)]:
        gains = []
        for v in order:
            b = chosen[v]
            g = [runs[v][i]["results"][a]["fedaba"]["acc"] - runs[v][i]["results"][a][b]["acc"]
                 for i in range(len(seeds))] if b in aggs else [math.nan] * len(seeds)
            gains.append(g)
        ax.errorbar([het[v] for v in order], [np.mean(g) for g in gains], yerr=[np.std(g) for g in gains],
                    marker="o", capsize=3, label=f"alpha={a}")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("rank heterogeneity log2(max rank / min rank)")
    ax.set_ylabel("FedAbA accuracy - strongest baseline (chosen on validation)")
    ax.set_title(f"gain against rank heterogeneity ({len(seeds)} seeds)")
    ax.legend(fontsize=7)
    plotting.save(fig, figdir / "gain_vs_heterogeneity.png")

    # summary table and claims
    rows = []
    for v in variants:
        for a in alphas_of[v]:
            for agg in aggs:
                row = {"variant": v, "ranks": "/".join(map(str, sorted(set(runs[v][0]["ranks"])))),
                       "heterogeneity": het[v], "alpha": a, "aggregator": agg, "lr": runs[v][0]["lr"][agg],
                       "accuracy": claims.fmt(series(v, a, agg, "acc"))}
                for r in sorted(set(runs[v][0]["ranks"])):
                    row[f"acc_rank{r}"] = claims.fmt(series(v, a, agg, "acc_by_rank", r))
                row[f"prefix_distance_rank{min(runs[v][0]['ranks'])}"] = claims.fmt(
                    series(v, a, agg, "prefix_by_rank", min(runs[v][0]["ranks"])))
                rows.append(row)
    lm_rows, lm_summary = [], {}
    for v in lm_variants:
        v_aggs, lo_v = runs[v][0]["aggregators"], min(runs[v][0]["ranks"])
        for a in alphas_of[v]:
            for agg in v_aggs:
                row = {"variant": v, "ranks": "/".join(map(str, sorted(set(runs[v][0]["ranks"])))),
                       "heterogeneity": runs[v][0]["heterogeneity"], "alpha": a, "aggregator": agg, "lr": runs[v][0]["lr"][agg],
                       "accuracy": claims.fmt(series(v, a, agg, "acc")), "exact_match": claims.fmt(series(v, a, agg, "exact"))}
                for r in sorted(set(runs[v][0]["ranks"])):
                    row[f"acc_rank{r}"] = claims.fmt(series(v, a, agg, "acc_by_rank", r))
                row[f"prefix_distance_rank{lo_v}"] = claims.fmt(series(v, a, agg, "prefix_by_rank", lo_v))
                lm_rows.append(row)
                key = "zeropad" if agg == "zero_padding" else agg
                d = lm_summary.setdefault(v, {"low_rank": lo_v, "alpha": claim_alpha if claim_alpha in alphas_of[v]
                                              else alphas_of[v][0], "acc": {}, "acc_low": {}, "prefix": {}})
                d["acc"].setdefault(a, {})[key] = series(v, a, agg, "acc")
                d["prefix"].setdefault(a, {})[key] = series(v, a, agg, "prefix_by_rank", lo_v)
                d["acc_low"].setdefault(a, {})[key] = series(v, a, agg, "acc_by_rank", lo_v)
    rows += lm_rows
    summary = {"strong": strong, "uniform": uniform, "alpha": claim_alpha, "low_rank": low, "lm": lm_summary,
               "acc": {}, "acc_low": {}, "prefix": {},
               "strongest": {v: key_of(chosen[v]) for v in all_variants if chosen[v]},
               "capped": {v: {key_of(a): tuning.capped_note(records, a, v) for a in runs[v][0]["aggregators"]}
                          for v in all_variants},
               "checks": {k: max(m["checks"][k] for v in all_variants for m in runs[v]) for k in first["checks"]}}
    for v in variants:
        lo_v = min(runs[v][0]["ranks"])
        for a in alphas_of[v]:
            for agg in aggs:
                key = "zeropad" if agg == "zero_padding" else agg
                summary["acc"].setdefault(v, {}).setdefault(a, {})[key] = series(v, a, agg, "acc")
                summary["acc_low"].setdefault(v, {}).setdefault(a, {})[key] = series(v, a, agg, "acc_by_rank", lo_v)
                summary["prefix"].setdefault(v, {}).setdefault(a, {})[key] = series(v, a, agg, "prefix_by_rank", lo_v)
    return claims.write_tables(out, rows, paper_claims.claim_rows(summary, params["scale"])) + [out / "tuning.csv"]
