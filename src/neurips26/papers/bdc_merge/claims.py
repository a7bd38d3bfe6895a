"""Claims rows of bdc_merge, a pure function of the aggregated metrics (`steps.claims_summary`).

Every method is compared at the default setting (calibration size and fusion strength fixed in
advance). A seed draws the calibration sentences and the evaluation subsets (cloze questions,
held-out sentences); the source and target models are one pretrained pair for every seed, and
the rows say so. With per-item scores (cloze correctness, per-sentence negative log-likelihood)
a comparison's interval is the wider of the paired bootstrap over seeds x items (the same items
on both sides) and the paired t over seeds (`core.claims.comparison`); the general-ability ratio
(a target) uses the bootstrap alone.
Perplexity is compared on the log scale (nats per token, averaged over the tasks of a group), so
a difference of 0.01 is a 1% change of perplexity.
"""

from __future__ import annotations

import math

from neurips26.core import claims

P = "bdc_merge"
LABELS = {"target": "target alone", "transport": "Transport and Merge", "transport_lora": "Transport and Merge + LoRA",
          "bdc": "BDC-Merge", "bdc_attn": "BDC-Merge (attention q/k/v/o only)",
          "transport_all": "Transport and Merge (all matrices)"}
# the matched comparisons: each method on the other's matrix set
MATCHED = {"attention": ("bdc_attn", "transport", "both fusing the attention matrices q/k/v/o only"),
           "all": ("bdc", "transport_all", "both fusing every matrix BDC-Merge fuses")}
GROUPS = {"low": "low-resource languages", "knowledge": "specialised knowledge"}
GROUP_TASKS = {"low": "low-resource languages", "knowledge": "knowledge sets"}
# one cloze question in a hundred: a gain below that moves fewer than one answer per task
MIN_CLOZE_GAIN = 0.01
# 0.01 nats per token: a 1% lower perplexity
MIN_LOG_PPL_GAIN = 0.01


def _compare(summary: dict, claim: str, measure: str, group: str, baseline: str, scale: str,
             method: str = "bdc") -> dict:
    ms = summary["methods"]
    m, b = ms[method], ms[baseline]
    if measure == "cloze":
        metric, higher, values, items, min_effect = (f"cloze accuracy, mean over the {GROUP_TASKS[group]}, higher is better",
                                                     True, "cloze", "cloze_items", MIN_CLOZE_GAIN)
    else:
        metric, higher, values, items, min_effect = (f"log perplexity (nats per token), mean over the {GROUP_TASKS[group]}, "
                                                     "lower is better", False, "log_ppl", "nll_items", MIN_LOG_PPL_GAIN)
    mi, bi = m[items][group], b[items][group]
    paired_items = mi is not None and bi is not None
    return claims.comparison(P, claim, metric, LABELS[method], m[values][group], LABELS[baseline], b[values][group],
                             higher, scale, "tasks.png", min_effect=min_effect,
                             method_items=mi if paired_items else None, baseline_items=bi if paired_items else None,
                             holds_fixed=summary["holds_fixed"])


def claim_rows(summary: dict, scale: str) -> list[dict]:
    rows = []
    for group in ("low", "knowledge"):
        if not summary["groups"][group]:
            continue
        claim = f"BDC-Merge beats Transport and Merge on {GROUPS[group]}"
        rows.append(_compare(summary, claim, "cloze", group, "transport", scale))
        rows.append(_compare(summary, claim, "ppl", group, "transport", scale))
        for key, (method, baseline, how) in MATCHED.items():
            if method not in summary["methods"] or baseline not in summary["methods"]:
                continue
            for measure in ("cloze", "ppl"):
                rows.append(_compare(summary, f"{claim} ({how})", measure, group, baseline, scale, method))
    if summary["groups"]["low"] and "transport_lora" in summary["methods"]:
        rows.append(_compare(summary, "BDC-Merge without training beats Transport and Merge with LoRA adaptation "
                             "(low-resource languages)", "ppl", "low", "transport_lora", scale))
    if summary["groups"]["low"]:
        rows.append(_compare(summary, "BDC-Merge improves the target on low-resource languages", "ppl", "low",
                             "target", scale))
    rows.append(general_row(summary, scale))
    return rows


def general_row(summary: dict, scale: str) -> dict:
    """Held-out high-resource perplexity of the merged models over the target's: its 95% interval
    against the band ratio <= 1 + tolerance."""
    tol = summary["general_tolerance"]
    m, b = summary["methods"]["bdc"], summary["methods"]["target"]
    claim = f"BDC-Merge largely preserves general ability (high-resource perplexity within {tol:.0%} of the target's)"
    metric = "held-out high-resource perplexity, BDC-Merge / target alone (mean over the tasks' merges), lower is better"
    n = min(len(m["general_log_ppl"]), len(b["general_log_ppl"]))
    reason, value, interval, how = "", float("nan"), None, ""
    if n < claims.MIN_REPLICATES:
        reason = f"fewer than {claims.MIN_REPLICATES} seeds"
    elif m["general_items"] is not None and b["general_items"] is not None:
        d, lo, hi = claims.paired_bootstrap_interval(m["general_items"], b["general_items"])
        items = len(m["general_items"][0])
        value, interval = math.exp(d), (math.exp(lo), math.exp(hi))
        how = f"exp of the log-perplexity difference, paired bootstrap over {n} seeds x {items} items"
    else:
        d, lo, hi = claims.paired_t_interval([x - y for x, y in zip(m["general_log_ppl"], b["general_log_ppl"])])
        value, interval = math.exp(d), (math.exp(lo), math.exp(hi))
        how = f"exp of the log-perplexity difference, paired t over {n} seeds"
    how += f"; replicates hold fixed: {summary['holds_fixed']}"
    return claims.target(P, claim, metric, LABELS["bdc"], value, (None, 1 + tol), scale, "strength.png",
                         interval=interval, n=n, baseline=LABELS["target"], how=how, untested_reason=reason,
                         paper_value="largely preserved")
