"""adap claims rows (claims.yaml + claims.py): each says `no` (`fail`) on metrics where its claim is
false and `yes` (`pass`) where it holds; the derived-constant row is a check (the baselines stay
within the bound too); the tuned fixed best-of-n scored against the constant-factor band is the
null control of that row."""

import numpy as np

from neurips26.core import claims as core
from neurips26.papers.adap.claims import BOUND, claim_rows

RATIOS = [1, 3, 10, 30, 100]
COMPARISONS = [f"{v}_vs_{b}_{e}" for v in ("mono", "lm", "lm_rm") for b in ("fixed", "difficulty") for e in ("low", "high")]


def items(level, growth=0.0, seeds=3, prompts=12, seed=0):
    """cost / optimum per prompt: level * ratio**growth, with prompt-to-prompt noise."""
    rng = np.random.default_rng(seed)
    return [[list(level * r ** growth * (1 + 0.05 * rng.standard_normal(prompts))) for r in RATIOS]
            for _ in range(seeds)]


def variant(success, adap, fixed_n, difficulty, label=None):
    return {"label": label or success, "success": success, "holds_fixed": "", "cost_ratios": RATIOS,
            "items": {"adap": adap, "fixed_n": fixed_n, "difficulty": difficulty}}


def summary(adap_mono=None, adap_non=None, adap_lm=None, fixed_mono=None):
    return {"monotone": variant("monotone", adap_mono or items(1.3, seed=1), fixed_mono or items(2.0, 0.1, seed=2),
                                items(2.2, seed=3)),
            "nonmonotone": variant("nonmonotone", adap_non or items(1.3, 0.8, seed=4), items(1.6, seed=5),
                                   items(1.7, seed=6)),
            "lm": variant("lm", adap_lm or items(1.2, seed=7), items(1.5, seed=8), items(1.8, seed=9)),
            "lm_rm": variant("lm", adap_lm or items(1.2, seed=10), items(1.5, seed=11), items(1.8, seed=12))}


def by_id(s, scale="default"):
    return {r["id"]: r for r in claim_rows(s, scale)}


def test_every_entry_of_the_yaml_is_a_row():
    assert list(by_id(summary())) == [e["id"] for e in core.load_spec("adap")]


def test_the_check_tolerance_is_the_derived_constant():
    spec = {e["id"]: e for e in core.load_spec("adap")}
    assert abs(spec["mono_within_bound"]["tolerance"] - BOUND) < 0.05


def test_adap_against_both_baselines():
    rows = by_id(summary())
    assert {rows[i]["reproduced"] for i in COMPARISONS} == {"yes"}, [(i, rows[i]["reproduced"]) for i in COMPARISONS]
    # ADAP worse than both baselines at every cost ratio
    rows = by_id(summary(adap_mono=items(4.0, seed=1), adap_lm=items(2.5, seed=7)))
    assert {rows[i]["reproduced"] for i in COMPARISONS} == {"no"}
    assert "reversed" in rows["mono_vs_fixed_low"]["criterion"]


def test_a_missing_variant_leaves_its_rows_untested():
    s = summary()
    del s["lm_rm"]
    rows = by_id(s)
    assert all(rows[f"lm_rm_vs_{b}_{e}"]["reproduced"] == "untested" for b in ("fixed", "difficulty") for e in ("low", "high"))


def test_constant_factor_is_a_flat_ratio_across_cost_ratios():
    rows = by_id(summary())
    assert rows["mono_constant_factor"]["reproduced"] == "yes"
    assert rows["fixed_constant_null"]["reproduced"] == "no"  # the tuned fixed n drifts (slope 0.1)
    assert "t interval over 3 replicates" in rows["mono_constant_factor"]["criterion"]
    growing = by_id(summary(adap_mono=items(1.3, 0.3, seed=1)))
    assert growing["mono_constant_factor"]["reproduced"] == "no"


def test_a_flat_baseline_keeps_the_constant_factor_row_from_saying_yes():
    """The null control: when the tuned fixed best-of-n is as flat as ADAP, the row cannot say yes."""
    rows = by_id(summary(fixed_mono=items(2.0, seed=2)))
    assert rows["fixed_constant_null"]["reproduced"] == "yes"
    assert rows["mono_constant_factor"]["reproduced"] == "untested"
    assert "fixed_constant_null" in rows["mono_constant_factor"]["criterion"]


def test_monotonicity_check_fails_when_the_non_monotone_instance_does_not_hurt():
    assert by_id(summary())["nonmonotone_construction"]["reproduced"] == "pass"
    assert by_id(summary(adap_non=items(1.4, seed=4)))["nonmonotone_construction"]["reproduced"] == "fail"


def test_derived_constant_is_a_check_that_fails_above_the_bound():
    row = by_id(summary())["mono_within_bound"]
    assert row["kind"] == "check" and row["reproduced"] == "pass"
    assert "baselines stay within it too" in row["criterion"]
    # one prompt at one cost ratio far above the bound is enough to break "every prompt and cost ratio"
    spiked = items(1.3, seed=1)
    spiked[1][4][3] = 150.0
    assert by_id(summary(adap_mono=spiked))["mono_within_bound"]["reproduced"] == "fail"


def test_fewer_than_three_seeds_is_untested():
    s = summary(adap_mono=items(1.3, seeds=2, seed=1))
    for k in ("fixed_n", "difficulty"):
        s["monotone"]["items"][k] = s["monotone"]["items"][k][:2]
    rows = by_id(s)
    assert all(rows[f"mono_vs_{b}_{e}"]["reproduced"] == "untested" for b in ("fixed", "difficulty") for e in ("low", "high"))
    assert rows["mono_constant_factor"]["reproduced"] == "untested"


def test_a_capped_baseline_keeps_a_row_from_saying_yes():
    s = summary()
    assert by_id(s)["mono_vs_fixed_high"]["reproduced"] == "yes"
    s["monotone"]["capped"] = {"fixed_n": ["", "", "", "", "fixed best-of-n's n = 1024 on the high edge"],
                               "difficulty": [""] * 5}
    assert by_id(s)["mono_vs_fixed_high"]["reproduced"] != "yes"
