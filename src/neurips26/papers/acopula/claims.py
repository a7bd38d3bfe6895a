"""Claims rows of acopula from the figures step's summary (a plain dict):

    {"speed": {"d_ref", "speedup_r", "speedup", "slope_range": [lo, hi], "scaling_rows",
               "ref_repeats": {"ours" | "nacll" | "nacll_r": [seconds per density, per repeat] at d_ref}
                              (values None in a timing.json written before they were kept),
               "ours_repeats": {d: [seconds per density, per repeat]} (same rows at every d),
               "max_diff_nacll", "max_diff_naive",
               "precision": {"d", "rows", "digits", "max_abs_diff"} (against mpmath, unequal thetas),
               "grad_max_rel_diff", "grad_ours": {d: s}, "grad_naive": {d: s}},
     "simulate": {"censored_mle" | "ignore_censoring" | "flat_censored_mle": [tau MAE per seed]},
     "stocks": {"d", "families", "parts": [{"<family>_nested" | "<family>_flat": AIC} per part]},
     "survival": {"families", "full_aic": {family: AIC on all subjects}, "parts": [{family: AIC} per part],
                  "best_family", "best_loglik", "data": text,
                  "neural_components", "neural_loglik" (None without the neural fit)}}

The rows, margins and bands are declared in `claims.yaml`; this module computes their numbers
and `core.claims.Sheet` decides them. Speedups are replicated over timing repeats (the i-th
repeat of the port over the i-th of ours, on the log scale); the scaling slope is fitted once per
timing repeat and the t interval taken over those slopes. The gradient speedup has one naive
timing, so it has no replicated interval and is at most inconclusive.
"""

from __future__ import annotations

import math

from neurips26.core import claims

P = "acopula"
FAMILIES = ("clayton", "gumbel")


def _speedups(ports: list[float] | None, ours: list[float] | None) -> list[float] | None:
    if not ports or not ours or len(ports) != len(ours):
        return None
    return [a / b for a, b in zip(ports, ours)]


def speed_rows(sheet: claims.Sheet, s: dict) -> None:
    d_ref = s["d_ref"]
    rep = s.get("ref_repeats") or {}
    for id, port, best in (("speedup_r", "nacll_r", s["speedup_r"]), ("speedup_vectorised", "nacll", s["speedup"])):
        values = _speedups(rep.get(port), rep.get("ours"))
        how = f"d = {d_ref}, two-level nested Clayton, seconds per density; best-of-repeats ratio {best:.3g}"
        if values is None:
            sheet.target(id, best, how=how + "; per-repeat times not kept: no replicated interval")
        else:
            sheet.target(id, values=values, how=how)
    lo_d, hi_d = s["slope_range"]
    dims = sorted(int(d) for d in s["ours_repeats"] if lo_d <= int(d) <= hi_d)
    if len(dims) < 3:
        sheet.untested("slope_quadratic", f"fewer than 3 dimensions timed in d={lo_d}..{hi_d}")
    else:
        repeats = min(len(s["ours_repeats"][str(d)]) for d in dims)
        ys = [[math.log(s["ours_repeats"][str(d)][r]) for d in dims] for r in range(repeats)]
        sheet.target("slope_quadratic", values=claims.slopes_per_replicate([math.log(d) for d in dims], ys),
                     how=(f"d = {', '.join(map(str, dims))}, {s.get('scaling_rows', '?')} rows at every d; one "
                          "least-squares slope per timing repeat"))
    sheet.check("exact_likelihood", max(s["max_diff_nacll"], s["max_diff_naive"]))
    pr = s.get("precision")
    if pr:
        sheet.check("precision", pr["max_abs_diff"], n=pr["rows"],
                    how=(f"d = {pr['d']}, {pr['rows']} random points against {pr['digits']}-digit arithmetic; "
                         "float64 ports of the same sum lose every digit at this d"))
    else:
        sheet.check("precision", None, untested="the run has no high-precision check")
    if s.get("grad_naive"):
        sheet.check("gradient_exact", s["grad_max_rel_diff"],
                    how="d = " + ",".join(sorted(s["grad_naive"], key=int))
                    + "; gradient of the summed log-likelihood in the root and every sector theta")
        d_g = max(s["grad_naive"], key=int)
        sheet.target("gradient_speedup", s["grad_naive"][d_g] / s["grad_ours"][d_g],
                     how=(f"d = {d_g}, best-of-repeats seconds per density of value + gradient, the naive one timed once; "
                          "ours at larger d: " + ", ".join(f"d={d}: {t:.2e} s" for d, t in
                                                           sorted(s["grad_ours"].items(), key=lambda kv: int(kv[0])))))
    else:
        sheet.check("gradient_exact", None, untested="the run times no naive gradient")
        sheet.untested("gradient_speedup", "the run times no naive gradient")


def simulate_rows(sheet: claims.Sheet, mae: dict) -> None:
    sheet.comparison("tau_censoring", mae["censored_mle"], mae["ignore_censoring"])
    sheet.comparison("tau_nested", mae["censored_mle"], mae["flat_censored_mle"])


def stock_rows(sheet: claims.Sheet, st: dict) -> None:
    parts = st["parts"]
    for family in FAMILIES:
        if family not in st["families"]:
            sheet.untested(f"stocks_{family}", f"the run fits no {family} copula to the stocks")
            continue
        sheet.comparison(f"stocks_{family}", [p[f"{family}_nested"] for p in parts],
                         [p[f"{family}_flat"] for p in parts],
                         how=f"d = {st['d']}; one data set (SMI daily returns), split into {len(parts)} blocks of days")
    unknown = set(st["families"]) - set(FAMILIES)
    if unknown:
        raise ValueError(f"{P}: stock families without rows in claims.yaml: {', '.join(sorted(unknown))}")


def family_choices(sv: dict) -> list[tuple[str, dict[str, float]]]:
    """Per part of the subjects, the family chosen on the other parts (the smallest AIC summed over
    them) among the families other than Clayton whose fit on all subjects is finite, with every
    candidate's summed AIC: the part's own AIC is read only after the choice. [] when there is no
    candidate."""
    parts = sv["parts"]
    # a family whose fit on all subjects fails (log-likelihood -inf, infinite AIC) is a failed fit, no candidate
    others = [f for f in sv["families"] if f != "clayton" and math.isfinite(sv["full_aic"][f])]
    if not others:
        return []
    out = []
    for k in range(len(parts)):
        scores = {f: sum(p[f] for j, p in enumerate(parts) if j != k) for f in others}
        out.append((min(others, key=lambda f: scores[f]), scores))
    return out


def survival_rows(sheet: claims.Sheet, sv: dict) -> None:
    parts, families = sv["parts"], sv["families"]
    others = [f for f in families if f != "clayton" and math.isfinite(sv["full_aic"][f])]
    failed = [f for f in families if not math.isfinite(sv["full_aic"][f])]
    if "clayton" not in families or not others:
        sheet.untested("survival_family", "Clayton and another family that fits are needed")
    else:
        chosen = [family for family, _ in family_choices(sv)]
        sheet.comparison(
            "survival_family", [p[f] for p, f in zip(parts, chosen)], [p["clayton"] for p in parts],
            method=f"family chosen on the other parts, Clayton excluded ({'/'.join(chosen)})",
            how=(f"the best of the {len([f for f in families if f != 'clayton'])} other families; one data set "
                 f"({sv.get('data') or 'the survival data'}), split into {len(parts)} random parts of subjects; each "
                 "part's family is the best by AIC on the other parts among the families whose fit on all subjects "
                 "is finite" + (f"; failed fits (log-likelihood -inf): {', '.join(failed)}" if failed else "")))
    if sv.get("neural_loglik") is not None:
        sheet.check("neural", sv["best_loglik"] - sv["neural_loglik"],
                    reference=f"best classical family ({sv['best_family']})",
                    how=(f"K = {sv['neural_components']} components; one fit on all subjects; the paper claims the fit, "
                         "not a better one"))
    else:
        sheet.check("neural", None, untested="the run fits no neural generator")


def claim_rows(summary: dict, scale: str) -> list[dict]:
    sheet = claims.Sheet(P, scale)
    speed_rows(sheet, summary["speed"])
    simulate_rows(sheet, summary["simulate"])
    stock_rows(sheet, summary["stocks"])
    survival_rows(sheet, summary["survival"])
    return sheet.rows()
