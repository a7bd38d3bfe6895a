"""sparse_halfspace claims rows say yes on metrics where the claims hold and no where they do not."""

from __future__ import annotations

import pytest

from neurips26.papers.sparse_halfspace.claims import BASELINES, claim_rows

DIMS, SIZES, RATES = [64, 1024], [100, 800], [0.0, 0.2]
# clean error per method at (d, n) = (64, 800), (1024, 800) and at the largest noise rate
HOLDS = {"ours": (0.05, 0.06, 0.12), "filter_dense": (0.1, 0.33, 0.28), "l1_svm": (0.12, 0.17, 0.18),
         "svm": (0.13, 0.33, 0.27), "averaging": (0.16, 0.34, 0.35)}


def _summary(table: dict) -> dict:
    jitter = (-0.004, 0.0, 0.005)
    error, sweep, growth = {}, {}, {}
    for m, (small, large, noisy) in table.items():
        error[m] = {str(d): {str(n): [v + j for j in jitter] for n in SIZES}
                    for d, v in ((DIMS[0], small), (DIMS[1], large))}
        sweep[m] = {str(r): [(noisy if r else 0.03) + j for j in jitter] for r in RATES}
        growth[m] = [error[m][str(DIMS[1])]["800"][s] / error[m][str(DIMS[0])]["800"][s] for s in range(3)]
    return {"dims": DIMS, "sample_sizes": SIZES, "noise_rates": RATES, "noise_rate": 0.1, "error": error,
            "noise_sweep_error": sweep, "error_growth_smallest_to_largest_d": growth,
            "noise_sweep_d": 256, "noise_sweep_n": 400}


def _verdicts(table):
    return [r["reproduced"] for r in claim_rows(_summary(table), "test")]


def test_every_row_holds_where_the_claims_hold():
    assert _verdicts(HOLDS) == ["yes", "yes", "yes", "yes", "untested"]


@pytest.mark.parametrize("baseline", BASELINES)
def test_beating_the_baselines_fails_when_any_baseline_is_better(baseline):
    table = dict(HOLDS)
    table[baseline] = (0.1, 0.03, 0.3)
    assert _verdicts(table)[0] == "no"


def test_sparsity_row_fails_when_the_dense_filter_is_as_good():
    table = dict(HOLDS)
    table["filter_dense"] = (0.1, 0.04, 0.28)
    assert _verdicts(table)[1] == "no"


def test_attribute_efficiency_fails_when_our_error_grows_faster_with_d():
    table = dict(HOLDS)
    table["ours"] = (0.01, 0.06, 0.12)  # 6x growth against the dense filter's 3.3x
    verdicts = _verdicts(table)
    assert verdicts[2] == "no" and verdicts[0] == "yes"


def test_robustness_fails_when_a_baseline_is_better_at_the_largest_noise_rate():
    table = dict(HOLDS)
    table["l1_svm"] = (0.12, 0.17, 0.08)
    assert _verdicts(table)[3] == "no"
