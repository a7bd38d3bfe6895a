"""Claims rows of sparse_halfspace from the evaluate step's metrics.

`summary` = the evaluate step's metrics.json (dims, sample_sizes, noise_rates, "error"
[method][d][n] -> per-seed clean errors, "noise_sweep_error" [method][eta] -> per-seed errors,
"error_growth_smallest_to_largest_d" [method] -> per-seed ratios, noise_sweep_d/n) plus
"noise_rate", the grid's malicious rate. Every comparison is paired over seeds: a seed draws w*,
the clean sample and the malicious points, and every method sees the same sample.
"""

from __future__ import annotations

import numpy as np

from neurips26.core import claims

PAPER = "sparse_halfspace"
METHOD = "ours"
BASELINES = ("filter_dense", "l1_svm", "svm", "averaging")
LABELS = {"ours": "ours (sparse filter + constrained hinge)", "filter_dense": "filter without sparsity",
          "l1_svm": "l1-SVM", "svm": "SVM", "averaging": "averaging"}
# One point of clean error angle(w, w*)/pi: below that a gain is not worth claiming.
ERROR_MIN_EFFECT = 0.01
# Growth factor of the error from the smallest to the largest d: a quarter of "no growth" (1).
GROWTH_MIN_EFFECT = 0.25


def _strongest(values: dict[str, list[float]]) -> str:
    return min(BASELINES, key=lambda b: float(np.mean(values[b])))


def claim_rows(summary: dict, scale: str) -> list[dict]:
    dims, sizes, err = summary["dims"], summary["sample_sizes"], summary["error"]
    eta = summary["noise_rate"]
    d_top, n_top = str(dims[-1]), str(sizes[-1])
    top = {m: err[m][d_top][n_top] for m in (METHOD, *BASELINES)}
    strongest = _strongest(top)
    rows = [
        claims.comparison(
            PAPER, "learns an s-sparse halfspace under a constant rate of malicious noise better than the baselines",
            f"clean error angle(w, w*)/pi at d={d_top}, n={n_top}, eta={eta:g}", LABELS[METHOD], top[METHOD],
            f"{LABELS[strongest]} (strongest baseline)", top[strongest], higher_is_better=False, scale=scale,
            figure="error_vs_n.png", min_effect=ERROR_MIN_EFFECT),
        claims.comparison(
            PAPER, "the sparsity constraint is what makes the filter work in high dimension",
            f"clean error at d={d_top}, n={n_top}, eta={eta:g}", LABELS[METHOD], top[METHOD],
            LABELS["filter_dense"], top["filter_dense"], higher_is_better=False, scale=scale,
            figure="error_vs_n.png", min_effect=ERROR_MIN_EFFECT),
    ]
    growth = summary["error_growth_smallest_to_largest_d"]
    rows.append(claims.comparison(
        PAPER, "attribute efficiency: the error grows with d far less than without the sparsity constraint",
        f"error at d={d_top} / error at d={dims[0]} (n={n_top}, eta={eta:g})", LABELS[METHOD], growth[METHOD],
        LABELS["filter_dense"], growth["filter_dense"], higher_is_better=False, scale=scale,
        figure="error_vs_d.png", min_effect=GROWTH_MIN_EFFECT, paper_value="O(s^2 log^5 d) samples"))
    rates = summary["noise_rates"]
    if rates:
        r_top = str(rates[-1])
        sweep = {m: summary["noise_sweep_error"][m][r_top] for m in (METHOD, *BASELINES)}
        strongest = _strongest(sweep)
        rows.append(claims.comparison(
            PAPER, "robust to a constant rate of malicious noise: better than the baselines at the largest rate",
            f"clean error at eta={r_top} (d={summary['noise_sweep_d']}, n={summary['noise_sweep_n']})",
            LABELS[METHOD], sweep[METHOD], f"{LABELS[strongest]} (strongest baseline)", sweep[strongest],
            higher_is_better=False, scale=scale, figure="error_vs_noise.png", min_effect=ERROR_MIN_EFFECT))
    rows.append(claims.untested(
        PAPER, "O(s^2 log^5 d) samples suffice, and an information-theoretic lower bound nearly matches",
        "sample complexity against s and d", LABELS[METHOD],
        "a rate and a lower bound are not measurable on this grid: over d = 64..1024 a log^5 d factor is "
        "indistinguishable from d^0.9, s is fixed, and the adversary is one strategy, not the worst case",
        scale, "error_vs_d.png", kind="target", paper_value="O(s^2 log^5 d)"))
    return rows
