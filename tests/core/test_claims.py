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


def test_bootstrap_is_deterministic_and_covers_the_mean():
    rng = np.random.default_rng(1)
    m = [rng.binomial(1, 0.7, 200) for _ in range(3)]
    b = [rng.binomial(1, 0.5, 200) for _ in range(3)]
    first = claims.paired_bootstrap_interval(m, b, draws=500)
    assert first == claims.paired_bootstrap_interval(m, b, draws=500)
    point, lo, hi = first
    assert lo < point < hi and lo > 0


def test_slopes_per_replicate_match_scipy():
    x = np.log([10, 20, 40, 80])
    ys = [2.0 * x + 0.01 * k for k in range(3)] + [1.5 * x]
    got = claims.slopes_per_replicate(x, ys)
    assert got == pytest.approx([stats.linregress(x, y).slope for y in ys])


def test_holm_matches_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    for p in ([0.01, 0.04, 0.03, 0.20], [0.5], [0.001, 0.001, 0.9], list(rng.random(7) ** 3)):
        assert claims.holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert claims.holm([]) == []


def test_replicates_to_decide_matches_the_noncentral_t_power():
    # paired: n such that a two-sided 95% t test has 90% power at effect size gap / spread
    n = claims.replicates_to_decide(1.0, 1.0)
    power = lambda k: 1 - stats.nct.cdf(stats.t.ppf(0.975, k - 1), k - 1, np.sqrt(k))  # noqa: E731
    assert power(n) >= 0.9 > power(n - 1)
    # a large effect needs few replicates (statsmodels' solver fails to converge there)
    assert claims.replicates_to_decide(0.115, 0.02) == claims.MIN_REPLICATES
    assert 3 <= claims.replicates_to_decide(0.115, 0.03, paired=False) <= 4
    welch_power = lambda k: 1 - stats.nct.cdf(stats.t.ppf(0.975, 2 * k - 2), 2 * k - 2, 0.5 * np.sqrt(k / 2))  # noqa: E731
    n = claims.replicates_to_decide(0.5, 1.0, paired=False)
    assert welch_power(n) >= 0.9 > welch_power(n - 1)
    assert claims.replicates_to_decide(5.0, 0.0) == claims.MIN_REPLICATES
    assert claims.replicates_to_decide(0.0, 1.0) == claims.N_TO_DECIDE_MAX


# ---------------------------------------------------------------- declared claims and the rule

def entry(id, kind="comparison", **kw):
    base = {"id": id, "claim": f"claim {id}", "kind": kind, "metric": "m", "method": "ours"}
    if kind == "comparison":
        base.update(direction="higher", baseline="base", margin=0.5, margin_source="stated", replicate="seeds",
                    scale=["default", "paper"], regime="none: test", null="none: test")
    elif kind == "target":
        base.update(band=[1.7, 2.3], margin_source="stated", replicate="seeds", scale=["default", "paper"],
                    regime="none: test", null="none: test")
    else:
        base.update(tolerance=1e-6)
    base.update(kw)
    return base


def sheet(*entries, scale="default"):
    spec = claims.validate_spec({"paper": "p", "claims": list(entries)}, "p/claims.yaml")
    return claims.Sheet("p", scale, spec)


def decide(e, *measure, scale="default", **kw):
    s = sheet(e, scale=scale)
    getattr(s, e["kind"])(e["id"], *measure, **kw)
    return s.rows()[0]


def test_yes_needs_interval_above_zero_and_the_margin():
    assert decide(entry("a"), [10, 11, 12], [1, 2, 3])["reproduced"] == "yes"
    # significant but below the margin: cannot be yes; the interval still reaches the margin
    row = decide(entry("a", margin=5.0), [1.40, 1.41, 1.39], [1.33, 1.33, 1.33])
    assert row["reproduced"] == "no"  # the whole interval lies below the margin: ruled out
    row = decide(entry("a", margin=0.008), [0.140, 0.141, 0.139], [0.133, 0.133, 0.133])
    assert row["reproduced"] == "inconclusive"  # 0.007 below the margin, its interval reaches it
    assert int(row["n_to_decide"]) >= 3


def test_no_only_when_the_interval_lies_below_the_margin():
    # the old rule said no on the sign alone: the estimate is negative but the interval covers 0
    row = decide(entry("a", margin=0.1), [2.1, 1.0, 3.2], [2.0, 1.3, 3.4])
    assert float(row["effect"]) < 0 and row["reproduced"] == "inconclusive" and row["n_to_decide"] != ""
    row = decide(entry("a"), [1, 2, 3], [10, 11, 12])
    assert row["reproduced"] == "no" and "reversed" in row["criterion"]


def test_relative_margin_and_lower_is_better():
    e = entry("a", direction="lower", margin="5%")
    row = decide(e, [90, 91, 92], [100, 101, 102])
    assert row["reproduced"] == "yes" and row["margin"].startswith("5.05")
    assert decide(e, [99, 100.5, 101.2], [100, 101, 102])["reproduced"] == "no"


def test_log_scale_ratio():
    e = entry("ppl", direction="lower", margin="10%", transform="log")
    # perplexity 333 against 11.7 on every seed: a clear ratio on the log scale
    row = decide(e, [333.0, 290.0, 410.0], [11.7, 11.5, 12.1])
    assert row["reproduced"] == "no" and float(row["effect"]) < 1
    row = decide(e, [10.0, 10.4, 9.8], [20.0, 21.0, 19.5])
    assert row["reproduced"] == "yes" and float(row["effect"]) == pytest.approx(2.0, rel=0.05)
    with pytest.raises(claims.SpecError, match="percentage"):
        sheet(entry("x", transform="log", margin=0.1))


def test_unpaired_uses_welch():
    row = decide(entry("a", margin=0.1), [5.1, 4.9, 5.6, 5.3], [4.2, 4.8, 4.1], paired=False)
    assert "Welch" in row["criterion"] and row["reproduced"] == "yes"


def test_items_widen_the_interval():
    rng = np.random.default_rng(0)
    equal = [(rng.random(200) < 0.25).astype(float) for _ in range(3)]
    noisy = [(rng.random(200) < 0.27).astype(float) for _ in range(3)]
    row = decide(entry("a", margin=0.01), [0.275] * 3, [0.25] * 3, method_items=noisy, baseline_items=equal)
    assert "bootstrap" in row["criterion"] and row["reproduced"] == "inconclusive"


def test_fewer_than_three_replicates_and_non_finite_values_are_untested():
    assert decide(entry("a"), [52.31], [52.30])["reproduced"] == "untested"
    row = decide(entry("a"), [1.0, float("inf"), 2.0], [0.0, 0.5, 1.0])
    assert row["reproduced"] == "untested" and "not finite" in row["criterion"]


def test_scale_that_cannot_reach_the_claim_is_untested():
    row = decide(entry("a", scale=["paper"]), [10, 11, 12], [1, 2, 3])
    assert row["reproduced"] == "untested" and row["criterion"].startswith("untested: the default scale")
    assert decide(entry("a", scale=["paper"]), [10, 11, 12], [1, 2, 3], scale="smoke")["reproduced"] == "yes"


def _controlled(regime_values, null_values):
    s = sheet(entry("prior", role="regime"), entry("noop", role="null", method="nothing"),
              entry("claim", regime="prior", null="noop"))
    s.comparison("prior", *regime_values)
    s.comparison("noop", *null_values)
    s.comparison("claim", [10, 11, 12], [1, 2, 3])
    return {r["id"]: r for r in s.rows()}


def test_a_failed_regime_control_makes_its_claims_untested():
    rows = _controlled(([1, 2, 3], [10, 11, 12]), ([1, 2, 3], [1, 2, 3]))
    assert rows["prior"]["reproduced"] == "no" and rows["prior"]["role"] == "regime"
    assert rows["claim"]["reproduced"] == "untested"
    assert rows["claim"]["criterion"].startswith("untested: its regime control 'prior' does not hold")
    rows = _controlled(([10, 11, 12], [1, 2, 3]), ([1, 2, 3], [1, 2, 3.1]))
    assert rows["claim"]["reproduced"] == "yes"


def test_a_passing_null_control_keeps_the_claim_from_yes():
    rows = _controlled(([10, 11, 12], [1, 2, 3]), ([10, 11, 12.5], [1, 2, 3]))
    assert rows["noop"]["reproduced"] == "yes" and rows["noop"]["role"] == "null"
    assert rows["claim"]["reproduced"] == "untested" and "null control 'noop' passes" in rows["claim"]["criterion"]


def test_holm_runs_over_the_papers_comparison_claims():
    # three rows each with p just under 0.05 alone: Holm over three lifts them above
    s = sheet(entry("a", margin=0.0), entry("b", margin=0.0), entry("c", margin=0.0))
    for i in "abc":
        s.comparison(i, [1.5, 2.5, 3.0], [0.0, 0.0, 0.0])
    rows = s.rows()
    raw = stats.ttest_1samp([1.5, 2.5, 3.0], 0).pvalue
    assert raw < 0.05
    assert all(float(r["p_holm"]) == pytest.approx(min(1, 3 * raw), rel=0.01) for r in rows)
    assert all(r["reproduced"] == "inconclusive" for r in rows)


def test_target_rules():
    t = entry("t", "target")
    assert decide(t, values=[2.0, 2.1, 1.9])["reproduced"] == "yes"
    assert decide(t, values=[0.1, 0.0, 0.2])["reproduced"] == "no"
    assert decide(t, values=[2.25, 2.1, 2.4])["reproduced"] == "inconclusive"
    # a single number without a replicated interval is at most inconclusive, inside the band or out
    assert decide(t, 2.0)["reproduced"] == "inconclusive"
    assert decide(t, 2.5)["reproduced"] == "inconclusive"
    assert decide(t, 2.0, interval=(1.9, 2.1))["reproduced"] == "yes"
    share = entry("s", "target", band=[0.8, None])
    row = decide(share, successes=6, trials=8)  # Clopper-Pearson [0.35, 0.97] straddles 0.8
    assert row["reproduced"] == "inconclusive" and row["interval"] == "[0.349, 0.968]"
    assert decide(share, successes=2, trials=40)["reproduced"] == "no"
    assert decide(entry("s", "target", band=[None, 0.05]), successes=0, trials=5000)["reproduced"] == "yes"
    assert decide(entry("r", "target", band=[1.0, None], transform="log"),
                  values=[2.0, 2.2, 1.9])["reproduced"] == "yes"


def test_check_pass_fail():
    assert decide(entry("c", "check"), 1e-9)["reproduced"] == "pass"
    assert decide(entry("c", "check"), 1e-3)["reproduced"] == "fail"
    row = decide(entry("c", "check", tolerance=0.95, at_least=True), 0.9)
    assert row["reproduced"] == "fail" and row["role"] == "check"


def test_every_entry_measured_once_and_nothing_else():
    s = sheet(entry("a"), entry("b"))
    s.comparison("a", [1, 2, 3], [0, 1, 2])
    with pytest.raises(claims.SpecError, match="not measured.*b"):
        s.rows()
    with pytest.raises(claims.SpecError, match="no entry 'zzz'"):
        s.comparison("zzz", [1], [1])
    with pytest.raises(ValueError, match="twice"):
        s.comparison("a", [1, 2, 3], [0, 1, 2])
    with pytest.raises(ValueError, match="kind 'comparison'"):
        s.target("b", 1.0)
    s.untested("b", "the variant is not in this config")
    assert [r["reproduced"] for r in s.rows()] == ["yes", "untested"]
    # every kind can be marked untested
    s = sheet(entry("t", "target"), entry("c", "check"))
    s.untested("t", "not run")
    s.untested("c", "not run")
    assert [r["reproduced"] for r in s.rows()] == ["untested", "untested"]


@pytest.mark.parametrize("mutate, message", [
    (lambda e: e.pop("margin"), "'margin' is a required property"),
    (lambda e: e.update(kind="sort"), "kind"),
    (lambda e: e.update(regime="missing_row"), "'missing_row' is no entry"),
    (lambda e: e.pop("null"), "'null' is a required property"),
    (lambda e: e.update(margin="five"), "margin"),
])
def test_bad_spec_names_the_entry_and_key(mutate, message):
    e = entry("row")
    mutate(e)
    with pytest.raises(claims.SpecError, match=message) as info:
        sheet(e)
    assert "p/claims.yaml" in str(info.value)


def test_control_must_have_its_role_and_ids_are_unique():
    with pytest.raises(claims.SpecError, match="has role 'claim', not 'regime'"):
        sheet(entry("other"), entry("a", regime="other"))
    with pytest.raises(claims.SpecError, match="used twice"):
        sheet(entry("a"), entry("a"))


def test_yaml_reads_unquoted_null(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text("paper: p\nclaims:\n"
                    "  - {id: n0, role: null, claim: c, kind: comparison, metric: m, direction: higher, method: x,\n"
                    "     baseline: b, margin: 0.1, margin_source: s, replicate: seeds, scale: [default]}\n"
                    "  - {id: c1, claim: c, kind: comparison, metric: m, direction: higher, method: x, baseline: b,\n"
                    "     margin: 0.1, margin_source: s, replicate: seeds, scale: [default], regime: none, null: n0}\n"
                    "  - {id: k, claim: c, kind: check, metric: m, method: x, tolerance: 1e-6}\n")
    spec = claims.load_spec("p", path)
    assert spec[0]["role"] == "null" and spec[1]["null"] == "n0" and spec[2]["tolerance"] == 1e-6


def test_every_paper_declares_valid_claims():
    papers = sorted(p.parent.name for p in claims.PAPERS_DIR.glob("*/claims.py"))
    assert len(papers) == 19
    for paper in papers:
        spec = claims.load_spec(paper)
        assert spec and all(e["id"] for e in spec), paper
        for e in spec:
            if e["kind"] == "comparison":
                assert e["margin_source"].strip(), (paper, e["id"])


# ---------------------------------------------------------------- the rule's error rates, simulated

def test_no_effect_gives_yes_at_most_five_percent_family_wise():
    """2,000 rows drawn with true effect 0, in papers of 4 comparison rows each."""
    rng = np.random.default_rng(7)
    papers, per_paper, any_yes, yes_rows = 500, 4, 0, 0
    spec = claims.validate_spec({"paper": "p", "claims": [entry(f"r{k}", margin=0.1) for k in range(per_paper)]}, "p")
    for _ in range(papers):
        s = claims.Sheet("p", "default", spec)
        for k in range(per_paper):
            base = rng.normal(0, 1, 3)
            s.comparison(f"r{k}", base + rng.normal(0, 1, 3), base)
        verdicts = [r["reproduced"] for r in s.rows()]
        any_yes += "yes" in verdicts
        yes_rows += verdicts.count("yes")
    assert any_yes / papers <= 0.05
    assert yes_rows / (papers * per_paper) <= 0.05


def test_true_effect_of_twice_the_margin_at_n_to_decide_says_yes_at_least_80_percent():
    margin, spread = 0.5, 1.0
    n = claims.replicates_to_decide(2 * margin, spread)
    rng = np.random.default_rng(11)
    rows = 2000
    yes = 0
    spec = claims.validate_spec({"paper": "p", "claims": [entry("a", margin=margin)]}, "p")
    for _ in range(rows):
        base = rng.normal(0, 1, n)
        s = claims.Sheet("p", "default", spec)
        s.comparison("a", base + 2 * margin + rng.normal(0, spread, n), base)
        yes += s.rows()[0]["reproduced"] == "yes"
    assert yes / rows >= 0.8


def test_columns_are_the_design_ones(tmp_path):
    row = decide(entry("a"), [1, 2, 3], [0, 1, 2])
    claims.write_claims(tmp_path / "claims.csv", [row])
    header = (tmp_path / "claims.csv").read_text().splitlines()[0].split(",")
    assert header == claims.COLUMNS
    for column in ("margin", "margin_source", "p_holm", "n_to_decide"):
        assert column in header
    with pytest.raises(ValueError, match="lacks the columns"):
        claims.write_claims(tmp_path / "bad.csv", [{"claim": "x"}])


def test_power_table_costs_the_seeds_to_add(tmp_path, capsys):
    from neurips26 import cli
    from neurips26.core import power
    from neurips26.core.io import write_csv

    bench = tmp_path / "results" / "p" / "benchmarks" / "train"
    bench.mkdir(parents=True)
    for seed, secs in ((0, 10.0), (1, 14.0), (2, 12.0)):
        (bench / f"a_seed{seed}.tsv").write_text(f"s\th:m:s\n{secs}\t0:00:10\n")
    (bench / "shared.tsv").write_text("s\th:m:s\n100\t0:01:40\n")  # not a seed's job
    row = decide(entry("a", margin=0.1), [2.1, 1.0, 3.2], [2.0, 1.3, 3.4])
    assert row["reproduced"] == "inconclusive"
    write_csv(tmp_path / "summary.csv", [row], claims.COLUMNS)
    entries = power.table([row], tmp_path / "results")
    need = int(row["n_to_decide"])
    assert entries == [{"paper": "p", "id": "a", "claim": "claim a", "n": 3, "n_to_decide": need,
                        "add_seeds": need - 3, "job_seconds": pytest.approx(12.0 * (need - 3)),
                        "replicates_are_seeds": True}]
    assert cli.main(["power", "--summary", str(tmp_path / "summary.csv"), "--results", str(tmp_path / "results")]) == 0
    assert f"| p | a | 3 | {need} |" in capsys.readouterr().out
    # a row whose replicates are blocks of days is not priced by a seed's cost
    stocks = next(e for e in claims.load_spec("acopula") if e["kind"] == "comparison"
                  and "seed" not in e["replicate"])
    blocks = dict(row, paper="acopula", id=stocks["id"])
    (tmp_path / "results" / "acopula" / "benchmarks").mkdir(parents=True)
    (tmp_path / "results" / "acopula" / "benchmarks" / "simulate_seed0.tsv").write_text("s\n3.0\n")
    priced = power.table([blocks], tmp_path / "results")[0]
    assert not priced["replicates_are_seeds"] and priced["job_seconds"] != priced["job_seconds"]
    assert "replicates are not seeds" in power.markdown([priced])
