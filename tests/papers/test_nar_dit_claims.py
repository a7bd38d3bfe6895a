"""nar_dit's claims rows (looked up by id): every claim row says `no` (checks `fail`) on metrics
where its claim is false and `yes` (`pass`) where it holds; the NAR-vs-DiT and NAR-vs-TREAD speed
and quality rows are untested where TREAD does not converge faster than DiT (their regime)."""

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


FAST_TREAD = dict(final=30.0, sens=0.002, gap=0.065, curve_at_400=35.0)  # DiT reaches 35 at step 650: 1.6x
SLOW_TREAD = dict(final=30.0, sens=0.002, gap=0.065, curve_at_400=85.0)  # DiT reaches 85 at step 150: 0.4x
GOOD = dict(final=15.0, sens=0.0008, gap=0.05, curve_at_400=30.0)  # every claim holds
BAD = dict(final=40.0, sens=0.004, gap=0.08, curve_at_400=85.0)  # every claim fails


def summary(nar, tread=None, inverted=None, dit_sens=0.1, guided_nar=None, guided_dit=0.9):
    """`guided_nar`, `guided_dit`: guided / unguided final FD per regime (default: NAR 0.7 where
    its claims hold, 1.3 where they fail)."""
    dit = {"fd": [[dit_curve(s) * (1 + j) for s in STEPS] for j in JITTER],
           "final_fd": [20 * (1 + j) for j in JITTER],
           "route_sensitivity_high": [dit_sens * (1 + j) for j in JITTER],
           "mean_generalization_gap": [0.08] * 3, "gap_items": [[0.08] * 40] * 3}
    base = dict(final=30.0, sens=0.002, gap=0.065, curve_at_400=60.0)
    nar_r = regime(**nar)
    g_nar = guided_nar if guided_nar is not None else (0.7 if nar["final"] < 30 else 1.3)
    return {"fd_name": "FD_cls", "steps": STEPS, "reference_step": 400, "holds_fixed": "the images",
            "regimes": {"dit": dit, "nar": nar_r, "tread": regime(**(tread or FAST_TREAD)),
                        "nar_inverted": regime(**(inverted or base))},
            "guided": {"scale": 1.5, "regimes": {"nar": [f * g_nar for f in nar_r["final_fd"]],
                                                 "dit": [f * guided_dit for f in dit["final_fd"]]}},
            "size_study": size_study(-0.1 if nar["final"] < 30 else 0.1)}


def rows_of(s, scale="default"):
    return {r["id"]: r for r in claim_rows(s, scale)}


def verdicts(s):
    return {i: r["reproduced"] for i, r in rows_of(s).items()}


REGIME_GATED = ("nar_speedup", "nar_vs_dit_fd", "nar_vs_tread_fd", "guided_nar_vs_dit")
CHECKS = ("sensitivity_vs_tread", "sensitivity_vs_inverted", "tread_sensitivity_sanity", "guidance_nar")


def test_every_row_says_yes_where_its_claim_holds():
    rows = rows_of(summary(GOOD))
    assert len(rows) == 14
    assert rows["tread_faster"]["role"] == "regime" and rows["tread_faster"]["reproduced"] == "yes"
    assert {rows[i]["reproduced"] for i in CHECKS} == {"pass"}
    claims_ = {i: r["reproduced"] for i, r in rows.items() if r["role"] == "claim"}
    assert set(claims_.values()) == {"yes"}, claims_


def test_every_row_says_no_where_its_claim_fails():
    # TREAD faster than DiT (the regime holds); NAR worse than every baseline and more route-sensitive
    rows = rows_of(summary(BAD, dit_sens=0.001))
    assert rows["tread_faster"]["reproduced"] == "yes"
    claims_ = {i: r["reproduced"] for i, r in rows.items() if r["role"] == "claim"}
    assert set(claims_.values()) == {"no"}, claims_
    assert {rows[i]["reproduced"] for i in CHECKS} == {"fail"}


def test_rows_built_on_tread_are_untested_where_tread_is_not_faster_than_dit():
    rows = rows_of(summary(GOOD, tread=SLOW_TREAD))
    assert rows["tread_faster"]["reproduced"] == "no"
    for i in REGIME_GATED:
        assert rows[i]["reproduced"] == "untested", i
        assert rows[i]["criterion"].startswith("untested: its regime control 'tread_faster' does not hold")
    # rows that do not build on routing beating dense training are still decided
    assert rows["nar_vs_inverted_fd"]["reproduced"] == "yes"
    assert rows["gap_vs_tread"]["reproduced"] == "yes" and rows["size_trend_nar"]["reproduced"] == "yes"


def test_guidance_that_helps_every_regime_is_no_claim_for_nar():
    # guidance lowers NAR's FD (its check passes) but lowers DiT's as much: guided NAR is no
    # better than guided DiT, so the guided row cannot say yes
    s = summary(dict(GOOD, final=20.0), guided_nar=0.7, guided_dit=0.7)
    rows = rows_of(s)
    assert rows["guidance_nar"]["reproduced"] == "pass"
    assert rows["guided_nar_vs_dit"]["reproduced"] != "yes"
    assert rows["guided_nar_vs_dit"]["method"] == "nar_cfg1.5" and rows["guided_nar_vs_dit"]["baseline"] == "dit_cfg1.5"


def test_speedup_follows_the_paper_definition_on_the_log_scale():
    row = rows_of(summary(GOOD))["nar_speedup"]
    # NAR's FD at step 400 is 30; DiT's curve reaches 30 at step 700: 700 / 400 = 1.75x
    assert float(row["effect"]) == pytest.approx(1.75, rel=0.02)
    assert row["kind"] == "target" and row["n"] == 3
    assert "the images" in row["criterion"] and "log" in row["criterion"]


def test_speedup_beyond_the_grid_is_untested():
    # NAR at 400 steps is better than DiT ever gets within 800 steps
    row = rows_of(summary(dict(GOOD, curve_at_400=10.0)))["nar_speedup"]
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
    rows = rows_of(s)
    assert rows["nar_vs_inverted_fd"]["reproduced"] == "untested"
    assert rows["sensitivity_vs_inverted"]["reproduced"] == "untested"


def test_gap_rows_use_the_per_item_bootstrap():
    rows = rows_of(summary(GOOD))
    for i in ("gap_vs_tread", "gap_vs_inverted"):
        assert "paired bootstrap over replicates x 40 items" in rows[i]["criterion"]


def test_size_rows_fit_one_slope_per_seed():
    row = rows_of(summary(GOOD))["size_trend_nar"]
    assert float(row["effect"]) == pytest.approx(-0.1, abs=1e-6)
    assert row["reproduced"] == "yes" and row["n"] == 3 and "675M params" in row["criterion"]
    one = summary(GOOD)
    one["size_study"]["fd"] = {k: v[:1] for k, v in one["size_study"]["fd"].items()}
    assert verdicts(one)["size_trend_nar"] == "untested"


def test_size_slopes_that_disagree_across_seeds_are_inconclusive():
    s = summary(GOOD)
    dit = s["size_study"]["fd"]["dit"]
    s["size_study"]["fd"]["nar"] = [[d * (1 + 0.3 + k * math.log10(p / 2e4)) for d, p in zip(row, SIZES)]
                                    for row, k in zip(dit, (-0.3, 0.2, -0.05))]
    assert verdicts(s)["size_trend_nar"] == "inconclusive"


def test_guided_rows_without_guided_sampling_are_untested():
    s = summary(GOOD)
    del s["guided"]
    v = verdicts(s)
    assert v["guided_nar_vs_dit"] == "untested" and v["guidance_nar"] == "untested"
    s = summary(GOOD)
    del s["guided"]["regimes"]["dit"]
    v = verdicts(s)
    assert v["guided_nar_vs_dit"] == "untested" and v["guidance_nar"] == "pass"


def test_route_sensitivity_rows_are_mechanism_checks():
    rows = rows_of(summary(dict(GOOD, sens=0.01)))
    for i in ("sensitivity_vs_tread", "sensitivity_vs_inverted"):
        assert rows[i]["kind"] == "check" and rows[i]["reproduced"] == "fail"
