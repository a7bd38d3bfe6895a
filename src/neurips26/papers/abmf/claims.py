"""Claims rows of abmf from the per-seed measurements the figures step gathers.

`summary` = {"symmetric_tol": float, "objective_tol": float, "problems": {name: {
    "label": str, "reference": str, "ratios": [gamma / gamma*, ...],
    "asymmetry": [[||X - Y|| / ||X|| per ratio] per seed], "diverged": [[bool per ratio] per seed],
    "objective_gap": [[relative gap to the reference optimum per ratio] per seed],
    "sbmf_gap": [relative gap of sBMF from the same start, per seed],
    "critical": [[{"ratio": gamma / gamma*, "asymmetry": ||X - Y|| / max(1, size), "gradient_norm",
                   "size"} per point found] per seed],
    "second_order": [[{"ratio", "starts", "diverged", "points": [{"family", "gradient_norm",
                       "min_eigenvalue", "hessian_norm", "asymmetry", "size", "objective_gap"}]}
                      per searched ratio] per seed],
    "zero_ratio": [gamma_0 / gamma* per seed], "apriori_ratio": [a-priori bound / gamma* per seed],
    "kkt": [largest KKT residual of the reference per seed]}}}

Rows per problem (declared in `claims.yaml`, ids `<problem>_<row>`; decided by `core.claims.Sheet`):
- target (the claim): above gamma*, the share of certified second-order critical points (local
  minimisers from random, (u, -u) and S != 0 starts; gradient and Hessian certified) that are
  asymmetric, Clopper-Pearson, against [0, 0.05]; its regime row: the same share below gamma*
  against [0.05, 1] (the search finds asymmetric ones where they exist);
- check, three times: every critical point the search finds (gradient norm <= CRITICAL_TOL) is
  symmetric above gamma* = lambda_max(grad h(W*))/2, above max(gamma*, gamma_0) with
  gamma_0 = lambda_max(grad h(0))/2, and above the a-priori bound ||A||_2 ||b|| / 2 (untested
  where the bound does not exist, C != 0);
- check: the convex reference satisfies the KKT conditions (KKT_TOL);
- check: above gamma*, every aBMF run ends symmetric (||X - Y|| / ||X|| <= symmetric_tol);
- check: above gamma*, every aBMF run and sBMF from the same start reach the reference optimum
  (|relative objective gap| <= objective_tol);
- target: the empirical exactness threshold, per seed bracketed by the gamma grid (the largest
  ratio with an asymmetric or diverged run, and the next ratio above it), against the band
  around the derived gamma*; its interval is the wider of the t interval over the seeds' bracket
  midpoints and the hull of the seeds' brackets (the grid's resolution).
The wall time to the objective tolerance (aBMF against sBMF) is measured and plotted (cost.png,
summary.csv) but is no row: the abstract claims no speed.
"""

from __future__ import annotations

import math

from neurips26.core import claims

PAPER = "abmf"
# A point of the search is critical when ||grad F|| <= CRITICAL_TOL * max(1, size); the search
# ends at 1e-15 when it converges, the family points of L-BFGS at about 1e-8 before polishing.
CRITICAL_TOL = 1e-8
PROBLEMS = {"psd_approximation": "psd", "matrix_sensing": "sensing", "maxcut": "maxcut"}
# A local minimiser's end point is a certified second-order critical point when, besides the
# gradient test above, lambda_min(Hessian of F) >= -CURVATURE_TOL * max(1, ||Hessian||_2):
# round-off of the exact Hessian at a point whose gradient is ~1e-8 sits far below it, the
# negative curvature of a strict saddle far above it.
CURVATURE_TOL = 1e-6


def second_order_certified(c: dict) -> bool:
    return (c["gradient_norm"] <= CRITICAL_TOL * max(1.0, c["size"])
            and c["min_eigenvalue"] >= -CURVATURE_TOL * max(1.0, c["hessian_norm"]))


def second_order_counts(p: dict, above: bool, sym_tol: float, objective_tol: float) -> dict:
    """Over every seed's second-order search at gamma / gamma* > 1 (`above`) or < 1: starts,
    diverged starts, certified second-order critical points, the asymmetric ones among them
    (||X - Y|| / max(1, size) > sym_tol), and the certified ones at the reference optimum."""
    out = {"starts": 0, "diverged": 0, "certified": 0, "asymmetric": 0, "at_optimum": 0, "ratios": set()}
    for searches in p["second_order"]:
        for srch in searches:
            if (srch["ratio"] > 1) != above or srch["ratio"] == 1:
                continue
            out["ratios"].add(srch["ratio"])
            out["starts"] += srch["starts"]
            out["diverged"] += srch["diverged"]
            certified = [c for c in srch["points"] if second_order_certified(c)]
            out["certified"] += len(certified)
            out["asymmetric"] += sum(c["asymmetry"] > sym_tol for c in certified)
            out["at_optimum"] += sum(abs(c["objective_gap"]) <= objective_tol for c in certified)
    return out


def _second_order_rows(sheet: claims.Sheet, key: str, p: dict, sym_tol: float, objective_tol: float) -> None:
    """The abstract's claim read on second-order critical points: above gamma* the share of
    certified ones that are asymmetric, below it the same share (the regime: the search finds
    asymmetric ones where they exist); Clopper-Pearson intervals over the certified points."""
    for side, row in ((False, "socp_below"), (True, "socp_above")):
        c = second_order_counts(p, side, sym_tol, objective_tol)
        how = (f"{c['asymmetric']} of {c['certified']} certified second-order critical points asymmetric "
               f"(||X - Y|| / max(1, size) > {sym_tol:g}); {c['starts']} starts (random, (u, -u), S != 0) at "
               f"gamma / gamma* = {', '.join(f'{r:g}' for r in sorted(c['ratios']))} over {len(p['second_order'])} "
               f"seeds, {c['diverged']} diverged; certified: ||grad F|| <= {CRITICAL_TOL:g} max(1, size) and "
               f"lambda_min(Hessian) >= -{CURVATURE_TOL:g} max(1, ||Hessian||); {c['at_optimum']} of the certified "
               "points at the reference optimum")
        reason = "" if c["certified"] else (
            f"the search certified no second-order critical point {'above' if side else 'below'} gamma* "
            f"({c['diverged']} of {c['starts']} starts diverged: F is unbounded below there)")
        sheet.target(f"{key}_{row}", successes=c["asymmetric"], trials=c["certified"], how=how, untested=reason)


def _critical_above(p: dict, bound) -> tuple[float, int]:
    """(largest asymmetry, count) over the critical points found at gamma / gamma* > bound[seed]."""
    worst, count = 0.0, 0
    for s, points in enumerate(p["critical"]):
        for c in points:
            if c["ratio"] > bound[s] and c["gradient_norm"] <= CRITICAL_TOL * max(1.0, c["size"]):
                worst, count = max(worst, c["asymmetry"]), count + 1
    return worst, count


def _empirical_threshold(ratios: list[float], asymmetric: list[bool]) -> tuple[float, float]:
    """(largest ratio where some run ends asymmetric, next ratio of the grid); (0, smallest ratio)
    when every run is symmetric, (largest ratio, inf) when the largest is still asymmetric."""
    order = sorted(range(len(ratios)), key=lambda i: ratios[i])
    bad = [i for i in order if asymmetric[i]]
    if not bad:
        return 0.0, ratios[order[0]]
    pos = order.index(bad[-1])
    upper = ratios[order[pos + 1]] if pos + 1 < len(order) else float("inf")
    return ratios[bad[-1]], upper


def _threshold(ratios: list[float], asymmetric_by_seed: list[list[bool]]) -> tuple[float, tuple[float, float], str]:
    """Value and interval of the empirical threshold from one grid bracket per seed."""
    brackets = [_empirical_threshold(ratios, asym) for asym in asymmetric_by_seed]
    lows, highs = [b[0] for b in brackets], [b[1] for b in brackets]
    text = "; ".join(f"[{lo:g}, {hi:g}]" for lo, hi in brackets)
    if any(math.isinf(h) for h in highs):
        return max(lows), (min(lows), math.inf), text
    mids = [(lo + hi) / 2 for lo, hi in brackets]
    mean, t_lo, t_hi = claims.paired_t(mids)[:3] if len(mids) >= 2 else (mids[0], mids[0], mids[0])
    return mean, (min(t_lo, min(lows)), max(t_hi, max(highs))), text


def problem_rows(sheet: claims.Sheet, key: str, p: dict, sym_tol: float, objective_tol: float = 1e-6) -> None:
    ratios, seeds = p["ratios"], len(p["asymmetry"])
    above = [i for i, r in enumerate(ratios) if r > 1]
    runs_above = seeds * len(above)
    asym_above = max(p["asymmetry"][s][i] if not p["diverged"][s][i] else float("inf")
                     for s in range(seeds) for i in above)
    sheet.check(f"{key}_solver_symmetric", asym_above, n=runs_above,
                how=f"{seeds} seeds x ratios {', '.join(f'{ratios[i]:g}' for i in above)}")
    gap = max([abs(p["objective_gap"][s][i]) if not p["diverged"][s][i] else float("inf")
               for s in range(seeds) for i in above] + [abs(g) for g in p["sbmf_gap"]])
    sheet.check(f"{key}_objective", gap, n=runs_above + seeds, reference=p["reference"])
    crit_how = ("critical points from the family (u e1^T, -u e1^T) and from least squares on grad F "
                f"from random starts, ||grad F|| <= {CRITICAL_TOL:g} max(1, size); asymmetry "
                "||X - Y|| / max(1, size); 0 when none is asymmetric")
    for row, bound in (("critical_star", [1.0] * seeds),
                       ("critical_max", [max(1.0, z) for z in p["zero_ratio"]]),
                       ("critical_apriori", p["apriori_ratio"])):
        exists = all(b < float("inf") for b in bound)
        worst, count = _critical_above(p, bound) if exists else (0.0, 0)
        if count == 0:
            reason = ("the a-priori bound needs h without a linear term (C = 0); this problem has one" if not exists
                      else "the search found no critical point above this threshold within its budget")
            sheet.check(f"{key}_{row}", None, untested=reason)
        else:
            sheet.check(f"{key}_{row}", worst, n=count, how=crit_how)
    sheet.check(f"{key}_kkt", max(p["kkt"]), n=seeds, reference=p["reference"])
    if p.get("second_order") and any(p["second_order"]):
        _second_order_rows(sheet, key, p, sym_tol, objective_tol)
    else:
        for row in ("socp_below", "socp_above"):
            sheet.untested(f"{key}_{row}", "the run has no second-order search (config search.second_order)")
    asymmetric = [[p["diverged"][s][i] or p["asymmetry"][s][i] > sym_tol for i in range(len(ratios))]
                  for s in range(seeds)]
    if seeds < claims.MIN_REPLICATES:
        sheet.untested(f"{key}_threshold", f"fewer than {claims.MIN_REPLICATES} seeds")
        return
    value, interval, brackets = _threshold(ratios, asymmetric)
    sheet.target(f"{key}_threshold", value, interval=interval, n=seeds,
                 how=(f"per seed the grid's bracket (largest gamma/gamma* where the run ends with ||X - Y|| / ||X|| > "
                      f"{sym_tol:g} or diverges, next grid ratio): {brackets}; interval = the wider of the t interval "
                      "over the seeds' bracket midpoints and the hull of the brackets; value = the mean midpoint"))


def claim_rows(summary: dict, scale: str) -> list[dict]:
    sheet = claims.Sheet(PAPER, scale)
    sym_tol = summary["symmetric_tol"]
    unknown = set(summary["problems"]) - set(PROBLEMS)
    if unknown:
        raise ValueError(f"{PAPER}: problems without rows in claims.yaml: {', '.join(sorted(unknown))}")
    for name, key in PROBLEMS.items():
        p = summary["problems"].get(name)
        if p is None:
            sheet.untested_group(f"{key}_", f"the run leaves out the {name} problem")
            continue
        problem_rows(sheet, key, p, sym_tol, summary.get("objective_tol", 1e-6))
    return sheet.rows()
