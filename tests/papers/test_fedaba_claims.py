"""fedaba claims rows: `no` (`fail`) on metrics where a claim is false, `yes` (`pass`) where it
holds; `untested` when the generative regime control fails; a prefix row cannot say `yes` when
FlexLoRA (no basis alignment) stabilises the prefix as well."""

from neurips26.papers.fedaba.claims import claim_rows

AGGS = ("fedaba", "cafd", "flexlora", "hetlora", "zeropad", "flora")


def summary(strong_gain=0.05, uniform_gain=0.0, prefix_ours=0.1, prefix_cafd=0.3, prefix_flex=None, low_ours=0.6,
            low_cafd=0.5, svd=1e-15, gauge=1e-15):
    def accs(base, ours_gain):
        out = {a: [base + 0.01 * s for s in range(3)] for a in AGGS}
        out["fedaba"] = [base + ours_gain + 0.01 * s + 0.001 * (-1) ** s for s in range(3)]
        return out
    flex = prefix_cafd if prefix_flex is None else prefix_flex
    return {"strong": "strong", "uniform": "uniform", "alpha": "0.1", "low_rank": 2,
            "acc": {"strong": {"0.1": accs(0.5, strong_gain)}, "uniform": {"0.1": accs(0.5, uniform_gain)}},
            "acc_low": {"strong": {"0.1": {"fedaba": [low_ours + 0.01 * s for s in range(3)],
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


def test_prefix_stability():
    rows = by_id(claim_rows(summary(), "default"))
    assert rows["prefix_null_flexlora"]["reproduced"] != "yes"  # FlexLoRA's prefix moves as CAFD's
    assert rows["prefix_stability"]["reproduced"] == "yes"
    assert by_id(claim_rows(summary(prefix_ours=0.4), "default"))["prefix_stability"]["reproduced"] == "no"


def test_prefix_stability_cannot_say_yes_when_flexlora_stabilises_it_too():
    rows = by_id(claim_rows(summary(prefix_flex=0.1), "default"))
    assert rows["prefix_null_flexlora"]["reproduced"] == "yes"
    assert rows["prefix_stability"]["reproduced"] == "untested"
    assert "null control 'prefix_null_flexlora'" in rows["prefix_stability"]["criterion"]


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
    return {**summary(), "lm": {"strong_lm": {"alpha": "0.1", "low_rank": 2, "acc": {"0.1": acc},
                                              "prefix": {"0.1": prefix}}}}


def test_generative_rows_can_say_no_and_yes():
    rows = by_id(claim_rows(lm_summary(), "default"))
    assert rows["lm_learns"]["reproduced"] == "yes"
    assert {rows[f"lm_beats_{b}"]["reproduced"] for b in ("hetlora", "flexlora", "zeropad")} == {"yes"}
    assert rows["lm_beats_flora"]["reproduced"] == "untested"  # FLoRA is not run on the generative profile
    assert rows["lm_prefix_stability"]["reproduced"] == "yes"
    no = by_id(claim_rows(lm_summary(gain=-0.05, prefix_ours=0.5), "default"))
    assert {no[f"lm_beats_{b}"]["reproduced"] for b in ("hetlora", "flexlora", "zeropad")} == {"no"}
    assert no["lm_prefix_stability"]["reproduced"] == "no"


def test_generative_rows_are_untested_when_no_aggregator_learns():
    rows = by_id(claim_rows(lm_summary(level=0.01, gain=0.03), "default"))  # best 0.04..0.06: below the floor 0.1
    assert rows["lm_learns"]["reproduced"] == "no"
    for b in ("hetlora", "flexlora", "zeropad"):
        assert rows[f"lm_beats_{b}"]["reproduced"] == "untested"
        assert "regime control 'lm_learns'" in rows[f"lm_beats_{b}"]["criterion"]
    assert rows["lm_prefix_stability"]["reproduced"] == "yes"  # a property of the factors: no regime


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
