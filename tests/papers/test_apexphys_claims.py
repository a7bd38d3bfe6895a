"""apexphys's claims rows: every row says `no` on metrics where its claim is false and `yes` where
it holds; the per-clip items average to the domain-averaged MAE."""

import numpy as np
import pytest

from neurips26.papers.apexphys.claims import claim_rows, final_items

BASELINES = ("finetune", "ewc", "lwf", "replay")
ABLATIONS = ("apexphys_no_bcrp", "apexphys_no_hes", "apexphys_no_pgp")


def method(level, clips=20, seeds=3):
    """Every MAE metric near `level` bpm and the pulse SNR near 20 - `level` dB (a better method
    has both a lower MAE and a higher SNR), with a small spread over seeds and clips."""
    items = [[level + 0.05 * s + 0.5 * ((i % 5) - 2) for i in range(clips)] for s in range(seeds)]
    snr = [[20 - level - 0.05 * s + 0.5 * ((i % 3) - 1) for i in range(clips)] for s in range(seeds)]
    return {"bwt": [level / 4 + 0.05 * s for s in range(seeds)],
            "plasticity_mae": [level + 0.05 * s for s in range(seeds)],
            "final_mae": [float(np.mean(x)) for x in items], "final_items": items,
            "final_snr": [float(np.mean(x)) for x in snr], "snr_items": snr, "inherited_branches": [3, 0, 2]}


def summary(apexphys_level, others=10.0):
    methods = {v: method(others + 0.01 * k) for k, v in enumerate((*BASELINES, *ABLATIONS))}  # finetune is the strongest
    methods["joint"] = method(1.0)  # an upper bound, never the baseline
    methods["apexphys"] = method(apexphys_level)
    return {"methods": methods, "holds_fixed": ""}


def verdicts(s):
    return {r["claim"]: r["reproduced"] for r in claim_rows(s, "default")}


def test_every_row_says_yes_where_apexphys_is_better():
    v = verdicts(summary(6.0))
    assert len(v) == 7 and set(v.values()) == {"yes"}, v


def test_every_row_says_no_where_apexphys_is_worse():
    v = verdicts(summary(14.0))
    assert len(v) == 7 and set(v.values()) == {"no"}, v


def test_a_gain_below_half_a_bpm_is_inconclusive():
    v = verdicts(summary(9.8, others=10.0))
    assert set(v.values()) == {"inconclusive"}, v


def test_the_strongest_continual_baseline_is_chosen_per_metric_and_joint_is_not_one():
    rows = {r["claim"]: r for r in claim_rows(summary(6.0), "default")}
    assert rows["ApexPhys forgets less than continual-learning baselines"]["baseline"] == "finetune"
    assert "paired bootstrap over 3 seeds x 20 items" in rows["BCRP improves ApexPhys (ablation)"]["criterion"]


def test_the_snr_row_compares_against_the_baseline_with_the_highest_snr():
    s = summary(6.0)
    s["methods"]["replay"]["final_snr"] = [30.0, 30.1, 30.2]  # replay: the best SNR, so the row says no
    s["methods"]["replay"]["snr_items"] = [[30.0 + 0.1 * k] * 20 for k in range(3)]
    rows = {r["claim"]: r for r in claim_rows(s, "default")}
    row = rows["ApexPhys keeps the pulse waveform physiologically consistent across domains"]
    assert row["baseline"] == "replay" and row["reproduced"] == "no"


def test_the_pgp_row_is_untested_when_no_branch_was_ever_inherited():
    s = summary(6.0)
    s["methods"]["apexphys"]["inherited_branches"] = [0, 0, 0]
    v = verdicts(s)
    assert v["PGP improves ApexPhys (ablation)"] == "untested"
    assert v["HES improves ApexPhys (ablation)"] == "yes"
    s["methods"]["apexphys"]["inherited_branches"] = [0, 1, 0]
    assert verdicts(s)["PGP improves ApexPhys (ablation)"] == "yes"


def test_missing_methods_leave_rows_untested():
    s = summary(6.0)
    for v in ABLATIONS:
        del s["methods"][v]
    v = verdicts(s)
    assert v["HES improves ApexPhys (ablation)"] == "untested"


def test_final_items_average_to_the_domain_averaged_mae():
    evals = {"a": {"pred_hr": [60.0, 70.0], "gt_hr": [62.0, 70.0]},
             "b": {"pred_hr": [80.0, 90.0, 100.0, 110.0], "gt_hr": [80.0, 84.0, 100.0, 110.0]}}
    # domain MAEs 1.0 and 1.5: their mean, not the pooled 8 / 6
    assert np.mean(final_items(evals)) == pytest.approx(1.25)
    evals["a"]["snr"], evals["b"]["snr"] = [2.0, 4.0], [1.0, 1.0, 1.0, 1.0]
    assert np.mean(final_items(evals, "snr")) == pytest.approx((3.0 + 1.0) / 2)
