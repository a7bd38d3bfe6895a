"""The tune step of fedlora_align: every method's learning rate on validation data, and the
strongest existing method chosen on validation data (the tuning protocol, `core.tuning`).

One job per variant, on the tuning seed (`tune.seed`, disjoint from the test seeds: its own
sentences or records, drawn by the data step). The training set is split over the clients
with Dirichlet label skew at the variant's smallest alpha (the most heterogeneous federation,
which most accuracy rows read); each client holds out `tune.val_fraction` of its examples, the
federation trains on the rest, and the score is the test metric (balanced global accuracy;
the generative task: mean token accuracy) of the clients' final models on the held-out
examples of all clients. The test set of the tuning seed is never read.

Every method (ALIGN, its ablation, the baselines and the ideal-aggregation control) gets the
same log-spaced grid (`tune.grid`; the generative variants `tune.lm_grid`) and the same
budget, extended by `tuning.search` while the best value sits on an edge. The chosen rate is
then used at every alpha of every test seed. The strongest existing method (FedIT, FFA-LoRA,
FLoRA, FedEx-LoRA, FedSA-LoRA; ideal aggregation is a control, never a candidate) is chosen per
report alpha from validation scores at the chosen rates: at the tuning alpha the search's
best score, at the other report alphas one validation federation each.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from neurips26.core import io, tuning
from neurips26.papers.fed_harness.split import holdout, subset

from .claims import EXISTING

METRIC = {False: "balanced global accuracy", True: "mean token accuracy (teacher-forced)"}


def fixed_records(params: dict, methods, setting: str) -> list[tuning.Record]:
    """ALIGN's own knobs: set before any run and not tuned (no baseline has them)."""
    a = params["align"]
    out = []
    for m in methods:
        if m in ("align", "align_no_drift"):
            out.append(tuning.fixed(m, "drift_mu", a["drift_mu"] if m == "align" else 0.0,
                                    "ALIGN's drift weight, set before any run (the ablation: 0); no baseline has it, "
                                    "so tuning it would tune the method on more than the baselines", setting))
            out.append(tuning.fixed(m, "beta", a["beta"], "ALIGN's alignment strength (1: full alignment, our "
                                    "reading); no baseline has it", setting))
    return out


def run(params, inputs, out: Path, evaluate=None) -> list[Path]:
    """The tune step (see the module docstring). `evaluate(method, lr, alpha)`, when given,
    replaces the validation federation (tests)."""
    from neurips26.papers.fed_harness import simulation

    from . import steps

    t, v, variant = params["tune"], params["variant_settings"], params["variant"]
    seed = int(t["seed"])
    ext = tuning.settings(params)["extensions"]
    methods = list(v.get("methods") or params["methods"])
    lm = v.get("task") == "data_to_text"
    grid = list(t["lm_grid"] if lm else t["grid"])
    f = steps.lm_federation(params, v)
    alphas = [float(a) for a in f["alphas"]]
    tune_alpha = min(alphas)
    report = [a for a in (float(x) for x in params["federation"]["report_alphas"]) if a in alphas]
    metric = METRIC[lm]
    timing: dict[str, float] = {}

    if evaluate is None:
        base, train_set, _test, classes, targets, labels, _, f = steps._task(params, inputs)
        folds = {}

        def fold(alpha):
            if alpha not in folds:
                parts = steps._client_split(labels, f, alpha, seed)
                train_parts, held = holdout(parts, float(t["val_fraction"]), np.random.default_rng([seed, steps.alpha_key(alpha), 13]))
                val = subset(train_set, held)
                shares = np.ones((len(train_parts), classes))  # acc_local is not scored here
                p = np.asarray([len(x) for x in train_parts], dtype=float)
                folds[alpha] = (train_parts, val, shares, p / p.sum())
            return folds[alpha]

        def evaluate(method, lr, alpha):
            train_parts, val, shares, p = fold(alpha)
            t0 = time.perf_counter()
            res = simulation.run_federation(base, train_set, val, train_parts, [f["rank"]] * f["clients"],
                                            steps._aggregator(method, params), steps._fed_settings(f, targets, seed, lr),
                                            out, {"variant": variant, "alpha": alpha, "method": method, "tune": True},
                                            classes)
            timing[f"{alpha}/{method}/{lr:g}"] = time.perf_counter() - t0
            return steps._scores(res, p, shares, lm)["acc_global"]

    split = f"validation ({t['val_fraction']:g} of each client's training examples held out, tuning seed {seed})"
    records, lr, val_scores = [], {}, {str(tune_alpha): {}}
    for m in methods:
        chosen, recs = tuning.search(lambda lr, m=m: evaluate(m, lr, tune_alpha), {"lr": grid}, method=m,
                                     setting=variant, metric=f"{metric}, alpha={tune_alpha:g}", extensions=ext,
                                     seed=seed, split=split, progress=lambda s: print(f"fedlora_align tune: {s}", flush=True))
        lr[m] = chosen["lr"]
        val_scores[str(tune_alpha)][m] = recs[0].score
        records += recs
    records += fixed_records(params, methods, variant)
    strongest = {}
    existing = [b for b in EXISTING if b in methods]
    for a in report:
        key = str(a)
        if key not in val_scores:
            val_scores[key] = {m: float(evaluate(m, lr[m], a)) for m in existing}
        if existing:
            name, rec = tuning.strongest({m: val_scores[key][m] for m in existing}, candidates=existing,
                                         controls=[c for c in ("ideal",) if c in methods], setting=f"{variant}, alpha={a:g}",
                                         metric=metric, seed=seed, split=split)
            strongest[key] = name
            records.append(rec)
    io.write_json(out / "tune.json", {"variant": variant, "seed": seed, "alpha": tune_alpha, "grid": grid, "lr": lr,
                                      "validation": val_scores, "strongest": strongest,
                                      "records": [r.to_json() for r in records]})
    io.write_json(out / "timing.json", {"seconds": timing, "federations": len(timing),
                                        "total_seconds": sum(timing.values())})
    return [out / "tune.json", out / "timing.json"]
