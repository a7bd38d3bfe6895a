"""The steps the CLI calls for fedlora_align: data -> tune -> train -> figures.

`data` (one job per variant and seed) draws the task's sentences and runs the frozen lower
layers of all-MiniLM-L6-v2 once (the tuning seed's data too); `tune` (one job per variant, `tune.py`)
chooses every method's learning rate and the strongest existing method on a validation split of
the tuning seed's clients' data; `train` (same grid, the federations) splits the training set over the
clients with Dirichlet label skew for every alpha and runs every method's federation on it
(the same split, initialisation, minibatches, local steps and optimizer for every method; each
method's learning rate as tuned),
recording test accuracy and, per round and LoRA module, the principal-angle conflict between
the clients' column spaces and row spaces; `figures` writes the plots, tables and claims.

A variant with task `data_to_text` runs the generative task (`fed_harness.generative`) on the
causal LM of the `lm` section (the lm_assets tiny Llama, or a Hugging Face causal LM and a
Dolly-style JSONL at paper scale), with the `lm.federation` settings replacing those of
`federation`, and the variant's own alphas and methods when given. Its scores: teacher-forced
exact match (`exact_global`, `exact_local`) and mean token accuracy (`acc_global`,
`acc_local`, the score its accuracy rows and plots read).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning

from .claims import claim_rows

DIGITS = 6
LABELS = {"fedit": "FedIT", "ffa_lora": "FFA-LoRA", "flora": "FLoRA", "fedex_lora": "FedEx-LoRA",
          "fedsa_lora": "FedSA-LoRA", "ideal": "ideal aggregation", "align": "ALIGN (ours)",
          "align_no_drift": "ALIGN without drift constraint"}
COLOURS = {"fedit": "#1f77b4", "ffa_lora": "#ff7f0e", "flora": "#2ca02c", "fedex_lora": "#9467bd",
           "fedsa_lora": "#8c564b", "ideal": "#7f7f7f", "align": "#d62728", "align_no_drift": "#e377c2"}


def _aggregator(name: str, params: dict):
    from neurips26.papers.fed_harness import aggregators as agg

    from . import baselines, method  # noqa: F401  (registers ALIGN and the baselines)

    a = params["align"]
    if name == "align":
        return agg.make("align", drift_mu=a["drift_mu"], beta=a["beta"])
    if name == "align_no_drift":
        made = agg.make("align", drift_mu=0.0, beta=a["beta"])
        made.name = "align_no_drift"
        return made
    return agg.make(name)


def lm_source(params, inputs) -> str:
    """The causal LM's folder or id: `lm.model`, else the lm_assets model folder (rule input)."""
    lm = params.get("lm", {})
    if lm.get("model"):
        return lm["model"]
    if not inputs.get("model"):
        raise ValueError("config key 'fedlora_align.lm.model': null, and no lm_assets model folder was given (--input model=...)")
    return str(inputs["model"])


def lm_federation(params: dict, variant: dict) -> dict:
    """The federation settings of a variant: `federation`, with `lm.federation` over it for the
    generative task, and the variant's alphas."""
    f = dict(params["federation"])
    if variant.get("task") == "data_to_text":
        f.update(params.get("lm", {}).get("federation", {}))
    if variant.get("alphas"):
        f["alphas"] = list(variant["alphas"])
    return f


def _lm_data(params, inputs, out: Path):
    from neurips26.papers.fed_harness import generative

    seed, c = params["seed"], params["lm"]
    _, tok = generative.load_base(lm_source(params, inputs), key="fedlora_align.lm.model")
    info = {}
    if c.get("dataset_file"):
        train, test, classes, info = generative.dolly(tok, c["dataset_file"], c["n_train"], c["n_test"], 1000 * (seed + 1) + 7,
                                                      c["max_length"], key="fedlora_align.lm.dataset_file")
    else:
        train, test, classes = generative.data_to_text(tok, c["n_train"], c["n_test"], 1000 * (seed + 1) + 7, c["max_length"])
    generative.save(out / "data.safetensors", train, test, classes, info)
    io.write_json(out / "data.json", {"variant": params["variant"], "seed": seed, "task": "data_to_text", "classes": classes,
                                      "n_train": len(train), "n_test": len(test), **info})
    return [out / "data.json"]


def data(params, inputs, out: Path):
    from neurips26.papers.fed_harness import tasks

    v, seed, d = params["variant_settings"], params["seed"], params["data"]
    if v["task"] == "data_to_text":
        return _lm_data(params, inputs, out)
    train, test, classes = tasks.prepare(v["task"], d["n_train"], d["n_test"], 1000 * (seed + 1) + 7,
                                         d["max_length"], d.get("encoder_dir"), key="fedlora_align.data.encoder_dir",
                                         data_dir=d.get("data_dir"), data_key="fedlora_align.data.data_dir")
    tasks.save(out / "data.safetensors", train, test, classes, v["task"])
    io.write_json(out / "data.json", {"variant": params["variant"], "seed": seed, "task": v["task"], "classes": classes,
                                      "n_train": len(train.labels), "n_test": len(test.labels)})
    return [out / "data.json"]


def _task(params, inputs):
    """(base model, train set, test set, classes, LoRA targets, split labels, is_lm, federation
    settings) of the job's variant, from the data step's output `inputs["data"]`."""
    from neurips26.papers.fed_harness import generative, tasks

    v = params["variant_settings"]
    f = lm_federation(params, v)
    lm = v["task"] == "data_to_text"
    if lm:
        base, tok = generative.load_base(lm_source(params, inputs), key="fedlora_align.lm.model")
        train_set, test, classes = generative.load(inputs["data"] / "data.safetensors", tok)
        targets = generative.lora_targets(base, params["lm"]["targets"], key="fedlora_align.lm.targets")
        labels = train_set.label.numpy()
    else:
        train_set, test, classes = tasks.load(inputs["data"] / "data.safetensors")
        base = tasks.last_layer(params["data"].get("encoder_dir"), classes, key="fedlora_align.data.encoder_dir")
        targets = f["targets"]
        labels = train_set.labels.numpy()
    return base, train_set, test, classes, targets, labels, lm, f


def _fed_settings(f: dict, targets, seed: int, lr: float):
    from neurips26.papers.fed_harness import simulation

    return simulation.FedSettings(rounds=f["rounds"], local_steps=f["local_steps"], batch_size=f["batch_size"],
                                  lr=float(lr), weight_decay=f["weight_decay"], targets=tuple(targets),
                                  seed=seed, conflict_rank=f["rank"])


def alpha_key(alpha) -> int:
    """An integer seed component from alpha's value (micro-units), so a split does not depend on
    where alpha sits in the variant's list."""
    return int(round(float(alpha) * 1_000_000))


def _client_split(labels, f: dict, alpha: float, seed: int):
    """The Dirichlet split of alpha of seed `seed`, seeded by alpha's value."""
    from neurips26.papers.fed_harness import split

    rng = np.random.default_rng([seed, alpha_key(alpha), 11])
    return split.dirichlet_split(labels, f["clients"], alpha, rng, min_size=f["min_client_size"])


def _scores(res, p, shares, lm: bool) -> dict:
    """acc_global (balanced accuracy of every client's model on the evaluation set, weighted by
    data share; the generative task: mean token accuracy), acc_local (per-class accuracies
    reweighted by each client's label shares) and, for the generative task, the exact matches."""
    def pair(acc):
        return float((p * np.nanmean(acc, 1)).sum()), float((p * (shares * np.nan_to_num(acc)).sum(1)).sum())

    if not lm:
        g, loc = pair(res.per_class_acc)
        return {"acc_global": g, "acc_local": loc}
    eg, el = pair(res.per_class_acc)
    g, loc = pair(res.per_class_token_acc)
    return {"acc_global": g, "acc_local": loc, "exact_global": eg, "exact_local": el}


def untrained_scores(base, test, classes: int) -> dict:
    """The generative task's scores of the model before any federation (no adapter): the floor
    the regime control measures learning against. Every client holds this model, so the
    client-weighted scores reduce to the mean over classes."""
    import torch

    from neurips26.papers.fed_harness import generative

    dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    net = base.to(dev)
    exact, tok = generative.evaluate(net, test, device=dev)
    base.cpu()
    return {"acc_global": io.significant(float(np.nanmean(generative.per_class(tok, test.label, classes))), DIGITS),
            "exact_global": io.significant(float(np.nanmean(generative.per_class(exact, test.label, classes))), DIGITS)}


def train(params, inputs, out: Path):
    import time

    from neurips26.papers.fed_harness import simulation, split


    seed, v = params["seed"], params["variant_settings"]
    base, train_set, test, classes, targets, labels, lm, f = _task(params, inputs)
    methods = list(v.get("methods") or params["methods"])
    lrs = tuning.chosen(io.read_json(inputs["tune"] / "tune.json"), "lr", methods)
    metrics = {"variant": params["variant"], "seed": seed, "classes": classes, "alphas": {},
               "lr": {m: lrs[m] for m in methods}}
    if lm:
        metrics["score"] = "mean token accuracy (teacher-forced)"
        metrics["untrained"] = untrained_scores(base, test, classes)
    timing = {}
    for alpha in f["alphas"]:
        parts = _client_split(labels, f, alpha, seed)
        shares = split.label_shares(labels, parts, classes)
        sizes = [len(p) for p in parts]
        p = np.asarray(sizes, dtype=float) / sum(sizes)
        entry = {"sizes": sizes, "max_label_share": io.significant(float((p * shares.max(1)).sum()), DIGITS),
                 "methods": {}}
        for name in methods:
            t0 = time.perf_counter()
            res = simulation.run_federation(base, train_set, test, parts, [f["rank"]] * f["clients"], _aggregator(name, params),
                                            _fed_settings(f, targets, seed, lrs[name]), out,
                                            {"variant": params["variant"], "alpha": alpha, "method": name}, classes)
            timing[f"{alpha}/{name}"] = time.perf_counter() - t0
            sc = _scores(res, p, shares, lm)
            rounds = [{k: (io.significant(v, DIGITS) if isinstance(v, float) else v) for k, v in r.items()}
                      for r in res.rounds]
            entry["methods"][name] = {**{k: io.significant(x, DIGITS) for k, x in sc.items()}, "rounds": rounds}
            tracking.active().log_metrics({f"acc_global/{alpha}/{name}": sc["acc_global"],
                                           f"acc_local/{alpha}/{name}": sc["acc_local"]})
            print(f"fedlora_align: seed {seed} alpha {alpha} {name} (lr {lrs[name]:g}): global accuracy "
                  f"{sc['acc_global']:.4f}, local accuracy {sc['acc_local']:.4f}", flush=True)
        metrics["alphas"][str(alpha)] = entry
    io.write_json(out / "metrics.json", metrics)
    io.write_json(out / "timing.json", timing)
    return [out / "metrics.json", out / "timing.json"]


def tune(params, inputs, out: Path):
    from . import tune as tuning_step

    return tuning_step.run(params, inputs, out)


# ---------------------------------------------------------------- aggregation over seeds
def _mean(xs):
    xs = [x for x in xs if x == x]
    return sum(xs) / len(xs) if xs else float("nan")


def conflict(run_method: dict, side: str, rounds=None) -> float:
    """Mean conflict (projection distance) over LoRA modules and the given rounds (default all)."""
    rs = run_method["rounds"]
    return _mean([r[side] for r in rs if rounds is None or r["round"] in rounds])


def claims_summary(runs: list[dict], methods: list[str]) -> dict:
    """Per alpha and method: per-seed accuracies and conflicts (seed order); `score` names the
    accuracy (the generative task: mean token accuracy; its exact match under `exact_global`);
    `classes` the task's classes (chance = 1 / their number, for the regime control)."""
    alphas = sorted(runs[0]["alphas"], key=float)
    methods = [m for m in methods if m in runs[0]["alphas"][alphas[0]]["methods"]]
    out = {"alphas": alphas, "seeds": len(runs), "methods": methods, "by_alpha": {},
           "score": runs[0].get("score", "global test accuracy (balanced)"), "classes": runs[0].get("classes")}
    if "untrained" in runs[0]:  # the generative task: the model before any federation, per seed
        out["untrained"] = {k: [r["untrained"][k] for r in runs] for k in runs[0]["untrained"]}
    for a in alphas:
        out["by_alpha"][a] = {m: {"acc_global": [r["alphas"][a]["methods"][m]["acc_global"] for r in runs],
                                  "acc_local": [r["alphas"][a]["methods"][m]["acc_local"] for r in runs],
                                  "column": [conflict(r["alphas"][a]["methods"][m], "column") for r in runs],
                                  "row": [conflict(r["alphas"][a]["methods"][m], "row") for r in runs]}
                              for m in methods}
        for m in methods:
            if "exact_global" in runs[0]["alphas"][a]["methods"][m]:
                out["by_alpha"][a][m]["exact_global"] = [r["alphas"][a]["methods"][m]["exact_global"] for r in runs]
    return out


def figures(params, inputs, out: Path):
    variants, seeds, scale = params["run_variants"], params["seeds"], params["scale"]
    methods = params["methods"]
    figdir = out / "figures"
    runs = {v: [io.read_json(inputs["runs"] / v / f"seed{s}" / "metrics.json") for s in seeds] for v in variants}
    tuned = {v: io.read_json(inputs["tune"] / v / "tune.json") for v in variants}
    records = [tuning.Record.from_json(r) for v in variants for r in tuned[v]["records"]]
    tuning.write_csv(out / "tuning.csv", "fedlora_align", records)
    summary, rows = {}, []
    for v in variants:
        s = claims_summary(runs[v], methods)
        # chosen on validation data in the tune step, before any test number was read
        s["strongest"] = dict(tuned[v]["strongest"])
        s["capped"] = {m: tuning.capped_note(records, m, v) for m in s["methods"]}
        s["lr"] = {m: runs[v][0]["lr"][m] for m in s["methods"]}
        summary[v] = s
        for a in s["alphas"]:
            for m in s["methods"]:
                d = s["by_alpha"][a][m]
                row = {"variant": v, "alpha": a, "method": m, "lr": s["lr"][m], "seeds": len(seeds),
                       "acc_global": claims.fmt(d["acc_global"]), "acc_local": claims.fmt(d["acc_local"]),
                       "column_conflict": claims.fmt(d["column"]), "row_conflict": claims.fmt(d["row"])}
                if "exact_global" in d:
                    row["exact_match"] = claims.fmt(d["exact_global"])
                rows.append(row)

    xs_of = lambda s: [float(a) for a in s["alphas"]]  # noqa: E731
    # 1. the diagnostic: column vs row conflict against heterogeneity
    shown = {v: [m for m in ("ideal", "fedit", "align") if m in summary[v]["methods"]] for v in variants}
    panels = [(v, m) for v in variants for m in shown[v]]
    fig, axes = plotting.figure(ncols=len(panels), width=4.6, height=3.8)
    for col, (v, m) in enumerate(panels):
        ax, s = axes[0, col], summary[v]
        for side, colour in (("column", "#d62728"), ("row", "#1f77b4")):
            ys = [[s["by_alpha"][a][m][side][k] for a in s["alphas"]] for k in range(len(seeds))]
            plotting.mean_band(ax, xs_of(s), ys, f"{side} spaces", colour)
        ax.set_xscale("log")
        ax.set_xlabel("Dirichlet alpha (smaller = more heterogeneous)")
        ax.set_ylabel("subspace conflict (mean sin^2 of principal angles)")
        ax.set_ylim(0, 1)
        ax.set_title(f"{v}: {LABELS[m]} ({len(seeds)} seeds)", fontsize=9)
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "conflict_vs_heterogeneity.png")

    # 2. conflict per round and LoRA module at the most and least heterogeneous alpha (ideal aggregation)
    fig, axes = plotting.figure(ncols=2 * len(variants), width=4.6, height=3.8)
    for vi, v in enumerate(variants):
        s = summary[v]
        m = "ideal" if "ideal" in s["methods"] else s["methods"][0]
        for ci, a in enumerate((s["alphas"][0], s["alphas"][-1])):
            ax = axes[0, 2 * vi + ci]
            first = runs[v][0]["alphas"][a]["methods"][m]["rounds"]
            layers = sorted({r["layer"] for r in first})
            nr = max(r["round"] for r in first) + 1
            for li, layer in enumerate(layers):
                for side, ls in (("column", "-"), ("row", "--")):
                    ys = [[next(x[side] for x in r["alphas"][a]["methods"][m]["rounds"]
                                if x["round"] == t and x["layer"] == layer) for t in range(nr)] for r in runs[v]]
                    plotting.mean_band(ax, list(range(1, nr + 1)), ys, f"{layer}: {side}", f"C{li}", )
                    ax.lines[-1].set_linestyle(ls)
            ax.set_xlabel("round")
            ax.set_ylabel("subspace conflict between clients")
            ax.set_ylim(0, 1)
            ax.set_title(f"{v}, alpha={a}: {LABELS[m]}", fontsize=9)
            ax.legend(fontsize=7)
    plotting.save(fig, figdir / "conflict_per_round.png")

    # 3. accuracy against heterogeneity, every method
    fig, axes = plotting.figure(ncols=2 * len(variants), width=5.0, height=4.0)
    for vi, v in enumerate(variants):
        s = summary[v]
        score = s["score"]
        for ci, (key, name) in enumerate((("acc_global", score),
                                          ("acc_local", f"{score.split(' (')[0]} on each client's label mix"))):
            ax = axes[0, 2 * vi + ci]
            for m in s["methods"]:
                ys = [[s["by_alpha"][a][m][key][k] for a in s["alphas"]] for k in range(len(seeds))]
                plotting.mean_band(ax, xs_of(s), ys, f"{LABELS[m]} (lr {s['lr'][m]:g})", COLOURS[m])
            ax.set_xscale("log")
            ax.set_xlabel("Dirichlet alpha (smaller = more heterogeneous)")
            ax.set_ylabel(name)
            ax.set_title(f"{v}: {name} ({len(seeds)} seeds)", fontsize=9)
            ax.legend(fontsize=6)
    plotting.save(fig, figdir / "accuracy_vs_heterogeneity.png")

    report_alphas = [str(a) for a in params["federation"]["report_alphas"]]
    return claims.write_tables(out, rows, claim_rows({"variants": summary, "report_alphas": report_alphas}, scale)) + [
        out / "tuning.csv"]
