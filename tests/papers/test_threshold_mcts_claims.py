"""threshold_mcts claims rows: each says `no` (`fail`) on metrics where its claim is false and
`yes` (`pass`) where it holds."""

import math

import pytest

from neurips26.papers.threshold_mcts.claims import claim_rows

DELTAS = [0.1, 0.01, 0.001]
T_STAR = [12.0, 13.0, 14.0]
KS = ["10", "100", "1000", "10000"]


def samples(slope, intercept, wobble=(0.0, 0.3, -0.2)):
    """Mean stopping times T* (slope log(1/delta) + intercept + wobble): one list per instance."""
    return [[t * (slope * math.log(1 / d) + intercept + w) for d in DELTAS] for t, w in zip(T_STAR, wobble)]


def summary(ratio=(1.0, 2.0), dtracking=(1.0, 6.0), uniform=(4.0, 6.0), lucb=(1.0, 5.0), errors=0, runs=50,
            lp_gap=1e-15, ratio_seconds=None, dtracking_seconds=None, walk=1.0):
    rules = {name: {"errors": [[errors] * len(DELTAS) for _ in T_STAR], "mean_samples": samples(*params)}
             for name, params in (("ratio", ratio), ("dtracking", dtracking), ("uniform", uniform), ("lucb", lucb))}
    log_cost = {k: [1e-6 * (3 + math.log(int(k))) * f for f in (1.0, 1.05, 0.97)] for k in KS}
    linear_cost = {k: [1e-7 * int(k) * f for f in (1.0, 1.05, 0.97)] for k in KS}
    return {"variants": {"gaussian": {"deltas": DELTAS, "runs": runs, "t_star": T_STAR,
                                      "lp_gap": [lp_gap] * 3, "rules": rules}},
            "timing": {"seconds": {"ratio": ratio_seconds or log_cost, "dtracking": dtracking_seconds or linear_cost},
                       "walk_matches": {k: walk for k in KS}}}


def verdict(rows, text):
    hits = [r for r in rows if text in r["claim"]]
    assert len(hits) == 1, text
    return hits[0]["reproduced"]


def test_delta_correct_uses_the_clopper_pearson_bound():
    # 0 errors in 15000 runs: the upper bound 2.5e-4 is below every delta
    rows = claim_rows(summary(runs=5000), "default")
    assert [verdict(rows, f"delta-correct at delta={d:g}") for d in DELTAS] == ["yes"] * 3
    # 0 errors in 150 runs cannot show an error rate below 0.01
    rows = claim_rows(summary(runs=50), "default")
    assert [verdict(rows, f"delta-correct at delta={d:g}") for d in DELTAS] == ["yes", "inconclusive", "inconclusive"]
    # 10 errors in 50 runs per instance: 20%, above every delta
    rows = claim_rows(summary(errors=10), "default")
    assert [verdict(rows, f"delta-correct at delta={d:g}") for d in DELTAS] == ["no"] * 3


@pytest.mark.parametrize("base", ["TaS, D-tracking", "uniform + GLR stop", "LUCB-MCTS"])
def test_fewer_samples_than_each_baseline(base):
    assert verdict(claim_rows(summary(), "default"), f"fewer samples than {base}") == "yes"
    slow = summary(ratio=(4.0, 8.0))
    assert verdict(claim_rows(slow, "default"), f"fewer samples than {base}") == "no"


def test_a_small_gain_over_d_tracking_is_not_substantial():
    # 3% fewer samples, consistently: below the 10% that "substantial" asks
    close = summary(ratio=(1.0, 5.6), dtracking=(1.0, 6.0))
    assert verdict(claim_rows(close, "default"), "fewer samples than TaS, D-tracking") == "inconclusive"


def test_asymptotic_optimality_is_the_slope_against_t_star():
    assert verdict(claim_rows(summary(ratio=(1.02, 3.0)), "default"), "asymptotically optimal") == "yes"
    # uniform sampling's numbers: slope T_uniform / T* = 4 while its ratio still falls with delta
    uniform_like = summary(ratio=(4.0, 6.0))
    ratio_falls = [s / (t * math.log(1 / d)) for s, t, d in
                   zip(uniform_like["variants"]["gaussian"]["rules"]["ratio"]["mean_samples"][0], [12.0] * 3, DELTAS)]
    assert ratio_falls == sorted(ratio_falls, reverse=True)
    assert verdict(claim_rows(uniform_like, "default"), "asymptotically optimal") == "no"


def test_lp_check_fails_on_a_gap():
    assert verdict(claim_rows(summary(), "default"), "scipy max-min LP") == "pass"
    assert verdict(claim_rows(summary(lp_gap=1e-3), "default"), "scipy max-min LP") == "fail"


def test_round_cost_rows():
    rows = claim_rows(summary(), "default")
    assert verdict(rows, "costs less per round") == "yes"
    assert verdict(rows, "logarithmic in the number of leaves") == "yes"
    # the walk as slow as a linear scan: both claims are false
    linear = {k: [1e-7 * int(k) * f for f in (1.1, 1.2, 1.15)] for k in KS}
    rows = claim_rows(summary(ratio_seconds=linear), "default")
    assert verdict(rows, "costs less per round") == "no"
    assert verdict(rows, "logarithmic in the number of leaves") == "no"


def test_walk_check_fails_when_a_round_differs():
    assert verdict(claim_rows(summary(), "default"), "incremental tree walk") == "pass"
    assert verdict(claim_rows(summary(walk=0.9), "default"), "incremental tree walk") == "fail"
