"""Claims rows of threshold_mcts from the figures step's summary (a plain dict):

    {"variants": {variant: {"deltas": [...], "runs": runs per seed and delta,
                            "t_star": [per seed], "lp_gap": [per seed],
                            "rules": {rule: {"errors": [[per delta] per seed],
                                             "mean_samples": [[per delta] per seed]}},
                            "asymptotics": {"deltas": [...], "runs": [per delta], "slope_max_delta": d,
                                            "practical": {"errors": ..., "mean_samples": ...},
                                            "union": {...} (optional)}}},
     "timing": {"seconds": {"wide"|"deep": {rule: {leaves: [per repeat]}}}, "walk_matches": {tree: share}}}

The rows, their margins, bands and controls are declared in `claims.yaml`; this module computes
their numbers and `core.claims.Sheet` decides them. Slopes are fitted per replicate (per instance
for the asymptotic slope, per timing repeat for the round cost) and passed as values: the t
interval is over replicates, not over the points of one fit. The wide-tree round-cost slope has a null
control, the linear scan over the children timed on the same trees: where it passes the same band
the slope does not separate the tournament tree from a linear scan, and the row reads untested. On
deep trees of fixed branching the scan is logarithmic in #leaves too, so that slope is a check.
"""

from __future__ import annotations

import math

from neurips26.core import claims

P = "threshold_mcts"
NAMES = {"ratio": "TaS, ratio tracking (per-node forcing)", "ratio_global": "TaS, ratio tracking (global forcing)",
         "dtracking": "TaS, D-tracking", "uniform": "uniform + GLR stop", "lucb": "LUCB-MCTS (K in log)",
         "lucb_matched": "LUCB-MCTS (matched, no K)"}
VARIANTS = ("gaussian", "bernoulli")
# delta-correctness rows are declared for the union of the scales' asymptotic delta grids (1e-K)
DELTA_EXPONENTS = (1, 2, 3, 4, 5, 7, 9)
PAIRS = (("ratio", "dtracking"), ("ratio", "uniform"), ("ratio", "lucb"), ("ratio", "lucb_matched"),
         ("ratio_global", "dtracking"))


def delta_id(v: str, delta: float) -> str:
    k = round(-math.log10(delta))
    if k not in DELTA_EXPONENTS or not math.isclose(delta, 10.0 ** -k, rel_tol=1e-9):
        raise ValueError(f"{P}: delta {delta:g} has no row in claims.yaml (declared: 1e-K for K in {DELTA_EXPONENTS})")
    return f"{v}_correct_1em{k}"


def pair_id(v: str, rule: str, base: str) -> str:
    return f"{v}_{'samples' if rule == 'ratio' else 'global_samples'}_vs_{base}"


def _per_seed(rule_stats: dict, key: str, di: int) -> list[float]:
    return [seed_values[di] for seed_values in rule_stats[key]]


def variant_rows(sheet: claims.Sheet, v: str, m: dict) -> None:
    deltas, rules, t_star, asym = m["deltas"], m["rules"], m["t_star"], m["asymptotics"]
    last = len(deltas) - 1
    measured = set()
    for di, delta in enumerate(asym["deltas"]):
        errors = _per_seed(asym["practical"], "errors", di)
        rid = delta_id(v, delta)
        measured.add(rid)
        sheet.target(rid, successes=int(sum(errors)), trials=asym["runs"][di] * len(errors),
                     how=f"{int(sum(errors))} wrong answers in {asym['runs'][di]} runs x {len(errors)} instances")
    for k in DELTA_EXPONENTS:
        if f"{v}_correct_1em{k}" not in measured:
            sheet.untested(f"{v}_correct_1em{k}", f"delta = 1e-{k} is not in this scale's delta grid")

    def normalised(rule, di):
        # samples / (T* log(1/delta)): comparable across instances with different T*
        return [s / (t * math.log(1 / deltas[di])) for s, t in zip(_per_seed(rules[rule], "mean_samples", di), t_star)]

    for rule, base in PAIRS:
        rid = pair_id(v, rule, base)
        if rule not in rules or base not in rules:
            sheet.untested(rid, f"the run leaves out {rule if rule not in rules else base}")
            continue
        sheet.comparison(rid, normalised(rule, last), normalised(base, last), paired=True,
                         how=f"delta = {deltas[last]:g}, paired over {len(t_star)} instances")

    x = [math.log(1 / d) for d in asym["deltas"] if d <= asym["slope_max_delta"]]
    idx = [i for i, d in enumerate(asym["deltas"]) if d <= asym["slope_max_delta"]]
    if len(x) >= 3:
        ys = [[asym["practical"]["mean_samples"][si][i] / t for i in idx] for si, t in enumerate(t_star)]
        sheet.target(f"{v}_asymptotic_slope", values=claims.slopes_per_replicate(x, ys),
                     how=(f"one least-squares slope per instance over {len(x)} deltas <= {asym['slope_max_delta']:g} "
                          f"(down to {min(asym['deltas']):g}), practical threshold"))
    else:
        sheet.untested(f"{v}_asymptotic_slope", "fewer than 3 deltas in the asymptotics fit: no slope against log(1/delta)")
    sheet.check(f"{v}_lp_check", max(m["lp_gap"]), n=len(m["lp_gap"]))


def _slopes(per_k: dict) -> list[float] | None:
    """One log-log slope of seconds per round against #leaves per timing repeat (None: < 3 sizes)."""
    ks = sorted(per_k, key=int)
    if len(ks) < 3:
        return None
    repeats = min(len(per_k[k]) for k in ks)
    x = [math.log(int(k)) for k in ks]
    return claims.slopes_per_replicate(x, [[math.log(per_k[k][r]) for k in ks] for r in range(repeats)])


def timing_rows(sheet: claims.Sheet, t: dict) -> None:
    secs = t["seconds"]
    wide = secs["wide"]
    if wide.get("ratio") and wide.get("dtracking"):
        kmax = str(max(int(k) for k in wide["ratio"]))
        sheet.comparison("round_cost_vs_dtracking", wide["ratio"][kmax], wide["dtracking"][kmax], paired=False,
                         how=f"{kmax} leaves; the tree, its leaf means and the machine held fixed")
    else:
        sheet.untested("round_cost_vs_dtracking", "the run times ratio tracking or D-tracking on no depth-1 tree")
    per_k = secs.get("wide", {})
    for rid, rule in (("log_cost_wide", "ratio"), ("log_cost_wide_null", "ratio_scan")):
        slopes = _slopes(per_k.get(rule, {}))
        if slopes is None:
            sheet.untested(rid, f"fewer than 3 wide tree sizes timed for {rule}")
            continue
        sheet.target(rid, values=slopes, how=(f"depth-1 trees, {', '.join(sorted(per_k[rule], key=int))} leaves; one "
                                              "least-squares slope per timing repeat"))
    # deep trees of fixed branching: a linear scan is logarithmic there too, so the slope is a check
    deep = secs.get("deep", {}).get("ratio", {})
    slopes = _slopes(deep)
    if slopes is None:
        sheet.check("log_cost_deep", None, untested="fewer than 3 deep tree sizes timed for ratio")
    else:
        sheet.check("log_cost_deep", max(slopes), n=len(slopes),
                    how=f"complete trees of growing depth, {', '.join(sorted(deep, key=int))} leaves; the largest "
                        "per-repeat slope")
    shares = t["walk_matches"]
    sheet.check("walk_matches_scan", min(shares.values()), n=len(shares))


def claim_rows(summary: dict, scale: str) -> list[dict]:
    sheet = claims.Sheet(P, scale)
    for v in VARIANTS:
        m = summary["variants"].get(v)
        if m is None:
            sheet.untested_group(f"{v}_", f"the run leaves out the {v} variant")
            continue
        variant_rows(sheet, v, m)
    unknown = set(summary["variants"]) - set(VARIANTS)
    if unknown:
        raise ValueError(f"{P}: variants without rows in claims.yaml: {', '.join(sorted(unknown))}")
    timing_rows(sheet, summary["timing"])
    return sheet.rows()
