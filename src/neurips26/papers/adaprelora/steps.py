"""The steps the CLI calls for adaprelora: tune (one job per task) -> train (one job per task and
seed) -> figures.

`tune` puts every method through the tuning protocol (core.tuning) on the tuning seed's training set
minus a validation split: its lr grid (the same number of points for each) and, for the methods
with a damping of their r x r Gram matrices (ScaledAdamW, LoRA-Pro, the Frobenius projection,
AdaPreLoRA), the damping grid jointly, each grid extended past an edge that holds the best
validation score (accuracy; BLEU for data-to-text); it then names the strongest LoRA optimizer
from those validation scores. `train` trains every method at its tuned knobs on the full
training set of a seed and scores the test set, with the optimizer-state bytes, the peak of one
training step and, for AdaPreLoRA, the closed form against a generic solver on the last step's
real layers. `figures` writes the plots, tables, claims and tuning.csv (every tuned, fixed and
chosen knob).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning

from .claims import claim_rows

P = "adaprelora"
DIGITS = 6
CURVE_POINTS = 50


def _sig(x):
    if isinstance(x, float):
        return io.significant(x, DIGITS) if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _sig(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_sig(v) for v in x]
    return x


def _settings(params: dict) -> dict:
    return {k: params[k] for k in ("classification", "lm", "optim", "methods", "grid")}


def _task_of(params: dict) -> str:
    task = params.get("task")
    if task not in params["tasks"]:
        raise ValueError(f"config key '{P}.tasks': the job's task '{task}' is not listed")
    return task


def _score(res: dict, task: str) -> float:
    from . import runner

    v = res.get(runner.primary_metric(task))
    return -math.inf if v is None or not math.isfinite(v) else float(v)


# ---------------------------------------------------------------- tune
def tune(params, inputs, out: Path):
    """Every method through the tuning protocol (core.tuning.search) on the validation split of the
    tuning seed: its lr grid and, for a method with a damping of its r x r Gram matrices listed in
    `damping_grid`, the damping jointly with the lr; each grid extends while its best value sits
    on an edge (up to `tuning.extensions` steps per edge). Then the strongest LoRA optimizer is
    named from the validation scores (core.tuning.strongest), before any test number exists."""
    from . import claims as apl_claims, runner

    import torch

    from neurips26.core import tuning

    task, seed, started = _task_of(params), params["tune"]["seed"], time.perf_counter()
    extensions = tuning.settings(params)["extensions"]
    torch.manual_seed(seed)
    val = runner.validation_task(runner.load_task(task, params, seed, inputs), task, params, seed)
    n_val = params["lm" if runner.is_lm(task) else "classification"]["n_val"]
    metric = runner.primary_metric(task)
    key = {"stage": "tune", **_settings(params)}
    trials, tuned, damping, scores, records = {}, {}, {}, {}, []
    for method in params["methods"]:
        grids = {"lr": params["grid"][method]}
        dgrid = (params.get("damping_grid") or {}).get(method)
        if dgrid:
            grids["damping"] = dgrid

        def evaluate(lr, damping=None, method=method):
            name = f"{method}_lr{lr:g}" + ("" if damping is None else f"_d{damping:g}")
            res = runner.run(task, val, method, lr, params, seed, inputs, out / "runs" / name, key, damping=damping)
            return _score(res, task)

        chosen, recs = tuning.search(evaluate, grids, method=method, setting=task, metric=f"validation {metric}",
                                     extensions=extensions, seed=seed, split=f"validation ({n_val} rows held out of the "
                                     "tuning seed's training set)", progress=lambda line: print(f"tune {line}", flush=True))
        records += recs
        tuned[method] = chosen["lr"]
        damping[method] = chosen.get("damping", runner.default_damping(method, params))
        lr_rec = next(r for r in recs if r.knob == "lr")
        trials[method] = [{"lr": g, "score": v} for g, v in zip(lr_rec.grid, lr_rec.scores)]
        scores[method] = lr_rec.score
        tracking.active().log_metrics({f"tuned_lr_{method}": tuned[method]})
    present = [b for b in apl_claims.BASELINES if b in scores]
    strongest = None
    if present:
        strongest, choice = tuning.strongest({b: scores[b] for b in present}, candidates=present,
                                             controls=[m for m in ("full_adafactor",) if m in scores],
                                             setting=task, metric=f"validation {metric}", seed=seed)
        records.append(choice)
        print(f"tune {task}: strongest LoRA optimizer on validation: {strongest}", flush=True)
    io.write_json(out / "tune.json", _sig({"task": task, "seed": seed, "metric": metric, "tuned": tuned, "damping": damping,
                                           "val_score": scores, "strongest": strongest, "trials": trials,
                                           "records": [r.to_json() for r in records]}))
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started})
    return [out / "tune.json", out / "timing.json"]


# ---------------------------------------------------------------- train
def train(params, inputs, out: Path):
    from . import runner

    import torch

    task, seed, started = _task_of(params), params["seed"], time.perf_counter()
    tuned_all = io.read_json(Path(inputs["tune"]) / "tune.json")
    tuned, damping = tuned_all["tuned"], tuned_all.get("damping", {})
    data = runner.load_task(task, params, seed, inputs)
    key = {"stage": "train", **_settings(params)}
    methods, timing, check = {}, {}, None
    import shutil

    # the closed-form check needs AdaPreLoRA's last step run, not a finished checkpoint reused
    shutil.rmtree(out / "runs" / "adaprelora", ignore_errors=True)
    for method in params["methods"]:
        if method not in tuned:
            raise ValueError(f"{inputs['tune']}/tune.json: no tuned lr for '{method}' (rerun tune)")
        torch.manual_seed(seed)
        res = runner.run(task, data, method, tuned[method], params, seed, inputs, out / "runs" / method, key,
                         check=method == "adaprelora", check_layers=params["check_layers"],
                         damping=damping.get(method))
        losses = res.pop("losses")
        every = max(1, len(losses) // CURVE_POINTS)
        res["loss_curve"] = [float(np.mean(losses[i:i + every])) for i in range(0, len(losses), every)]
        res["curve_every"] = every
        res["final_loss"] = float(np.mean(losses[-every:]))
        timing[method] = res.pop("seconds")
        if method == "adaprelora":
            check = res.pop("closed_form_check")
        methods[method] = res
        tracking.active().log_metrics({f"{method}_{runner.primary_metric(task)}": _score(res, task)})
        print(f"train {task} seed {seed} {method} lr {tuned[method]:g} damping {damping.get(method)}: {runner.primary_metric(task)} {_score(res, task):.4f} "
              f"state {res['state_bytes']} B peak {res['peak_bytes']} B ({res['peak_kind']})", flush=True)
    long = None
    if not runner.is_lm(task) and horizon_methods(params, tuned_all.get("strongest")):
        long, timing["long"] = train_long(params, inputs, out, task, seed, data, tuned, damping, tuned_all.get("strongest"))
    from neurips26.papers.lora_harness import models

    net = runner.build_net(task, data, "adaprelora", params, seed, inputs)
    pairs = [{"name": p.name, "m": p.B.shape[0], "n": p.A.shape[1], "r": p.A.shape[0]} for p in models.lora_pairs(net)]
    others = sum(q.numel() for q in net.parameters() if q.requires_grad) - sum(p["r"] * (p["m"] + p["n"]) for p in pairs)
    io.write_json(out / "metrics.json", _sig({"task": task, "seed": seed, "metric": runner.primary_metric(task),
                                              "methods": methods, "closed_form_check": check, "pairs": pairs,
                                              "other_trainable": int(others), "beta1": params["optim"]["beta1"],
                                              **({"long": long} if long else {})}))
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started, "fit_seconds": timing})
    return [out / "metrics.json", out / "timing.json"]


def horizon_methods(params: dict, strongest: str | None) -> list[str]:
    """The methods trained at the long horizon (`classification.horizon`, 0: none): those listed in
    `classification.horizon_methods` and the strongest LoRA optimizer the tune step named on
    validation, in the order of `methods`."""
    c = params["classification"]
    if not c.get("horizon"):
        return []
    want = set(c.get("horizon_methods") or ()) | ({strongest} if strongest else set())
    return [m for m in params["methods"] if m in want]


def train_long(params, inputs, out: Path, task: str, seed: int, data, tuned: dict, damping: dict, strongest):
    """The long-horizon runs of one classification seed: each method of `horizon_methods` trained for
    `classification.horizon` steps (its own linear schedule over that budget) at the lr and damping
    its tune step chose at the short budget (`classification.steps`), on the seed's data and
    minibatches; the test accuracy is recorded after each count of `classification.horizon_at`.
    Returns the metrics block and the fit seconds per method."""
    import shutil

    import torch

    from . import runner

    c = params["classification"]
    horizon, at = int(c["horizon"]), sorted({int(s) for s in c["horizon_at"]} | {int(c["horizon"])})
    key = {"stage": "train_long", **_settings(params)}
    # the accuracies along a run are recorded only while its steps run: no finished checkpoint is reused
    shutil.rmtree(out / "runs_long", ignore_errors=True)
    block, seconds = {}, {}
    for method in horizon_methods(params, strongest):
        torch.manual_seed(seed)
        res = runner.run(task, data, method, tuned[method], params, seed, inputs, out / "runs_long" / method, key,
                         damping=damping.get(method), steps=horizon, record_at=at)
        losses = res.pop("losses")
        every = max(1, len(losses) // CURVE_POINTS)
        seconds[method] = res["seconds"]
        block[method] = {"lr": res["lr"], "damping": res["damping"], "accuracy": res["accuracy"], "items": res["items"],
                         "accuracy_at": res["accuracy_at"], "items_at": res["items_at"],
                         "loss_curve": [float(np.mean(losses[i:i + every])) for i in range(0, len(losses), every)],
                         "curve_every": every, "final_loss": float(np.mean(losses[-every:]))}
        print(f"train {task} seed {seed} {method} at {horizon} steps (knobs tuned at {c['steps']}): accuracy "
              + ", ".join(f"{a:.4f} after {s}" for s, a in zip(at, res["accuracy_at"])), flush=True)
    return {"steps": horizon, "tuned_at": int(c["steps"]), "at": at, "strongest": strongest, "methods": block}, seconds


# ---------------------------------------------------------------- figures
COLOURS = {"adamw": "#7f7f7f", "loraplus": "#1f77b4", "scaled_adamw": "#2ca02c", "lora_pro": "#9467bd",
           "adafactor_proj": "#ff7f0e", "adaprelora": "#d62728", "full_adafactor": "#8c564b"}
LABELS = {"adamw": "AdamW (factors)", "loraplus": "LoRA+ (ratio 16)", "scaled_adamw": "ScaledAdamW (Riemannian)",
          "lora_pro": "LoRA-Pro", "adafactor_proj": "Adafactor + Frobenius projection", "adaprelora": "AdaPreLoRA",
          "full_adafactor": "full-W Adafactor"}


def predicted_state_bytes(run: dict, beta1) -> int:
    """AdaPreLoRA's state by the count: per pair R (m) + C (n) and, with beta1, the factor
    momenta r (m + n); AdamW's two moments on the other trainable tensors; float32."""
    per_pair = sum(p["m"] + p["n"] + (p["r"] * (p["m"] + p["n"]) if beta1 else 0) for p in run["pairs"])
    return 4 * (per_pair + 2 * run["other_trainable"])


def late_share(curve) -> float:
    """Share of a training-loss curve's decrease made in its last fifth: (mean of the fourth fifth -
    mean of the last fifth) / (first point - mean of the last fifth); 1 when the loss did not fall.
    Near 0 the curve has flattened; a large share means the run ended in a transient."""
    xs = [float(x) for x in curve if x is not None and math.isfinite(float(x))]
    if len(xs) < 3:
        return float("nan")
    k = max(1, len(xs) // 5)
    last, prev = xs[-k:], xs[-2 * k:-k]
    end = sum(last) / len(last)
    drop = xs[0] - end
    if drop <= 0:
        return 1.0
    return (sum(prev) / len(prev) - end) / drop


def records_of(tune: dict) -> list:
    """The tuning protocol's records a tune step wrote (none in a tune.json from before it)."""
    from neurips26.core import tuning

    return [tuning.Record.from_json(r) for r in tune.get("records", [])]


def fixed_records(params: dict) -> list:
    """The knobs the paper fixes, for every method that has them (core.tuning.fixed)."""
    from neurips26.core import tuning

    from . import runner

    o, methods, out = params["optim"], params["methods"], []
    damped = set((params.get("damping_grid") or {})) & set(methods)
    same = "the same for every method (the harness's budget)"
    out.append(tuning.fixed("all methods", "steps", f"{params['classification']['steps']} (classification), "
                            f"{params['lm']['steps']} (data-to-text)", f"{same}; the default DAG's time"))
    c = params["classification"]
    if c.get("horizon"):
        out.append(tuning.fixed(", ".join(c.get("horizon_methods") or []) + " and the strongest on validation", "horizon",
                                f"{c['horizon']} steps (classification), accuracy after {sorted(set(c['horizon_at']) | {c['horizon']})}",
                                f"the *_long rows; every knob as tuned at {c['steps']} steps (not re-tuned at the horizon)"))
    out.append(tuning.fixed("all methods", "schedule", f"{o['schedule']}, warm-up {o['warmup']}", same))
    out.append(tuning.fixed("all methods", "weight_decay", o["weight_decay"], same))
    for m in methods:
        if m in ("adamw", "loraplus", "scaled_adamw", "lora_pro"):
            out.append(tuning.fixed(m, "adam_betas_eps", "0.9, 0.999, 1e-8", "torch's AdamW defaults, as the authors' code"))
        if m == "loraplus":
            out.append(tuning.fixed(m, "loraplus_ratio", o["loraplus_ratio"], "the LoRA+ paper's ratio"))
        if m in ("adaprelora", "adafactor_proj", "full_adafactor"):
            out.append(tuning.fixed(m, "adafactor_beta1_clip", f"{o['beta1']}, {o['clip_threshold']}",
                                    "transformers' Adafactor settings (decay 1 - t^-0.8, eps1 1e-30)"))
        if m in runner.DAMPED and m not in damped:
            out.append(tuning.fixed(m, "damping", runner.default_damping(m, params),
                                    "not in damping_grid: the config's value"))
    return out


def claims_summary(params: dict, tunes: dict, runs: dict) -> dict:
    """Per task and method: the per-seed scores and items, the memory figures (largest over
    seeds, and per seed), the validation score at the tuned lr (which picks the strongest
    baseline), the late share of each run's loss decrease (`late_share`); the check."""
    out = {"tasks": {}, "check": {"max_rel_factor_diff": 0.0, "max_rel_image_diff": 0.0, "max_rel_imbalance_excess": 0.0,
                                  "layers": 0, "runs": 0}}
    for task, seed_runs in runs.items():
        metric = seed_runs[0]["metric"]
        methods = list(seed_runs[0]["methods"])
        t = {"metric": metric, "seeds": len(seed_runs), "tuned": tunes[task]["tuned"],
             "scores": {m: [r["methods"][m][metric] for r in seed_runs] for m in methods},
             "items": {m: [r["methods"][m]["items"] for r in seed_runs] for m in methods},
             "state_bytes": {m: max(r["methods"][m]["state_bytes"] for r in seed_runs) for m in methods},
             "peak_bytes": {m: max(r["methods"][m]["peak_bytes"] for r in seed_runs) for m in methods},
             "state_bytes_seeds": {m: [r["methods"][m]["state_bytes"] for r in seed_runs] for m in methods},
             "peak_bytes_seeds": {m: [r["methods"][m]["peak_bytes"] for r in seed_runs] for m in methods},
             "val_score": {m: (tunes[task]["val_score"].get(m) if "val_score" in tunes[task] else
                               next((x["score"] for x in tunes[task]["trials"].get(m, [])
                                     if x["lr"] == tunes[task]["tuned"].get(m)), None)) for m in methods},
             "strongest": tunes[task].get("strongest"),
             "capped": {m: tuning.capped_note(records_of(tunes[task]), m, task) for m in methods},
             "late_share": {m: [late_share(r["methods"][m]["loss_curve"]) for r in seed_runs] for m in methods},
             "peak_kind": seed_runs[0]["methods"]["adaprelora"]["peak_kind"],
             "state_predicted": predicted_state_bytes(seed_runs[0], seed_runs[0]["beta1"])}
        long = [r.get("long") for r in seed_runs]
        if all(long):
            lm = list(long[0]["methods"])
            t["long"] = {"steps": long[0]["steps"], "tuned_at": long[0]["tuned_at"], "at": long[0]["at"],
                         "scores": {m: [x["methods"][m]["accuracy"] for x in long] for m in lm},
                         "items": {m: [x["methods"][m]["items"] for x in long] for m in lm},
                         "accuracy_at": {m: [x["methods"][m]["accuracy_at"] for x in long] for m in lm},
                         "late_share": {m: [late_share(x["methods"][m]["loss_curve"]) for x in long] for m in lm}}
        if metric == "bleu":
            for extra in ("exact_match", "rouge_l"):
                t[extra] = {m: [r["methods"][m][extra] for r in seed_runs] for m in methods}
        out["tasks"][task] = t
        for r in seed_runs:
            c = r.get("closed_form_check")
            if c:
                ch = out["check"]
                ch["max_rel_factor_diff"] = max(ch["max_rel_factor_diff"], c["max_rel_factor_diff"])
                ch["max_rel_image_diff"] = max(ch["max_rel_image_diff"], c["max_rel_image_diff"])
                ch["max_rel_imbalance_excess"] = max(ch["max_rel_imbalance_excess"], c["max_rel_imbalance_excess"])
                ch["layers"] += c["layers"]
                ch["runs"] += 1
    return out


def _fix_none(vals):
    return [v if v is not None else float("nan") for v in vals]


def accuracy_steps(params: dict, tunes: dict, runs: dict, path: Path) -> None:
    """Test accuracy against steps of the long-horizon runs (mean and min-max over seeds per
    method), with each method's short-budget run as an open marker at its own budget."""
    cls = [t for t in params["tasks"] if all(r.get("long") for r in runs[t])]
    fig, axes = plotting.figure(ncols=max(1, len(cls)), width=4.6, height=3.8)
    if not cls:
        ax = axes[0, 0]
        ax.text(0.5, 0.5, "no long-horizon runs\n(classification.horizon is 0, or no classification task)",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    for col, task in enumerate(cls):
        ax, L = axes[0, col], runs[task][0]["long"]
        for m in L["methods"]:
            plotting.mean_band(ax, L["at"], [r["long"]["methods"][m]["accuracy_at"] for r in runs[task]],
                               f"{LABELS[m]} (lr {tunes[task]['tuned'][m]:g})", COLOURS[m])
            short = np.asarray(_fix_none([r["methods"][m]["accuracy"] for r in runs[task]]), dtype=float)
            ax.errorbar([L["tuned_at"]], [np.nanmean(short)], yerr=[np.nanstd(short)], fmt="o", mfc="none",
                        color=COLOURS[m], capsize=3)
        ax.set_xlabel("optimizer steps")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{task}: test accuracy vs steps ({len(runs[task])} seeds)\n{L['steps']}-step runs at the knobs tuned "
                     f"at {L['tuned_at']} steps; open: the {L['tuned_at']}-step runs", fontsize=7)
        ax.legend(fontsize=6)
    plotting.save(fig, path)


def figures(params, inputs, out: Path):
    scale = params["scale"]
    tasks = params["tasks"]
    tunes = {t: io.read_json(Path(inputs["tune"]) / t / "tune.json") for t in tasks}
    runs = {t: [io.read_json(Path(inputs["runs"]) / t / f"seed{s}" / "metrics.json") for s in params["seeds"]] for t in tasks}
    figdir = out / "figures"
    methods = params["methods"]
    n_seeds = len(params["seeds"])

    fig, axes = plotting.figure(ncols=len(tasks), width=4.6, height=3.8)
    for col, task in enumerate(tasks):
        ax, metric = axes[0, col], runs[task][0]["metric"]
        for m in methods:
            vals = np.asarray(_fix_none([r["methods"][m][metric] for r in runs[task]]), dtype=float)
            state = max(r["methods"][m]["state_bytes"] for r in runs[task]) / 1024
            ax.errorbar([state], [np.nanmean(vals)], yerr=[np.nanstd(vals)], fmt="o", color=COLOURS[m], label=LABELS[m], capsize=3)
        ax.set_xscale("log")
        ax.set_xlabel("optimizer state (KiB, log)")
        ax.set_ylabel(f"test {metric}")
        ax.set_title(f"{task}: score vs optimizer memory ({n_seeds} seeds)", fontsize=8)
        if col == 0:
            ax.legend(fontsize=6)
    plotting.save(fig, figdir / "score_memory.png")

    fig, axes = plotting.figure(ncols=len(tasks), width=4.6, height=3.8)
    for col, task in enumerate(tasks):
        ax = axes[0, col]
        for m in methods:
            r0 = runs[task][0]["methods"][m]
            x = [i * r0["curve_every"] for i in range(len(r0["loss_curve"]))]
            plotting.mean_band(ax, x, [r["methods"][m]["loss_curve"] for r in runs[task]],
                               f"{LABELS[m]} (lr {tunes[task]['tuned'][m]:g})", COLOURS[m])
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (cross-entropy)")
        ax.set_title(f"{task}: learning curves at the tuned lr ({n_seeds} seeds)", fontsize=8)
        ax.legend(fontsize=6)
    plotting.save(fig, figdir / "learning_curves.png")

    fig, axes = plotting.figure(ncols=len(tasks), width=4.6, height=3.8)
    for col, task in enumerate(tasks):
        ax = axes[0, col]
        for m in methods:
            rows = tunes[task]["trials"][m]
            ys = [r["score"] if r["score"] is not None and math.isfinite(r["score"]) else float("nan") for r in rows]
            ax.plot([r["lr"] for r in rows], ys, "o-", color=COLOURS[m], label=LABELS[m])
        ax.set_xscale("log")
        ax.set_xlabel("learning rate")
        ax.set_ylabel(f"validation {tunes[task]['metric']}")
        ax.set_title(f"{task}: lr sensitivity (tuning seed {tunes[task]['seed']})", fontsize=8)
        if col == 0:
            ax.legend(fontsize=6)
    plotting.save(fig, figdir / "lr_sensitivity.png")

    accuracy_steps(params, tunes, runs, figdir / "accuracy_steps.png")

    records = [r for t in tasks for r in records_of(tunes[t])] + fixed_records(params)
    tuning.write_csv(out / "tuning.csv", P, records)
    summary = claims_summary(params, tunes, runs)
    rows = []
    for task, t in summary["tasks"].items():
        for m in methods:
            mean, sd = claims.mean_std(_fix_none(t["scores"][m]))
            row = {"task": task, "method": m, "metric": t["metric"], "mean": _sig(mean), "std": _sig(sd),
                   "replicates": len(t["scores"][m]), "tuned_lr": t["tuned"][m],
                   "tuned_damping": tunes[task].get("damping", {}).get(m), "state_bytes": t["state_bytes"][m],
                   "peak_step_bytes": t["peak_bytes"][m], "peak_kind": t["peak_kind"]}
            for extra in ("exact_match", "rouge_l"):
                if extra in t:
                    row[f"{extra}_mean"] = _sig(claims.mean_std(_fix_none(t[extra][m]))[0])
            rows.append(row)
    return claims.write_tables(out, rows, claim_rows(summary, scale))
