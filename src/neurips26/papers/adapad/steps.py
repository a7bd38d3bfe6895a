"""The steps the CLI calls for adapad: mechanism | tune (one job per task) -> train (per task and seed) -> figures.

`mechanism` (one job, every seed) fits a planted low-rank matrix by rank-1 deflation workers
(method.py): parallel deflation, AdaPaD's staggered activation with advance learning (and a sweep
of advance lengths), and sequential deflation, each at its step size tuned by the tuning protocol
(core.tuning.search: the grid extends past an edge that holds the best) on a seed that is not
reported; it records every component's error per round, the fitted decay rate after warm-up
against the linearised prediction, warm-up lengths, the statistical floor, and two matched-compute
runs (sequential deflation with stages of T rounds, parallel deflation for T / r rounds). `tune` puts every
fine-tuning method's learning rate through the same protocol (the same grid for each) on a
validation split of the tuning seed's training set (`adapad` grows under LoRA r = budget_rank's
parameters, `adapad_max` under LoRA r = max_rank's, the per-map cap); `train` runs every method at its tuned rate on one seed's data and
reports test accuracy, the deployed adapter size and the rank each map ended with; `figures`
writes the plots, tables, claims and tuning.csv (every tuned and fixed knob).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking
from neurips26.core import tuning as core_tuning

from . import growth_every_max, method
from .claims import claim_rows

P = "adapad"
DIGITS = 6


def _sig(x):
    return io.rounded(x, DIGITS)


# ---------------------------------------------------------------- mechanism
def _problem(m, seed):
    return method.planted_matrix(m["rows"], m["cols"], m["spectrum"], m["noise"], seed)


def _schedule(m, kind, advance=None):
    r = len(m["spectrum"])
    return method.component_schedule(kind, r, m["rounds"], m["interval"], m["advance"] if advance is None else advance)


def _deflate(m, prob, kind, lr_rel, seed, advance=None):
    sched = _schedule(m, kind, advance)
    return method.run_deflation(prob, len(m["spectrum"]), lr_rel / prob.s[0], m["rounds"], sched, m["init_scale"], seed), sched


def _final_score(res) -> float:
    """log10 of the largest final algorithmic error over components (the tuning score)."""
    worst = float(np.max(res["algorithmic"][-1]))
    return math.log10(max(worst, 1e-300)) if math.isfinite(worst) else math.inf


def _warmups(res, sched, threshold, rounds):
    """Rounds from each component's activation until its error first falls to `threshold`."""
    out = []
    for k, (_, act, _) in enumerate(sched):
        w = method.warmup_round(res["algorithmic"][:, k], act, threshold)
        out.append((rounds if w is None else w) - act)
    return out


def mechanism(params, inputs, out: Path):
    m, started = params["mechanism"], time.perf_counter()
    r, every = len(m["spectrum"]), m["record_every"]
    tune_prob = _problem(m, m["tune_seed"])
    extensions = core_tuning.settings(params)["extensions"]
    tuned, tuning, records = {}, {}, []
    for kind in ("parallel", "adapad", "sequential"):
        def evaluate(eta_s1, kind=kind):
            with np.errstate(all="ignore"):
                res, _ = _deflate(m, tune_prob, kind, eta_s1, m["tune_seed"])
            return _final_score(res)

        chosen, recs = core_tuning.search(evaluate, {"eta_s1": m["lr_grid"]}, method=kind, setting="mechanism",
                                          metric="log10 largest final component error", maximize=False,
                                          extensions=extensions, seed=m["tune_seed"], split="tuning seed's planted matrix")
        records += recs
        rec = recs[0]
        tuned[kind] = chosen["eta_s1"]
        tuning[kind] = [{"lr": a, "log10_final_error": s} for a, s in zip(rec.grid, rec.scores)]
        print(f"mechanism tune {kind}: eta s_1 = {tuned[kind]:g} (log10 final error {rec.score:.2f}; grid "
              f"{', '.join(f'{g:g}' for g in rec.grid)}, {rec.status})", flush=True)
    for knob, why in (("advance", "the advance-learning length AdaPaD is scored with (the sweep reads the others)"),
                      ("interval", "the activation interval of the schedule (the paper's design, not a step size)"),
                      ("init_scale", "the workers' initial scale, the same for every schedule")):
        records.append(core_tuning.fixed("all schedules", knob, m[knob], why, setting="mechanism"))
    seeds = {}
    for seed in m["seeds"]:
        prob = _problem(m, seed)
        row = {"singular_values": prob.s[:r + 1].tolist(),
               "floor": [float(np.linalg.norm(prob.triplet(k) - prob.triplet(k, False)) / prob.true_s[k]) for k in range(r)]}
        for kind in ("parallel", "adapad", "sequential"):
            res, sched = _deflate(m, prob, kind, tuned[kind], seed)
            lr = tuned[kind] / prob.s[0]
            entry = {"algorithmic": res["algorithmic"][::every].tolist(), "deployed": res["deployed"][::every].tolist(),
                     "final_algorithmic": res["algorithmic"][-1].tolist(), "final_statistical": res["statistical"][-1].tolist(),
                     "schedule": [list(s) for s in sched], "warmup": _warmups(res, sched, m["warm_threshold"], m["rounds"])}
            if kind != "sequential":
                entry["statistical"] = res["statistical"][::every].tolist()
                pred = method.predicted_rates(prob.s, lr, r)
                fits = []
                for k in range(r):
                    w = method.warmup_round(res["algorithmic"][:, k], sched[k][0], m["warm_threshold"])
                    f = None if w is None else method.decay_fit(res["algorithmic"][:, k], w, m["floor"])
                    fits.append({"predicted_rate": pred[k], **(f or {"rate": None, "r2": None, "first": None, "last": None})})
                entry["fits"] = fits
            else:
                # a frozen component's error after its stage: the largest change from its value at freezing
                entry["frozen_change"] = [float(np.max(np.abs(res["algorithmic"][s[2]:, k] - res["algorithmic"][s[2], k])))
                                          for k, s in enumerate(sched)]
            row[kind] = entry
        # matched compute: each worker gets the same gradient steps in both schedules. Sequential
        # deflation with a stage of T rounds (r T rounds, r T worker-steps) against parallel deflation
        # at T rounds; parallel deflation at T / r rounds (T worker-steps) against sequential at T.
        matched = {}
        for kind, rounds in (("sequential", r * m["rounds"]), ("parallel", m["rounds"] // r)):
            sched = method.component_schedule(kind, r, rounds)
            res = method.run_deflation(prob, r, tuned[kind] / prob.s[0], rounds, sched, m["init_scale"], seed)
            matched[kind] = {"rounds": rounds, "worker_steps": sum(stop - start for start, _, stop in sched),
                             "final_algorithmic": res["algorithmic"][-1].tolist()}
        row["matched"] = matched
        sweep = {}
        for adv in m["advance_sweep"]:
            res, sched = _deflate(m, prob, "adapad", tuned["adapad"], seed, advance=adv)
            sweep[str(adv)] = {"warmup": _warmups(res, sched, m["warm_threshold"], m["rounds"]),
                               "final_algorithmic": res["algorithmic"][-1].tolist(),
                               "deployed": res["deployed"][::every].tolist()}
        row["advance_sweep"] = sweep
        seeds[str(seed)] = row
        print(f"mechanism seed {seed}: final max error parallel {max(row['parallel']['final_algorithmic']):.2e} "
              f"adapad {max(row['adapad']['final_algorithmic']):.2e} sequential {max(row['sequential']['final_algorithmic']):.2e}; "
              f"warm-up (advance {m['advance_sweep']}) " + " ".join(str(sum(sweep[str(a)]['warmup'][1:])) for a in m["advance_sweep"]),
              flush=True)
        tracking.active().log_metrics({f"seed{seed}_log10_final_adapad": math.log10(max(row["adapad"]["final_algorithmic"]) + 1e-300),
                                       f"seed{seed}_log10_final_sequential": math.log10(max(row["sequential"]["final_algorithmic"]) + 1e-300)})
    io.write_json(out / "metrics.json", _sig({"settings": m, "tuned_lr": tuned, "tuning": tuning, "seeds": seeds,
                                              "records": [r.to_json() for r in records]}))
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started})


# ---------------------------------------------------------------- fine-tuning
def _data(params, task, seed):
    from neurips26.papers.lora_harness import tasks

    d = params["data"]
    return tasks.prepare_classification(task, d["train_size"], d["test_size"], seed, max_length=d["max_length"],
                                        encoder_dir=d["encoder"], data_dir=(d["data_dirs"] or {}).get(task),
                                        key=f"{P}.data")


def lora_rank(name: str) -> int:
    return int(name.split("_r")[1])


def build(params, name: str, classes: int, seed: int):
    """(model, after_step, extra_loss, report) of method `name`; report() -> ranks and size."""
    from neurips26.papers.lora_harness import models

    from . import model as am

    f = params["finetune"]
    mods, steps = f["modules"], f["steps"]
    net = models.minilm_classifier(classes, encoder_dir=params["data"]["encoder"], seed=seed)
    shapes = am.module_shapes(net, mods)
    if name.startswith("lora_r"):
        r = lora_rank(name)
        models.add_lora(net, r, tuple(mods), alpha=r, seed=seed)
        return net, None, None, lambda: {"ranks": {m: r for m in mods}, "size": method.adapter_size(shapes, {m: r for m in mods})}
    if name == "adalora":
        a = params["adalora"]
        model, after, extra = am.adalora(net, mods, a["init_r"], a["target_r"], steps, round(a["tinit"] * steps),
                                         round(a["tfinal"] * steps), a["delta_t"], a["orth_reg_weight"], seed,
                                         a["beta1"], a["beta2"])

        def report():
            ranks = am.adalora_ranks(model)
            return {"ranks": ranks, "size": method.adapter_size(shapes, ranks, per_rank_extra=1),
                    "budget_rank": a["target_r"] * len(mods)}
        return model, after, extra, report
    if name == "sequential":
        r = params["sequential"]["rank"]
        maps = am.attach(net, mods, r, seed, active=r, candidate=False)
        model = am.AdaPaDNet(net, maps, "sequential")
        ranks = {m: r for m in mods}
        return model, am.sequential_stage_hook(model, r, steps), None, lambda: {"ranks": ranks, "size": method.adapter_size(shapes, ranks)}
    if name in ("adapad", "adapad_max"):
        a = params["adapad"]
        maps = am.attach(net, mods, a["max_rank"], seed, active=a["init_rank"], candidate=True)
        model = am.AdaPaDNet(net, maps)
        cost = {m: shapes[m][0] + shapes[m][1] for m in mods}
        top = name == "adapad_max"
        budget = budget_params(params, shapes, a["max_rank"] if top else a["budget_rank"])
        # adapad_max grows often enough to reach the cap within the window (check_config), so only
        # the importance stop can leave it below the cap
        every = growth_every_max(a, steps, len(mods)) if top else a["grow_every"]
        grow = am.RankGrowth(model, budget, a["max_rank"], round(a["grow_start"] * steps), round(a["grow_end"] * steps),
                             every, beta=a["beta"], min_ratio=a["min_ratio"], cost=cost)

        def report():
            ranks = model.ranks()
            return {"ranks": ranks, "size": method.adapter_size(shapes, ranks), "budget_params": budget,
                    "events": grow.events, "stops": len(grow.stops),
                    "first_stop": grow.stops[0]["step"] if grow.stops else None}
        return model, grow, lambda n: n.correction(), report
    raise KeyError(f"config key '{P}.methods': unknown method '{name}'")


def budget_params(params, shapes, rank: int | None = None) -> int:
    """AdaPaD's shared budget: the parameters of fixed-rank LoRA at `rank` (default
    adapad.budget_rank) on every map. `adapad_max` takes adapad.max_rank: the budget is then the
    per-map rank cap itself, and only the importance stop can end growth below it."""
    r = params["adapad"]["budget_rank"] if rank is None else rank
    return method.adapter_size(shapes, {m: r for m in shapes})


def _fit(params, name, lr, data, seed, out, label):
    import torch

    from neurips26.papers.lora_harness import train as ht

    f = params["finetune"]
    torch.manual_seed(seed)
    model, after, extra, report = build(params, name, data.classes, seed)

    def make_opt(net):
        return torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=lr, weight_decay=f["weight_decay"])

    res = ht.finetune(model, data, make_opt, steps=f["steps"], batch_size=f["batch_size"], seed=seed, out=out,
                      key={"paper": P, "label": label, "method": name, "lr": lr, "params": {k: params[k] for k in
                           ("data", "finetune", "adalora", "sequential", "adapad")}},
                      schedule=f["schedule"], warmup=f["warmup"], after_step=after, extra_loss=extra)
    ev = ht.evaluate(model, data)
    return {"accuracy": ev["accuracy"], "correct": ev["correct"], "final_loss": float(np.mean(res.losses[-10:])),
            **report()}, res.seconds


def tune(params, inputs, out: Path):
    from neurips26.papers.lora_harness import tasks

    task, seed, started = params["task"], params["finetune"]["tune_seed"], time.perf_counter()
    extensions = core_tuning.settings(params)["extensions"]
    data = tasks.split_validation(_data(params, task, seed), params["data"]["val_size"], seed)
    chosen, records = {}, []
    for name in params["methods"]:
        trials = []

        def evaluate(lr, name=name, trials=trials):
            r, _ = _fit(params, name, lr, data, seed, out, f"tune-{task}")
            trials.append({"lr": lr, "val_accuracy": r["accuracy"], "train_loss": r["final_loss"]})
            print(f"tune {task} {name} lr={lr:g}: val accuracy {r['accuracy']:.3f}", flush=True)
            # a run whose training loss is not finite diverged: it cannot be chosen
            return r["accuracy"] if math.isfinite(r["final_loss"]) else -math.inf

        best, recs = core_tuning.search(evaluate, {"lr": params["grid"][name]}, method=name, setting=task,
                                        metric="validation accuracy", extensions=extensions, seed=seed,
                                        split=f"validation ({params['data']['val_size']} rows held out of the tuning "
                                              "seed's training set)")
        records += recs
        chosen[name] = {"lr": best["lr"], "trials": sorted(trials, key=lambda t: t["lr"])}
    io.write_json(out / "tune.json", _sig({"task": task, "seed": seed, "chosen": chosen,
                                           "records": [r.to_json() for r in records]}))
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started})


def train(params, inputs, out: Path):
    task, seed, started = params["task"], params["seed"], time.perf_counter()
    chosen = io.read_json(Path(inputs["tune"]) / "tune.json")["chosen"]
    data = _data(params, task, seed)
    runs, timing = {}, {}
    for name in params["methods"]:
        lr = chosen[name]["lr"]
        r, seconds = _fit(params, name, lr, data, seed, out, f"train-{task}")
        runs[name] = {"lr": lr, **r}
        timing[name] = seconds
        print(f"train {task} seed {seed} {name} lr={lr:g}: accuracy {r['accuracy']:.3f}, adapter {r['size']} parameters, "
              f"ranks {r['ranks']}", flush=True)
        tracking.active().log_metrics({f"{name}_accuracy": r["accuracy"], f"{name}_adapter_size": r["size"]})
    io.write_json(out / "metrics.json", _sig({"task": task, "seed": seed, "runs": runs}))
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started, "fit_seconds": timing})


# ---------------------------------------------------------------- figures
COLOURS = {"adapad": "#d62728", "adapad_max": "#9467bd", "parallel": "#ff7f0e", "sequential": "#1f77b4", "adalora": "#2ca02c",
           "lora_r2": "#c7c7c7", "lora_r4": "#7f7f7f", "lora_r8": "#383838"}
LABELS = {"adapad": "AdaPaD", "adapad_max": "AdaPaD (budget: max rank)", "parallel": "parallel deflation", "sequential": "sequential deflation",
          "adalora": "AdaLoRA (peft)"}


def _label(name):
    return LABELS.get(name, f"LoRA r = {lora_rank(name)}" if name.startswith("lora_r") else name)


def _log10(x):
    return math.log10(max(float(x), 1e-300))


def claims_summary(mech: dict, runs: dict, params: dict) -> dict:
    """Per-seed numbers the claims need (claims.claim_rows)."""
    m = mech["settings"]
    r = len(m["spectrum"])
    seeds = [mech["seeds"][k] for k in sorted(mech["seeds"], key=int)]
    ratios, r2s, r2_min = [], [], []
    for s in seeds:
        # a component without a fit (never warmed up, or too few rounds above the floor) counts as rate 0
        per = [(f["rate"] or 0.0) / f["predicted_rate"] for f in s["adapad"]["fits"]]
        ratios.append(float(min(per)))
        seed_r2 = [f["r2"] if f["r2"] is not None else 0.0 for f in s["adapad"]["fits"]]
        r2s += seed_r2
        r2_min.append(float(min(seed_r2)) if seed_r2 else float("nan"))
    base_adv, adv = str(min(m["advance_sweep"])), str(m["advance"])
    gap = [max(abs(a - b) / b for a, b in zip(s["adapad"]["final_statistical"], s["floor"])) for s in seeds]
    mechanism = {
        "seeds": len(seeds), "rounds": m["rounds"], "rank": len(m["spectrum"]), "advance": m["advance"], "interval": m["interval"],
        "log10_final_adapad": [_log10(max(s["adapad"]["final_algorithmic"])) for s in seeds],
        "log10_final_parallel": [_log10(max(s["parallel"]["final_algorithmic"])) for s in seeds],
        "log10_final_sequential": [_log10(max(s["sequential"]["final_algorithmic"])) for s in seeds],
        # matched compute (absent in runs made before these were recorded)
        "log10_final_sequential_long": [_log10(max(s["matched"]["sequential"]["final_algorithmic"]))
                                        for s in seeds if "matched" in s],
        "log10_final_parallel_short": [_log10(max(s["matched"]["parallel"]["final_algorithmic"]))
                                       for s in seeds if "matched" in s],
        "worker_steps": {"parallel": r * m["rounds"], "sequential": m["rounds"],
                         "sequential_long": r * m["rounds"], "parallel_short": r * (m["rounds"] // r)},
        "frozen_change": max(max(s["sequential"]["frozen_change"]) for s in seeds),
        "rate_ratio": ratios, "min_r2": float(min(r2s)) if r2s else float("nan"), "min_r2_per_seed": r2_min,
        "warmup_no_advance": [float(np.mean(s["advance_sweep"][base_adv]["warmup"][1:])) for s in seeds],
        "warmup_advance": [float(np.mean(s["advance_sweep"][adv]["warmup"][1:])) for s in seeds],
        "floor_gap": float(max(gap)), "floor": [float(np.mean(s["floor"])) for s in seeds],
    }
    ref = f"lora_r{params['compare']['reference_rank']}"
    pairs = [(t, s) for t in sorted(runs) for s in sorted(runs[t], key=int)]
    acc = {name: [runs[t][s]["runs"][name]["accuracy"] for t, s in pairs] for name in params["methods"]}
    size = {name: [runs[t][s]["runs"][name]["size"] for t, s in pairs] for name in params["methods"]}
    finetune = {"replicates": len(pairs), "tasks": sorted(runs), "pairs": [[t, s] for t, s in pairs], "reference": ref,
                "max_reference": f"lora_r{params['adapad']['max_rank']}",
                "margin": params["compare"]["margin"],
                "accuracy": acc, "size": size,
                "size_reduction": [1 - a / b for a, b in zip(size.get("adapad_max", []),
                                                             size.get(f"lora_r{params['adapad']['max_rank']}", []))]}
    return {"mechanism": mechanism, "finetune": finetune}


def fixed_records(params) -> list:
    """The fine-tuning knobs the paper fixes, for every method that has them (core.tuning.fixed)."""
    f, a, al, sq = params["finetune"], params["adapad"], params["adalora"], params["sequential"]
    out = [core_tuning.fixed("all methods", "steps_batch", f"{f['steps']} x {f['batch_size']}",
                             "the same budget for every method"),
           core_tuning.fixed("all methods", "schedule", f"{f['schedule']}, warm-up {f['warmup']}",
                             "the same schedule for every method"),
           core_tuning.fixed("all methods", "weight_decay", f["weight_decay"], "the same for every method (AdamW)")]
    methods = params["methods"]
    if "adapad" in methods:
        out.append(core_tuning.fixed("adapad", "budget_rank", a["budget_rank"],
                                     f"matched budget: the parameters of LoRA r = {a['budget_rank']} on every map"))
    if "adapad_max" in methods:
        out.append(core_tuning.fixed("adapad_max", "budget_rank", a["max_rank"],
                                     f"the per-map cap: the parameters of LoRA r = {a['max_rank']} on every map"))
    for name in ("adapad", "adapad_max"):
        if name in methods:
            every = growth_every_max(a, f["steps"], len(f["modules"])) if name == "adapad_max" else a["grow_every"]
            out.append(core_tuning.fixed(name, "growth", f"max rank {a['max_rank']}, every {every} steps from "
                                         f"{a['grow_start']:g} to {a['grow_end']:g} of training, beta {a['beta']:g}, "
                                         f"stop below {a['min_ratio']:g} x the active components' mean importance",
                                         "the paper's growth schedule scaled to the step budget"))
    if "adalora" in methods:
        out.append(core_tuning.fixed("adalora", "budget", f"init_r {al['init_r']} -> target_r {al['target_r']}, "
                                     f"tinit {al['tinit']:g}, tfinal {al['tfinal']:g}, orth_reg {al['orth_reg_weight']:g}",
                                     "AdaLoRA's GLUE recipe at the matched final budget"))
    if "sequential" in methods:
        out.append(core_tuning.fixed("sequential", "rank", sq["rank"], "the matched budget's rank"))
    return out


def figures(params, inputs, out: Path):
    scale = params["scale"]
    mech = io.read_json(Path(inputs["mechanism"]) / "metrics.json")
    runs: dict = {}
    for task in params["data"]["tasks"]:
        runs[task] = {str(s): io.read_json(Path(inputs["runs"]) / task / f"seed{s}" / "metrics.json") for s in params["seeds"]}
    m = mech["settings"]
    seeds = [mech["seeds"][k] for k in sorted(mech["seeds"], key=int)]
    n, r, every = len(seeds), len(m["spectrum"]), m["record_every"]
    rounds = list(range(0, m["rounds"] + 1, every))
    figdir = out / "figures"

    # 1. per-component errors: AdaPaD (parallel with advance learning) against sequential deflation
    fig, axes = plotting.figure(ncols=3, width=4.4, height=3.8)
    cmap = ["#d62728", "#ff7f0e", "#2ca02c", "#1f77b4", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    for col, kind in enumerate(("adapad", "parallel", "sequential")):
        ax = axes[0, col]
        for k in range(r):
            ys = [np.log10(np.maximum(np.asarray(s[kind]["algorithmic"])[:, k], 1e-300)) for s in seeds]
            plotting.mean_band(ax, rounds[:len(ys[0])], ys, f"component {k + 1}", cmap[k % len(cmap)], marker=None)
        ax.set_xlabel("round")
        ax.set_ylabel("log10 ||b_k a_k^T - s_k u_k v_k^T|| / s_k")
        extra = f", tau = {m['interval']}, advance {m['advance']}" if kind == "adapad" else ""
        ax.set_title(f"{_label(kind)} (eta s_1 = {mech['tuned_lr'][kind]:g}{extra}; {n} seeds)", fontsize=7)
        ax.legend(fontsize=6)
    plotting.save(fig, figdir / "deflation_errors.png")

    # 2. decay after warm-up: fitted vs predicted rate, and the statistical floor
    fig, axes = plotting.figure(ncols=2, width=4.8, height=3.8)
    ax = axes[0, 0]
    for k in range(r):
        pred = [s["adapad"]["fits"][k]["predicted_rate"] for s in seeds]
        got = [s["adapad"]["fits"][k]["rate"] if s["adapad"]["fits"][k]["rate"] is not None else np.nan for s in seeds]
        ax.scatter(pred, got, color=cmap[k % len(cmap)], label=f"component {k + 1}", s=18)
    lim = [0, max(max(f["predicted_rate"] for s in seeds for f in s["adapad"]["fits"]) * 1.3, 1e-6)]
    ax.plot(lim, lim, ls="--", color="#7f7f7f", label="fitted = predicted")
    ax.set_xlabel("predicted rate min_j -log(1 - eta (s_j - s_j+1)) per round")
    ax.set_ylabel("fitted rate of log error after warm-up")
    ax.set_title(f"exponential decay after warm-up (AdaPaD, {n} seeds)", fontsize=8)
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    for k in range(r):
        ys = [np.log10(np.maximum(np.asarray(s["adapad"]["statistical"])[:, k], 1e-300)) for s in seeds]
        plotting.mean_band(ax, rounds[:len(ys[0])], ys, f"component {k + 1}: vs planted", cmap[k % len(cmap)], marker=None)
        ax.axhline(np.log10(np.mean([s["floor"][k] for s in seeds])), color=cmap[k % len(cmap)], ls=":", lw=0.8)
    ax.set_xlabel("round")
    ax.set_ylabel("log10 error against the planted triplet")
    ax.set_title(f"statistical floor (dotted; noise {m['noise']:g})", fontsize=8)
    ax.legend(fontsize=6)
    plotting.save(fig, figdir / "decay.png")

    # 3. warm-up length against the advance-learning length
    fig, axes = plotting.figure(width=5.2, height=3.8)
    ax = axes[0, 0]
    adv = m["advance_sweep"]
    plotting.mean_band(ax, adv, [[np.mean(s["advance_sweep"][str(a)]["warmup"][1:]) for a in adv] for s in seeds],
                       "mean over components 2..r", COLOURS["adapad"])
    ax.set_xlabel(f"advance-learning rounds before activation (activation every {m['interval']} rounds)")
    ax.set_ylabel(f"rounds from activation to error <= {m['warm_threshold']:g}")
    ax.set_title(f"warm-up vs advance learning ({n} seeds)", fontsize=8)
    ax.legend(fontsize=7)
    plotting.save(fig, figdir / "advance.png")

    # 4. fine-tuning: accuracy against deployed adapter size, per task
    tasks_ = list(runs)
    fig, axes = plotting.figure(ncols=len(tasks_), width=4.6, height=3.8)
    for col, task in enumerate(tasks_):
        ax = axes[0, col]
        for name in params["methods"]:
            accs = [runs[task][s]["runs"][name]["accuracy"] for s in runs[task]]
            sizes = [runs[task][s]["runs"][name]["size"] for s in runs[task]]
            ax.errorbar(np.mean(sizes), np.mean(accs), xerr=np.std(sizes), yerr=np.std(accs), fmt="o",
                        color=COLOURS.get(name, "#000000"), label=_label(name), capsize=3)
        ax.set_xlabel("deployed adapter parameters")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{task} (mean +- std over {len(runs[task])} seeds, tuned lr each)", fontsize=7)
        ax.legend(fontsize=6)
    plotting.save(fig, figdir / "accuracy_size.png")

    # 5. rank distribution over maps (an output of AdaPaD and AdaLoRA)
    mods = params["finetune"]["modules"]
    fig, axes = plotting.figure(ncols=len(tasks_), width=4.6, height=3.8)
    shown = ("adapad", "adalora", f"lora_r{params['compare']['reference_rank']}", "adapad_max")
    width = 0.8 / len(shown)
    for col, task in enumerate(tasks_):
        ax = axes[0, col]
        for i, name in enumerate(shown):
            if name not in params["methods"]:
                continue
            ranks = [[runs[task][s]["runs"][name]["ranks"].get(mm, 0) for mm in mods] for s in runs[task]]
            ax.bar(np.arange(len(mods)) + (i - (len(shown) - 1) / 2) * width, np.mean(ranks, 0), width, yerr=np.std(ranks, 0),
                   color=COLOURS.get(name, "#000000"), label=_label(name))
        ax.set_xticks(np.arange(len(mods)))
        ax.set_xticklabels(mods, fontsize=7)
        ax.set_ylabel("final rank")
        ax.set_title(f"rank per map, {task} ({len(runs[task])} seeds)", fontsize=8)
        ax.legend(fontsize=6)
    plotting.save(fig, figdir / "ranks.png")

    records = [core_tuning.Record.from_json(r) for r in mech.get("records", [])]
    for task in params["data"]["tasks"]:
        tune_file = Path(inputs["tune"]) / task / "tune.json" if inputs.get("tune") else None
        if tune_file is not None and tune_file.exists():
            records += [core_tuning.Record.from_json(r) for r in io.read_json(tune_file).get("records", [])]
    records += fixed_records(params)
    core_tuning.write_csv(out / "tuning.csv", P, records)
    summary = claims_summary(mech, runs, params)
    summary["finetune"]["capped"] = {name: core_tuning.capped_note(records, name) for name in params["methods"]}
    rows = []
    mc = summary["mechanism"]
    for k, label in (("log10_final_adapad", "log10 final max component error, AdaPaD"),
                     ("log10_final_parallel", "log10 final max component error, parallel deflation"),
                     ("log10_final_sequential", "log10 final max component error, sequential deflation"),
                     ("log10_final_parallel_short", f"log10 final max component error, parallel deflation, "
                                                    f"{m['rounds'] // r} rounds (matched worker-steps)"),
                     ("log10_final_sequential_long", f"log10 final max component error, sequential deflation, "
                                                     f"stages of {m['rounds']} rounds (matched steps per component)"),
                     ("rate_ratio", "fitted / predicted decay rate (smallest over components)"),
                     ("warmup_no_advance", f"warm-up rounds, advance {min(m['advance_sweep'])}"),
                     ("warmup_advance", f"warm-up rounds, advance {m['advance']}")):
        mean, sd = claims.mean_std(mc[k])
        rows.append({"quantity": f"mechanism: {label}", "task": "", "mean": _sig(mean), "std": _sig(sd), "replicates": len(mc[k])})
    for task in tasks_:
        for name in params["methods"]:
            accs = [runs[task][s]["runs"][name]["accuracy"] for s in runs[task]]
            sizes = [runs[task][s]["runs"][name]["size"] for s in runs[task]]
            lrs = sorted({runs[task][s]["runs"][name]["lr"] for s in runs[task]})
            for q, vals in ((f"test accuracy, {_label(name)} (lr {', '.join(f'{x:g}' for x in lrs)})", accs),
                            (f"adapter parameters, {_label(name)}", sizes)):
                mean, sd = claims.mean_std(vals)
                rows.append({"quantity": q, "task": task, "mean": _sig(mean), "std": _sig(sd), "replicates": len(vals)})
            if name.startswith("adapad"):
                stops = [runs[task][s]["runs"][name].get("stops", 0) for s in runs[task]]
                mean, sd = claims.mean_std(stops)
                rows.append({"quantity": f"growth steps held back by the importance stop, {_label(name)}", "task": task,
                             "mean": _sig(mean), "std": _sig(sd), "replicates": len(stops)})
    return claims.write_tables(out, rows, claim_rows(summary, scale))
