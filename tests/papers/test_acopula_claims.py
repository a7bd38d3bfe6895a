"""acopula claims rows (looked up by id): each says `no` (`fail`) on metrics where its claim is
false and `yes` (`pass`) where it holds; speedups and the scaling slope are replicated over timing
repeats."""

import math

from neurips26.papers.acopula.claims import claim_rows

DIMS = [994, 1407, 2002, 2828]
FAMILIES = ["clayton", "gumbel", "frank", "amh"]


def times(power, noise=(1.0, 1.03, 0.98)):
    return {str(d): [1e-9 * d ** power * f for f in noise] for d in DIMS}


def summary(speedup_r=3000.0, speedup=150.0, power=2.0, diff=1e-14, tau=(0.01, 0.08, 0.2), nested_gain=80.0,
            frank_gain=5.0, neural_gap=0.0, precision=1e-12, grad_diff=1e-13, grad_naive=1e-2, repeats=True,
            timing_noise=(1.0, 1.03, 0.98)):
    ours, ignore, flat = tau
    wobble = (0.0, 0.002, -0.001)
    surv_parts = [{"clayton": 40.0 + w, "gumbel": 45.0 + w, "frank": 40.0 - frank_gain + 3 * w, "amh": 41.0}
                  for w in (0.0, 0.4, -0.3)]
    ours_ref = [1e-5 * f for f in timing_noise]
    ref = {"ours": ours_ref, "nacll": [1e-5 * speedup * f for f in (1.01, 0.99, 1.02)],
           "nacll_r": [1e-5 * speedup_r * f for f in (0.98, 1.0, 1.01)]} if repeats else \
        {"ours": None, "nacll": None, "nacll_r": None}
    return {
        "speed": {"d_ref": 35, "speedup_r": speedup_r, "speedup": speedup, "slope_range": [994, 2828],
                  "ref_repeats": ref,
                  "ours_repeats": times(power), "max_diff_nacll": diff, "max_diff_naive": diff / 10,
                  "scaling_rows": 4, "precision": {"d": 100, "rows": 4, "digits": 80, "max_abs_diff": precision},
                  "grad_max_rel_diff": grad_diff, "grad_ours": {"4": 1e-4, "6": 1.2e-4, "105": 2e-3},
                  "grad_naive": {"4": 1e-3, "6": grad_naive}},
        "simulate": {"censored_mle": [ours + w for w in wobble], "ignore_censoring": [ignore + 2 * w for w in wobble],
                     "flat_censored_mle": [flat - w for w in wobble]},
        "stocks": {"d": 20, "families": ["clayton", "gumbel"],
                   "parts": [{"clayton_nested": -400.0 - nested_gain + w, "clayton_flat": -400.0,
                              "gumbel_nested": -420.0 - nested_gain - w, "gumbel_flat": -420.0}
                             for w in (0.0, 3.0, -2.0)]},
        "survival": {"families": FAMILIES, "full_aic": {"clayton": 120.0, "gumbel": 130.0, "frank": 110.0, "amh": math.inf},
                     "parts": surv_parts, "best_family": "frank", "best_loglik": -60.0,
                     "neural_components": 4, "neural_loglik": -60.0 - neural_gap}}


def rows_of(s, scale="default"):
    return {r["id"]: r for r in claim_rows(s, scale)}


def verdict(s, id, scale="default"):
    return rows_of(s, scale)[id]["reproduced"]


def test_all_rows_hold_on_metrics_where_the_claims_are_true():
    rows = rows_of(summary())
    assert len(rows) == 13
    # the gradient speedup has a single naive timing: no replicated interval, at most inconclusive
    assert rows.pop("gradient_speedup")["reproduced"] == "inconclusive"
    assert {r["reproduced"] for r in rows.values()} == {"yes", "pass"}


def test_speedups_are_replicated_over_timing_repeats_on_the_log_scale():
    row = rows_of(summary())["speedup_r"]
    assert row["n"] == 3 and "log" in row["criterion"]
    lo, hi = (float(x) for x in row["interval"].strip("[]").split(","))
    assert lo < 3000.0 < hi


def test_speedups_below_target():
    rows = rows_of(summary(speedup_r=50.0, speedup=15.0))
    assert rows["speedup_r"]["reproduced"] == "no" and rows["speedup_vectorised"]["reproduced"] == "no"


def test_the_dnac_r_speedup_is_held_to_the_papers_650x():
    """The paper's ~650x is against R's nacLL, whose port is the dnac.R-structured one: 300x would have
    passed the old threshold of 100 and falls short of the paper's number; the vectorised port, not the
    paper's baseline, keeps the practical threshold of 100."""
    spec = rows_of(summary())
    assert spec["speedup_r"]["margin"] == ">= 650" and spec["speedup_vectorised"]["margin"] == ">= 100"
    rows = rows_of(summary(speedup_r=300.0, speedup=300.0))
    assert rows["speedup_r"]["reproduced"] == "no" and rows["speedup_vectorised"]["reproduced"] == "yes"
    assert rows_of(summary(speedup_r=700.0))["speedup_r"]["reproduced"] == "inconclusive"  # interval reaches 650
    assert rows_of(summary(speedup_r=2000.0))["speedup_r"]["reproduced"] == "yes"


def test_speedup_without_per_repeat_times_is_at_most_inconclusive():
    rows = rows_of(summary(repeats=False))
    assert rows["speedup_r"]["reproduced"] == "inconclusive"
    assert rows["speedup_vectorised"]["reproduced"] == "inconclusive"


def test_quadratic_is_a_two_sided_band_over_per_repeat_slopes():
    assert verdict(summary(power=1.0), "slope_quadratic") == "no"
    assert verdict(summary(power=3.0), "slope_quadratic") == "no"
    row = rows_of(summary(power=2.05))["slope_quadratic"]
    assert row["reproduced"] == "yes" and row["n"] == 3  # one slope per repeat, not 12 points


def test_per_repeat_slopes_disagreeing_leave_the_slope_inconclusive():
    # repeat 0 scales like d^1.8, repeat 1 like d^2.25, repeat 2 like d^2.0: one pooled fit would
    # read 2.0 with a narrow interval; the t interval over the three slopes straddles the band
    s = summary()
    s["speed"]["ours_repeats"] = {str(d): [1e-9 * d ** p for p in (1.8, 2.25, 2.0)] for d in DIMS}
    assert verdict(s, "slope_quadratic") == "inconclusive"


def test_exact_likelihood_check():
    assert verdict(summary(diff=1e-4), "exact_likelihood") == "fail"


def test_simulation_comparisons():
    rows = rows_of(summary(tau=(0.1, 0.05, 0.04)))
    assert rows["tau_censoring"]["reproduced"] == "no" and rows["tau_nested"]["reproduced"] == "no"


def test_stock_rows_per_family():
    rows = rows_of(summary(nested_gain=-30.0))
    assert rows["stocks_clayton"]["reproduced"] == "no" and rows["stocks_gumbel"]["reproduced"] == "no"


def test_a_family_the_run_leaves_out_is_untested():
    s = summary()
    s["stocks"]["families"] = ["clayton"]
    assert verdict(s, "stocks_gumbel") == "untested"


def test_family_against_clayton_excludes_clayton():
    # Clayton best on every part: the best of the others loses
    row = rows_of(summary(frank_gain=-3.0))["survival_family"]
    assert row["reproduced"] == "no"
    assert "clayton" not in row["method"].split("(")[1]


def test_families_that_fail_on_all_subjects_are_no_candidates():
    s = summary()
    for p in s["survival"]["parts"]:
        p["amh"] = 0.0  # would win every part, but its fit on all subjects failed
    row = rows_of(s)["survival_family"]
    assert "amh" not in row["method"]
    assert "failed fits (log-likelihood -inf): amh" in row["criterion"]
    assert "best of the 3 other families" in row["criterion"]


def test_precision_and_gradient_rows():
    assert verdict(summary(precision=1e-3), "precision") == "fail"
    assert verdict(summary(grad_diff=1e-5), "gradient_exact") == "fail"
    # 2e-4 / 1.2e-4 = 1.7x: below 10x; a single timing cannot say no either
    assert verdict(summary(grad_naive=2e-4), "gradient_speedup") == "inconclusive"


def test_neural_check():
    assert verdict(summary(neural_gap=5.0), "neural") == "fail"


def test_a_scale_that_cannot_reach_the_claims_leaves_them_untested():
    rows = rows_of(summary(), scale="test")
    assert rows["tau_censoring"]["reproduced"] == "untested" and "cannot reach" in rows["tau_censoring"]["criterion"]


def test_the_family_compared_on_a_part_is_the_one_chosen_on_the_other_parts():
    """Each part's family is chosen on the other parts before the part's own AIC is read: a
    family that wins on the scored part alone (gumbel on part 0) is not the one compared there."""
    from neurips26.papers.acopula.claims import family_choices

    s = summary()
    s["survival"]["parts"][0]["gumbel"] = 0.0  # best on part 0 itself, worse than frank on parts 1 and 2
    choices = family_choices(s["survival"])
    assert [family for family, _ in choices] == ["frank", "gumbel", "gumbel"]
    assert choices[0][1]["frank"] < choices[0][1]["gumbel"] and "clayton" not in choices[0][1]
    row = rows_of(s)["survival_family"]
    assert "(frank/gumbel/gumbel)" in row["method"]
    # part 0 is scored with frank's AIC there (35.0), not with gumbel's 0.0
    parts = s["survival"]["parts"]
    expected = [parts[0]["frank"], parts[1]["gumbel"], parts[2]["gumbel"]]
    assert row["method_value"].startswith(f"{sum(expected) / 3:.3g}")
