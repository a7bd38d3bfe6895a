"""sparse_halfspace claims rows say yes on metrics where the claims hold and no where they do not."""

from __future__ import annotations

import pytest

from neurips26.papers.sparse_halfspace.claims import BASELINES, claim_rows

DIMS, SIZES, RATES = [64, 1024], [100, 800], [0.0, 0.2]
ADVERSARIES = ["decoy", "boundary_flip"]
# clean error per method at (d, n) = (64, 800), (1024, 800), at the largest noise rate, at eta = 0
HOLDS = {"ours": (0.05, 0.06, 0.12, 0.05), "hinge_no_filter": (0.08, 0.2, 0.3, 0.05),
         "filter_dense": (0.1, 0.33, 0.28, 0.2), "l1_svm": (0.12, 0.17, 0.18, 0.1),
         "sparse_averaging": (0.1, 0.12, 0.3, 0.06), "svm": (0.13, 0.33, 0.27, 0.25),
         "averaging": (0.16, 0.34, 0.35, 0.3)}
# rows: beats baselines, sparsity, soft filter, attribute efficiency,
#       per adversary (robust, rises less than sparse averaging), exponent of s, of log d, lower bound
ROWS = 4 + 2 * len(ADVERSARIES) + 3


def _summary(table: dict, exponent_s=(1.1, 1.3, 1.2), exponent_log_d=(1.0, 2.0, 1.5), unreached=0) -> dict:
    jitter = (-0.004, 0.0, 0.005)
    error, sweep, growth = {}, {k: {} for k in ADVERSARIES}, {}
    for m, (small, large, noisy, clean) in table.items():
        error[m] = {str(d): {str(n): [v + j for j in jitter] for n in SIZES}
                    for d, v in ((DIMS[0], small), (DIMS[1], large))}
        for k in ADVERSARIES:
            sweep[k][m] = {str(r): [(noisy if r else clean) + j * (1 + r) for j in jitter] for r in RATES}
        growth[m] = [error[m][str(DIMS[1])]["800"][s] / error[m][str(DIMS[0])]["800"][s] for s in range(3)]
    return {"dims": DIMS, "sample_sizes": SIZES, "noise_rates": RATES, "noise_rate": 0.1, "error": error,
            "adversaries": ADVERSARIES, "noise_sweep_error": sweep, "error_growth_smallest_to_largest_d": growth,
            "noise_sweep_d": 256, "noise_sweep_n": 400,
            "complexity": {"exponent_s": list(exponent_s), "exponent_log_d": list(exponent_log_d),
                           "unreached": unreached, "cells": 27}}


def _verdicts(table, **kw):
    rows = claim_rows(_summary(table, **kw), "test")
    assert len(rows) == ROWS
    return [r["reproduced"] for r in rows]


def test_every_row_holds_where_the_claims_hold():
    assert _verdicts(HOLDS) == ["yes"] * (ROWS - 1) + ["untested"]


def test_no_config_value_in_the_keys():
    rows = claim_rows(_summary(HOLDS), "test")
    for r in rows:
        for key in ("claim", "metric", "baseline"):
            assert "1024" not in r[key] and "800" not in r[key] and "0.2" not in r[key], r[key]


@pytest.mark.parametrize("baseline", BASELINES)
def test_beating_the_baselines_fails_when_any_baseline_is_better(baseline):
    table = dict(HOLDS)
    table[baseline] = (0.1, 0.03, 0.3, 0.05)
    assert _verdicts(table)[0] == "no"


def test_sparsity_row_fails_when_the_dense_filter_is_as_good():
    table = dict(HOLDS)
    table["filter_dense"] = (0.1, 0.04, 0.28, 0.2)
    assert _verdicts(table)[1] == "no"


def test_soft_filter_row_fails_when_the_ablation_is_as_good():
    table = dict(HOLDS)
    table["hinge_no_filter"] = (0.05, 0.04, 0.3, 0.05)
    assert _verdicts(table)[2] == "no"


def test_attribute_efficiency_fails_when_our_error_grows_faster_with_d():
    table = dict(HOLDS)
    table["ours"] = (0.01, 0.06, 0.12, 0.05)  # 6x growth against the dense filter's 3.3x
    verdicts = _verdicts(table)
    assert verdicts[3] == "no" and verdicts[0] == "yes"


def test_robustness_fails_when_a_baseline_is_better_at_the_largest_noise_rate():
    table = dict(HOLDS)
    table["l1_svm"] = (0.12, 0.17, 0.08, 0.1)
    verdicts = _verdicts(table)
    assert verdicts[4] == "no" and verdicts[6] == "no"


def test_rise_with_noise_fails_when_ours_rises_more_than_sparse_averaging():
    table = dict(HOLDS)
    table["ours"] = (0.05, 0.06, 0.12, 0.0)          # rises by 0.12
    table["sparse_averaging"] = (0.1, 0.12, 0.3, 0.25)  # rises by 0.05
    verdicts = _verdicts(table)
    assert verdicts[5] == "no" and verdicts[7] == "no"


def test_exponent_rows_fail_above_the_bound_and_are_untested_when_cells_are_censored():
    verdicts = _verdicts(HOLDS, exponent_s=(2.6, 2.8, 2.7), exponent_log_d=(6.0, 6.5, 6.2))
    assert verdicts[8] == "no" and verdicts[9] == "no"
    assert _verdicts(HOLDS, unreached=2)[8:10] == ["untested", "untested"]
