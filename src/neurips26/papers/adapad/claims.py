"""Claims rows of adapad, a pure function of the aggregated metrics (`steps.claims_summary`).

Mechanism rows (planted low-rank matrix, rank-1 workers): self-correction (AdaPaD's final
component errors against sequential deflation's, in decades, paired over seeds), convergence to
~0 (AdaPaD's largest final error), exponential decay after warm-up (the fitted rate of log error
against the linearised prediction, and the log-linearity of the decay), advance learning
shortening the warm-up, and the split of the error into a vanishing algorithmic term and the
statistical floor (a check). Fine-tuning rows (MiniLM classification tasks, matched budgets):
competitive with AdaLoRA and with fixed-rank LoRA (non-inferiority: the 95% interval of the
accuracy difference above -margin), and the deployed adapter's size reduction against fixed-rank
LoRA. Rows at the paper's scale (DeBERTaV3-base on GLUE, Qwen3-0.6B on SQuAD) are untested.
"""

from __future__ import annotations

import math

from neurips26.core import claims

P = "adapad"
# "converge to ~0": the largest final error of any component below 1e-8 (relative to s_k); float64
# rounding sits near 1e-15, sequential deflation's frozen residuals at 1e-2 .. 1e-5 at our budget.
ZERO_DECADES = -8.0
# self-correction: at least one decade lower final error than sequential deflation
MIN_DECADES = 1.0
# the fitted decay rate at least 90% of the linearised prediction for every component: the
# prediction min_{j<=k} rho_j is the asymptotic rate, a window that ends at the float64 floor can
# be faster (the component's own mode dominates until a predecessor's slower one takes over)
RATE_BAND = (0.9, None)
# log-linear decay: every component's fit of log error on rounds after warm-up has R^2 >= 0.95
# (a component whose own mode is faster than a predecessor's decays as a sum of two exponentials,
# which bends the log line a little)
MIN_R2 = 0.95
# final error against the planted triplet equal to the statistical floor within 1%
FLOOR_TOLERANCE = 0.01
# the paper's deployed-size reduction against fixed-rank LoRA; we count it reproduced when the
# interval of our reduction lies at or above half of it
PAPER_REDUCTION = 0.307
REDUCTION_BAND = (PAPER_REDUCTION / 2, 1.0)


def _mean_interval(values):
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if len(vals) < claims.MIN_REPLICATES:
        return (vals[0] if vals else float("nan")), None, f"fewer than {claims.MIN_REPLICATES} replicates"
    mean, lo, hi = claims.paired_t_interval(vals)
    return mean, (lo, hi), ""


def claim_rows(summary: dict, scale: str) -> list[dict]:
    mc, rows = summary["mechanism"], []
    few = "" if mc["seeds"] >= claims.MIN_REPLICATES else "fewer than 3 seeds"
    rows.append(claims.comparison(
        P, "self-correction: parallel deflation drives every component's error towards 0, while sequential deflation keeps the residual it froze",
        f"log10 of the largest final component error ||b_k a_k^T - s_k u_k v_k^T|| / s_k after {mc['rounds']} rounds (rank {mc['rank']}), lower is better",
        "adapad", mc["log10_final_adapad"], "sequential", mc["log10_final_sequential"], False, scale, "deflation_errors.png",
        paper_value="deflation errors converge to zero rather than persisting as fixed residuals", min_effect=MIN_DECADES,
        holds_fixed="each schedule's step size tuned on one tuning seed; the same rounds (one gradient step per active worker per round)"))
    mean, interval, reason = _mean_interval(mc["log10_final_adapad"])
    rows.append(claims.target(
        P, "AdaPaD's deflation errors converge to ~0 over rounds", "log10 of the largest final component error (AdaPaD)",
        "adapad", mean, (None, ZERO_DECADES), scale, "deflation_errors.png", interval=interval, n=mc["seeds"],
        paper_value="errors converge to zero", how="mean and 95% t interval over seeds", untested_reason=few or reason))
    mean, interval, reason = _mean_interval(mc["rate_ratio"])
    rows.append(claims.target(
        P, "every component's error decays exponentially after a warm-up period (rate)",
        "fitted rate of log error after warm-up / predicted min_{j<=k} -log(1 - eta (s_j - s_j+1)), smallest over components",
        "adapad", mean, RATE_BAND, scale, "decay.png", interval=interval, n=mc["seeds"],
        paper_value="exponential decay after warm-up", untested_reason=few or reason,
        how="least-squares slope of log error from the warm-up round (error <= threshold) to the float64 floor; per seed the smallest ratio over components, mean and 95% t interval over seeds"))
    rows.append(claims.target(
        P, "every component's error decays exponentially after a warm-up period (log-linearity)",
        "smallest R^2 of the log-linear fit over components and seeds", "adapad", mc["min_r2"], (MIN_R2, 1.0), scale,
        "decay.png", n=mc["seeds"], paper_value="exponential decay", untested_reason=few))
    rows.append(claims.comparison(
        P, "advance learning (private pre-training before activation) shortens each component's warm-up",
        f"rounds from activation to error <= threshold, components 2..r, advance {mc['advance']} vs 0 (activation every {mc['interval']} rounds), lower is better",
        "advance", mc["warmup_advance"], "no_advance", mc["warmup_no_advance"], False, scale, "advance.png",
        paper_value="advance learning before activation", holds_fixed="AdaPaD's tuned step size"))
    rows.append(claims.check(
        P, "the error against the planted matrix splits into a vanishing algorithmic term and an irreducible statistical floor",
        "largest |final error vs planted triplet - floor| / floor, floor = ||s_k u_k v_k^T - sigma_k u*_k v*_k^T|| / sigma_k",
        "adapad", mc["floor_gap"], FLOOR_TOLERANCE, scale, "decay.png", n=mc["seeds"], reference="SVD of the observed matrix",
        how="the algorithmic term goes to 0, so the planted-matrix error must reach the floor of the noisy observation",
        untested_reason=few))
    ft = summary["finetune"]
    margin, ref = ft["margin"], ft["reference"]
    acc = ft["accuracy"]
    for base, text in (("adalora", "adaptive-rank LoRA (AdaLoRA) at a matched budget"), (ref, f"fixed-rank LoRA (r = {ref.split('_r')[1]})")):
        if "adapad" not in acc or base not in acc:
            rows.append(claims.untested(P, f"AdaPaD is competitive with {text}", "test accuracy difference", "adapad",
                                        f"method '{base}' or 'adapad' not run", scale, "accuracy_size.png", kind="target"))
            continue
        mean, interval, reason = _mean_interval([a - b for a, b in zip(acc["adapad"], acc[base])])
        rows.append(claims.target(
            P, f"AdaPaD is competitive with {text}",
            f"test accuracy, AdaPaD - {base}, paired over tasks x seeds ({', '.join(ft['tasks'])})", "adapad", mean,
            (-margin, None), scale, "accuracy_size.png", interval=interval, n=ft["replicates"], baseline=base,
            baseline_value=claims.fmt(acc[base]), paper_value="competitive (GLUE, DeBERTaV3-base)" if base == "adalora" else "competitive (SQuAD, Qwen3-0.6B)",
            how=f"non-inferiority margin {margin:g}: mean paired difference and 95% t interval", untested_reason=reason))
    if "adapad" in ft["size"] and ref in ft["size"]:
        mean, interval, reason = _mean_interval(ft["size_reduction"])
        rows.append(claims.target(
            P, f"AdaPaD deploys a smaller adapter than fixed-rank LoRA (r = {ref.split('_r')[1]})",
            "1 - deployed parameters (AdaPaD) / deployed parameters (fixed-rank LoRA)", "adapad", mean, REDUCTION_BAND, scale,
            "accuracy_size.png", interval=interval, n=ft["replicates"], baseline=ref, baseline_value=claims.fmt(ft["size"][ref]),
            paper_value="30.7% smaller on average", how="mean and 95% t interval over tasks x seeds", untested_reason=reason))
    reason = ("needs DeBERTaV3-base fine-tuning on the GLUE sets on GPUs (config/paper.yaml names them); the default run "
              "uses the packaged MiniLM's last layer on generated tasks, and the harness's classifier reads BERT-style layers only")
    rows.append(claims.untested(P, "competitive with adaptive-rank baselines on GLUE with DeBERTaV3-base at matched budgets",
                                "GLUE scores (DeBERTaV3-base)", "adapad", reason, scale, kind="target", paper_value="competitive"))
    reason = ("needs Qwen3-0.6B fine-tuning on SQuAD / SQuAD v2 (extractive QA) on GPUs; the AdaPaD passes here are written for "
              "the classifier, not for a causal LM's token loss")
    rows.append(claims.untested(P, "competitive with fixed-rank LoRA on Qwen3-0.6B SQuAD / SQuAD v2 with a 30.7% smaller adapter",
                                "SQuAD EM / F1 and adapter size (Qwen3-0.6B)", "adapad", reason, scale, kind="target",
                                paper_value="competitive, 30.7% smaller"))
    return rows
