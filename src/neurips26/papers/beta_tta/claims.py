"""Claims rows of beta_tta, a pure function of the aggregated metrics (`steps.summarise`).

The entries (claim, metric, band, margin, controls) are declared in `claims.yaml`; this module
computes their numbers and `core.claims.Sheet` decides them. The rows are read on the
ImageNet-C-like variant of the run (the first variant that is not a CLIP one: `vit_shapes` at
default, `vit_b16_imagenet_c` at paper scale); the CLIP row on the `clip_*` variants, whose
accuracies are averaged within a seed (the data sets as strata).

Accuracy is the mean over the corruption x severity cells of the config, per seed; a seed varies
the source and steering models (their training draws and initialisation), the test images, the
corruption noise and the stream order. Comparisons take the wider of the paired bootstrap over
seeds x test items (every cell's items) and the paired t over seeds. The accuracy rows are gated
on a regime control (white-box TENT improves over the unadapted source: the streams reach
adaptation at all); "BETA surpasses X" is guarded by the null "the unadapted source surpasses X".
"""

from __future__ import annotations

import math

from neurips26.core import claims, tuning

P = "beta_tta"
PAPER_COST_RATIO = 250.0
# optimiser updates per stream (one per batch) below which a stream cannot show adaptation: TENT's and
# BETA's gains build over many batches (ImageNet-C streams give 50 000 / 64 = 781)
MIN_UPDATES = 100
# rows that read BETA's adaptation: untested on short streams; all but improves_source itself also
# need BETA to beat the unadapted source (else "BETA beats X" ranks methods that do not adapt)
ADAPTATION_ROWS = ("improves_source", "beats_tent", "beats_tpt", "beats_lame", "comparable_to_zoo",
                   "cost_ratio_250x", "ablation_steering", "ablation_harmonise", "ablation_consistency",
                   "ablation_filter")
ABLATIONS = {"ablation_steering": "beta_frozen", "ablation_harmonise": "beta_no_harmonise",
             "ablation_consistency": "beta_no_consistency", "ablation_filter": "beta_no_filter"}


def _mean(xs):
    return sum(xs) / len(xs)


def _zoo(dom: dict) -> list[str]:
    return [m for m in dom["methods"] if m.startswith("zoo_")]


def main_variant(summary: dict) -> str | None:
    for v in summary:
        if not v.startswith("clip"):
            return v
    return None


def claim_rows(summary: dict, scale: str) -> list[dict]:
    sheet = claims.Sheet(P, scale)
    v = main_variant(summary)
    dom = summary[v] if v else {"methods": {}, "cells": []}
    methods = dom["methods"]
    where = f"{v}, {len(dom['cells'])} corruption x severity cells"
    records = dom.get("tuning", {}).get("records", [])

    gates = adaptation_gates(dom, scale)

    def compare(id, method, baseline):
        if method not in methods or baseline not in methods:
            sheet.untested(id, f"{method} or {baseline} was not run ({v})", method=method, baseline=baseline)
            return
        m, b = methods[method], methods[baseline]
        sheet.comparison(id, m["accuracy"], b["accuracy"], method_items=m.get("items"), baseline_items=b.get("items"),
                         method=method, baseline=baseline, how=where,
                         untested=_with_effect(gates.get(id, ""), m["accuracy"], b["accuracy"]),
                         method_capped=tuning.capped_note(records, method, v),
                         baseline_capped=tuning.capped_note(records, baseline, v))

    compare("adaptation_helps", "tent", "source")
    compare("source_beats_lame_null", "source", "lame")
    compare("source_beats_tent_null", "source", "tent")
    compare("source_beats_tpt_null", "source", "tpt")
    compare("improves_source", "beta", "source")
    compare("beats_tent", "beta", "tent")
    compare("beats_tpt", "beta", "tpt")
    compare("beats_lame", "beta", "lame")

    if "beta" in methods:
        sheet.check("one_query", abs(methods["beta"]["queries_per_sample"] - 1.0),
                    how=f"{where}; queries counted by the API wrapper, mean over cells and seeds")
    else:
        sheet.untested("one_query", "BETA was not run")
    _latency(sheet, methods, where)
    _zoo_rows(sheet, dom, where, gates)
    for id, name in ABLATIONS.items():
        compare(id, "beta", name)

    clip = [summary[c] for c in summary if c.startswith("clip")]
    if clip and all("beta" in d["methods"] and "source" in d["methods"] for d in clip):
        per_seed = lambda m: [_mean(a) for a in zip(*[d["methods"][m]["accuracy"] for d in clip])]  # noqa: E731
        sheet.comparison("clip_improves", per_seed("beta"), per_seed("source"),
                         how=f"{len(clip)} CLIP streams ({', '.join(c for c in summary if c.startswith('clip'))}) "
                             "averaged within a seed")
    else:
        sheet.untested("clip_improves", "no CLIP weights or ImageNet-S/R in this run; config/paper.yaml names them")
    sheet.untested("commercial_api", "no commercial API here; the simulated API's rows stand in for it")
    return sheet.rows()


def _with_effect(gate: str, method_values: list, baseline_values: list) -> str:
    """A gate's reason with the measured difference beside it (a gated row records no effect)."""
    if not gate or len(method_values) < 2:
        return gate
    d, lo, hi, _ = claims.paired_t([x - y for x, y in zip(method_values, baseline_values)])
    return f"{gate} (measured, not judged: {d:+.3g} [{lo:+.3g}, {hi:+.3g}], paired t over seeds)"


def beats_source(dom: dict, method: str, scale: str) -> str:
    """The verdict of `method` against the unadapted source under the rule of improves_source (its
    margin, the paired bootstrap over items and the paired t), read as a control: p uncorrected."""
    methods = dom["methods"]
    if method not in methods or "source" not in methods:
        return "untested"
    spec = {**next(e for e in claims.load_spec(P) if e["id"] == "improves_source"), "role": "regime",
            "method": method}
    sheet = claims.Sheet(P, scale, spec=[spec])
    m, b = methods[method], methods["source"]
    sheet.comparison("improves_source", m["accuracy"], b["accuracy"], method_items=m.get("items"),
                     baseline_items=b.get("items"))
    return sheet.rows()[0]["reproduced"]


def adaptation_gates(dom: dict, scale: str) -> dict[str, str]:
    """Why each row of ADAPTATION_ROWS is untested before its numbers are read ('' where none):
    streams of fewer than MIN_UPDATES updates; then, except for improves_source, BETA not beating
    the unadapted source."""
    updates, length = dom.get("updates_per_stream"), dom.get("stream_length")
    if updates is not None and updates < MIN_UPDATES:
        why = (f"the streams allow {updates} optimiser updates ({length} images, one update per batch); "
               f"adaptation is read on streams of at least {MIN_UPDATES}")
        return {id: why for id in ADAPTATION_ROWS}
    verdict = beats_source(dom, "beta", scale)
    gates = {id: "" for id in ADAPTATION_ROWS}
    if verdict != "yes":
        for id in ADAPTATION_ROWS[1:]:
            gates[id] = (f"BETA does not beat the unadapted source ({verdict} under the rule of improves_source, "
                         "p uncorrected): the row would rank methods that do not adapt")
    return gates


def _latency(sheet: claims.Sheet, methods: dict, where: str) -> None:
    """BETA's client-side CPU time per image (outside the API's model) over the API model's own
    forward time per image (measured in the source's run), per seed: both measured in the same job
    on the same machine, so the ratio is machine-dependent but not a constant of the config."""
    if "beta" not in methods or "source" not in methods:
        sheet.untested("negligible_latency", "BETA or the source was not run")
        return
    src, beta = methods["source"], methods["beta"]
    client, forward = beta["client_seconds_per_sample_seeds"], src.get("api_model_seconds_per_sample_seeds", [])
    if not forward or not all(f > 0 for f in forward):
        sheet.untested("negligible_latency", "no measured forward time of the API's model in this run")
        return
    ms = lambda xs: f"{1000 * sum(xs) / len(xs):.3g} ms"  # noqa: E731
    how = (f"{where}; machine-dependent: CPU times measured on the machine of the run; BETA's client time "
           f"{ms(client)} per image (all but the API's model) over the API model's forward time {ms(forward)} "
           "per image (the source's run), per seed")
    sheet.target("negligible_latency", values=[c / f for c, f in zip(client, forward)], how=how)


def _zoo_rows(sheet: claims.Sheet, dom: dict, where: str, gates: dict) -> None:
    methods = dom["methods"]
    zoo = _zoo(dom)
    if not zoo or "beta" not in methods:
        for id in ("comparable_to_zoo", "cost_ratio_250x", "zoo_query_count"):
            sheet.untested(id, "ZOO or BETA was not run")
        return
    top_q = max(methods[m]["queries_per_sample"] for m in zoo)
    at_top = [m for m in zoo if methods[m]["queries_per_sample"] == top_q]
    # the stronger ZOO optimiser at the largest budget, as the tune step chose it on validation
    # streams before any test number was read; never the better test mean
    chosen = dom.get("tuning", {}).get("strongest", {}).get("zoo")
    if chosen in at_top:
        best_top, why = chosen, "the better ZOO optimiser at the largest budget on the validation streams"
    else:
        best_top, why = at_top[0], "no validation choice in this run: the first ZOO optimiser of the config"
    beta = methods["beta"]
    diffs = [b - z for b, z in zip(beta["accuracy"], methods[best_top]["accuracy"])]
    sheet.target("comparable_to_zoo", values=diffs, baseline=best_top,
                 baseline_value=claims.fmt(methods[best_top]["accuracy"]),
                 how=f"{where}; {best_top} ({top_q:.0f} queries per image), {why}; paired by seed",
                 untested=_with_effect(gates.get("comparable_to_zoo", ""), beta["accuracy"],
                                       methods[best_top]["accuracy"]))

    # cost ratio at matched accuracy: the cheapest ZOO run that takes at least one optimiser step and
    # that BETA does not beat significantly (the paired 95% t interval of BETA - ZOO over seeds reaches 0);
    # a budget that buys no step is the source model, not ZOO
    def matched(m: str) -> bool:
        d = [b - z for b, z in zip(beta["accuracy"], methods[m]["accuracy"])]
        return claims.paired_t_interval(d)[1] <= 0.0

    stepping = [m for m in zoo if optimiser_steps(m, dom) >= 1]
    how = (f"{where}; API queries per image of the cheapest ZOO run with at least one optimiser step "
           f"({len(stepping)} of {len(zoo)} runs) that BETA does not beat significantly (paired 95% t interval "
           "of BETA - ZOO over seeds reaching 0), over BETA's")
    if gates.get("cost_ratio_250x"):
        sheet.target("cost_ratio_250x", math.nan, untested=gates["cost_ratio_250x"], how=how)
    elif not stepping:
        sheet.target("cost_ratio_250x", math.nan, untested="no ZOO budget buys an optimiser step", how=how)
    elif len(beta["accuracy"]) < claims.MIN_REPLICATES:
        sheet.target("cost_ratio_250x", math.nan, untested=f"fewer than {claims.MIN_REPLICATES} seeds", how=how)
    else:
        reaching = sorted((methods[m]["queries_per_sample"], m) for m in stepping if matched(m))
        reason = ""
        if reaching:
            ratio = reaching[0][0] / beta["queries_per_sample"]
            how += f" ({reaching[0][1]})"
        else:
            ratio = top_q / beta["queries_per_sample"]
            how += f"; BETA beats every ZOO budget significantly, so the ratio is at least {ratio:.0f}"
            if ratio < PAPER_COST_RATIO:
                reason = (f"BETA beats every ZOO budget and the largest budget ({top_q:.0f}) is below "
                          f"{PAPER_COST_RATIO:.0f}")
        sheet.target("cost_ratio_250x", ratio, n=len(beta["accuracy"]), how=how, untested=reason)
    expected = {m: _expected_queries(m, dom) for m in zoo}
    worst = max(abs(methods[m]["queries_per_sample"] - expected[m]) for m in zoo)
    sheet.check("zoo_query_count", worst,
                how="expected 2 * ((q - 1) // 2) + 1 (SPSA) or lambda * ((q - 1) // lambda) + 1 (CMA-ES)")


def optimiser_steps(name: str, dom: dict) -> int:
    """SPSA steps or CMA-ES generations per batch a ZOO run's budget buys (0: the source's prediction)."""
    _, opt, q = name.split("_")
    return (int(q) - 1) // (2 if opt == "spsa" else dom["cma_popsize"])


def _expected_queries(name: str, dom: dict) -> float:
    _, opt, q = name.split("_")
    q = int(q)
    if opt == "spsa":
        return 2 * ((q - 1) // 2) + 1
    lam = dom["cma_popsize"]
    return lam * ((q - 1) // lam) + 1
