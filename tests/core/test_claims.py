"""The verdict rule of every claims row, against independent references (scipy, brute force)."""

import math

import numpy as np
import pytest
from scipy import stats

from neurips26.core import claims


def test_mean_std_matches_statistics():
    import statistics

    vals = [1.0, 2.0, 4.0]
    m, s = claims.mean_std(vals)
    assert m == pytest.approx(statistics.mean(vals))
    assert s == pytest.approx(statistics.stdev(vals))
    assert math.isnan(claims.mean_std([])[0])


def test_paired_t_interval_matches_scipy():
    d = [0.3, -0.1, 0.5, 0.2, 0.4]
    m, lo, hi = claims.paired_t_interval(d)
    ref = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ref.low, ref.high))
    assert m == pytest.approx(np.mean(d))


def test_welch_interval_matches_scipy():
    a, b = [5.1, 4.9, 5.6, 5.3], [4.2, 4.8, 4.1]
    d, lo, hi = claims.welch_interval(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ref.low, ref.high))
    assert d == pytest.approx(np.mean(a) - np.mean(b))


def test_clopper_pearson_matches_scipy():
    ref = stats.binomtest(3, 50).proportion_ci(0.95, method="exact")
    assert claims.clopper_pearson(3, 50) == pytest.approx((ref.low, ref.high))
    assert claims.clopper_pearson(0, 150)[0] == 0.0
    # 0 errors in 150 runs: the upper bound is 1 - 0.025^(1/150), far above delta = 0.001
    assert claims.clopper_pearson(0, 150)[1] == pytest.approx(1 - 0.025 ** (1 / 150))


def test_linear_fit_matches_scipy():
    x = np.log([10, 20, 40, 80, 160])
    y = 2.0 * x + np.array([0.01, -0.02, 0.03, 0.0, -0.01])
    slope, lo, hi = claims.linear_fit(x, y)
    ref = stats.linregress(x, y)
    half = stats.t.ppf(0.975, len(x) - 2) * ref.stderr
    assert (slope, lo, hi) == pytest.approx((ref.slope, ref.slope - half, ref.slope + half))


def test_bootstrap_is_deterministic_and_covers_the_mean():
    rng = np.random.default_rng(1)
    m = [rng.binomial(1, 0.7, 200) for _ in range(3)]
    b = [rng.binomial(1, 0.5, 200) for _ in range(3)]
    first = claims.paired_bootstrap_interval(m, b, draws=500)
    assert first == claims.paired_bootstrap_interval(m, b, draws=500)
    point, lo, hi = first
    assert lo < point < hi and lo > 0


def _cmp(method, baseline, higher=True, **kw):
    return claims.comparison("p", "c", "m", "ours", method, "base", baseline, higher, "test", "f.png", **kw)


def test_one_value_a_side_is_untested_not_yes():
    # the old rule said 'yes' here: spread 0, any difference wins
    assert _cmp([52.31], [52.30])["reproduced"] == "untested"


def test_comparison_yes_no_inconclusive():
    assert _cmp([10, 11, 12], [1, 2, 3])["reproduced"] == "yes"
    assert _cmp([10, 11, 12], [1, 2, 3], higher=False)["reproduced"] == "no"
    assert _cmp([2.1, 1.0, 3.2], [2.0, 1.1, 3.0])["reproduced"] == "inconclusive"
    # significant but below the minimum effect
    assert _cmp([0.140, 0.141, 0.139], [0.133, 0.133, 0.133], min_effect=0.05)["reproduced"] == "inconclusive"
    assert _cmp([0.140, 0.141, 0.139], [0.133, 0.133, 0.133], min_effect=0.005)["reproduced"] == "yes"


def test_evaluation_noise_enters_through_items():
    # 0.275 against 0.25 on 200 items, three seeds of the same models: per-seed means agree
    # exactly, so a t interval over seeds says 'yes'; the item bootstrap does not.
    rng = np.random.default_rng(0)
    items = 200
    base = [(rng.random(items) < 0.25).astype(float) for _ in range(3)]
    meth = [np.where(rng.random(items) < 0.1, 1.0, b) for b in base]
    row = _cmp([m.mean() for m in meth], [b.mean() for b in base], method_items=meth, baseline_items=base)
    assert "bootstrap" in row["criterion"]
    assert row["reproduced"] == "yes"  # the method fixes items and breaks none
    equal = [(rng.random(items) < 0.25).astype(float) for _ in range(3)]
    noisy = [(rng.random(items) < 0.27).astype(float) for _ in range(3)]
    row = _cmp([0.275, 0.275, 0.275], [0.25, 0.25, 0.25], method_items=noisy, baseline_items=equal)
    assert row["reproduced"] in ("inconclusive", "no")


def test_unpaired_uses_welch():
    row = _cmp([5.1, 4.9, 5.6, 5.3], [4.2, 4.8, 4.1], paired=False)
    assert "Welch" in row["criterion"] and row["reproduced"] == "yes"


def test_target_band_with_and_without_interval():
    t = lambda v, iv=None: claims.target("p", "quadratic", "slope", "ours", v, (1.7, 2.3), "test", "f", interval=iv)["reproduced"]  # noqa: E731
    assert t(2.0, (1.9, 2.1)) == "yes"
    assert t(0.1, (0.0, 0.2)) == "no"          # a flat curve fails
    assert t(2.25, (2.1, 2.4)) == "inconclusive"
    assert t(2.0) == "yes" and t(2.5) == "no"
    one_sided = claims.target("p", "speedup", "x", "ours", 3.0, (10.0, None), "test", "f")
    assert one_sided["reproduced"] == "no"


def test_error_rate_by_clopper_pearson():
    er = lambda k, n, d: claims.error_rate("p", "delta-correct", "err", "ours", k, n, d, "test", "f")["reproduced"]  # noqa: E731
    assert er(0, 150, 0.001) == "inconclusive"    # too few runs to show delta = 0.001
    assert er(0, 5000, 0.001) == "yes"
    assert er(30, 150, 0.05) == "no"


def test_check_pass_fail_and_kinds():
    c = claims.check("p", "identity", "max abs error", "ours", 1e-9, 1e-6, "test", "f")
    assert c["reproduced"] == "pass" and c["kind"] == "check"
    assert claims.check("p", "identity", "e", "ours", 1e-3, 1e-6, "test", "f")["reproduced"] == "fail"
    assert claims.check("p", "share", "s", "ours", 0.9, 0.95, "test", "f", at_least=True)["reproduced"] == "fail"


def test_untested_states_its_reason_and_columns_are_the_design_ones(tmp_path):
    u = claims.untested("p", "15.6x speedup", "steps", "ours", "speedup beyond the measurable 4x", "test")
    assert u["reproduced"] == "untested" and "measurable 4x" in u["criterion"]
    rows = [u, _cmp([1, 2, 3], [0, 1, 2])]
    claims.write_claims(tmp_path / "claims.csv", rows)
    header = (tmp_path / "claims.csv").read_text().splitlines()[0].split(",")
    assert header == claims.COLUMNS
    with pytest.raises(ValueError, match="lacks the columns"):
        claims.write_claims(tmp_path / "bad.csv", [{"claim": "x"}])


def test_non_finite_values_are_untested_with_the_reason():
    row = _cmp([1.0, float("inf"), 2.0], [0.0, 0.5, 1.0])
    assert row["reproduced"] == "untested" and "not finite" in row["criterion"]
