"""acopula claims rows: each says `no` (`fail`) on metrics where its claim is false and `yes`
(`pass`) where it holds."""

import math

from neurips26.papers.acopula.claims import claim_rows

DIMS = [994, 1407, 2002, 2828]
FAMILIES = ["clayton", "gumbel", "frank", "amh"]


def times(power, noise=(1.0, 1.03, 0.98)):
    return {str(d): [1e-9 * d ** power * f for f in noise] for d in DIMS}


def summary(speedup_r=3000.0, speedup=150.0, power=2.0, diff=1e-14, tau=(0.01, 0.08, 0.2), nested_gain=80.0,
            frank_gain=5.0, neural_gap=0.0, precision=1e-12, grad_diff=1e-13, grad_naive=1e-2):
    ours, ignore, flat = tau
    wobble = (0.0, 0.002, -0.001)
    surv_parts = [{"clayton": 40.0 + w, "gumbel": 45.0 + w, "frank": 40.0 - frank_gain + 3 * w, "amh": 41.0}
                  for w in (0.0, 0.4, -0.3)]
    return {
        "speed": {"d_ref": 35, "speedup_r": speedup_r, "speedup": speedup, "slope_range": [994, 2828],
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


def verdict(rows, text):
    hits = [r for r in rows if text in r["claim"]]
    assert len(hits) >= 1, text
    return {r["reproduced"] for r in hits}


def test_all_rows_hold_on_metrics_where_the_claims_are_true():
    rows = claim_rows(summary(), "default")
    assert {r["reproduced"] for r in rows} == {"yes", "pass"}
    assert len(rows) == 13


def test_speedups_below_target():
    rows = claim_rows(summary(speedup_r=50.0, speedup=15.0), "default")
    assert verdict(rows, "large per-density speedup") == {"no"}
    assert verdict(rows, "vectorised port") == {"no"}


def test_quadratic_is_a_two_sided_band():
    assert verdict(claim_rows(summary(power=1.0), "default"), "quadratically") == {"no"}  # flat-ish: linear
    assert verdict(claim_rows(summary(power=3.0), "default"), "quadratically") == {"no"}
    assert verdict(claim_rows(summary(power=2.05), "default"), "quadratically") == {"yes"}


def test_exact_likelihood_check():
    assert verdict(claim_rows(summary(diff=1e-4), "default"), "exact likelihoods") == {"fail"}


def test_simulation_comparisons():
    rows = claim_rows(summary(tau=(0.1, 0.05, 0.04)), "default")
    assert verdict(rows, "better than ignoring censoring") == {"no"}
    assert verdict(rows, "better than a flat copula") == {"no"}


def test_stock_rows_per_family():
    rows = claim_rows(summary(nested_gain=-30.0), "default")
    assert verdict(rows, "fits stock returns better than flat") == {"no"}


def test_family_against_clayton_excludes_clayton():
    # Clayton best on every part: the best of the others loses (the old min over a set with
    # Clayton in it could not)
    rows = claim_rows(summary(frank_gain=-3.0), "default")
    assert verdict(rows, "fits better than Clayton") == {"no"}
    row = [r for r in rows if "fits better than Clayton" in r["claim"]][0]
    assert "clayton" not in row["method"].split("(")[1]


def test_families_that_fail_on_all_subjects_are_no_candidates():
    s = summary()
    for p in s["survival"]["parts"]:
        p["amh"] = 0.0  # would win every part, but its fit on all subjects failed
    row = [r for r in claim_rows(s, "default") if "fits better than Clayton" in r["claim"]][0]
    assert "amh" not in row["method"]


def test_precision_and_gradient_rows():
    assert verdict(claim_rows(summary(), "default"), "accurate at high d") == {"pass"}
    assert verdict(claim_rows(summary(precision=1e-3), "default"), "accurate at high d") == {"fail"}
    assert verdict(claim_rows(summary(grad_diff=1e-5), "default"), "exact gradients") == {"fail"}
    assert verdict(claim_rows(summary(), "default"), "fast gradients") == {"yes"}
    assert verdict(claim_rows(summary(grad_naive=2e-4), "default"), "fast gradients") == {"no"}


def test_family_row_names_failed_fits_and_compares_the_best_of_the_others():
    row = [r for r in claim_rows(summary(), "default") if "fits better than Clayton" in r["claim"]][0]
    assert "best of the 3 other families" in row["claim"]
    assert "failed fits (log-likelihood -inf): amh" in row["criterion"]


def test_neural_check():
    assert verdict(claim_rows(summary(neural_gap=5.0), "default"), "neural generator") == {"fail"}
