"""Claims rows of embed_merge, a pure function of the aggregated metrics (`steps.claims_summary`).

Merging comparisons use the mean normalised accuracy over the merged tasks with all tasks merged,
paired by seed (one pre-trained model, one set of fine-tunes and one draw of every task's data
per seed, shared by all methods); with per-example scores the interval is the wider of the
paired bootstrap over seeds x test examples (examples of every task, weighted so that their mean
is the mean over tasks) and the paired t over seeds (`core.claims.comparison`). The hypothesis row measures how much of each update's energy falls inside the
pre-trained top-r subspace, against a random subspace of the same size.
"""

from __future__ import annotations

from neurips26.core import claims

P = "embed_merge"
OURS = ("embed_mean", "embed_aligned")
ABLATIONS = ("embed_mean_posthoc", "embed_aligned_posthoc")  # ours on projected full fine-tunes: not "the field's"
# One point of normalised accuracy (merged / fine-tuned): the smallest gain merging papers report
# as a difference between methods.
MIN_NORMALISED_GAIN = 0.01
# "Updates lie in the pre-trained low-rank space" read as: a task update puts at least 1.5 times
# as much of its energy into the pre-trained top-r subspace as into a random subspace of the
# same size. A ratio near 1 means the subspace is no better than chance at holding the updates.
MIN_SHARE_RATIO = 1.5


def _mean(xs):
    return sum(xs) / len(xs)


def claim_rows(summary: dict, scale: str) -> list[dict]:
    rows = []
    for v, dom in summary.items():
        methods = dom["methods"]
        metric = f"{v}: mean normalised accuracy over {dom['tasks']} merged tasks, higher is better"

        def compare(claim, method, baseline):
            m, b = methods[method], methods[baseline]
            items = m["items"] is not None and b["items"] is not None
            return claims.comparison(P, claim, metric, method, m["normalized"], baseline, b["normalized"], True,
                                     scale, "accuracy_vs_tasks.png", min_effect=MIN_NORMALISED_GAIN,
                                     method_items=m["items"] if items else None,
                                     baseline_items=b["items"] if items else None, holds_fixed=dom["holds_fixed"])

        if "embed_mean" in methods and "weight_averaging" in methods:
            rows.append(compare(f"averaging model embeddings beats naive weight averaging ({v})",
                                "embed_mean", "weight_averaging"))
        if "embed_mean" in methods and "task_arithmetic" in methods:
            rows.append(compare(f"averaging model embeddings beats Task Arithmetic tuned on the same scale grid ({v})",
                                "embed_mean", "task_arithmetic"))
        if "embed_mean" in methods and "embed_mean_posthoc" in methods:
            rows.append(compare(f"fine-tuning inside the pre-trained space makes averaging more effective ({v})",
                                "embed_mean", "embed_mean_posthoc"))
        if "embed_aligned" in methods and "embed_mean" in methods:
            rows.append(compare(f"the aligned subspace improves embedding merging ({v})", "embed_aligned", "embed_mean"))
        ours = [m for m in OURS if m in methods]
        base = [m for m in methods if m not in OURS and m not in ABLATIONS]
        if ours and base:
            best_ours = max(ours, key=lambda m: _mean(methods[m]["normalized"]))
            strongest = max(base, key=lambda m: _mean(methods[m]["normalized"]))
            rows.append(compare(f"embedding-space merging is more effective than the field's methods ({v})",
                                best_ours, strongest))
        rows.append(share_row(v, dom, scale))
    return rows


def share_row(v: str, dom: dict, scale: str) -> dict:
    """Per seed, the mean share over tasks divided by the mean chance share; its mean over seeds
    with a t interval, against the band ratio >= MIN_SHARE_RATIO."""
    ratios = [s / c for s, c in zip(dom["share"], dom["chance"])]
    claim = f"fine-tuned updates lie in the pre-trained low-rank space ({v})"
    metric = (f"{v}: share of update energy inside the pre-trained top-r subspace / share inside a random "
              "subspace of the same size (mean over tasks), higher is better")
    reason, value, interval = "", float("nan"), None
    if len(ratios) < claims.MIN_REPLICATES:
        reason = f"fewer than {claims.MIN_REPLICATES} seeds"
    else:
        value, lo, hi = claims.paired_t_interval(ratios)
        interval = (lo, hi)
    how = (f"share {claims.fmt(dom['share'])} against chance {claims.fmt(dom['chance'])}; "
           f"ratio per seed, t interval over {len(ratios)} seeds"
           + (f"; replicates hold fixed: {dom['holds_fixed']}" if dom["holds_fixed"] else ""))
    return claims.target(P, claim, metric, "pre-trained top-r subspace", value, (MIN_SHARE_RATIO, None), scale,
                         "subspace_share.png", interval=interval, n=len(ratios), how=how, untested_reason=reason,
                         paper_value="updates confined to the pre-trained space")
