"""The tune step of fedaba: every aggregator's learning rate on validation data, and the strongest
baseline chosen on validation data (the tuning protocol, `core.tuning`).

One job per rank profile, on the tuning seed (`tune.seed`, disjoint from the test seeds: its own
sentences or records, split and initialisation). The training set is split over the clients with
Dirichlet label skew at the claims alpha; each client holds out `tune.val_fraction` of its
examples, the federation trains on the rest, and the score is the test metric (mean over clients
of each client's balanced accuracy; the generative task: mean token accuracy) on the held-out
examples of all clients. The tuning seed's test set is never drawn into a score.

The learning rate is the one knob every aggregator has and the one a federated-LoRA comparison
tunes: FedAbA's three gauge readings, its ablation CAFD and every baseline get the same
log-spaced grid (`tune.grid`; generative profiles `tune.lm_grid`) and the same budget, extended
by `tuning.search` while the best value sits on an edge. FedAbA's own knobs (`beta`,
`score_floor`) and HetLoRA's weighting stay as the config fixes them (recorded `fixed`): no other
aggregator has them, and tuning them would tune a method on more than the others. The strongest
baseline (zero-padding FedIT, HetLoRA, FlexLoRA, FLoRA; FedAbA's readings and CAFD are never candidates) is
the best of them by validation score at its tuned rate.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from neurips26.core import io, tuning
from neurips26.papers.fed_harness.split import holdout, subset

METRIC = {False: "mean client balanced accuracy", True: "mean client token accuracy (teacher-forced)"}
BASELINES = ("zero_padding", "hetlora", "flexlora", "flora")   # the existing methods (strongest-baseline candidates)
ABLATIONS = ("cafd", "fedaba_svd", "fedaba_proj")              # FedAbA's readings and ablation: never candidates


def fixed_records(settings: dict, aggregators, setting: str) -> list[tuning.Record]:
    out = []
    for a in aggregators:
        s = settings.get(a, {})
        if a in ("fedaba", "fedaba_svd", "fedaba_proj"):
            out.append(tuning.fixed(a, "beta", s.get("beta", 1.0), "the consistency weights' exponent, our reading's "
                                    "value set before any run; no baseline has it", setting))
            out.append(tuning.fixed(a, "score_floor", s.get("score_floor", 0.05), "the consistency score's floor c_min, "
                                    "set before any run; no baseline has it", setting))
        if a == "hetlora":
            out.append(tuning.fixed(a, "weighting", s.get("weighting", "norm"), "HetLoRA's sparsity-weighted "
                                    "aggregation as its paper gives it", setting))
    return out


def tune_alpha(params: dict) -> float:
    """The alpha the profile is tuned at: the claims alpha (check_config keeps it among the profile's)."""
    alphas = [float(a) for a in params["variant_settings"].get("alphas", params["alphas"])]
    a = float(params["claims"]["alpha"])
    return a if a in alphas else min(alphas)


def run(params: dict, inputs: dict, out: Path, evaluate=None) -> list[Path]:
    """The tune step (see the module docstring). `evaluate(aggregator, lr)`, when given, replaces
    the validation federation (tests)."""
    from neurips26.papers.fed_harness import simulation

    from . import steps

    t, v, variant = params["tune"], params["variant_settings"], params["variant"]
    seed = int(t["seed"])
    ext = tuning.settings(params)["extensions"]
    aggregators = list(v.get("aggregators") or params["aggregators"])
    lm = steps.is_lm(v)
    grid = list(t["lm_grid"] if lm else t["grid"])
    alpha = tune_alpha(params)
    metric = f"{METRIC[lm]}, alpha={alpha:g}"
    timing: dict[str, float] = {}

    if evaluate is None:
        fed, base, train_set, _test, classes, targets, split_labels, _, _ = steps._task(params, inputs, seed)
        ranks = steps._client_ranks(v["ranks"], fed["clients"])
        parts = steps._client_split(split_labels, fed, alpha, seed)
        train_parts, held = holdout(parts, float(t["val_fraction"]),
                                    np.random.default_rng([seed, int(round(alpha * 1000)), 13]))
        val = subset(train_set, held)

        def evaluate(name, lr):
            key = {"paper": "fedaba", "variant": variant, "seed": seed, "alpha": alpha, "agg": name, "tune": True,
                   "agg_settings": params.get("aggregator_settings", {}).get(name, {})}
            t0 = time.perf_counter()
            res = simulation.run_federation(base, train_set, val, train_parts, ranks,
                                            steps._aggregator(name, params.get("aggregator_settings", {})),
                                            steps._fed_settings(fed, targets, seed, lr),
                                            out / "runs" / f"{name}_lr{lr:g}", key, classes)
            timing[f"{name}/{lr:g}"] = time.perf_counter() - t0
            return float(steps.client_scores(res, lm).mean())

    split = f"validation ({t['val_fraction']:g} of each client's training examples held out, tuning seed {seed})"
    records, lr, scores = [], {}, {}
    for name in aggregators:
        chosen, recs = tuning.search(lambda lr, name=name: evaluate(name, lr), {"lr": grid}, method=name, setting=variant,
                                     metric=metric, extensions=ext, seed=seed, split=split,
                                     progress=lambda s: print(f"fedaba tune: {s}", flush=True))
        lr[name] = chosen["lr"]
        scores[name] = recs[0].score
        records += recs
    records += fixed_records(params.get("aggregator_settings", {}), aggregators, variant)
    candidates = [b for b in BASELINES if b in aggregators]
    strongest = None
    if candidates:
        strongest, rec = tuning.strongest(scores, candidates=candidates,
                                          controls=[a for a in ABLATIONS if a in aggregators],
                                          setting=variant, metric=metric, seed=seed, split=split)
        records.append(rec)
    io.write_json(out / "tune.json", {"variant": variant, "seed": seed, "alpha": alpha, "grid": grid, "lr": lr,
                                      "validation": scores, "strongest": strongest,
                                      "records": [r.to_json() for r in records]})
    io.write_json(out / "timing.json", {"seconds": timing, "federations": len(timing),
                                        "total_seconds": sum(timing.values())})
    return [out / "tune.json", out / "timing.json"]
