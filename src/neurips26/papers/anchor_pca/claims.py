"""Claims rows of anchor_pca from the per-seed measurements the figures step gathers.

`summary` = {"claim_gamma": float, "experiments": {name: {
    "label": str, "holds_fixed": str ("" when a seed redraws everything),
    "unreplicated": str (why the seeds are not replicates, "" when they are),
    "anchor" / "pooled" / "maximin": {"mean_share": [per seed], "worst_share": [per seed],
        "shares": [[explained-variance share per unseen domain] per seed],
        "angle_deg": [per seed] (only where a planted subspace exists)}}}}
Anchor PCA is taken at claim_gamma (fixed in the config, not tuned on unseen domains).
"""

from __future__ import annotations

import numpy as np

from neurips26.core import claims

PAPER = "anchor_pca"
BASELINES = ("pooled", "maximin")
LABELS = {"pooled": "pooled PCA", "maximin": "maximin PCA"}
# Recovery: largest principal angle to the planted invariant subspace at most this (cos 10 deg = 0.985).
ANGLE_TOLERANCE_DEG = 10.0
# One point of explained-variance share on unseen domains.
SHARE_MIN_EFFECT = 0.01


def claim_rows(summary: dict, scale: str) -> list[dict]:
    gamma = summary["claim_gamma"]
    method = f"Anchor PCA (gamma={gamma:g})"
    rows = []
    for e in summary["experiments"].values():
        label, anchor, fixed = e["label"], e["anchor"], e["holds_fixed"]
        if "angle_deg" in anchor:
            angles = anchor["angle_deg"]
            if len(angles) >= 2:
                value, lo, hi = claims.paired_t_interval(angles)
                interval = (lo, hi)
            else:
                value, interval = float(angles[0]), None
            rows.append(claims.target(
                PAPER, f"{label}: Anchor PCA recovers the planted (maximal invariant) subspace",
                "largest principal angle to the planted subspace (deg)", method, value,
                (0.0, ANGLE_TOLERANCE_DEG), scale, "principal_angles.png", interval=interval, n=len(angles),
                baseline="pooled PCA", baseline_value=claims.fmt(e["pooled"]["angle_deg"]),
                how=f"mean and t interval over {len(angles)} seeds", untested_reason=e["unreplicated"]))
        for key, what in (("mean_share", "mean"), ("worst_share", "worst-case")):
            strongest = max(BASELINES, key=lambda b: float(np.mean(e[b][key])))
            # the mean share is a mean over unseen domains: paired bootstrap over seeds x domains
            items = ({"method_items": anchor["shares"], "baseline_items": e[strongest]["shares"]}
                     if key == "mean_share" else {})
            rows.append(claims.comparison(
                PAPER, f"{label}: Anchor PCA explains more variance on unseen domains than pooled and "
                f"maximin PCA ({what})", f"{what} explained-variance share over unseen domains",
                method, anchor[key], f"{LABELS[strongest]} (strongest baseline)", e[strongest][key],
                higher_is_better=True, scale=scale, figure="unseen_variance.png", min_effect=SHARE_MIN_EFFECT,
                holds_fixed=fixed, untested_reason=e["unreplicated"], **items))
    return rows
