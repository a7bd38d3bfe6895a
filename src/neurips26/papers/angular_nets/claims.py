"""Claims rows of angular_nets, a pure function of the aggregated metrics (`steps.claims_summary`).

Accuracy comparisons pair the methods of one experiment by seed (same data, steps and optimiser)
and, when the runs saved which test examples each method got right, by test example: the
interval is the wider of the two-level paired bootstrap over seeds x test examples and the
paired t over seeds (`core.claims.comparison`). The 1-bit angular layer binarises its
activations after a full-precision projection G x, so its 1-bit rows are labelled so and it
meets two kinds of STE baseline: BNN / XNOR-Net (sign of the raw input) and `angular_ste`
(straight-through sign of the same projections). The planted-model claim ("a small
G-gradient guarantees exact recovery") is a check: every trial under the recovery condition
(G-gradient norm below its threshold, `planted.recovery_threshold`) must recover w*.
"""

from __future__ import annotations

from neurips26.core import claims

P = "angular_nets"
# One percentage point of test accuracy: below that a gain is within what a different seed or
# test draw moves (a 1000-example test set has a binomial standard error of about 1.5 points).
MIN_ACCURACY_GAIN = 0.01
STE_BINARY = ("bnn", "xnor")


def _mean(xs):
    return sum(xs) / len(xs)


def _compare(claim: str, metric: str, exp: dict, method: str, mvals: dict, baseline: str, bvals: dict,
             scale: str, figure: str) -> dict:
    items = mvals["correct"] is not None and bvals["correct"] is not None
    fixed = f"the {exp['data']} train and test sets" if exp["data_fixed"] else ""
    return claims.comparison(P, claim, metric, method, mvals["accuracy"], baseline, bvals["accuracy"], True,
                             scale, figure, min_effect=MIN_ACCURACY_GAIN,
                             method_items=mvals["correct"] if items else None,
                             baseline_items=bvals["correct"] if items else None, holds_fixed=fixed)


def claim_rows(summary: dict, scale: str) -> list[dict]:
    rows = []
    for e, exp in summary["experiments"].items():
        methods = exp["methods"]

        def at_bits(families, bits):
            return [n for n, m in methods.items() if m["family"] in families
                    and m["weight_bits"] == bits and m["activation_bits"] == bits]

        ang1, binaries = at_bits(("angular",), 1), at_bits(STE_BINARY, 1)
        if ang1 and binaries:
            best = max(binaries, key=lambda n: _mean(methods[n]["accuracy"]))
            rows.append(_compare(f"1-bit angular layers (A1 after an fp projection) beat the strongest 1-bit "
                                 f"STE baseline on raw signs ({e})",
                                 "test accuracy at W1/A1, higher is better", exp, ang1[0], methods[ang1[0]],
                                 best, methods[best], scale, "accuracy_vs_bits.png"))
        matched = at_bits(("angular_ste",), 1)
        if ang1 and matched:
            rows.append(_compare(f"the G-Gradient beats a straight-through sign on the same projected 1-bit "
                                 f"features ({e})", "test accuracy at W1/A1 (A1 after an fp projection), higher is better",
                                 exp, ang1[0], methods[ang1[0]], matched[0], methods[matched[0]], scale,
                                 "accuracy_vs_bits.png"))
        ang2, lsq2 = at_bits(("angular",), 2), at_bits(("lsq",), 2)
        if ang2 and lsq2:
            rows.append(_compare(f"2-bit angular nets beat LSQ at 2 bits ({e})", "test accuracy at W2/A2, higher is better",
                                 exp, ang2[0], methods[ang2[0]], lsq2[0], methods[lsq2[0]], scale,
                                 "accuracy_vs_bits.png"))
        nus = list(exp["nu_study"])
        if len(nus) >= 2:
            lo, hi = min(nus, key=float), max(nus, key=float)
            rows.append(_compare(f"more random features (larger nu) improve 1-bit angular nets ({e})",
                                 "test accuracy of the 1-bit angular net, higher is better", exp, f"nu={hi}",
                                 exp["nu_study"][hi], f"nu={lo}", exp["nu_study"][lo], scale, "accuracy_vs_nu.png"))
    rows.append(planted_row(summary["planted"], scale))
    return rows


def planted_row(planted: dict, scale: str) -> dict:
    """Check: misses among the trials under the recovery condition, which must be 0."""
    margin = planted["condition_margin"]
    under = [t for t in planted["trials"] if t["g_gradient_norm"] < t["threshold"]]
    claim = "a small G-gradient guarantees exact recovery of the planted binary target"
    metric = (f"trials under the condition (final G-gradient norm < {margin:g} lambda_min(H*) / sqrt(d)) "
              "that miss w* (sign(w) != w* somewhere)")
    misses = sum(not t["recovered"] for t in under)
    reason = "" if under else "no trial ended under the recovery condition"
    return claims.check(P, claim, metric, "G-gradient training, 1-bit planted model",
                        float(misses) if under else float("nan"), 0.0, scale, "planted_recovery.png",
                        reference="exact recovery (0 misses)", n=len(under),
                        how=f"{misses} of {len(under)} trials under the condition miss w*", untested_reason=reason)
