"""Claims rows of adap from the figures step's summary (a plain dict):

    {variant: {"label": text, "success": "monotone" | "nonmonotone" | "lm", "holds_fixed": text,
               "optimum": "distribution-aware optimum" | "correctness oracle" (what cost is divided by),
               "cost_ratios": [...],
               "capped": {"fixed_n" | "difficulty": [tuning protocol's capped note per cost ratio, '' if none]},
               "items": {policy: [[[cost / optimum per test prompt] per cost ratio] per seed]}}}

The entries (claim, metric, band, margin, controls) are declared in `claims.yaml`; this module
computes their numbers and `core.claims.Sheet` decides them. Variants: `monotone` (ids `mono_*`),
`lm` and `lm_rm` (the two LM scores); the non-monotone instance enters only the construction check.
"""

from __future__ import annotations

import math

from neurips26.core import claims

from .method import constant_factor_bound

P = "adap"
POLICIES = {"adap": "ADAP (shellwise)", "fixed_n": "fixed best-of-n (n tuned)",
            "difficulty": "difficulty-adaptive best-of-n"}
PREFIX = {"monotone": "mono", "lm": "lm", "lm_rm": "lm_rm"}
BASES = {"fixed": "fixed_n", "difficulty": "difficulty"}
# The derived constant: E[cost of ADAP] <= C V* for every monotone prompt and cost ratio
# (method.constant_factor_bound; C ~ 98.2, the check's tolerance in claims.yaml).
BOUND, BOUND_LAMBDA = constant_factor_bound()


def _mean(xs):
    return sum(xs) / len(xs)


def _comparisons(sheet: claims.Sheet, prefix: str, m: dict | None) -> None:
    for bid, base in BASES.items():
        for end in ("low", "high"):
            id = f"{prefix}_vs_{bid}_{end}"
            if m is None:
                sheet.untested(id, "this variant was not run")
                continue
            ratios = m["cost_ratios"]
            j = 0 if end == "low" else len(ratios) - 1
            ours = [seed[j] for seed in m["items"]["adap"]]
            theirs = [seed[j] for seed in m["items"][base]]
            capped = (m.get("capped") or {}).get(base) or [""] * len(ratios)
            sheet.comparison(id, [_mean(x) for x in ours], [_mean(x) for x in theirs], method_items=ours,
                             baseline_items=theirs, baseline=POLICIES[base], baseline_capped=capped[j],
                             how=f"c_v/c_g = {ratios[j]:g}" + (f"; fixed: {m['holds_fixed']}" if m.get("holds_fixed") else ""))


def slopes(m: dict, policy: str) -> list[float]:
    """Per seed, the least-squares slope of log(mean cost / optimum) against log(c_v/c_g)."""
    x = [math.log(r) for r in m["cost_ratios"]]
    return claims.slopes_per_replicate(x, [[math.log(_mean(p)) for p in seed] for seed in m["items"][policy]])


def worst(m: dict, policy: str) -> float:
    """The largest cost / optimum over every test prompt, cost ratio and seed."""
    return max(max(prompts) for seed in m["items"][policy] for prompts in seed)


def claim_rows(summary: dict, scale: str) -> list[dict]:
    sheet = claims.Sheet(P, scale)
    by_success = {m["success"]: m for m in summary.values()}
    variants = {v: summary.get(v) for v in PREFIX}
    mono = variants["monotone"] or by_success.get("monotone")
    for v, prefix in PREFIX.items():
        _comparisons(sheet, prefix, mono if v == "monotone" else variants[v])

    if mono is None:
        for id in ("mono_within_bound", "mono_constant_factor", "fixed_constant_null"):
            sheet.untested(id, "the monotone instance was not run")
    else:
        ratios = mono["cost_ratios"]
        if len(set(ratios)) < 3:
            for id in ("mono_constant_factor", "fixed_constant_null"):
                sheet.untested(id, "fewer than 3 cost ratios")
        else:
            sheet.target("mono_constant_factor", values=slopes(mono, "adap"),
                         how=f"least-squares slope over {len(ratios)} cost ratios per seed, t interval over seeds")
            sheet.target("fixed_constant_null", values=slopes(mono, "fixed_n"),
                         how=f"least-squares slope over {len(ratios)} cost ratios per seed, t interval over seeds")
        per_seed = mono["items"]["adap"]
        worst_at = [max(max(seed[j]) for seed in per_seed) for j in range(len(ratios))]
        sheet.check("mono_within_bound", worst(mono, "adap"),
                    n=sum(len(seed[j]) for seed in per_seed for j in range(len(ratios))),
                    how=(f"a sanity check of the guarantee, not a reproduction: the baselines stay within it too "
                         f"(worst prompt: fixed best-of-n {worst(mono, 'fixed_n'):.3g}, difficulty-adaptive "
                         f"{worst(mono, 'difficulty'):.3g}); C = 8 lam (1 + 1/(1 - 4 exp(-lam/2))) = {BOUND:.1f} at "
                         f"lam = {BOUND_LAMBDA:.2f} (method.constant_factor_bound); ADAP's worst prompt per cost ratio "
                         + ", ".join(f"{r:g}: {w:.3g}" for r, w in zip(ratios, worst_at))
                         + "; each value a Monte Carlo mean over the runs of one test prompt"))

    non = by_success.get("nonmonotone")
    if mono is not None and non is not None:
        def worst_mean(m):
            return max(_mean([_mean(seed[j]) for seed in m["items"]["adap"]]) for j in range(len(m["cost_ratios"])))

        sheet.check("nonmonotone_construction", worst_mean(non) / worst_mean(mono), reference="monotone success",
                    how=("not a reproduction: the non-monotone instance is built so that the top-scored candidates "
                         "rarely pass, which is what defeats ranking by score"))
    else:
        sheet.untested("nonmonotone_construction", "the monotone or the non-monotone instance was not run")
    return sheet.rows()
