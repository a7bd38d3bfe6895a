"""Claims rows of bdc_merge, a pure function of the aggregated metrics (`steps.claims_summary`);
the entries, margins and controls are declared in `claims.yaml`, and `core.claims.Sheet` decides.

Every merge is compared at the default calibration size and at its own fusion strength alpha,
tuned per task by the tune step on held-out text no test seed evaluates; the `_alpha03` rows
repeat "improves the target", its null, "changes what the target knows" and "preserves general
ability" at the strength fixed in advance for every merge (alpha = 0.3, the sensitivity reading). A seed draws the calibration sentences and the evaluation subsets (cloze questions,
held-out sentences); the source and target models are one pretrained pair for every seed
(n_pairs = 1), and the rows say so. Cloze accuracy, a mean of per-question correctness, gets the
wider of the paired bootstrap over seeds x questions (the same questions on both sides) and the
paired t over seeds.
Perplexity is compared as a ratio on the log scale: per seed the geometric mean over the tasks of
a group (exp of the mean log perplexity), a paired t over seeds of the log ratio. Each group's
rows lean on the regime control "the source beats the target there" (something to transfer);
"BDC-Merge improves the target" has the null control "truncate-and-average improves it too", and
"largely preserves general ability" the regime control "BDC-Merge changes what the target knows"
(a merge that changes nothing would preserve it by construction). The knowledge-perplexity
comparisons with Transport and Merge have the null control "truncate-and-average (no calibration)
beats the same baseline"; the knowledge-cloze comparisons have the floor control "the compared
merges, pooled, answer above chance" (chance: 1 / the drawn questions' number of choices).
"""

from __future__ import annotations

import math

from neurips26.core import claims

P = "bdc_merge"
LABELS = {"target": "target alone", "source": "source alone", "naive": "truncate-and-average",
          "transport": "Transport and Merge", "transport_lora": "Transport and Merge + LoRA",
          "bdc": "BDC-Merge", "bdc_attn": "BDC-Merge (attention q/k/v/o only)",
          "transport_all": "Transport and Merge (all matrices)"}
# id prefix: (method, baseline); the matched rows put each method on the other's matrix set
COMPARISONS = {"beats_transport": ("bdc", "transport"), "beats_attn": ("bdc_attn", "transport"),
               "beats_all": ("bdc", "transport_all")}
MEASURES = ("cloze", "ppl")
NAIVE_NULLS = {p: COMPARISONS[p] for p in ("beats_transport", "beats_all")}
# the merges the knowledge-cloze rows compare, pooled by the floor control so neither side decides it
FLOOR_MERGES = ("bdc", "bdc_attn", "transport", "transport_all")


def _compare(sheet: claims.Sheet, summary: dict, id: str, measure: str, group: str, method: str, baseline: str,
             reading: str = "tuned") -> None:
    ms = summary["methods"] if reading == "tuned" else summary.get("fixed", {})
    capped = summary.get("capped", {}) if reading == "tuned" else {}
    caps = {"method_capped": capped.get(method, {}).get(group, ""),
            "baseline_capped": capped.get(baseline, {}).get(group, "")}
    if not summary["groups"].get(group):
        sheet.untested(id, f"the run has no {group} tasks", method=LABELS[method], baseline=LABELS[baseline])
        return
    missing = [m for m in (method, baseline) if m not in ms]
    if missing:
        sheet.untested(id, f"the run does not measure {', '.join(LABELS[m] for m in missing)}",
                       method=LABELS[method], baseline=LABELS[baseline])
        return
    m, b = ms[method], ms[baseline]
    how = f"replicates hold fixed: {summary['holds_fixed']}"
    if measure == "cloze":
        mi, bi = m["cloze_items"][group], b["cloze_items"][group]
        items = mi is not None and bi is not None
        sheet.comparison(id, m["cloze"][group], b["cloze"][group], method=LABELS[method], baseline=LABELS[baseline],
                         method_items=mi if items else None, baseline_items=bi if items else None, how=how, **caps)
    else:
        sheet.comparison(id, [math.exp(v) for v in m["log_ppl"][group]], [math.exp(v) for v in b["log_ppl"][group]],
                         method=LABELS[method], baseline=LABELS[baseline], how=how, **caps)


def claim_rows(summary: dict, scale: str, spec=None) -> list[dict]:
    sheet = claims.Sheet(P, scale, spec)
    for group in ("low", "knowledge"):
        for measure in MEASURES:
            _compare(sheet, summary, f"source_beats_target_{group}_{measure}", measure, group, "source", "target")
    _compare(sheet, summary, "naive_improves_target_low_ppl", "ppl", "low", "naive", "target")
    # truncate-and-average (no calibration) against each Transport and Merge baseline of the
    # knowledge-perplexity claims: a gain it also earns is not the coupling's
    for prefix, (_, baseline) in NAIVE_NULLS.items():
        _compare(sheet, summary, f"naive_{prefix}_knowledge_ppl", "ppl", "knowledge", "naive", baseline)
    floor_row(sheet, summary, "knowledge")
    _compare(sheet, summary, "bdc_transfers_knowledge", "ppl", "knowledge", "bdc", "target")
    for prefix, (method, baseline) in COMPARISONS.items():
        for group in ("low", "knowledge"):
            for measure in MEASURES:
                _compare(sheet, summary, f"{prefix}_{group}_{measure}", measure, group, method, baseline)
    _compare(sheet, summary, "beats_lora_low_ppl", "ppl", "low", "bdc", "transport_lora")
    _compare(sheet, summary, "improves_target_low_ppl", "ppl", "low", "bdc", "target")
    general_row(sheet, summary)
    # the sensitivity reading: every merge at the strength fixed in advance
    _compare(sheet, summary, "naive_improves_target_low_ppl_alpha03", "ppl", "low", "naive", "target", "fixed")
    _compare(sheet, summary, "bdc_transfers_knowledge_alpha03", "ppl", "knowledge", "bdc", "target", "fixed")
    _compare(sheet, summary, "improves_target_low_ppl_alpha03", "ppl", "low", "bdc", "target", "fixed")
    general_row(sheet, summary, "fixed")
    return sheet.rows()


def general_row(sheet: claims.Sheet, summary: dict, reading: str = "tuned") -> None:
    """Held-out high-resource perplexity of the merged models over the target's, per seed (exp of
    the mean log-perplexity difference over the tasks' merges): geometric mean and t interval of
    the log ratio over seeds, against the band ratio <= 1 + tolerance."""
    ms = summary["methods"] if reading == "tuned" else summary.get("fixed", {})
    id = "preserves_general" if reading == "tuned" else "preserves_general_alpha03"
    if "bdc" not in ms or "target" not in ms:
        sheet.untested(id, "the run does not measure BDC-Merge at this strength", method=LABELS["bdc"],
                       baseline=LABELS["target"])
        return
    m, b = ms["bdc"], ms["target"]
    ratios = [math.exp(x - y) for x, y in zip(m["general_log_ppl"], b["general_log_ppl"])]
    tol = summary["general_tolerance"]
    at = "each merge at its tuned strength" if reading == "tuned" else f"strength {summary.get('strength', 0.3):g} for every merge"
    how = f"{at}; config general_tolerance {tol:g}; replicates hold fixed: {summary['holds_fixed']}"
    sheet.target(id, values=ratios, baseline=LABELS["target"], how=how)


def floor_row(sheet: claims.Sheet, summary: dict, group: str) -> None:
    """The cloze is off its floor: per seed, the mean cloze accuracy of the compared merges
    (`FLOOR_MERGES`, pooled so that neither side of a comparison decides it) against chance, the
    mean over the group's drawn questions of 1 / their number of choices."""
    id = f"merges_above_chance_{group}_cloze"
    ms, chance = summary["methods"], summary.get("cloze_chance", {}).get(group)
    pooled_merges = [m for m in FLOOR_MERGES if m in ms]  # the matched variants only when the run has them
    label = "the compared merges, pooled (" + ", ".join(LABELS[m] for m in pooled_merges) + ")"
    missing = [m for m in ("bdc", "transport") if m not in ms]
    if not summary["groups"].get(group):
        sheet.untested(id, f"the run has no {group} tasks", method=label, baseline="chance")
    elif missing:
        sheet.untested(id, f"the run does not measure {', '.join(LABELS[m] for m in missing)}", method=label,
                       baseline="chance")
    elif not chance or any(c is None for c in chance):
        sheet.untested(id, "the run does not record the cloze questions' chance level", method=label,
                       baseline="chance")
    else:
        pooled = [sum(vals) / len(vals) for vals in zip(*(ms[m]["cloze"][group] for m in pooled_merges))]
        sheet.comparison(id, pooled, chance, method=label, baseline="chance (1 / number of choices)",
                         how=f"replicates hold fixed: {summary['holds_fixed']}")
