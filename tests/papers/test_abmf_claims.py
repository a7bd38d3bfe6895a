"""abmf claims rows say yes/pass on metrics where the claims hold and no/fail where they do not."""

from __future__ import annotations

from neurips26.papers.abmf.claims import claim_rows

RATIOS = [0.3, 0.7, 0.9, 1.1, 1.5, 3.0]


def _summary(asymmetry_by_ratio, gap_by_ratio=None, sbmf_gap=1e-12, diverged_below=False, seeds=3):
    gap_by_ratio = gap_by_ratio or [(-0.1 if r < 1 else 1e-14) for r in RATIOS]
    problem = {"label": "toy", "reference": "closed form", "ratios": RATIOS,
               "asymmetry": [list(asymmetry_by_ratio) for _ in range(seeds)],
               "diverged": [[diverged_below and r < 1 for r in RATIOS] for _ in range(seeds)],
               "objective_gap": [list(gap_by_ratio) for _ in range(seeds)],
               "sbmf_gap": [sbmf_gap] * seeds}
    return {"symmetric_tol": 1e-4, "objective_tol": 1e-6, "problems": {"toy": problem}}


HOLDS = [0.6, 0.4, 0.2, 1e-8, 1e-9, 1e-10]


def _verdicts(summary):
    return [r["reproduced"] for r in claim_rows(summary, "test")]


def test_all_rows_hold_when_symmetric_above_and_asymmetric_below():
    assert _verdicts(_summary(HOLDS)) == ["pass", "pass", "yes"]
    # diverged runs below the threshold count as asymmetric
    assert _verdicts(_summary(HOLDS, diverged_below=True)) == ["pass", "pass", "yes"]


def test_symmetry_check_fails_on_an_asymmetric_run_above_the_threshold():
    summary = _summary(HOLDS)
    summary["problems"]["toy"]["asymmetry"][1][4] = 1e-3  # one seed at 1.5 gamma*
    verdicts = _verdicts(summary)
    assert verdicts[0] == "fail"
    # the asymmetric run sits at 1.5: the empirical threshold lies in [1.5, 3], outside the band
    assert verdicts[2] == "no"


def test_a_diverged_run_above_the_threshold_fails_both_checks():
    summary = _summary(HOLDS)
    summary["problems"]["toy"]["diverged"][0][5] = True
    assert _verdicts(summary)[:2] == ["fail", "fail"]


def test_objective_check_fails_on_a_gap_above_tolerance_for_abmf_or_sbmf():
    gaps = [(-0.1 if r < 1 else 1e-14) for r in RATIOS]
    gaps[3] = 1e-4
    assert _verdicts(_summary(HOLDS, gap_by_ratio=gaps))[1] == "fail"
    assert _verdicts(_summary(HOLDS, sbmf_gap=-1e-3))[1] == "fail"


def test_threshold_target_says_no_when_symmetry_starts_far_below_gamma_star():
    # symmetric from 0.3 gamma* on: the derived threshold is not where exactness starts
    assert _verdicts(_summary([1e-8] * len(RATIOS)))[2] == "no"
    # symmetric already at 0.7: bracket [0.3, 0.7] lies below the band
    assert _verdicts(_summary([0.6, 1e-8, 1e-8, 1e-8, 1e-8, 1e-8]))[2] == "no"


def test_threshold_target_is_inconclusive_when_the_grid_is_too_coarse():
    summary = _summary(HOLDS)
    problem = summary["problems"]["toy"]
    keep = [0, 1, 4, 5]  # ratios 0.3, 0.7, 1.5, 3: the bracket [0.7, 1.5] straddles the band
    for key in ("asymmetry", "diverged", "objective_gap"):
        problem[key] = [[row[i] for i in keep] for row in problem[key]]
    problem["ratios"] = [RATIOS[i] for i in keep]
    assert _verdicts(summary)[2] == "inconclusive"
