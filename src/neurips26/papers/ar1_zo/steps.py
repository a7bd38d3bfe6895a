"""The steps the CLI calls for ar1_zo: mechanism, tune -> train -> figures.

`mechanism` (one job, every seed) measures the active finite-difference signal of one atom query,
its FD-SNR under the fixed evaluation-noise floor and the sign agreement of noisy queries, against
the LoRA rank, for the naive (alpha / r) and AR1-ZO (gamma = alpha r) scalings. `tune` (one job, on
a tuning seed that is not reported) runs every method's (lr, eps) grid with the same forward-pass
budget and keeps the best validation accuracy; `train` (one job per seed) runs every method (and the
atomwise methods at every rank of the sweep) with its tuned setting on that seed's data and reports
test accuracy; `figures` writes the plots, tables and claims.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from neurips26.core import claims, io, lm, plotting, tracking

from .claims import claim_rows

P = "ar1_zo"
DIGITS = 6


def _encoder(params: dict):
    """(tokenizer, model): the packaged MiniLM (or model.encoder), or with model.kind 'causal' the
    causal LM model.encoder names (a Hugging Face id or folder: OPT, Qwen3 at paper scale)."""
    import torch

    m = params["model"]
    if m.get("kind", "encoder") == "causal":
        if not m.get("encoder"):
            raise ValueError(f"config key '{P}.model.encoder': a causal model needs an id or a folder")
        import torch

        model = lm.load_model(m["encoder"], dtype=m.get("dtype", "float32"))
        if torch.cuda.is_available():
            model = model.cuda()
        return lm.load_tokenizer(m["encoder"]), model
    return lm.load_minilm(m.get("encoder"), key=f"{P}.model.encoder")


def _data(params: dict, seed: int, splits=("train", "val", "test")) -> dict:
    """The generated sentiment splits of `seed`, or the splits of a real set under data.path
    (<split>.jsonl with 'text' and 'label'; paper scale: SST-2 and the other MeZO tasks)."""
    from neurips26.papers.zo_harness import tasks

    d = params["data"]
    if d.get("path"):
        out = {}
        for s in splits:
            f = Path(d["path"]) / f"{s}.jsonl"
            if not f.exists():
                raise FileNotFoundError(f"config key '{P}.data.path': {f} is missing")
            out[s] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        return out
    sizes = {s: d[f"{s}_size"] for s in splits}
    return tasks.sentiment_splits(sizes, seed, negation=d["negation"], contrast=d["contrast"])


def _key(method: str, rank: int) -> str:
    return f"{method}@r{rank}"


def _sig(x: float) -> float:
    return io.significant(x, DIGITS)


def _round(obj):
    return io.rounded(obj, DIGITS, keep_nonfinite=True)


def _run(setup, params, method: str, rank: int, lr: float, eps: float, seed: int, label: str) -> dict:
    from . import runner

    b = params["budget"]

    def progress(step, loss):
        print(f"{label} {method} r={rank} lr={lr:g} eps={eps:g}: step {step}/{b['steps']} train loss {loss:.4f}", flush=True)

    return runner.train(setup, method, rank, params["lora"]["alpha"], params["lozo"], lr, eps, b["steps"],
                        b["batch_size"], params["noise_floor"], seed, log_every=b["log_every"], progress=progress)


# ---------------------------------------------------------------- mechanism
def mechanism(params, inputs, out: Path):
    from . import runner

    m, started = params["mechanism"], time.perf_counter()
    tok, enc = _encoder(params)
    results = {}
    for seed in params["seeds"]:
        data = _data(params, seed, splits=("train",))
        data["train"] = data["train"][: max(m["batch_size"], 1)]
        setup = runner.Setup(tok, enc, data, params["model"])
        res = runner.signal_vs_rank(setup, m["ranks"], params["lora"]["alpha"], m["eps"], m["queries"],
                                    m["batch_size"], params["noise_floor"], seed, inits=m["inits"])
        for name, rows in res.items():
            print(f"mechanism seed {seed} {name}: " + ", ".join(f"r={r}: {v['signal']:.3g}" for r, v in rows.items()), flush=True)
        results[str(seed)] = res
    io.write_json(out / "metrics.json", _round({"ranks": m["ranks"], "noise_floor": params["noise_floor"],
                                                "eps": m["eps"], "queries": m["queries"], "seeds": results}))
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started})


# ---------------------------------------------------------------- tune
TUNE_METRIC = "validation accuracy (ties: lower validation loss)"
EPS_REASON = "MeZO's finite-difference eps, fixed for every method (the paper does not tune it)"


def tune_score(result: dict) -> float:
    """The validation score a tuning run is judged by: accuracy, ties broken by the lower loss (the
    loss enters 1e-6 times, below one item of accuracy on any split under 10^5 items); NaN for a
    diverged run (never chosen)."""
    import math

    if result["diverged"] or not math.isfinite(result["val_loss"]):
        return math.nan
    return result["val_accuracy"] - 1e-6 * result["val_loss"]


def tune_cells(setup, params, seed: int, run=None, progress=None) -> tuple[dict, list]:
    """Every (method, rank) cell's learning rate by the tuning protocol on the tuning seed's validation
    split: the grid rule of `lr_grid`, extended while the best rate sits on an edge (tuning.extensions
    steps per edge); eps fixed for every method. Returns ({cell: chosen setting and trials}, records)."""
    from neurips26.core import tuning

    from . import cells, lr_grid

    run = run or _run
    extensions = tuning.settings(params)["extensions"]
    eps = params["grid"]["eps"]
    chosen, records = {}, []
    for method, rank in cells(params):
        trials = []

        def evaluate(lr, method=method, rank=rank, trials=trials):
            r = run(setup, params, method, rank, lr, eps, seed, "tune")
            trials.append({"lr": lr, "eps": eps, "val_accuracy": r["val_accuracy"], "val_loss": r["val_loss"],
                           "diverged": r["diverged"]})
            return tune_score(r)

        setting = f"r={rank}"
        point, recs = tuning.search(evaluate, {"lr": lr_grid(params, method)}, method=method, setting=setting,
                                    metric=TUNE_METRIC, extensions=extensions, seed=seed,
                                    split=f"validation (tuning seed {seed})", progress=progress)
        records += recs + [tuning.fixed(method, "eps", eps, EPS_REASON, setting=setting)]
        chosen[_key(method, rank)] = {"method": method, "rank": rank, "lr": point["lr"], "eps": eps,
                                      "trials": sorted(trials, key=lambda t: t["lr"]),
                                      "capped": tuning.capped_note(recs, method, setting)}
    return chosen, records


def tune(params, inputs, out: Path):
    from . import runner

    seed, started = params["tune"]["seed"], time.perf_counter()
    tok, enc = _encoder(params)
    setup = runner.Setup(tok, enc, _data(params, seed, splits=("train", "val")), params["model"])
    setup.batches["test"] = setup.batches["val"]  # the tuning run reports on validation only
    chosen, records = tune_cells(setup, params, seed, progress=lambda line: print(f"tune {line}", flush=True))
    for key, c in chosen.items():
        print(f"tune {key}: lr={c['lr']:g} eps={c['eps']:g}{' (capped: ' + c['capped'] + ')' if c['capped'] else ''}", flush=True)
    io.write_json(out / "tune.json", _round({"seed": seed, "chosen": chosen, "records": [r.to_json() for r in records]}))
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started})


# ---------------------------------------------------------------- train
def train(params, inputs, out: Path):
    from . import cells, runner

    seed, started = params["seed"], time.perf_counter()
    chosen = io.read_json(Path(inputs["tune"]) / "tune.json")["chosen"]
    tok, enc = _encoder(params)
    setup = runner.Setup(tok, enc, _data(params, seed), params["model"])
    zero = runner.evaluate(setup.classifier(enc), setup.batches["test"])
    runs, timing = {}, {}
    for method, rank in cells(params):
        key = _key(method, rank)
        if key not in chosen:
            raise KeyError(f"{inputs['tune']}/tune.json has no tuned setting for {key}; rerun ar1_zo_tune")
        c = chosen[key]
        t0 = time.perf_counter()
        r = _run(setup, params, method, rank, c["lr"], c["eps"], seed, f"seed {seed}")
        timing[key] = time.perf_counter() - t0
        runs[key] = {"method": method, "rank": rank, "lr": c["lr"], "eps": c["eps"], **r}
        tracking.active().log_metrics({f"{method}_r{rank}_test_accuracy": r["test_accuracy"]})
        print(f"seed {seed} {key}: test accuracy {r['test_accuracy']:.3f} (zero-shot {zero['accuracy']:.3f})", flush=True)
    io.write_json(out / "metrics.json", _round({
        "seed": seed, "zero_shot": {"test_accuracy": zero["accuracy"], "test_loss": zero["loss"], "test_correct": zero["correct"]},
        "forwards_per_run": 2 * params["budget"]["steps"], "runs": runs}))
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started, "runs": timing})


# ---------------------------------------------------------------- figures
LABELS = {"mezo_full": "MeZO (full top layers)", "mezo_lora": "MeZO (all LoRA factors)", "lozo": "LoZO (U V^T, lazy V)",
          "naive_atom": "naive atomwise (alpha / r)", "ar1_zo": "AR1-ZO (gamma = alpha r)"}
COLOURS = {"mezo_full": "#7f7f7f", "mezo_lora": "#1f77b4", "lozo": "#2ca02c", "naive_atom": "#ff7f0e", "ar1_zo": "#d62728"}


def _log_slope(ranks, values) -> float:
    import math

    xs = [math.log(r) for r in ranks]
    ys = [math.log(max(v, 1e-300)) for v in values]
    return claims.slope(xs, ys)


def claims_summary(mech: dict, runs: list[dict], params: dict, records: list | None = None) -> dict:
    """Per-seed numbers the claims need: log-log slopes of the mechanism, sign agreement at the
    largest rank, test accuracies (and per-item scores) of every cell, and each cell's capped-tuning
    note (`records`: the tuning protocol's records of the tune step)."""
    from neurips26.core import tuning

    ranks = mech["ranks"]
    seeds = list(mech["seeds"])
    mechs = {}
    for name in ("naive_atom", "ar1_zo"):
        rows = [mech["seeds"][s][name] for s in seeds]
        mechs[name] = {
            "signal_slope": [_log_slope(ranks, [r[str(k)]["signal"] for k in ranks]) for r in rows],
            "snr_slope": [_log_slope(ranks, [r[str(k)]["fd_snr"] for k in ranks]) for r in rows],
            "sign_agreement_max_rank": [r[str(ranks[-1])]["sign_agreement"] for r in rows],
            "snr_max_rank": [r[str(ranks[-1])]["fd_snr"] for r in rows],
            "signal_r1": [r[str(ranks[0])]["signal"] for r in rows],
            "sign_agreement_min_rank": [r[str(ranks[0])]["sign_agreement"] for r in rows],
        }
    cells_ = {}
    for key in runs[0]["runs"]:
        cells_[key] = {"method": runs[0]["runs"][key]["method"], "rank": runs[0]["runs"][key]["rank"],
                       "accuracy": [r["runs"][key]["test_accuracy"] for r in runs],
                       "val_accuracy": [r["runs"][key].get("val_accuracy") for r in runs],
                       "items": [r["runs"][key]["test_correct"] for r in runs],
                       "capped": tuning.capped_note(records or [], runs[0]["runs"][key]["method"],
                                                    f"r={runs[0]['runs'][key]['rank']}")}
    return {"ranks": ranks, "max_rank": ranks[-1], "min_rank": ranks[0], "mechanism": mechs, "cells": cells_,
            "rank": params["lora"]["rank"], "ranks_sweep": sorted({c["rank"] for c in cells_.values()}),
            "zero_shot": [r["zero_shot"]["test_accuracy"] for r in runs],
            "zero_shot_items": [r["zero_shot"].get("test_correct") for r in runs], "seeds": len(runs),
            "forwards": runs[0]["forwards_per_run"], "noise_floor": mech["noise_floor"]}


def figures(params, inputs, out: Path):
    import numpy as np

    from neurips26.core import tuning

    scale, seeds = params["scale"], params["seeds"]
    mech = io.read_json(Path(inputs["mechanism"]) / "metrics.json")
    records = [tuning.Record.from_json(r) for r in io.read_json(Path(inputs["tune"]) / "tune.json")["records"]]
    tuning.write_csv(out / "tuning.csv", P, records)
    runs = [io.read_json(Path(inputs["runs"]) / f"seed{s}" / "metrics.json") for s in seeds]
    figdir = out / "figures"
    ranks = mech["ranks"]
    names = ("naive_atom", "ar1_zo")

    # the mechanism: active signal, FD-SNR and sign agreement against the rank
    fig, axes = plotting.figure(ncols=3, width=4.6, height=3.8)
    for col, (key, ylabel) in enumerate((("signal", "active FD signal RMS |L+ - L-| / 2"),
                                         ("fd_snr", "FD-SNR = signal^2 / (sigma^2 / 2)"),
                                         ("sign_agreement", "share of noisy queries with the right sign"))):
        ax = axes[0, col]
        for name in names:
            ys = [[mech["seeds"][str(s)][name][str(r)][key] for r in ranks] for s in seeds]
            plotting.mean_band(ax, ranks, ys, LABELS[name], COLOURS[name])
        if key != "sign_agreement":
            base = np.mean([mech["seeds"][str(s)]["naive_atom"][str(ranks[0])][key] for s in seeds])
            power = 1 if key == "signal" else 2
            ax.plot(ranks, [base / (r / ranks[0]) ** power for r in ranks], ls=":", color="#555555", label=f"1 / r^{power}")
            ax.set_yscale("log")
        else:
            ax.axhline(0.5, ls=":", color="#555555", label="chance (collapse)")
        if key == "fd_snr":
            ax.axhline(1.0, ls="--", color="#aaaaaa", lw=1, label="SNR = 1")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("LoRA rank r")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(f"{['signal', 'FD-SNR', 'direction'][col]} vs rank (sigma = {mech['noise_floor']:g}, {len(seeds)} seeds)", fontsize=8)
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "signal_vs_rank.png")

    summary = claims_summary(mech, runs, params, records)
    cells_ = summary["cells"]

    # accuracy against rank at matched budget
    fig, axes = plotting.figure()
    ax = axes[0, 0]
    sweep = summary["ranks_sweep"]
    for name in names:
        ks = [k for k in sorted(cells_, key=lambda k: cells_[k]["rank"]) if cells_[k]["method"] == name]
        if ks:
            plotting.mean_band(ax, [cells_[k]["rank"] for k in ks], [[cells_[k]["accuracy"][i] for k in ks] for i in range(len(runs))],
                               LABELS[name], COLOURS[name])
    for name in ("mezo_full", "mezo_lora", "lozo"):
        k = _key(name, summary["rank"])
        if k in cells_:
            ax.axhline(np.mean(cells_[k]["accuracy"]), color=COLOURS[name], ls="--", lw=1, label=f"{LABELS[name]} (r = {summary['rank']})")
    ax.axhline(np.mean(summary["zero_shot"]), color="black", ls=":", lw=1, label="zero-shot prompt")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sweep, [str(r) for r in sweep])
    ax.set_xlabel("LoRA rank r")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"accuracy vs rank, {summary['forwards']} forward passes each ({len(runs)} seeds)", fontsize=9)
    ax.legend(fontsize=6)
    plotting.save(fig, figdir / "accuracy_vs_rank.png")

    # every method at the default rank
    fig, axes = plotting.figure(width=6.0, height=3.8)
    ax = axes[0, 0]
    keys = [_key(m, summary["rank"]) for m in params["methods"] if _key(m, summary["rank"]) in cells_]
    for i, k in enumerate(keys):
        vals = cells_[k]["accuracy"]
        ax.barh(i, np.mean(vals), color=COLOURS[cells_[k]["method"]], edgecolor="black", lw=0.5)
        ax.plot(vals, [i] * len(vals), "k.", ms=4)
    ax.axvline(np.mean(summary["zero_shot"]), ls=":", color="black", lw=1, label="zero-shot prompt")
    ax.set_yticks(range(len(keys)), [LABELS[cells_[k]["method"]] for k in keys], fontsize=7)
    ax.set_xlabel("test accuracy")
    lo = min(min(cells_[k]["accuracy"]) for k in keys)
    ax.set_xlim(max(0.0, lo - 0.05), 1.0)
    ax.set_title(f"matched budget ({summary['forwards']} forward passes), r = {summary['rank']} (bars: mean, dots: seeds)", fontsize=8)
    ax.legend(fontsize=7)
    plotting.save(fig, figdir / "methods.png")

    # training loss curves at the default rank
    fig, axes = plotting.figure()
    ax = axes[0, 0]
    every = params["budget"]["log_every"]
    for k in keys:
        curves = [r["runs"][k]["train_curve"] for r in runs]
        n = min(len(c) for c in curves)
        if n:
            plotting.mean_band(ax, [every * (i + 1) * 2 for i in range(n)], [c[:n] for c in curves], LABELS[cells_[k]["method"]],
                               COLOURS[cells_[k]["method"]])
    ax.set_xlabel("forward passes")
    ax.set_ylabel("training loss (mean of L+ and L-, window mean)")
    ax.set_title(f"training loss at matched budget ({len(runs)} seeds)", fontsize=9)
    ax.legend(fontsize=7)
    plotting.save(fig, figdir / "training_loss.png")

    summary_rows = []
    for k, c in cells_.items():
        mean, std = claims.mean_std(c["accuracy"])
        summary_rows.append({"cell": k, "method": c["method"], "rank": c["rank"], "test_accuracy_mean": _sig(mean),
                             "test_accuracy_std": _sig(std), "seeds": len(c["accuracy"]),
                             "lr": runs[0]["runs"][k]["lr"], "eps": runs[0]["runs"][k]["eps"], "forwards": summary["forwards"]})
    for name in names:
        for r in ranks:
            vals = [mech["seeds"][str(s)][name][str(r)] for s in seeds]
            summary_rows.append({"cell": f"mechanism {name}@r{r}", "method": name, "rank": r,
                                 "signal_mean": _sig(float(np.mean([v["signal"] for v in vals]))),
                                 "fd_snr_mean": _sig(float(np.mean([v["fd_snr"] for v in vals]))),
                                 "sign_agreement_mean": _sig(float(np.mean([v["sign_agreement"] for v in vals]))),
                                 "scaling": vals[0]["scaling"], "seeds": len(vals)})
    return claims.write_tables(out, summary_rows, claim_rows(summary, scale))
