"""nar_dit's claims rows (looked up by id): every claim row says `no` (checks `fail`) on metrics
where its claim is false and `yes` (`pass`) where it holds; the NAR-vs-DiT and NAR-vs-TREAD speed
and quality rows are untested where TREAD does not converge faster than DiT (their regime)."""

import math

import pytest

from neurips26.papers.nar_dit.claims import bracket_to_reach, claim_rows, speedups, steps_to_reach

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


def size_study(deficit_slope, dit_smallest=45.0):
    """Per seed, routed / DiT - 1 = 0.3 + slope * log10(params / 2e4) plus a little seed noise;
    every size trained 800 steps; the untrained model's FD 100 (so DiT's smallest size at 45 has
    learnt: 0.45 of the untrained FD, inside size_learns' band <= 0.5)."""
    dit = [[dit_smallest * (1 + j), 35.0, 30.0] for j in JITTER]
    routed = [[d * (1 + 0.3 + deficit_slope * math.log10(p / 2e4) + j) for d, p in zip(row, SIZES)]
              for row, j in zip(dit, JITTER)]
    return {"variants": ["dit", "tread", "nar"], "sizes": ["xs", "s", "default"], "params": SIZES,
            "steps": [800, 800, 800], "fd": {"dit": dit, "tread": routed, "nar": routed},
            "untrained_fd": [100.0, 100.0, 100.0], "extrapolate_params": 675e6}


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
    assert len(rows) == 15
    assert rows["tread_faster"]["role"] == "regime" and rows["tread_faster"]["reproduced"] == "yes"
    assert rows["size_learns"]["role"] == "regime" and rows["size_learns"]["reproduced"] == "yes"
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
    # NAR's FD at step 400 is 30; DiT's curve reaches 30 at step 700 (1.75x by interpolation);
    # the reading takes the last snapshot before it, 600: 600 / 400 = 1.5x, a lower bound
    assert float(row["effect"]) == pytest.approx(1.5, rel=1e-9)
    assert row["kind"] == "target" and row["n"] == 3
    assert "the images" in row["criterion"] and "log" in row["criterion"]
    assert "would give 1.75, 1.75, 1.75" in row["criterion"]


def convex_summary(true_step, steps=(200, 400, 600), ref=400):
    """DiT's FD falls as 6000 / step (convex); the routed regime's FD at `ref` is DiT's at
    `true_step`, so the true speedup is true_step / ref."""
    dit = [[6000 / s for s in steps] for _ in JITTER]
    routed = [[6000 / true_step if s == ref else 6000 / s for s in steps] for _ in JITTER]
    return {"steps": list(steps), "reference_step": ref, "regimes": {"dit": {"fd": dit}, "nar": {"fd": routed}}}


@pytest.mark.parametrize("true_step", [250, 330, 450, 500, 580])
def test_linear_reading_overstates_the_speedup_on_a_convex_curve_and_the_bracket_does_not(true_step):
    s = convex_summary(true_step)
    true = true_step / 400
    linear, _ = speedups(s, "nar", reading="linear")
    bracket, status = speedups(s, "nar")
    assert set(status) == {"ok"}
    # the chord of a convex curve lies above it, so interpolation puts DiT's crossing late
    assert all(v > true + 1e-6 for v in linear), (linear, true)
    assert all(v <= true for v in bracket), (bracket, true)
    # e.g. the true 500 / 400 = 1.25x: the chord between 400 (FD 15) and 600 (FD 10) crosses
    # 12 at 520 (1.3x); the bracket gives 400 (1.0x)
    if true_step == 500:
        assert linear[0] == pytest.approx(1.3) and bracket[0] == pytest.approx(1.0)
    # finer snapshots narrow the bracket from below
    fine, _ = speedups(convex_summary(true_step, steps=tuple(range(100, 601, 100))), "nar")
    assert bracket[0] <= fine[0] <= true


def test_bracket_reading_takes_the_last_snapshot_before_the_crossing():
    # DiT truly reaches the routed regime's step-400 FD at step 390 (0.975x): the 200-step grid
    # brackets the crossing in (200, 400], and the row reads its earlier end, 200 / 400
    s = convex_summary(390)
    assert speedups(s, "nar")[0] == [0.5] * 3
    assert bracket_to_reach([200, 400, 600], [30.0, 15.0, 10.0], 12.0) == (400.0, 600.0, "ok")
    assert bracket_to_reach([200, 400, 600], [30.0, 15.0, 10.0], 40.0) == (200.0, 200.0, "first")
    lo, hi, status = bracket_to_reach([200, 400, 600], [30.0, 15.0, 10.0], 5.0)
    assert math.isnan(lo) and math.isnan(hi) and status == "never"


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


def test_size_rows_are_untested_where_a_size_learns_nothing():
    # the smallest size's DiT sits at 0.9 of the untrained model's FD (it learnt nothing): the
    # regime control fails and the slopes, whatever they say, are untested with that reason
    s = summary(GOOD)
    s["size_study"] = size_study(-0.1, dit_smallest=90.0)
    rows = rows_of(s)
    assert rows["size_learns"]["reproduced"] == "no"
    assert float(rows["size_learns"]["effect"]) == pytest.approx(0.9, rel=0.02)
    for i in ("size_trend_nar", "size_trend_tread"):
        assert rows[i]["reproduced"] == "untested"
        assert rows[i]["criterion"].startswith("untested: its regime control 'size_learns' does not hold")
    # the speed and quality rows are not gated by it
    assert rows["nar_vs_dit_fd"]["reproduced"] == "yes"
    # without an untrained reference the control, and so the slopes, are untested
    del s["size_study"]["untrained_fd"]
    v = verdicts(s)
    assert v["size_learns"] == "untested" and v["size_trend_nar"] == "untested"


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
