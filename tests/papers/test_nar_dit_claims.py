"""nar_dit's claims rows: every row says `no` (checks `fail`) on metrics where its claim is false
and `yes` (`pass`) where it holds."""

import math

import pytest

from neurips26.papers.nar_dit.claims import claim_rows, steps_to_reach

STEPS = list(range(100, 801, 100))
JITTER = (-0.01, 0.0, 0.01)  # three seeds, a small relative spread


def dit_curve(step):
    return 100 - step / 10  # 90 at step 100 down to 20 at step 800


def regime(final, sens, gap, curve_at_400, gap_items=40):
    """Three seeds around the given values; the curve falls linearly through `curve_at_400`."""
    out = {"fd": [], "final_fd": [], "route_sensitivity_high": [], "mean_generalization_gap": [], "gap_items": []}
    for j in JITTER:
        out["fd"].append([(curve_at_400 + (400 - s) / 20) * (1 + j) for s in STEPS])
        out["final_fd"].append(final * (1 + j))
        out["route_sensitivity_high"].append(sens * (1 + j))
        out["mean_generalization_gap"].append(gap * (1 + j))
        # per-item gaps spread around the seed's mean
        out["gap_items"].append([gap * (1 + j) + 0.002 * ((i % 5) - 2) for i in range(gap_items)])
    return out


SIZES = [2e4, 1.5e5, 1.1e6]


def size_study(deficit_slope):
    """Per seed, routed / DiT - 1 = 0.3 + slope * log10(params / 2e4) plus a little seed noise."""
    dit = [[60.0, 45.0, 40.0] for _ in JITTER]
    routed = [[d * (1 + 0.3 + deficit_slope * math.log10(p / 2e4) + j) for d, p in zip(row, SIZES)]
              for row, j in zip(dit, JITTER)]
    return {"variants": ["dit", "tread", "nar"], "sizes": ["xs", "s", "default"], "params": SIZES,
            "steps": [200, 400, 800], "fd": {"dit": dit, "tread": routed, "nar": routed}, "extrapolate_params": 675e6}


def summary(nar, tread=None, inverted=None, dit_sens=0.1):
    dit = {"fd": [[dit_curve(s) * (1 + j) for s in STEPS] for j in JITTER],
           "final_fd": [20 * (1 + j) for j in JITTER],
           "route_sensitivity_high": [dit_sens * (1 + j) for j in JITTER],
           "mean_generalization_gap": [0.08] * 3, "gap_items": [[0.08] * 40] * 3}
    base = dict(final=30.0, sens=0.002, gap=0.065, curve_at_400=60.0)
    return {"fd_name": "FD_cls", "steps": STEPS, "reference_step": 400, "holds_fixed": "the images",
            "regimes": {"dit": dit, "nar": regime(**nar), "tread": regime(**(tread or base)),
                        "nar_inverted": regime(**(inverted or base))},
            # guided sampling: better than unguided where NAR's other claims hold, worse where they fail
            "guided": {"scale": 1.5, "regimes": {"nar": [f * (0.7 if nar["final"] < 30 else 1.3)
                                                         for f in regime(**nar)["final_fd"]]}},
            "size_study": size_study(-0.1 if nar["final"] < 30 else 0.1)}


GOOD = dict(final=15.0, sens=0.0008, gap=0.05, curve_at_400=30.0)  # every claim holds
BAD = dict(final=40.0, sens=0.004, gap=0.08, curve_at_400=85.0)  # every claim fails


def verdicts(s):
    return {r["claim"]: r["reproduced"] for r in claim_rows(s, "default")}


def test_every_row_says_yes_where_its_claim_holds():
    v = verdicts(summary(GOOD, tread=dict(final=30.0, sens=0.002, gap=0.065, curve_at_400=35.0)))
    assert set(v.values()) == {"yes", "pass"}, v
    assert len(v) == 13


def test_every_row_says_no_where_its_claim_fails():
    # TREAD slower than DiT, and more route-sensitive than DiT: the sanity check fails too
    v = verdicts(summary(BAD, tread=dict(final=30.0, sens=0.002, gap=0.065, curve_at_400=85.0), dit_sens=0.001))
    assert set(v.values()) == {"no", "fail"}, v
    assert list(v.values()).count("fail") == 1


def test_speedup_follows_the_paper_definition():
    rows = {r["claim"]: r for r in claim_rows(summary(GOOD), "default")}
    row = rows["NAR converges faster than DiT"]
    # NAR's FD at step 400 is 30; DiT's curve reaches 30 at step 700: 700 / 400 = 1.75x
    assert float(row["effect"]) == pytest.approx(1.75, rel=0.02)
    assert row["kind"] == "target" and "the images" in row["criterion"]


def test_speedup_beyond_the_grid_is_untested():
    # NAR at 400 steps is better than DiT ever gets within 800 steps
    rows = {r["claim"]: r for r in claim_rows(summary(dict(GOOD, curve_at_400=10.0)), "default")}
    row = rows["NAR converges faster than DiT"]
    assert row["reproduced"] == "untested"
    assert "speedup beyond the measurable 2x" in row["criterion"]


def test_steps_to_reach_interpolates_and_flags_the_edges():
    assert steps_to_reach([100, 200, 300], [50.0, 40.0, 30.0], 35.0) == (250.0, "ok")
    assert steps_to_reach([100, 200, 300], [50.0, 40.0, 30.0], 60.0) == (100.0, "first")
    value, status = steps_to_reach([100, 200, 300], [50.0, 40.0, 30.0], 20.0)
    assert math.isnan(value) and status == "never"


def test_missing_regimes_are_untested_not_dropped():
    s = summary(GOOD)
    del s["regimes"]["nar_inverted"]
    rows = {r["claim"]: r["reproduced"] for r in claim_rows(s, "default")}
    assert rows["more routing at high noise beats the inverted schedule"] == "untested"


def test_gap_rows_use_the_per_item_bootstrap():
    rows = [r for r in claim_rows(summary(GOOD), "default") if "gap" in r["claim"]]
    assert rows and all("paired bootstrap over 3 seeds x 40 items" in r["criterion"] for r in rows)


def test_size_rows_fit_the_deficit_slope_and_flag_one_seed():
    rows = {r["claim"]: r for r in claim_rows(summary(GOOD), "default")}
    row = rows["routing pays more as the model grows: nar's FD_cls deficit against DiT shrinks with size"]
    assert float(row["effect"]) == pytest.approx(-0.1, abs=1e-6)
    assert row["reproduced"] == "yes" and "675M params" in row["criterion"]
    one = summary(GOOD)
    one["size_study"]["fd"] = {k: v[:1] for k, v in one["size_study"]["fd"].items()}
    rows = {r["claim"]: r["reproduced"] for r in claim_rows(one, "default")}
    assert rows[row["claim"]] == "untested"


def test_guided_row_compares_guided_with_unguided_nar_and_is_untested_without_it():
    rows = {r["claim"]: r for r in claim_rows(summary(GOOD), "default")}
    row = rows["classifier-free guidance improves NAR's sample quality (the paper's guided FID)"]
    assert row["method"] == "nar_cfg1.5" and row["baseline"] == "nar_unguided" and row["reproduced"] == "yes"
    s = summary(GOOD)
    del s["guided"]
    assert {r["claim"]: r["reproduced"] for r in claim_rows(s, "default")}[row["claim"]] == "untested"


def test_mechanism_rows_compare_nar_with_tread_and_the_inverted_schedule_and_can_say_no():
    """What is specific to NAR: NAR against TREAD and the inverted schedule (same mean ratio);
    a NAR more route-sensitive than both gets `no` on both rows, with TREAD and inverted as
    baselines."""
    s = summary(dict(GOOD, sens=0.01), tread=dict(final=30.0, sens=0.002, gap=0.065, curve_at_400=35.0))
    rows = [r for r in claim_rows(s, "default") if "route sensitivity" in r["claim"] and r["kind"] == "comparison"]
    assert {r["baseline"] for r in rows} == {"tread", "nar_inverted"}
    assert {r["reproduced"] for r in rows} == {"no"}
