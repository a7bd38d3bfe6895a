"""anchor_pca claims rows say yes on metrics where the claims hold and no where they do not."""

from __future__ import annotations

import pytest

from neurips26.papers.anchor_pca.claims import claim_rows

JITTER = (-0.01, 0.0, 0.012)


def _side(mean, worst, angle=None, domains=5):
    # per-domain shares spread around `mean`, the worst of them replaced by the per-seed worst share
    shares = [[mean + j + 0.02 * (d - domains // 2) for d in range(domains)] for j in JITTER]
    out = {"mean_share": [sum(s) / domains for s in shares], "worst_share": [worst + j for j in JITTER],
           "shares": shares}
    if angle is not None:
        out["angle_deg"] = [angle + 10 * j for j in JITTER]
    return out


def _summary(anchor=(0.33, 0.25, 4.0), pooled=(0.22, 0.09, 88.0), maximin=(0.24, 0.10, 82.0), unreplicated="",
             sweep=((30.0, 12.0, 3.0), (31.0, 11.0, 2.5), (29.0, 13.0, 3.5))):
    experiment = {"label": "toy", "holds_fixed": "", "unreplicated": unreplicated, "chosen_gamma": [2.0, 4.0, 2.0],
                  "anchor": _side(*anchor), "pooled": _side(*pooled), "maximin": _side(*maximin),
                  "sample_sweep": {"n": [25, 100, 400], "anchor_angle": [list(a) for a in sweep],
                                   "pooled_angle": [[80.0, 85.0, 88.0]] * 3}}
    return {"experiments": {"toy": experiment}}


def _verdicts(summary):
    return [r["reproduced"] for r in claim_rows(summary, "test")]


def test_every_row_holds_where_the_claims_hold():
    assert _verdicts(_summary()) == ["yes", "yes", "yes", "yes"]


def test_sharpening_fails_when_the_angle_grows_with_n():
    assert _verdicts(_summary(sweep=((3.0, 12.0, 30.0), (2.5, 11.0, 31.0), (3.5, 13.0, 29.0))))[1] == "no"


def test_no_config_value_in_the_keys():
    for r in claim_rows(_summary(), "test"):
        assert not any(ch.isdigit() for ch in r["claim"] + r["metric"] + r["baseline"]), r


def test_recovery_fails_when_the_angle_is_far_beyond_tolerance():
    assert _verdicts(_summary(anchor=(0.33, 0.25, 40.0)))[0] == "no"


@pytest.mark.parametrize("baseline", ["pooled", "maximin"])
def test_mean_share_fails_when_a_baseline_explains_more(baseline):
    better = {baseline: (0.40, 0.09, 80.0)}
    assert _verdicts(_summary(**better))[2] == "no"


@pytest.mark.parametrize("baseline", ["pooled", "maximin"])
def test_worst_share_fails_when_a_baseline_is_better_in_the_worst_case(baseline):
    better = {baseline: (0.22, 0.30, 80.0)}
    assert _verdicts(_summary(**better))[3] == "no"


def test_seeds_that_change_nothing_leave_the_rows_untested():
    assert _verdicts(_summary(unreplicated="one fixed split")) == ["untested"] * 4
