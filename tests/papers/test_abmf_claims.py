"""abmf claims rows (looked up by id) say yes/pass on metrics where the claims hold and no/fail where they
do not; the second-order rows count only certified points (small gradient, no negative curvature)."""

from __future__ import annotations

from neurips26.papers.abmf.claims import claim_rows

RATIOS = [0.3, 0.7, 0.9, 1.1, 1.5, 3.0]


def _point(asymmetry, gradient_norm=1e-14, min_eigenvalue=0.0, family="random"):
    return {"family": family, "gradient_norm": gradient_norm, "min_eigenvalue": min_eigenvalue, "hessian_norm": 10.0,
            "asymmetry": asymmetry, "size": 2.0, "objective_gap": -0.1 if asymmetry > 1e-4 else 0.0}


def _search(ratio, asymmetric, starts=12, diverged=0):
    """One seed's second-order search at one ratio: every converged start a certified point."""
    return {"ratio": ratio, "starts": starts, "diverged": diverged,
            "points": [_point(0.5 if asymmetric else 1e-12) for _ in range(starts - diverged)]}


def _summary(asymmetry_by_ratio, gap_by_ratio=None, sbmf_gap=1e-12, diverged_below=False, seeds=3):
    gap_by_ratio = gap_by_ratio or [(-0.1 if r < 1 else 1e-14) for r in RATIOS]
    problem = {"label": "toy", "reference": "closed form", "ratios": RATIOS,
               "asymmetry": [list(asymmetry_by_ratio) for _ in range(seeds)],
               "diverged": [[diverged_below and r < 1 for r in RATIOS] for _ in range(seeds)],
               "objective_gap": [list(gap_by_ratio) for _ in range(seeds)],
               "sbmf_gap": [sbmf_gap] * seeds,
               "critical": [[{"ratio": 1.1, "asymmetry": 1e-15, "gradient_norm": 1e-15, "size": 2.0},
                             {"ratio": 3.0, "asymmetry": 0.0, "gradient_norm": 1e-15, "size": 2.0},
                             {"ratio": 11.0, "asymmetry": 0.0, "gradient_norm": 1e-15, "size": 2.0},
                             {"ratio": 0.9, "asymmetry": 1.5, "gradient_norm": 1e-15, "size": 2.0}]
                            for _ in range(seeds)],
               "second_order": [[_search(r, asymmetric=(r < 1)) for r in RATIOS] for _ in range(seeds)],
               "zero_ratio": [2.0] * seeds, "apriori_ratio": [10.0] * seeds, "kkt": [1e-10] * seeds}
    return {"symmetric_tol": 1e-4, "objective_tol": 1e-6, "problems": {"psd_approximation": problem}}


HOLDS = [0.6, 0.4, 0.2, 1e-8, 1e-9, 1e-10]


def _rows(summary, scale="default"):
    return {r["id"][len("psd_"):]: r for r in claim_rows(summary, scale) if r["id"].startswith("psd_")}


def _verdicts(summary, scale="default"):
    rows = _rows(summary, scale)
    return [rows[k]["reproduced"] for k in ROWS]


# the rows of one problem (the toy problem stands in for psd_approximation)
ROWS = ["solver_symmetric", "objective", "critical_star", "critical_max", "critical_apriori", "kkt",
        "socp_below", "socp_above", "threshold"]
SOLVER_SYM, OBJECTIVE, CRIT_STAR, CRIT_MAX, CRIT_APRIORI, KKT, SOCP_BELOW, SOCP_ABOVE, THRESHOLD = range(9)


def test_all_rows_hold_when_symmetric_above_and_asymmetric_below():
    expected = ["pass", "pass", "pass", "pass", "pass", "pass", "yes", "yes", "yes"]
    assert _verdicts(_summary(HOLDS)) == expected
    # diverged runs below the threshold count as asymmetric
    assert _verdicts(_summary(HOLDS, diverged_below=True)) == expected


def test_symmetry_check_fails_on_an_asymmetric_run_above_the_threshold():
    summary = _summary(HOLDS)
    summary["problems"]["psd_approximation"]["asymmetry"][1][4] = 1e-3  # one seed at 1.5 gamma*
    verdicts = _verdicts(summary)
    assert verdicts[SOLVER_SYM] == "fail"
    # one seed's threshold lies in [1.5, 3], the others' in [0.9, 1.1]: not inside the band
    assert verdicts[THRESHOLD] == "inconclusive"
    # every seed asymmetric at 1.5: every bracket is [1.5, 3], outside the band
    for seed in summary["problems"]["psd_approximation"]["asymmetry"]:
        seed[4] = 1e-3
    assert _verdicts(summary)[THRESHOLD] == "no"


def test_a_diverged_run_above_the_threshold_fails_both_checks():
    summary = _summary(HOLDS)
    summary["problems"]["psd_approximation"]["diverged"][0][5] = True
    assert _verdicts(summary)[SOLVER_SYM] == "fail" and _verdicts(summary)[OBJECTIVE] == "fail"


def test_objective_check_fails_on_a_gap_above_tolerance_for_abmf_or_sbmf():
    gaps = [(-0.1 if r < 1 else 1e-14) for r in RATIOS]
    gaps[3] = 1e-4
    assert _verdicts(_summary(HOLDS, gap_by_ratio=gaps))[OBJECTIVE] == "fail"
    assert _verdicts(_summary(HOLDS, sbmf_gap=-1e-3))[OBJECTIVE] == "fail"


def test_threshold_target_says_no_when_symmetry_starts_far_below_gamma_star():
    # symmetric from 0.3 gamma* on: the derived threshold is not where exactness starts
    assert _verdicts(_summary([1e-8] * len(RATIOS)))[THRESHOLD] == "no"
    # symmetric already at 0.7: bracket [0.3, 0.7] lies below the band
    assert _verdicts(_summary([0.6, 1e-8, 1e-8, 1e-8, 1e-8, 1e-8]))[THRESHOLD] == "no"


def test_threshold_target_is_inconclusive_when_the_grid_is_too_coarse():
    summary = _summary(HOLDS)
    problem = summary["problems"]["psd_approximation"]
    keep = [0, 1, 4, 5]  # ratios 0.3, 0.7, 1.5, 3: the bracket [0.7, 1.5] straddles the band
    for key in ("asymmetry", "diverged", "objective_gap"):
        problem[key] = [[row[i] for i in keep] for row in problem[key]]
    problem["ratios"] = [RATIOS[i] for i in keep]
    assert _verdicts(summary)[THRESHOLD] == "inconclusive"


def _with_point(ratio, asymmetry=1.2, gradient_norm=1e-15):
    summary = _summary(HOLDS)
    summary["problems"]["psd_approximation"]["critical"][1].append(
        {"ratio": ratio, "asymmetry": asymmetry, "gradient_norm": gradient_norm, "size": 2.0})
    return _verdicts(summary)


def test_critical_point_checks_fail_on_an_asymmetric_critical_point_above_each_threshold():
    # above gamma* but below gamma_0 = 2 gamma*: only the gamma* reading fails
    v = _with_point(1.5)
    assert (v[CRIT_STAR], v[CRIT_MAX], v[CRIT_APRIORI]) == ("fail", "pass", "pass")
    # above max(gamma*, gamma_0) too
    v = _with_point(3.0)
    assert (v[CRIT_STAR], v[CRIT_MAX], v[CRIT_APRIORI]) == ("fail", "fail", "pass")
    # above the a-priori bound: the bound itself is contradicted
    assert _with_point(11.0)[CRIT_APRIORI] == "fail"
    # a point whose gradient is not small is no critical point and does not count
    assert _with_point(11.0, gradient_norm=1e-3)[CRIT_APRIORI] == "pass"


def test_critical_point_checks_are_untested_without_points_or_without_the_bound():
    summary = _summary(HOLDS)
    summary["problems"]["psd_approximation"]["critical"] = [[] for _ in range(3)]
    v = _verdicts(summary)
    assert (v[CRIT_STAR], v[CRIT_MAX], v[CRIT_APRIORI]) == ("untested",) * 3
    summary = _summary(HOLDS)
    summary["problems"]["psd_approximation"]["apriori_ratio"] = [float("inf")] * 3
    assert _verdicts(summary)[CRIT_APRIORI] == "untested"


def test_kkt_check_can_fail():
    summary = _summary(HOLDS)
    summary["problems"]["psd_approximation"]["kkt"][2] = 1e-3
    assert _verdicts(summary)[KKT] == "fail"


def test_no_speed_row_is_declared():
    # the abstract claims no speed: the wall time is measured (cost.png) but is no claims row
    assert not any(r["id"].endswith("_cost") for r in claim_rows(_summary(HOLDS), "default"))


def _second_order(summary):
    return summary["problems"]["psd_approximation"]["second_order"]


def test_second_order_claim_counts_certified_points_with_clopper_pearson():
    # 3 seeds x 3 ratios above gamma* x 12 certified symmetric points: 0/108, upper bound 0.034 < 0.05
    row = _rows(_summary(HOLDS))["socp_above"]
    assert row["reproduced"] == "yes" and row["method_value"] == "0/108" and row["interval"] == "[0, 0.0336]"
    # too few points to bound the share below 0.05: 0/36 has upper bound 0.097
    summary = _summary(HOLDS)
    for seed in _second_order(summary):
        seed[:] = [s for s in seed if s["ratio"] in (0.3, 0.7, 0.9, 1.1)]
    assert _rows(summary)["socp_above"]["reproduced"] == "inconclusive"


def test_asymmetric_second_order_points_above_gamma_star_fail_the_claim():
    # the old rows (solver speed, the solver's switch point) could not see these: a quarter of the
    # certified points above gamma* asymmetric -> the interval lies above 0.05
    summary = _summary(HOLDS)
    for seed in _second_order(summary):
        for srch in seed:
            if srch["ratio"] > 1:
                for c in srch["points"][:3]:
                    c["asymmetry"] = 0.7
    row = _rows(summary)["socp_above"]
    assert row["reproduced"] == "no" and row["method_value"] == "27/108"
    # a single asymmetric one is reported, the share is not bounded below 0.05 any more
    summary = _summary(HOLDS)
    _second_order(summary)[0][3]["points"][0]["asymmetry"] = 0.7
    row = _rows(summary)["socp_above"]
    assert row["method_value"] == "1/108" and row["reproduced"] == "inconclusive"


def test_only_certified_points_count():
    # asymmetric saddles (negative curvature) and non-critical points above gamma* are not second-order critical
    summary = _summary(HOLDS)
    for seed in _second_order(summary):
        for srch in seed:
            if srch["ratio"] > 1:
                srch["points"] += [_point(0.7, min_eigenvalue=-1e-2, family="(u, -u)"),
                                   _point(0.7, gradient_norm=1e-5, family="S != 0")]
    row = _rows(summary)["socp_above"]
    assert row["reproduced"] == "yes" and row["method_value"] == "0/108"
    # a curvature of -1e-6 x ||Hessian|| is round-off, within the certificate
    _second_order(summary)[0][4]["points"].append(_point(0.7, min_eigenvalue=-5e-6))
    assert _rows(summary)["socp_above"]["method_value"] == "1/109"


def test_second_order_claim_is_untested_when_the_regime_fails():
    # every start below gamma* diverges (F unbounded below, as on MaxCut): no certified point, regime
    # untested, claim untested
    summary = _summary(HOLDS)
    for seed in _second_order(summary):
        for srch in seed:
            if srch["ratio"] < 1:
                srch.update(diverged=12, points=[])
    rows = _rows(summary)
    assert rows["socp_below"]["reproduced"] == "untested" and "diverged" in rows["socp_below"]["criterion"]
    assert rows["socp_above"]["reproduced"] == "untested" and "socp_below" in rows["socp_above"]["criterion"]
    # the search finds only symmetric points below gamma*: it cannot find asymmetric ones, the regime reads no
    summary = _summary(HOLDS)
    for seed in _second_order(summary):
        for srch in seed:
            for c in srch["points"]:
                c["asymmetry"] = 1e-12
    rows = _rows(summary)
    assert rows["socp_below"]["reproduced"] == "no" and rows["socp_above"]["reproduced"] == "untested"


def test_left_out_problems_and_unreachable_scales_are_untested():
    rows = {r["id"]: r for r in claim_rows(_summary(HOLDS), "default")}
    assert rows["sensing_socp_above"]["reproduced"] == "untested" and rows["maxcut_kkt"]["reproduced"] == "untested"
    assert "leaves out the matrix_sensing problem" in rows["sensing_socp_above"]["criterion"]
    # a scale that cannot reach the claims: the targets are untested, checks still run
    v = _verdicts(_summary(HOLDS), scale="test")
    assert v[SOCP_ABOVE] == "untested" and v[THRESHOLD] == "untested" and v[KKT] == "pass"
    # a run without the second-order search says so
    summary = _summary(HOLDS)
    summary["problems"]["psd_approximation"]["second_order"] = [[] for _ in range(3)]
    row = _rows(summary)["socp_above"]
    assert row["reproduced"] == "untested" and "second_order" in row["criterion"]


def test_threshold_interval_covers_seeds_that_disagree():
    # one seed switches at [0.9, 1.1], one at [1.1, 1.5], one at [1.5, 3]: the midpoints 1, 1.3, 2.25
    # disagree, so the interval over seeds leaves the band: not yes
    summary = _summary(HOLDS)
    asym = summary["problems"]["psd_approximation"]["asymmetry"]
    asym[1] = [0.6, 0.4, 0.2, 0.1, 1e-9, 1e-10]
    asym[2] = [0.6, 0.4, 0.2, 0.1, 0.1, 1e-10]
    row = _rows(summary)["threshold"]
    assert row["reproduced"] != "yes"
    assert row["n"] == 3 and "[0.9, 1.1]; [1.1, 1.5]; [1.5, 3]" in row["criterion"]
