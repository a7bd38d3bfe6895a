"""fedaba claims rows: `no` (`fail`) on metrics where a claim is false, `yes` (`pass`) where it
holds; `untested` when the generative regime control fails; the prefix-stability rows are checks
(the full-rotation gauge minimises that distance), the lowest-rank accuracy is the claim; each
reading of gauge fixing has its own rows."""

import pytest

from neurips26.papers.fedaba.claims import claim_rows

AGGS = ("fedaba", "cafd", "flexlora", "hetlora", "zeropad", "flora")


def summary(strong_gain=0.05, uniform_gain=0.0, prefix_ours=0.1, prefix_cafd=0.3, prefix_flex=None, low_ours=0.6,
            low_cafd=0.5, svd=1e-15, gauge=1e-15, order_gain=-0.05, proj_gain=0.05, low_order=0.4, low_proj=0.6):
    def accs(base, ours_gain):
        out = {a: [base + 0.01 * s for s in range(3)] for a in AGGS}
        out["fedaba"] = [base + ours_gain + 0.01 * s + 0.001 * (-1) ** s for s in range(3)]
        out["fedaba_svd"] = [base + order_gain + 0.01 * s - 0.001 * (-1) ** s for s in range(3)]
        out["fedaba_proj"] = [base + proj_gain + 0.01 * s + 0.002 * (-1) ** s for s in range(3)]
        return out
    flex = prefix_cafd if prefix_flex is None else prefix_flex
    return {"strong": "strong", "uniform": "uniform", "alpha": "0.1", "low_rank": 2,
            "acc": {"strong": {"0.1": accs(0.5, strong_gain)}, "uniform": {"0.1": accs(0.5, uniform_gain)}},
            "acc_low": {"strong": {"0.1": {"fedaba": [low_ours + 0.01 * s for s in range(3)],
                                           "fedaba_svd": [low_order + 0.01 * s - 0.001 * (-1) ** s for s in range(3)],
                                           "fedaba_proj": [low_proj + 0.01 * s + 0.001 * (-1) ** s for s in range(3)],
                                           "cafd": [low_cafd + 0.01 * s + 0.002 * (-1) ** s for s in range(3)]}}},
            "prefix": {"strong": {"0.1": {"fedaba": [prefix_ours + 0.01 * s for s in range(3)],
                                          "cafd": [prefix_cafd + 0.01 * s + 0.002 * (-1) ** s for s in range(3)],
                                          "flexlora": [flex + 0.01 * s - 0.001 * (-1) ** s for s in range(3)]}}},
            "checks": {"svd_rel_err": svd, "gauge_rel_err": gauge},
            # the tune step's validation choices
            "strongest": {"strong": "flexlora", "uniform": "flexlora", "strong_lm": "flexlora"}}


def by_id(rows):
    return {r["id"]: r for r in rows}


def verdicts(rows, prefix):
    return {r["reproduced"] for r in rows if r["id"].startswith(prefix)}


def test_outperforms_baselines():
    rows = claim_rows(summary(), "default")
    assert verdicts(rows, "beats_") == {"yes"} and len([r for r in rows if r["id"].startswith("beats_")]) == 4
    assert verdicts(claim_rows(summary(strong_gain=-0.05), "default"), "beats_") == {"no"}


def test_largest_gain_at_strongest_heterogeneity():
    assert by_id(claim_rows(summary(strong_gain=0.05, uniform_gain=0.0), "default"))[
        "gain_grows_with_heterogeneity"]["reproduced"] == "yes"
    assert by_id(claim_rows(summary(strong_gain=0.0, uniform_gain=0.05), "default"))[
        "gain_grows_with_heterogeneity"]["reproduced"] == "no"


def test_prefix_stability_is_a_check_not_a_claim():
    """The distance is what the full-rotation gauge minimises: a check (pass when FedAbA's prefix moves less
    than CAFD's on every seed), never a `yes` for the claim; a prefix that is stable while the lowest-rank
    clients lose accuracy is a `pass` beside a `no`."""
    rows = by_id(claim_rows(summary(), "default"))
    assert rows["prefix_stability"]["kind"] == "check" and rows["prefix_stability"]["reproduced"] == "pass"
    assert float(rows["prefix_stability"]["effect"]) == pytest.approx(0.1 - 0.3 + 0.002)
    rows = by_id(claim_rows(summary(prefix_ours=0.3), "default"))  # seed 1: 0.31 > CAFD's 0.308
    assert rows["prefix_stability"]["reproduced"] == "fail"
    rows = by_id(claim_rows(summary(prefix_ours=0.1, low_ours=0.4), "default"))
    assert rows["prefix_stability"]["reproduced"] == "pass" and rows["low_rank_accuracy"]["reproduced"] == "no"
    assert not {"prefix_null_flexlora", "lm_prefix_null_flexlora"} & set(rows)


def test_prefix_gap_against_a_brute_force_maximum():
    from neurips26.papers.fedaba.claims import prefix_gap

    ours, cafd = [0.1, 0.5, 0.2], [0.3, 0.4, 0.25]
    assert prefix_gap(ours, cafd) == pytest.approx(max(o - c for o, c in zip(ours, cafd)))
    assert prefix_gap([0.1, float("nan")], [0.2, 0.3]) is None and prefix_gap([0.1], [0.2, 0.3]) is None


def test_each_gauge_reading_has_its_rows():
    rows = by_id(claim_rows(summary(), "default"))  # strongest baseline on validation: FlexLoRA
    assert rows["reading_rotation"]["reproduced"] == "yes" and "FlexLoRA" in rows["reading_rotation"]["baseline"]
    assert rows["reading_order"]["reproduced"] == "no" and rows["reading_projection"]["reproduced"] == "yes"
    assert rows["low_rank_accuracy"]["reproduced"] == "yes"
    assert rows["low_rank_accuracy_order"]["reproduced"] == "no"
    assert rows["low_rank_accuracy_projection"]["reproduced"] == "yes"
    assert "order-preserving" in rows["reading_order"]["claim"] and "projection" in rows["reading_projection"]["claim"]
    s = summary()
    for d in (s["acc"]["strong"]["0.1"], s["acc_low"]["strong"]["0.1"]):
        del d["fedaba_proj"]
    rows = by_id(claim_rows(s, "default"))
    assert rows["reading_projection"]["reproduced"] == "untested"
    assert rows["low_rank_accuracy_projection"]["reproduced"] == "untested"
    assert rows["reading_order"]["reproduced"] == "no"


def test_low_rank_accuracy():
    assert by_id(claim_rows(summary(), "default"))["low_rank_accuracy"]["reproduced"] == "yes"
    assert by_id(claim_rows(summary(low_ours=0.4), "default"))["low_rank_accuracy"]["reproduced"] == "no"


def test_checks():
    assert by_id(claim_rows(summary(), "default"))["svd_refactorization"]["reproduced"] == "pass"
    assert by_id(claim_rows(summary(svd=1e-3), "default"))["svd_refactorization"]["reproduced"] == "fail"
    assert by_id(claim_rows(summary(), "default"))["gauge_invariance"]["reproduced"] == "pass"
    assert by_id(claim_rows(summary(gauge=1e-2), "default"))["gauge_invariance"]["reproduced"] == "fail"


def lm_summary(gain=0.05, prefix_ours=0.1, prefix_cafd=0.3, level=0.3):
    aggs = ("fedaba", "cafd", "flexlora", "hetlora", "zeropad")
    acc = {a: [level + 0.01 * s for s in range(3)] for a in aggs}
    acc["fedaba"] = [level + gain + 0.01 * s + 0.001 * (-1) ** s for s in range(3)]
    prefix = {"fedaba": [prefix_ours + 0.01 * s for s in range(3)],
              "cafd": [prefix_cafd + 0.01 * s + 0.002 * (-1) ** s for s in range(3)],
              "flexlora": [prefix_cafd + 0.01 * s - 0.002 * (-1) ** s for s in range(3)]}
    acc_low = {a: [v - 0.05 for v in acc[a]] for a in aggs}
    return {**summary(), "lm": {"strong_lm": {"alpha": "0.1", "low_rank": 2, "acc": {"0.1": acc},
                                              "acc_low": {"0.1": acc_low}, "prefix": {"0.1": prefix}}}}


def test_generative_rows_can_say_no_and_yes():
    rows = by_id(claim_rows(lm_summary(), "default"))
    assert rows["lm_learns"]["reproduced"] == "yes"
    assert {rows[f"lm_beats_{b}"]["reproduced"] for b in ("hetlora", "flexlora", "zeropad")} == {"yes"}
    assert rows["lm_beats_flora"]["reproduced"] == "untested"  # FLoRA is not run on the generative profile
    assert rows["lm_prefix_stability"]["reproduced"] == "pass" and rows["lm_low_rank_accuracy"]["reproduced"] == "yes"
    no = by_id(claim_rows(lm_summary(gain=-0.05, prefix_ours=0.5), "default"))
    assert {no[f"lm_beats_{b}"]["reproduced"] for b in ("hetlora", "flexlora", "zeropad")} == {"no"}
    assert no["lm_prefix_stability"]["reproduced"] == "fail" and no["lm_low_rank_accuracy"]["reproduced"] == "no"


def test_generative_rows_are_untested_when_no_aggregator_learns():
    rows = by_id(claim_rows(lm_summary(level=0.01, gain=0.03), "default"))  # best 0.04..0.06: below the floor 0.1
    assert rows["lm_learns"]["reproduced"] == "no"
    for b in ("hetlora", "flexlora", "zeropad"):
        assert rows[f"lm_beats_{b}"]["reproduced"] == "untested"
        assert "regime control 'lm_learns'" in rows[f"lm_beats_{b}"]["criterion"]
    assert rows["lm_low_rank_accuracy"]["reproduced"] == "untested"
    assert rows["lm_prefix_stability"]["reproduced"] == "pass"  # a property of the factors: no regime


def test_gain_row_is_untested_without_a_validation_choice():
    s = summary()
    del s["strongest"]
    row = by_id(claim_rows(s, "default"))["gain_grows_with_heterogeneity"]
    assert row["reproduced"] == "untested" and "validation choice" in row["criterion"]


def test_a_capped_baseline_cannot_make_a_row_say_yes():
    s = summary()
    s["capped"] = {"strong": {"hetlora": "hetlora's lr = 0.3 on the high edge of its capped grid"}}
    rows = by_id(claim_rows(s, "default"))
    assert rows["beats_hetlora"]["reproduced"] == "inconclusive" and "capped grid" in rows["beats_hetlora"]["criterion"]
    assert rows["beats_flexlora"]["reproduced"] == "yes"
    s = summary(strong_gain=-0.05)
    s["capped"] = {"strong": {"fedaba": "fedaba's lr = 0.3 on the high edge of its capped grid"}}
    assert verdicts(claim_rows(s, "default"), "beats_") == {"inconclusive"}
