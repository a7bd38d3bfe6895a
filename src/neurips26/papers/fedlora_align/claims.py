"""Claims rows of fedlora_align, a pure function of the aggregated metrics
(`steps.claims_summary` per variant, and the alphas the accuracy claims are reported at).

Replicates are seeds; a seed draws the task's sentences, the client split, the initial
adapter and head and every minibatch, shared by all methods (paired comparisons).
Conflict = mean over rounds and LoRA modules of the weighted mean over client pairs of the
projection distance between the clients' round updates (1 - mean cos^2 of principal angles).
The rows are computed per variant; the generative variant (`data_to_text`) reads its mean token
accuracy as the accuracy (its `score`), and the conflict-vs-heterogeneity row needs two alphas.
"""

from __future__ import annotations

from neurips26.core import claims

P = "fedlora_align"
# one point of accuracy: the smallest gain federated LoRA papers report between methods
MIN_ACC_GAIN = 0.01
BASELINES = ("fedit", "ffa_lora", "flora", "fedex_lora", "fedsa_lora", "ideal")


def _mean(xs):
    return sum(xs) / len(xs)


def claim_rows(summary: dict, scale: str) -> list[dict]:
    rows = []
    for v, s in summary["variants"].items():
        alphas = sorted(s["alphas"], key=float)
        lo, hi = alphas[0], alphas[-1]
        report = sorted([a for a in summary.get("report_alphas", []) if a in s["by_alpha"]], key=float) or [lo]
        by = s["by_alpha"]
        ref = "ideal" if "ideal" in s["methods"] else s["methods"][0]
        cmetric = f"{v}: column-space conflict between clients' round updates (0 equal .. 1 orthogonal)"
        if lo != hi:
            rows.append(claims.comparison(
                P, f"subspace conflicts intensify with heterogeneity, even under ideal aggregation ({v})", cmetric,
                f"{ref}, alpha={lo}", by[lo][ref]["column"], f"{ref}, alpha={hi}", by[hi][ref]["column"], True, scale,
                "conflict_vs_heterogeneity.png"))
        rows.append(claims.comparison(
            P, f"subspace conflicts concentrate in the column spaces of LoRA updates ({v}, alpha={lo})",
            f"{v}: conflict of column spaces vs of row spaces, {ref}", f"column spaces", by[lo][ref]["column"],
            "row spaces", by[lo][ref]["row"], True, scale, "conflict_vs_heterogeneity.png"))
        if "align" in s["methods"] and "fedit" in s["methods"]:
            rows.append(claims.comparison(
                P, f"ALIGN reduces column-space conflict between clients ({v}, alpha={lo})", cmetric,
                "align", by[lo]["align"]["column"], "fedit", by[lo]["fedit"]["column"], False, scale,
                "conflict_vs_heterogeneity.png"))
        if "align" not in s["methods"]:
            continue
        score = s.get("score", "global test accuracy (balanced)")
        ametric = f"{v}: {score}, mean over clients' final models"
        for a in report:
            present = [b for b in BASELINES if b in s["methods"]]
            if "fedit" in present:
                rows.append(claims.comparison(
                    P, f"ALIGN improves over FedIT ({v}, alpha={a})", ametric, "align", by[a]["align"]["acc_global"],
                    "fedit", by[a]["fedit"]["acc_global"], True, scale, "accuracy_vs_heterogeneity.png",
                    min_effect=MIN_ACC_GAIN))
            if present:
                best = max(present, key=lambda b: _mean(by[a][b]["acc_global"]))
                rows.append(claims.comparison(
                    P, f"ALIGN improves over the strongest existing method ({v}, alpha={a})", ametric, "align",
                    by[a]["align"]["acc_global"], best, by[a][best]["acc_global"], True, scale,
                    "accuracy_vs_heterogeneity.png", min_effect=MIN_ACC_GAIN))
        if "ideal" in s["methods"]:
            rows.append(claims.comparison(
                P, f"ideal aggregation is not enough: ALIGN beats it ({v}, alpha={lo})", ametric, "align",
                by[lo]["align"]["acc_global"], "ideal", by[lo]["ideal"]["acc_global"], True, scale,
                "accuracy_vs_heterogeneity.png", min_effect=MIN_ACC_GAIN))
        if "align_no_drift" in s["methods"]:
            rows.append(claims.comparison(
                P, f"the local drift constraint helps ALIGN ({v}, alpha={lo})", ametric, "align",
                by[lo]["align"]["acc_global"], "align_no_drift", by[lo]["align_no_drift"]["acc_global"], True, scale,
                "accuracy_vs_heterogeneity.png", min_effect=MIN_ACC_GAIN))
    return rows
