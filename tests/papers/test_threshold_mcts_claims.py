"""threshold_mcts claims rows: each says `no` (`fail`) on metrics where its claim is false and
`yes` (`pass`) where it holds."""

import math

import pytest

from neurips26.papers.threshold_mcts.claims import NAMES, claim_rows

DELTAS = [0.1, 0.01, 0.001]
ASYM_DELTAS = [0.1, 0.01, 0.001, 1e-5, 1e-7, 1e-9]
T_STAR = [12.0, 13.0, 14.0]
KS = ["10", "100", "1000", "10000"]


def samples(slope, intercept, deltas=DELTAS, wobble=(0.0, 0.3, -0.2)):
    """Mean stopping times T* (slope log(1/delta) + intercept + wobble): one list per instance."""
    return [[t * (slope * math.log(1 / d) + intercept + w) for d in deltas] for t, w in zip(T_STAR, wobble)]


def summary(ratio=(1.0, 2.0), ratio_global=(1.0, 2.5), dtracking=(1.0, 6.0), uniform=(4.0, 6.0), lucb=(1.0, 5.0),
            lucb_matched=(1.0, 4.0), asym=(1.02, 3.0), errors=0, asym_runs=(400, 400, 1250, 60, 60, 60),
            lp_gap=1e-15, ratio_seconds=None, deep_seconds=None, dtracking_seconds=None, walk=1.0):
    rules = {name: {"errors": [[errors] * len(DELTAS) for _ in T_STAR], "mean_samples": samples(*params)}
             for name, params in (("ratio", ratio), ("ratio_global", ratio_global), ("dtracking", dtracking),
                                  ("uniform", uniform), ("lucb", lucb), ("lucb_matched", lucb_matched))}
    asymptotics = {"deltas": ASYM_DELTAS, "runs": list(asym_runs), "slope_max_delta": 0.001,
                   "practical": {"errors": [[errors] * len(ASYM_DELTAS) for _ in T_STAR],
                                 "mean_samples": samples(*asym, deltas=ASYM_DELTAS)}}
    log_cost = {k: [1e-6 * (3 + math.log(int(k))) * f for f in (1.0, 1.05, 0.97)] for k in KS}
    linear_cost = {k: [1e-7 * int(k) * f for f in (1.0, 1.05, 0.97)] for k in KS}
    return {"variants": {"gaussian": {"deltas": DELTAS, "runs": 50, "t_star": T_STAR,
                                      "lp_gap": [lp_gap] * 3, "rules": rules, "asymptotics": asymptotics}},
            "timing": {"seconds": {"wide": {"ratio": ratio_seconds or log_cost, "dtracking": dtracking_seconds or linear_cost},
                                   "deep": {"ratio": deep_seconds or log_cost, "dtracking": linear_cost}},
                       "walk_matches": {k: walk for k in KS}}}


def verdict(rows, text):
    hits = [r for r in rows if text in r["claim"]]
    assert len(hits) == 1, text
    return hits[0]["reproduced"]


def test_delta_correct_uses_the_clopper_pearson_bound():
    # 0 errors in 1200 / 3750 pooled runs: upper bounds 0.0031 and 0.00098, below 0.01 and 0.001;
    # 180 runs cannot show anything below 0.02
    rows = claim_rows(summary(), "default")
    assert [verdict(rows, f"delta-correct at delta={d:g}") for d in ASYM_DELTAS] == \
        ["yes", "yes", "yes", "inconclusive", "inconclusive", "inconclusive"]
    # 1250 runs per instance are needed at 0.001: 1000 are not enough
    rows = claim_rows(summary(asym_runs=(400, 400, 1000, 60, 60, 60)), "default")
    assert verdict(rows, "delta-correct at delta=0.001") == "inconclusive"
    # 60 errors per instance and delta: 15% of 400 runs or more, above every delta
    rows = claim_rows(summary(errors=60), "default")
    assert [verdict(rows, f"delta-correct at delta={d:g}") for d in ASYM_DELTAS] == ["no"] * 6


@pytest.mark.parametrize("base", ["dtracking", "uniform", "lucb", "lucb_matched"])
def test_fewer_samples_than_each_baseline(base):
    text = f"{NAMES['ratio']} needs fewer samples than {NAMES[base]}"
    assert verdict(claim_rows(summary(), "default"), text) == "yes"
    assert verdict(claim_rows(summary(ratio=(4.0, 8.0)), "default"), text) == "no"


def test_global_forcing_variant_against_d_tracking():
    text = f"{NAMES['ratio_global']} needs fewer samples than {NAMES['dtracking']}"
    assert verdict(claim_rows(summary(), "default"), text) == "yes"
    assert verdict(claim_rows(summary(ratio_global=(1.0, 7.0)), "default"), text) == "no"


def test_a_small_gain_over_d_tracking_is_not_substantial():
    # 3% fewer samples, consistently: below the 10% that "substantial" asks
    close = summary(ratio=(1.0, 5.6), dtracking=(1.0, 6.0))
    rows = claim_rows(close, "default")
    assert verdict(rows, f"{NAMES['ratio']} needs fewer samples than {NAMES['dtracking']}") == "inconclusive"


def test_asymptotic_optimality_is_the_slope_against_t_star():
    assert verdict(claim_rows(summary(asym=(1.02, 3.0)), "default"), "asymptotically optimal") == "yes"
    # uniform sampling's numbers: slope T_uniform / T* = 4 while its ratio still falls with delta
    uniform_like = summary(asym=(4.0, 6.0))
    ms = uniform_like["variants"]["gaussian"]["asymptotics"]["practical"]["mean_samples"][0]
    ratio_falls = [s / (12.0 * math.log(1 / d)) for s, d in zip(ms, ASYM_DELTAS)]
    assert ratio_falls == sorted(ratio_falls, reverse=True)
    assert verdict(claim_rows(uniform_like, "default"), "asymptotically optimal") == "no"
    # a slope of 1.6 (too high by 60%) is outside the band too
    assert verdict(claim_rows(summary(asym=(1.6, 1.0)), "default"), "asymptotically optimal") == "no"


def test_lp_check_fails_on_a_gap():
    assert verdict(claim_rows(summary(), "default"), "scipy max-min LP") == "pass"
    assert verdict(claim_rows(summary(lp_gap=1e-3), "default"), "scipy max-min LP") == "fail"


def test_round_cost_rows():
    rows = claim_rows(summary(), "default")
    assert verdict(rows, "costs less per round") == "yes"
    assert verdict(rows, "logarithmic in the number of leaves (wide trees)") == "yes"
    assert verdict(rows, "logarithmic in the number of leaves (deep trees)") == "yes"
    # the walk as slow as a linear scan (the linear scan's measured 5.6 / 39 / 366 / 2382 us): both claims are false
    scan = {"10": [5.6e-6, 5.8e-6, 5.7e-6], "100": [39e-6, 40e-6, 41e-6], "1000": [366e-6, 370e-6, 380e-6],
            "10000": [2382e-6, 2400e-6, 2390e-6]}
    rows = claim_rows(summary(ratio_seconds=scan, deep_seconds=scan), "default")
    assert verdict(rows, "logarithmic in the number of leaves (wide trees)") == "no"
    assert verdict(rows, "logarithmic in the number of leaves (deep trees)") == "no"
    linear = {k: [1e-7 * int(k) * f for f in (1.1, 1.2, 1.15)] for k in KS}
    assert verdict(claim_rows(summary(ratio_seconds=linear), "default"), "costs less per round") == "no"


def test_walk_check_fails_when_a_round_differs():
    assert verdict(claim_rows(summary(), "default"), "tournament-tree walk") == "pass"
    assert verdict(claim_rows(summary(walk=0.9), "default"), "tournament-tree walk") == "fail"
