"""The steps the CLI calls for es_dynamics: synthetic, lm (one job per seed) -> figures.

`synthetic` (one job, every seed) runs Z-score ES on the planted quadratic and integrates the SDE
from the same start (method.py), records drift, reward and the terms of the population reward
variance, runs an independent ES run that locates the peak window, the full-rank control at the
same N, the fitness-shaping baselines (plain, centred ranks) with step sizes tuned on a seed that is
not reported, and one ES run on each landscape of the declared grid (LANDSCAPE_GRID). `lm`
fine-tunes the tiny causal LM of lm_assets with Z-score ES on the generated addition task and
records the training reward, held-out verifiable rewards, the general-corpus perplexity, the drift
against the SDE's random-walk prediction and the drift along the task gradient at theta_0, and
replays the same perturbations with a pure-noise reward (the null). `figures` writes the plots,
tables and claims.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking

from .claims import claim_rows

P = "es_dynamics"
DIGITS = 6


def _sig(x):
    return io.rounded(x, DIGITS)


def _landscape(s: dict, seed: int, full_rank: bool = False, factors: dict | None = None) -> method.Quadratic:
    """The planted quadratic of `s` for `seed`; `factors` (a point of LANDSCAPE_GRID) scale its constants."""
    from . import method

    f = {"lam_scale": 1.0, "lam_off": 1.0, "off_dim": 1.0, "dist0": 1.0, **(factors or {})}
    return method.Quadratic(s["dim"], s["rank"], int(round(s["off_dim"] * f["off_dim"])), s["lam_max"] * f["lam_scale"],
                            s["lam_min"] * f["lam_scale"], s["lam_off"] * f["lam_off"], s["dist0"] * f["dist0"], seed,
                            full_rank=s["lam_full"] if full_rank else None, noise=s["noise"])


def landscape_grid() -> list[dict]:
    """Every point of the declared grid of landscapes (LANDSCAPE_GRID), in a fixed order."""
    import itertools

    from . import LANDSCAPE_GRID

    keys = list(LANDSCAPE_GRID["factors"])
    return [dict(zip(keys, values)) for values in itertools.product(*(LANDSCAPE_GRID["factors"][k] for k in keys))]


def _last_window(values, window):
    v = np.asarray(values, dtype=float)
    return float(v[-window:].mean())


def _windows(values, window):
    v = np.asarray(values, dtype=float)
    return [float(v[i:i + window].mean()) for i in range(0, len(v) - 1, window)]


def located_peak(locating_windows) -> int:
    """The peak window of a curve, to be read on another curve of the same landscape (reading it on
    the curve that located it would favour the peak by that curve's own noise)."""
    return int(np.argmax(locating_windows))


def _es(land, s, alpha, seed, shaping="zscore"):
    from . import method

    with np.errstate(all="ignore"):
        return method.run_es(land, s["population"], s["sigma"], alpha, s["generations"], seed, shaping)


# ---------------------------------------------------------------- synthetic
TUNE_METRIC = "last-window reward R(theta_T)"
PROGRESS_SHARE = 0.9  # the dimensionality row: generations until this share of the task gap is closed
SELECTION_SEED = 30_000  # + seed: the ES run that locates the peak window (rise-then-decay)
GRID_SEED = 1_000  # + index: landscape and ES noise of each point of the landscape grid


def tune_shapings(s: dict, extensions: int, run=None) -> tuple[dict, dict, list]:
    """Each shaping's step size by the tuning protocol on the tuning seed (a landscape and ES noise no
    reported seed uses): the grid rule of `alpha_grid`, scored by the last-window reward at the same
    budget, extended while the best sits on an edge. The noise scale sigma is fixed for every shaping.
    Returns (tuned alpha per shaping, trials per shaping, records)."""
    from neurips26.core import tuning

    from . import SHAPINGS, alpha_grid

    if run is None:
        tune_land = _landscape(s, s["tune_seed"])

        def run(shaping, alpha):
            return _es(tune_land, s, alpha, s["tune_seed"], shaping)["reward"]
    tuned, trials, records = {}, {}, []
    for shaping in SHAPINGS:
        tried = []

        def evaluate(alpha, shaping=shaping, tried=tried):
            score = _last_window(run(shaping, alpha), s["window"])
            tried.append({"alpha": alpha, "final_reward": score if math.isfinite(score) else None})
            return score if math.isfinite(score) else math.nan

        point, recs = tuning.search(evaluate, {"alpha": alpha_grid(s, shaping)}, method=shaping, metric=TUNE_METRIC,
                                    extensions=extensions, seed=s["tune_seed"], split="tuning seed's landscape and noise")
        tuned[shaping], trials[shaping] = point["alpha"], sorted(tried, key=lambda t: t["alpha"])
        records += recs + [tuning.fixed(shaping, "sigma", s["sigma"], "the perturbation scale of the landscape's "
                                        "setting, the same for every shaping (the paper fixes it)")]
        print(f"tune {shaping}: alpha {point['alpha']:g} (final reward {recs[0].score:.4f}; {recs[0].status}, "
              f"{len(tried)} runs)", flush=True)
    return tuned, trials, records


def synthetic(params, inputs, out: Path):
    from neurips26.core import tuning

    from . import method

    s, started = params["synthetic"], time.perf_counter()
    every, window = s["record_every"], s["window"]
    tuned, trials, records = tune_shapings(s, tuning.settings(params)["extensions"])
    seeds = {}
    fraction = 1.0 - PROGRESS_SHARE
    for seed in s["seeds"]:
        land, full = _landscape(s, seed), _landscape(s, seed, full_rank=True)
        es_run = _es(land, s, s["alpha"], seed)
        sde = method.run_sde(land, s["population"], s["sigma"], s["alpha"], s["generations"], 10_000 + seed, s["substeps"])
        full_run = _es(full, s, s["alpha"], seed)
        # an independent ES run of the same landscape (its own perturbations) locates the peak window,
        # so the reported run's peak and last-window values are read on a curve the choice did not see
        locate = _es(land, s, s["alpha"], SELECTION_SEED + seed)
        shapings = {}
        for shaping, a in tuned.items():
            r = _es(land, s, a, seed, shaping)
            shapings[shaping] = {"alpha": a, "final_reward": _last_window(r["reward"], window),
                                 "reward": r["reward"][::every], "task_progress": 1 - r["task_gap"][-1] / r["task_gap"][0]}
        rw = _windows(es_run["reward"], window)
        rw_locate = _windows(locate["reward"], window)
        peak, peak_same = located_peak(rw_locate), located_peak(rw)
        reach = {name: method.generations_to_fraction(run["task_gap"], fraction) for name, run in (("low_rank", es_run), ("full_rank", full_run))}
        seeds[str(seed)] = {
            "es": {k: v[::every] for k, v in es_run.items()}, "sde": {k: v[::every] for k, v in sde.items()},
            "full_rank": {k: full_run[k][::every] for k in ("reward", "task_gap", "drift")},
            "regimes_es": method.regime_sequence(es_run, window), "regimes_sde": method.regime_sequence(sde, window),
            "drift_final_es": es_run["drift"][-1], "drift_final_sde": sde["drift"][-1],
            "reward_windows_es": rw, "reward_windows_sde": _windows(sde["reward"], window),
            "reward_windows_locate": rw_locate,
            "peak_window": peak, "peak_reward": rw[peak], "final_reward": rw[-1],
            "peak_window_same_curve": peak_same, "peak_reward_same_curve": rw[peak_same],
            "task_progress_low_rank": 1 - es_run["task_gap"][-1] / es_run["task_gap"][0],
            "task_progress_full_rank": 1 - full_run["task_gap"][-1] / full_run["task_gap"][0],
            "generations_to_share_low_rank": reach["low_rank"], "generations_to_share_full_rank": reach["full_rank"],
            "shapings": shapings,
        }
        print(f"seed {seed}: drift ES {es_run['drift'][-1]:.3f} SDE {sde['drift'][-1]:.3f}; regimes "
              f"{' '.join(x[0] for x in seeds[str(seed)]['regimes_es'])}; generations to {PROGRESS_SHARE:.0%} of the task gap: "
              f"low rank {reach['low_rank']} full rank {reach['full_rank']}", flush=True)
        tracking.active().log_metrics({f"seed{seed}_drift_es": es_run["drift"][-1], f"seed{seed}_drift_sde": sde["drift"][-1]})
    grid = []
    for i, factors in enumerate(landscape_grid()):
        seed = GRID_SEED + i
        run = _es(_landscape(s, seed, factors=factors), s, s["alpha"], seed)
        seq = method.regime_sequence(run, window)
        grid.append({"factors": factors, "seed": seed, "regimes": seq, "shows_sequence": bool(method.shows_sequence(seq))})
    print(f"landscape grid: {sum(g['shows_sequence'] for g in grid)}/{len(grid)} show the regime sequence", flush=True)
    io.write_json(out / "metrics.json", _sig({"settings": s, "c_population": method.c_population(s["population"]),
                                              "tuned_alpha": tuned, "tuning": trials,
                                              "tuning_records": [r.to_json() for r in records], "seeds": seeds,
                                              "landscape_grid": grid, "progress_share": PROGRESS_SHARE}))
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started})


# ---------------------------------------------------------------- lm
def _lm_model(params, inputs):
    from neurips26.core import lm

    m = params["lm"]
    where = m["model"] or inputs.get("model")
    if not where:
        raise ValueError(f"config key '{P}.lm.model': no model (neither an id/folder nor the lm_assets model input)")
    model = lm.load_model(where, dtype=m["dtype"])
    tok = lm.load_tokenizer(where)
    import torch

    if torch.cuda.is_available():
        model = model.cuda()
    return tok, model


def perturbed_parameters(model, which: str):
    """The tensors ES perturbs: 'blocks' = every 2-D weight of the decoder layers (attention and
    MLP projections; not embeddings, head or norms), 'all' = every parameter."""
    if which == "all":
        return [p for _, p in model.named_parameters()]
    out = [p for n, p in model.named_parameters() if ".layers." in n and p.dim() == 2]
    if not out:
        raise ValueError(f"config key '{P}.lm.perturb': the model has no decoder-layer matrices")
    return out


def answer_logprob_gradient(model, tok, items, thetas, batch_size: int = 64) -> list:
    """The gradient of the mean answer-token log-probability over `items` (the expected logprob
    reward of the training pool) with respect to `thetas`, in float32."""
    import torch

    from neurips26.papers.zo_harness import tasks

    flags = [p.requires_grad for p in thetas]
    grads = [torch.zeros_like(p, dtype=torch.float32) for p in thetas]
    try:
        for p in thetas:
            p.requires_grad_(True)
        with torch.enable_grad():
            for i in range(0, len(items), batch_size):
                chunk = items[i:i + batch_size]
                start = tasks._ids(tok, [it["prompt"] for it in chunk]).shape[1]
                full = tasks._ids(tok, [it["prompt"] + it["target"] for it in chunk]).to(model.device)
                logp = torch.log_softmax(model(input_ids=full).logits.float(), -1)
                per_item = logp[:, start - 1:-1].gather(-1, full[:, start:, None])[..., 0].mean(1)
                for g, d in zip(grads, torch.autograd.grad(per_item.sum() / len(items), thetas)):
                    g += d.float()
    finally:
        for p, f in zip(thetas, flags):
            p.requires_grad_(f)
    return grads


def lm(params, inputs, out: Path):
    from . import method

    import torch

    from neurips26.core import lm as core_lm
    from neurips26.data import lm_corpora
    from neurips26.papers.zo_harness import es, tasks

    m, seed, started = params["lm"], params["seed"], time.perf_counter()
    tok, model = _lm_model(params, inputs)
    rng = np.random.default_rng(seed)
    pool = tasks.make_addition(m["train_size"], m["digits"], seed)
    evals = {"a": tasks.make_addition(m["eval_size"], m["digits"], 1_000_000 + seed),
             "b": tasks.make_addition(m["eval_size"], m["digits"], 2_000_000 + seed)}
    tasks.check_tokens(tok, [pool[0]["prompt"] + pool[0]["target"]])
    if m["corpus_file"]:
        general = [line for line in Path(m["corpus_file"]).read_text().splitlines() if line.strip()][: m["corpus_sentences"]]
    else:
        general = lm_corpora.read_lines(Path(inputs["corpora"]), m["corpus"], "valid")[: m["corpus_sentences"]]
    thetas = perturbed_parameters(model, m["perturb"])
    dim = sum(p.numel() for p in thetas)
    theta0 = [p.detach().clone() for p in thetas]
    n, sigma, alpha = m["population"], m["sigma"], m["alpha"]

    def reward_of(items):
        if m["reward"] == "logprob":
            return float(np.mean(tasks.answer_logprob(model, tok, items)))
        return float(np.mean(tasks.teacher_forced_reward(model, tok, items)))

    # the task direction: the unit gradient of the training pool's expected reward at theta_0
    direction = answer_logprob_gradient(model, tok, pool, thetas)
    grad_norm = math.sqrt(sum(float((g.double() ** 2).sum()) for g in direction))
    direction = [g / grad_norm for g in direction]

    def drift(ts=thetas):
        return math.sqrt(sum(float(((p.detach().float() - q.float()) ** 2).sum()) for p, q in zip(ts, theta0)))

    def drift_task(ts=thetas):
        """<theta - theta_0, u> along the task direction u."""
        return sum(float(((p.detach().float() - q.float()) * u).sum()) for p, q, u in zip(ts, theta0, direction))

    def evaluate(gen):
        row = {"generation": gen, "drift": drift(), "drift_task": drift_task(),
               "drift_sde": math.sqrt(method.random_walk_drift2(dim, n, sigma, alpha, gen)),
               "perplexity": core_lm.perplexity(model, tok, general)}
        for k, items in evals.items():
            row[f"logprob_{k}"] = float(np.mean(tasks.answer_logprob(model, tok, items)))
            row[f"teacher_forced_{k}"] = float(np.mean(tasks.teacher_forced_reward(model, tok, items)))
        return row

    curve, train_reward, weight_std = [evaluate(0)], [], []
    print(f"seed {seed}: {dim} perturbed parameters; start {curve[0]}", flush=True)
    for gen in range(m["generations"]):
        batch = [pool[int(i)] for i in rng.choice(len(pool), m["batch_size"], replace=False)]
        res = es.generation_(lambda: reward_of(batch), thetas, seed, gen, n, sigma, alpha, m["shaping"])
        train_reward.append(float(np.mean(res["rewards"])))
        weight_std.append(float(np.std(res["rewards"])))
        if (gen + 1) % m["eval_every"] == 0 or gen + 1 == m["generations"]:
            row = evaluate(gen + 1)
            curve.append(row)
            tracking.active().log_metrics({k: v for k, v in row.items() if k != "generation"}, step=gen + 1)
            print(f"seed {seed} gen {gen + 1}: train reward {train_reward[-1]:.4f} " +
                  " ".join(f"{k} {v:.4g}" for k, v in row.items() if k != "generation"), flush=True)
    # the null: the same perturbations weighted by a pure-noise reward (no model evaluation needed)
    noise_thetas, noise_rng = [q.clone() for q in theta0], np.random.default_rng(3_000_000 + seed)
    noise_curve = [{"generation": 0, "drift": 0.0, "drift_task": 0.0}]
    for gen in range(m["generations"]):
        es.generation_(lambda: float(noise_rng.standard_normal()), noise_thetas, seed, gen, n, sigma, alpha, m["shaping"])
        if (gen + 1) % m["eval_every"] == 0 or gen + 1 == m["generations"]:
            noise_curve.append({"generation": gen + 1, "drift": drift(noise_thetas), "drift_task": drift_task(noise_thetas)})
    print(f"seed {seed}: along the task direction ES {curve[-1]['drift_task']:.4g}, pure-noise reward "
          f"{noise_curve[-1]['drift_task']:.4g}; drift norm pure-noise {noise_curve[-1]['drift']:.4g}", flush=True)
    io.write_json(out / "metrics.json", _sig({"seed": seed, "dim": dim, "population": n, "sigma": sigma, "alpha": alpha,
                                              "task_gradient_norm": grad_norm, "noise_curve": noise_curve,
                                              "reward": m["reward"], "perturb": m["perturb"], "curve": curve,
                                              "train_reward": train_reward, "population_reward_std": weight_std,
                                              "flat_populations": int(sum(1 for w in weight_std if w == 0.0))}))
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started})


# ---------------------------------------------------------------- figures
COLOURS = {"zscore": "#d62728", "centered_ranks": "#1f77b4", "plain": "#7f7f7f", "sde": "#2ca02c", "full_rank": "#ff7f0e"}
LABELS = {"zscore": "Z-score ES", "centered_ranks": "centred ranks (OpenAI-ES)", "plain": "plain ES (mean baseline)"}
TERM_COLOURS = {"task_gradient": "#d62728", "curvature": "#2ca02c", "off_task_gradient": "#1f77b4", "noise": "#7f7f7f"}


def tuning_records(syn: dict, runs: list[dict]) -> list:
    """The tuning protocol's records of the run: each shaping's tuned step size (and fixed sigma)
    from the synthetic job, and the knobs no comparison tunes: the step size of the Z-score runs
    that are compared with the SDE and the full-rank control, and the LM's step size and noise scale
    (the LM runs Z-score ES only, with no baseline to match)."""
    from neurips26.core import tuning

    records = [tuning.Record.from_json(r) for r in syn.get("tuning_records", [])]
    s = syn["settings"]
    records.append(tuning.fixed("zscore (SDE and full-rank runs)", "alpha", s["alpha"],
                                "the step size the landscape's regimes were set for; these runs are compared with the SDE "
                                "and the full-rank control at the same alpha, not with another method", setting="synthetic"))
    if runs:
        why = "the LM runs Z-score ES alone (no baseline shares the knob); the paper's ES fine-tuning setting, scaled"
        records.append(tuning.fixed("zscore", "alpha", runs[0]["alpha"], why, setting="lm"))
        records.append(tuning.fixed("zscore", "sigma", runs[0]["sigma"], why, setting="lm"))
    return records


def _reached(generation, generations: int) -> int:
    return generations + 1 if generation is None else int(generation)


def claims_summary(syn: dict, runs: list[dict], records: list | None = None) -> dict:
    """Per-seed numbers the claims need (claims.claim_rows); `records` (the tuning protocol's) give
    each shaping's capped-tuning note."""
    from neurips26.core import tuning

    from . import method

    s, seeds = syn["settings"], [syn["seeds"][k] for k in sorted(syn["seeds"], key=int)]
    w = s["window"]
    es_r = np.mean([x["reward_windows_es"] for x in seeds], 0)
    sde_r = np.mean([x["reward_windows_sde"] for x in seeds], 0)
    rise = max(float(sde_r.max() - sde_r[0]), 1e-30)
    synthetic = {
        "dim": s["dim"], "population": s["population"], "generations": s["generations"], "seeds": len(seeds), "window": w,
        "drift_es": [x["drift_final_es"] for x in seeds], "drift_sde": [x["drift_final_sde"] for x in seeds],
        "reward_gap": float(np.mean(np.abs(es_r - sde_r)) / rise), "reward_rise": float(rise),
        "reward_gap_seeds": [float(np.mean(np.abs(np.asarray(x["reward_windows_es"]) - np.asarray(x["reward_windows_sde"]))) / rise)
                             for x in seeds],
        "regime_successes": int(sum(bool(method.shows_sequence(x["regimes_es"])) for x in seeds)),
        "regime_share": float(np.mean([method.shows_sequence(x["regimes_es"]) for x in seeds])),
        "landscape_successes": int(sum(bool(g["shows_sequence"]) for g in syn.get("landscape_grid", []))),
        "landscapes": len(syn.get("landscape_grid", [])),
        "peak_reward": [x["peak_reward"] for x in seeds], "final_reward": [x["final_reward"] for x in seeds],
        "peak_reward_same_curve": [x.get("peak_reward_same_curve", x["peak_reward"]) for x in seeds],
        "progress_low_rank": [x["task_progress_low_rank"] for x in seeds], "progress_full_rank": [x["task_progress_full_rank"] for x in seeds],
        "progress_share": syn.get("progress_share", 0.9),
        # a run that never closes the share counts T + 1 generations: a lower bound, against the claim for full rank
        "generations_low_rank": [_reached(x.get("generations_to_share_low_rank"), s["generations"]) for x in seeds],
        "generations_full_rank": [_reached(x.get("generations_to_share_full_rank"), s["generations"]) for x in seeds],
        "never_reached": {k: sum(x.get(f"generations_to_share_{k}") is None for x in seeds) for k in ("low_rank", "full_rank")},
        "final": {k: [x["shapings"][k]["final_reward"] for x in seeds] for k in seeds[0]["shapings"]},
        "capped": {k: tuning.capped_note([r for r in records or [] if r.setting == ""], k) for k in seeds[0]["shapings"]},
    }
    start = [r["curve"][0] for r in runs]
    last = [r["curve"][-1] for r in runs]
    peak_idx = [int(np.argmax([c["teacher_forced_a"] for c in r["curve"]])) for r in runs]
    lm = {"seeds": len(runs), "generations": last[0]["generation"], "dim": runs[0]["dim"], "population": runs[0]["population"],
          "drift": [c["drift"] for c in last], "drift_sde": [c["drift_sde"] for c in last],
          "ppl_start": [c["perplexity"] for c in start], "ppl_final": [c["perplexity"] for c in last],
          "task_start": [c["teacher_forced_b"] for c in start], "task_final": [c["teacher_forced_b"] for c in last],
          "task_peak": [r["curve"][i]["teacher_forced_b"] for r, i in zip(runs, peak_idx)],
          "peak_generation": [r["curve"][i]["generation"] for r, i in zip(runs, peak_idx)]}
    if all("noise_curve" in r for r in runs):
        # along the task direction, in units of the pure-noise walk's std there, alpha sqrt(T / N) / sigma
        unit = [r["alpha"] * math.sqrt(c["generation"] / r["population"]) / r["sigma"] for r, c in zip(runs, last)]
        lm.update(drift_task=[c["drift_task"] / w for c, w in zip(last, unit)],
                  drift_task_noise=[r["noise_curve"][-1]["drift_task"] / w for r, w in zip(runs, unit)],
                  drift_noise=[r["noise_curve"][-1]["drift"] for r in runs])
    return {"synthetic": synthetic, "lm": lm}


def figures(params, inputs, out: Path):
    from neurips26.core import tuning

    from . import method

    scale = params["scale"]
    syn = io.read_json(Path(inputs["synthetic"]) / "metrics.json")
    runs = [io.read_json(Path(inputs["runs"]) / f"seed{s}" / "metrics.json") for s in params["seeds"]]
    s = syn["settings"]
    seeds = [syn["seeds"][k] for k in sorted(syn["seeds"], key=int)]
    figdir = out / "figures"
    gens = list(range(0, s["generations"] + 1, s["record_every"]))
    n = len(seeds)

    def band(ax, key, part, label, colour, field=None):
        ys = [x[part][key] for x in seeds] if field is None else [x[part][field][key] for x in seeds]
        plotting.mean_band(ax, gens[:len(ys[0])], ys, label, colour)

    fig, axes = plotting.figure(ncols=2, width=4.8, height=3.8)
    for col, (key, ylabel) in enumerate((("drift", "drift ||theta_t - theta_0||"), ("reward", "reward R(theta_t) (noise-free)"))):
        ax = axes[0, col]
        band(ax, key, "es", "Z-score ES", COLOURS["zscore"])
        band(ax, key, "sde", "SDE (Euler-Maruyama)", COLOURS["sde"])
        ax.set_xlabel("generation")
        ax.set_ylabel(ylabel)
        ax.set_title(f"ES vs its SDE, d = {s['dim']}, N = {s['population']} ({n} seeds)", fontsize=8)
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "synthetic_sde.png")

    fig, axes = plotting.figure(width=6.0, height=3.8)
    ax = axes[0, 0]
    for term, colour in TERM_COLOURS.items():
        if max(max(x["es"][term]) for x in seeds) > 0:
            plotting.mean_band(ax, gens, [x["es"][term] for x in seeds], term.replace("_", " "), colour)
    ax.set_yscale("log")
    ax.set_xlabel("generation")
    ax.set_ylabel("term of the population reward variance")
    seq = method.regime_sequence({t: np.mean([x["es"][t] for x in seeds], 0) for t in method.TERMS}, max(1, s["window"] // s["record_every"]))
    collapsed = [seq[0]] + [b for a, b in zip(seq, seq[1:]) if b != a]
    grid = syn.get("landscape_grid", [])
    ax.set_title("regimes (seed mean): " + " -> ".join(c.replace("_", " ") for c in collapsed) +
                 (f"\nthe sequence on {sum(g['shows_sequence'] for g in grid)}/{len(grid)} landscapes of the declared grid" if grid else ""),
                 fontsize=7)
    ax.legend(fontsize=7)
    plotting.save(fig, figdir / "regimes.png")

    fig, axes = plotting.figure()
    ax = axes[0, 0]
    plotting.mean_band(ax, gens, [np.asarray(x["es"]["task_gap"]) / x["es"]["task_gap"][0] for x in seeds],
                       f"low-rank Hessian (rank {s['rank']})", COLOURS["zscore"])
    plotting.mean_band(ax, gens, [np.asarray(x["full_rank"]["task_gap"]) / x["full_rank"]["task_gap"][0] for x in seeds],
                       "full-rank control", COLOURS["full_rank"])
    ax.axhline(1 - syn.get("progress_share", 0.9), color="k", lw=0.6, ls=":", label=f"{syn.get('progress_share', 0.9):.0%} of the gap closed")
    ax.set_yscale("log")
    ax.set_xlabel("generation")
    ax.set_ylabel("task gap / initial task gap")
    ax.set_title(f"dimensionality paradox: N = {s['population']}, d = {s['dim']} ({n} seeds)", fontsize=8)
    ax.legend(fontsize=7)
    plotting.save(fig, figdir / "dimensionality.png")

    fig, axes = plotting.figure()
    ax = axes[0, 0]
    for name in seeds[0]["shapings"]:
        plotting.mean_band(ax, gens, [x["shapings"][name]["reward"] for x in seeds],
                           f"{LABELS[name]} (alpha {syn['tuned_alpha'][name]:g})", COLOURS[name])
    ax.set_xlabel("generation")
    ax.set_ylabel("reward R(theta_t)")
    ax.set_title(f"fitness shapings, tuned step sizes, same budget ({n} seeds)", fontsize=8)
    ax.legend(fontsize=7)
    plotting.save(fig, figdir / "shapings.png")

    fig, axes = plotting.figure(ncols=4, width=4.4, height=3.8)
    lgens = [c["generation"] for c in runs[0]["curve"]]
    ax = axes[0, 0]
    plotting.mean_band(ax, lgens, [[c["teacher_forced_b"] for c in r["curve"]] for r in runs], "held-out accuracy (set b)", COLOURS["zscore"])
    plotting.mean_band(ax, lgens, [[c["teacher_forced_a"] for c in r["curve"]] for r in runs], "held-out accuracy (set a)", COLOURS["centered_ranks"])
    ax.set_xlabel("generation")
    ax.set_ylabel("teacher-forced answer-token accuracy")
    ax.set_title(f"task reward ({len(runs)} seeds)", fontsize=8)
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    plotting.mean_band(ax, lgens, [[c["perplexity"] for c in r["curve"]] for r in runs], "general corpus", COLOURS["full_rank"])
    ax.set_yscale("log")
    ax.set_xlabel("generation")
    ax.set_ylabel("perplexity")
    ax.set_title("forgetting", fontsize=8)
    ax.legend(fontsize=7)
    ax = axes[0, 2]
    plotting.mean_band(ax, lgens, [[c["drift"] for c in r["curve"]] for r in runs], "measured", COLOURS["zscore"])
    ax.plot(lgens, [c["drift_sde"] for c in runs[0]["curve"]], ls="--", color=COLOURS["sde"], label="SDE: alpha sqrt(t d / N) / sigma")
    ax.set_xlabel("generation")
    ax.set_ylabel("drift ||theta_t - theta_0||")
    ax.set_title(f"drift, {runs[0]['dim']} perturbed parameters", fontsize=8)
    ax.legend(fontsize=7)
    if all("noise_curve" in r for r in runs):
        ax = axes[0, 3]
        unit = lambda r, c: r["alpha"] * math.sqrt(max(c["generation"], 1) / r["population"]) / r["sigma"]  # noqa: E731
        plotting.mean_band(ax, lgens, [[c["drift_task"] / unit(r, c) for c in r["curve"]] for r in runs], "task reward", COLOURS["zscore"])
        plotting.mean_band(ax, lgens, [[c["drift_task"] / unit(r, c) for c in r["noise_curve"]] for r in runs],
                           "pure-noise reward", COLOURS["plain"])
        ax.axhline(0, color="k", lw=0.5)
        ax.set_xlabel("generation")
        ax.set_ylabel("<theta_t - theta_0, u> / (alpha sqrt(t / N) / sigma)")
        ax.set_title("drift along the task gradient u at theta_0", fontsize=8)
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "lm.png")

    records = tuning_records(syn, runs)
    tuning.write_csv(out / "tuning.csv", P, records)
    summary = claims_summary(syn, runs, records)
    sy, lm = summary["synthetic"], summary["lm"]
    rows = []
    for k, label in (("drift_es", "synthetic final drift, ES"), ("drift_sde", "synthetic final drift, SDE"),
                     ("peak_reward", "synthetic peak-window reward"), ("final_reward", "synthetic last-window reward"),
                     ("peak_reward_same_curve", "synthetic peak-window reward on the curve that located it"),
                     ("progress_low_rank", "task gap closed, low-rank Hessian"), ("progress_full_rank", "task gap closed, full-rank control"),
                     ("generations_low_rank", "generations to 90% of the task gap, low-rank Hessian"),
                     ("generations_full_rank", "generations to 90% of the task gap, full-rank control")):
        m_, sd = claims.mean_std(sy[k])
        rows.append({"quantity": label, "mean": _sig(m_), "std": _sig(sd), "replicates": len(sy[k])})
    for name, vals in sy["final"].items():
        m_, sd = claims.mean_std(vals)
        rows.append({"quantity": f"synthetic final reward, {name} (alpha {syn['tuned_alpha'][name]:g})", "mean": _sig(m_), "std": _sig(sd),
                     "replicates": len(vals)})
    rows.append({"quantity": "synthetic regime share (task -> curvature -> off-task), default landscape", "mean": _sig(sy["regime_share"]),
                 "std": "", "replicates": sy["seeds"]})
    if sy["landscapes"]:
        rows.append({"quantity": "synthetic regime share (task -> curvature -> off-task), landscape grid",
                     "mean": _sig(sy["landscape_successes"] / sy["landscapes"]), "std": "", "replicates": sy["landscapes"]})
    for k, label in (("drift", "LM final drift, measured"), ("drift_sde", "LM final drift, SDE"), ("ppl_start", "LM perplexity, pretrained"),
                     ("ppl_final", "LM perplexity, after ES"), ("task_start", "LM held-out accuracy, pretrained"),
                     ("task_peak", "LM held-out accuracy at the peak"), ("task_final", "LM held-out accuracy, after ES"),
                     ("drift_noise", "LM final drift, pure-noise reward"),
                     ("drift_task", "LM drift along the task gradient / walk std, task reward"),
                     ("drift_task_noise", "LM drift along the task gradient / walk std, pure-noise reward")):
        if k not in lm:
            continue
        m_, sd = claims.mean_std(lm[k])
        rows.append({"quantity": label, "mean": _sig(m_), "std": _sig(sd), "replicates": len(lm[k])})
    return claims.write_tables(out, rows, claim_rows(summary, scale))
