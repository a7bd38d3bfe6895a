"""Claims rows of adaprelora, a pure function of the aggregated metrics (`steps.claims_summary`).

Per task (`cls_*`: the classification task, `gen_*`: the data-to-text task): AdaPreLoRA
"competitive with" each LoRA optimizer as a non-inferiority target (the 95% paired t interval over
seeds of AdaPreLoRA - baseline must lie above -margin: 2 accuracy points, 0.02 BLEU), and
"improves over" the strongest baseline (named by the tune step from validation scores at the tuned
knobs, core.tuning.strongest, not by the test means it is compared with) as a comparison, which
cannot say `yes` when that baseline's tuning was capped at a grid edge, nor `no` when AdaPreLoRA's
was. On the classification task the per-item
correctness is the row's metric (accuracy is its mean), so its interval is also bootstrapped over
items; BLEU is a corpus score of the seed's test set, so the data-to-text row is a paired t over
seeds. Both tasks' rows are gated by a regime control: the compared optimizers have left the
transient (at most a tenth of each run's training-loss decrease in its last fifth of steps).
Memory: AdaPreLoRA's optimizer state and the peak of one training step against AdamW on the
factors (ratios on the log scale, per seed), the peak row guarded by a null control (LoRA-Pro's
W-sized moments scored against the same band), its state against the W-sized states of LoRA-Pro
and full-W Adafactor, and its state bytes against the O((m + n) r) count (a check). The closed
form against a generic least-squares solve on the last step's real layers (a check). The paper's
scales are untested. The rows are declared in `claims.yaml`.
"""

from __future__ import annotations

import math

from neurips26.core import claims, tuning

P = "adaprelora"
BASELINES = ("adamw", "loraplus", "scaled_adamw", "lora_pro", "adafactor_proj")
LONG_IDS = ("converged_long", "competitive_adamw_long", "improves_long")
TRACK_IDS = ("converged", *(f"competitive_{b}" for b in BASELINES), "improves", "state_below_lora_pro",
             "state_below_full_adafactor")


def _clean(xs):
    return [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]


def _track_of(t: dict) -> str:
    return "gen" if t["metric"] == "bleu" else "cls"


def claim_rows(summary: dict, scale: str, spec=None) -> list[dict]:
    sheet = claims.Sheet(P, scale, spec=spec)
    tasks = summary["tasks"]
    seen = set()
    for task, t in tasks.items():
        tr = _track_of(t)
        if tr in seen:
            continue
        seen.add(tr)
        _task(sheet, tr, task, t)
    for tr in ("cls", "gen"):
        if tr not in seen:
            for i in TRACK_IDS + (LONG_IDS if tr == "cls" else ()):
                sheet.untested(f"{tr}_{i}", f"no {'data-to-text' if tr == 'gen' else 'classification'} task was run")
    _memory(sheet, tasks)
    _checks(sheet, summary, tasks)
    for i, reason in (
            ("gpt2_e2e", "needs gpt2-medium fine-tuning on E2E NLG (config/paper.yaml names it); the default run uses the "
                         "tiny lm_assets model on generated records"),
            ("llm_7b", "needs 7B models on GPUs; the default run uses MiniLM's last layer on generated classification tasks"),
            ("diffusion", "no diffusion model or personalization data in this workflow"),
            ("peak_7b", "CPU runs measure the tracked tensors of one step of small layers; 7B models need GPUs")):
        sheet.untested(i, reason)
    return sheet.rows()


def _task(sheet: claims.Sheet, tr: str, task: str, t: dict) -> None:
    scores = t["scores"]
    present = [b for b in BASELINES if b in scores]
    late = t.get("late_share", {})
    if late and all(m in late for m in ["adaprelora", *present]):
        n = len(late["adaprelora"])
        worst = [max(late[m][k] for m in ["adaprelora", *present]) for k in range(n)]
        sheet.target(f"{tr}_converged", values=worst, method=f"AdaPreLoRA and {', '.join(present)} ({task})",
                     how="per seed the largest late share over the optimizers")
    else:
        sheet.untested(f"{tr}_converged", "the run records no loss curves")
    m = scores["adaprelora"]
    capped = t.get("capped", {})
    for base in BASELINES:
        id = f"{tr}_competitive_{base}"
        if base not in scores:
            sheet.untested(id, f"{base} was not run on {task}")
            continue
        b = scores[base]
        diffs = [x - y for x, y in zip(m, b) if x is not None and y is not None]
        values = set(_clean(list(m) + list(b)))
        reason = ""
        if len(diffs) >= claims.MIN_REPLICATES and len(values) == 1:
            reason = f"both sides score {values.pop():g} on every seed (neither learned the task at this budget)"
        note = "; ".join(x for x in (capped.get("adaprelora", ""), capped.get(base, "")) if x)
        sheet.target(id, values=diffs, method=f"adaprelora ({task})", baseline_value=claims.fmt(_clean(b)),
                     how="per seed AdaPreLoRA - baseline, each at its knobs tuned on a validation split"
                         + (f" (capped: {note})" if note else ""), untested=reason)
    if not present:
        sheet.untested(f"{tr}_improves", f"no LoRA optimizer was run on {task}")
    else:
        val = t.get("val_score", {})
        best = t.get("strongest")
        if best in present:
            how = (f"strongest baseline named by the tune step from validation scores at the tuned knobs "
                   f"({val.get(best, float('nan')):.3g}), before any test number")
        else:
            by_val = [b for b in present if val.get(b) is not None and math.isfinite(val[b])]
            if by_val:
                best, _ = tuning.strongest({b: val[b] for b in by_val}, candidates=by_val)
                how = f"strongest baseline by validation score at its tuned knobs ({val[best]:.3g})"
            else:
                best = max(present, key=lambda b: claims.mean_std(_clean(scores[b]))[0])
                how = "strongest baseline by test mean (no validation scores recorded; the choice favours the baseline)"
        items = {}
        if tr == "cls" and "items" in t:  # per-item correctness: its mean is the row's metric
            items = {"method_items": t["items"]["adaprelora"], "baseline_items": t["items"][best]}
        sheet.comparison(f"{tr}_improves", m, scores[best], method=f"adaprelora ({task})", baseline=best, how=how,
                         method_capped=capped.get("adaprelora", ""), baseline_capped=capped.get(best, ""), **items)
    if tr == "cls":
        _long(sheet, task, t)
    for base in ("lora_pro", "full_adafactor"):
        id = f"{tr}_state_below_{base}"
        seeds = t.get("state_bytes_seeds", {})
        if base not in t["state_bytes"]:
            sheet.untested(id, f"{base} was not run on {task}")
        elif seeds:
            sheet.target(id, values=[a / b for a, b in zip(seeds["adaprelora"], seeds[base])], method=f"adaprelora ({task})",
                         baseline_value=claims.fmt(seeds[base]), how="bytes of the tensors in optimizer.state after training")
        else:
            sheet.untested(id, "the run records the state bytes of no single seed")


def _long(sheet: claims.Sheet, task: str, t: dict) -> None:
    """The classification rows at the long horizon, read from the long runs only (`t["long"]`: each
    method trained for `classification.horizon` steps at the knobs tuned at the short budget)."""
    L = t.get("long")
    if not L:
        for i in LONG_IDS:
            sheet.untested(f"cls_{i}", "no long-horizon runs (classification.horizon is 0)")
        return
    steps, tuned_at = L["steps"], L["tuned_at"]
    knobs = f"at {steps} steps, every method at the lr and damping its tune step chose at {tuned_at} steps"
    scores, late = L["scores"], L["late_share"]
    present = [b for b in BASELINES if b in scores]
    if "adaprelora" not in scores:
        for i in LONG_IDS:
            sheet.untested(f"cls_{i}", f"AdaPreLoRA was not run at the long horizon on {task}")
        return
    if present:
        n = len(late["adaprelora"])
        worst = [max(late[m][k] for m in ["adaprelora", *present]) for k in range(n)]
        sheet.target("cls_converged_long", values=worst, method=f"AdaPreLoRA and {', '.join(present)} ({task}, {steps} steps)",
                     how=f"per seed the largest late share over the optimizers run {knobs}")
    else:
        sheet.untested("cls_converged_long", f"no LoRA optimizer was run at the long horizon on {task}")
    m = scores["adaprelora"]
    capped = t.get("capped", {})
    if "adamw" in scores:
        b = scores["adamw"]
        diffs = [x - y for x, y in zip(m, b) if x is not None and y is not None]
        values = set(_clean(list(m) + list(b)))
        reason = ""
        if len(diffs) >= claims.MIN_REPLICATES and len(values) == 1:
            reason = f"both sides score {values.pop():g} on every seed (neither learned the task at this budget)"
        note = "; ".join(x for x in (capped.get("adaprelora", ""), capped.get("adamw", "")) if x)
        sheet.target("cls_competitive_adamw_long", values=diffs, method=f"adaprelora ({task}, {steps} steps)",
                     baseline_value=claims.fmt(_clean(b)),
                     how=f"per seed AdaPreLoRA - baseline, {knobs}" + (f" (capped: {note})" if note else ""),
                     untested=reason)
    else:
        sheet.untested("cls_competitive_adamw_long", f"adamw was not run at the long horizon on {task}")
    best = t.get("strongest")
    if best not in BASELINES:
        sheet.untested("cls_improves_long", "the tune step named no strongest LoRA optimizer on validation")
    elif best not in scores:
        sheet.untested("cls_improves_long", f"the strongest LoRA optimizer on validation ({best}) was not run at the long horizon")
    else:
        val = t.get("val_score", {}).get(best)
        how = (f"strongest baseline named by the tune step from validation scores at the tuned knobs "
               f"({float('nan') if val is None else val:.3g}, at {tuned_at} steps), before any test number; {knobs}")
        sheet.comparison("cls_improves_long", m, scores[best], method=f"adaprelora ({task}, {steps} steps)", baseline=best,
                         how=how, method_capped=capped.get("adaprelora", ""), baseline_capped=capped.get(best, ""),
                         method_items=L["items"]["adaprelora"], baseline_items=L["items"][best])


def _ratio_per_seed(tasks: dict, key: str, num: str, den: str) -> list[float] | None:
    """Per seed, the largest over tasks of num / den (bytes); None when a side is missing."""
    per_task = []
    for t in tasks.values():
        seeds = t.get(f"{key}_seeds", {})
        if num not in seeds or den not in seeds or not all(seeds[den]):
            return None
        per_task.append([a / b for a, b in zip(seeds[num], seeds[den])])
    return [max(vals) for vals in zip(*per_task)] if per_task else None


def _memory(sheet: claims.Sheet, tasks: dict) -> None:
    for id, key, num, how in (
            ("state_lora_level", "state_bytes", "adaprelora", "bytes of the tensors in optimizer.state after training "
                                                             "(lora_harness.memory)"),
            ("peak_lora_level", "peak_bytes", "adaprelora", None),
            ("peak_null_lora_pro", "peak_bytes", "lora_pro", None)):
        ratios = _ratio_per_seed(tasks, key, num, "adamw")
        if ratios is None:
            sheet.untested(id, f"no per-seed {key.replace('_', ' ')} for {num} and adamw")
            continue
        how = how or ("peak of step 2 (forward, backward, optimizer step), the parameters and optimizer state alive "
                      "before it included (lora_harness.memory): "
                      + ", ".join(sorted({t["peak_kind"] for t in tasks.values()})))
        sheet.target(id, values=ratios, how=how)


def _checks(sheet: claims.Sheet, summary: dict, tasks: dict) -> None:
    dev = max(abs(t["state_bytes"]["adaprelora"] - t["state_predicted"]) / t["state_predicted"] for t in tasks.values())
    sheet.check("state_count", dev, n=len(tasks), how="R (m) and C (n) per adapted matrix, the factor momenta r (m + n), float32")
    ch = summary["check"]
    sheet.check("closed_form", max(ch["max_rel_image_diff"], ch["max_rel_imbalance_excess"]) if ch["runs"] else None,
                n=ch["layers"], untested="" if ch["runs"] else "no run recorded its last step",
                how="float64, the last step's W-gradient direction, factors and Adafactor factors of real adapted layers")
