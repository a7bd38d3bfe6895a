"""es_dynamics claims rows (claims.yaml + claims.py): each says `yes` on metrics where its claim
holds and `no` where it is false; a model that does not learn leaves the LM rows that build on it
`untested`; the LM drift-norm row is a check and the drift along the task gradient is compared with a
pure-noise reward; the regime share counts the declared landscapes (Clopper-Pearson); the
dimensionality row reads speed; the untested rows stay untested."""

from __future__ import annotations

from neurips26.core import claims as core
from neurips26.papers.es_dynamics.claims import claim_rows

LM_GATED = ["lm_forgetting", "rise_decay_lm"]


def _summary(holds: bool, seeds: int = 8) -> dict:
    j = [0.01 * (i - (seeds - 1) / 2) / seeds for i in range(seeds)]
    up = lambda v, d=0.0: [v + d + x for x in j]  # noqa: E731
    jl = [-0.01, 0.0, 0.01]
    upl = lambda v: [v + x for x in jl]  # noqa: E731
    syn = {"dim": 1024, "population": 16, "generations": 400, "seeds": seeds, "window": 20,
           "drift_es": up(12.0), "drift_sde": up(12.0 if holds else 10.0),
           "reward_gap": 0.02 if holds else 0.5, "reward_rise": 1.0,
           "reward_gap_seeds": up(0.03 if holds else 0.5),
           "regime_share": 1.0 if holds else 0.0, "regime_successes": seeds if holds else 0,
           "landscape_successes": 81 if holds else 10, "landscapes": 81,
           "peak_reward": up(-0.2 if holds else -0.5), "final_reward": up(-0.4 if holds else -0.2),
           "peak_reward_same_curve": up(-0.2),
           "progress_low_rank": up(0.99 if holds else 0.3), "progress_full_rank": up(0.3 if holds else 0.9),
           "progress_share": 0.9, "generations_low_rank": up(60.0 if holds else 300.0),
           "generations_full_rank": up(401.0 if holds else 100.0), "never_reached": {"low_rank": 0, "full_rank": seeds if holds else 0},
           "final": {"zscore": up(-0.3 if holds else -0.6), "centered_ranks": up(-0.5 if holds else -0.3),
                     "plain": up(-0.5 if holds else -0.3)}}
    lm = {"seeds": 3, "generations": 80, "dim": 81920, "population": 16,
          "drift": upl(19.2), "drift_sde": upl(19.2 if holds else 15.0),
          "ppl_start": [11.7] * 3, "ppl_final": upl(200.0 if holds else 5.0),
          "task_start": upl(0.1), "task_final": upl(0.25),
          "task_peak": upl(0.35 if holds else 0.0), "peak_generation": [40, 50, 60],
          "drift_noise": upl(19.2), "drift_task": upl(12.0 if holds else 0.3),
          "drift_task_noise": [0.4, -1.1, 0.2] if holds else upl(0.1)}
    return {"synthetic": syn, "lm": lm}


def _by_id(summary):
    return {r["id"]: r for r in claim_rows(summary, "default")}


def test_every_entry_of_the_yaml_is_a_row():
    assert list(_by_id(_summary(True))) == [e["id"] for e in core.load_spec("es_dynamics")]


def test_every_row_says_yes_when_the_claims_hold():
    rows = _by_id(_summary(True))
    assert rows["lm_learns"]["reproduced"] == "yes"
    assert rows["sde_drift_lm"]["kind"] == "check" and rows["sde_drift_lm"]["reproduced"] == "pass"
    for id, r in rows.items():
        if r["role"] == "claim" and r["kind"] != "check" and id not in ("qwen_verification", "abdi_drift"):
            assert r["reproduced"] == "yes", (id, r["criterion"])
    # 81 of 81 landscapes: Clopper-Pearson [0.955, 1]; 8 of 8 would reach below 0.8
    assert rows["three_regimes"]["reproduced"] == "yes"
    s = _summary(True)
    s["synthetic"]["landscape_successes"], s["synthetic"]["landscapes"] = 8, 8
    assert _by_id(s)["three_regimes"]["reproduced"] == "inconclusive"
    assert rows["qwen_verification"]["reproduced"] == "untested"
    assert rows["abdi_drift"]["reproduced"] == "untested"


def test_every_row_says_no_when_the_claims_fail():
    rows = _by_id(_summary(False))
    assert rows["lm_learns"]["reproduced"] == "yes"  # the model learns; the claims on it fail
    assert rows["sde_drift_lm"]["reproduced"] == "fail"
    for id, r in rows.items():
        if r["role"] == "claim" and r["kind"] != "check" and id not in ("qwen_verification", "abdi_drift"):
            assert r["reproduced"] == "no", (id, r["reproduced"], r["criterion"])


def test_a_model_that_does_not_learn_leaves_the_lm_claims_untested():
    """The regime control: when ES does not raise the held-out reward, forgetting and the
    rise-then-decay of the LM are not judged."""
    s = _summary(True)
    s["lm"]["task_final"] = list(s["lm"]["task_start"])
    rows = _by_id(s)
    assert rows["lm_learns"]["reproduced"] != "yes"
    for id in LM_GATED:
        assert rows[id]["reproduced"] == "untested" and "lm_learns" in rows[id]["criterion"], id
    assert rows["dimensionality_paradox"]["reproduced"] == "yes"


def test_the_lm_drift_row_is_a_check_that_a_pure_noise_reward_also_passes():
    """The null: a pure-noise reward drifts as the random walk predicts. The row
    is therefore a check (pass / fail), never a `yes` of the claims."""
    s = _summary(True)
    row = _by_id(s)["sde_drift_lm"]
    assert row["kind"] == "check" and row["role"] == "check" and row["reproduced"] in ("pass", "fail")
    assert "pure-noise" in row["criterion"]


def test_the_three_regimes_share_uses_clopper_pearson_over_the_landscape_grid():
    """6 of 8 (the first reading, seeds of one landscape): the Clopper-Pearson interval [0.35, 0.97]
    straddles 0.8, so inconclusive; the row now counts the declared landscapes."""
    s = _summary(True)
    s["synthetic"]["landscape_successes"], s["synthetic"]["landscapes"] = 6, 8
    row = _by_id(s)["three_regimes"]
    assert row["reproduced"] == "inconclusive", row
    lo, hi = (float(x) for x in row["interval"].strip("[]").split(","))
    assert 0.34 < lo < 0.36 and 0.96 < hi < 0.98
    s["synthetic"]["landscape_successes"] = 1
    assert _by_id(s)["three_regimes"]["reproduced"] == "no"
    s = _summary(True)
    s["synthetic"]["landscape_successes"], s["synthetic"]["regime_successes"] = 40, 8
    row = _by_id(s)["three_regimes"]
    assert row["method_value"] == "40/81" and row["reproduced"] == "no", row  # the default landscape's 8/8 does not count


def test_the_dimensionality_row_reads_speed_not_the_end_point():
    """The first reading's numbers: both landscapes close nearly all of the gap by T (0.998 vs 0.981, a
    `yes` by one point) while the full-rank control needs only 1.3x the generations to close 90%:
    `no` under the factor-2 margin. A control that never gets there within T (counted T + 1) is `yes`."""
    s = _summary(True)
    syn = s["synthetic"]
    syn["progress_low_rank"], syn["progress_full_rank"] = [0.998] * 8, [0.981] * 8
    syn["generations_low_rank"] = [60.0 + i for i in range(8)]
    syn["generations_full_rank"] = [80.0 + i for i in range(8)]
    row = _by_id(s)["dimensionality_paradox"]
    assert row["reproduced"] == "no" and "log scale" in row["criterion"], row
    syn["generations_full_rank"] = [401.0] * 8
    assert _by_id(s)["dimensionality_paradox"]["reproduced"] == "yes"


def test_the_rise_decay_row_reads_the_peak_located_on_another_run():
    """The peak located on an independent run and read on the reported one; the same-curve peak (which
    favoured a decay) is only reported."""
    s = _summary(True)
    s["synthetic"]["peak_reward"] = list(s["synthetic"]["final_reward"])
    row = _by_id(s)["rise_decay_synthetic"]
    assert row["reproduced"] == "no" and "independent ES run" in row["criterion"], row


def test_the_lm_task_drift_row_separates_the_reward_from_a_pure_noise_walk():
    """A drift along the task gradient no larger than the pure-noise walk's (about 1 unit) is `no`; the
    drift norm check passes either way."""
    s = _summary(True)
    assert _by_id(s)["lm_task_drift"]["reproduced"] == "yes"
    s["lm"]["drift_task"] = [0.9, -0.3, 1.2]
    rows = _by_id(s)
    assert rows["lm_task_drift"]["reproduced"] == "no", rows["lm_task_drift"]
    assert rows["sde_drift_lm"]["reproduced"] == "pass" and "pure-noise reward on the same perturbations" in rows["sde_drift_lm"]["criterion"]


def test_forgetting_is_judged_on_the_log_scale():
    """11.7 -> 333 with a wide spread: on the log scale the ratio is clear."""
    s = _summary(True)
    s["lm"]["ppl_final"] = [150.0, 333.0, 520.0]
    row = _by_id(s)["lm_forgetting"]
    assert row["reproduced"] == "yes" and "log scale" in row["criterion"]


def test_rows_with_fewer_than_three_seeds_are_untested():
    s = _summary(True, seeds=2)
    rows = _by_id(s)
    for id in ("sde_drift_synthetic", "sde_reward_synthetic", "rise_decay_synthetic", "dimensionality_paradox"):
        assert rows[id]["reproduced"] == "untested", id
    assert rows["three_regimes"]["reproduced"] == "yes"  # it counts the landscapes of the grid, not these seeds


def test_a_shaping_gain_below_the_margin():
    """Z-score ahead of centred ranks on every seed by 0.002 (the margin is 0.0067): the interval
    lies below the margin, so `no` (not reversed: it lies above 0); with a spread reaching the
    margin it is inconclusive."""
    s = _summary(True)
    z = s["synthetic"]["final"]["zscore"]
    s["synthetic"]["final"]["centered_ranks"] = [v - 0.002 for v in z]
    row = _by_id(s)["zscore_vs_centered_ranks"]
    assert row["reproduced"] == "no" and "reversed" not in row["criterion"], row
    s["synthetic"]["final"]["centered_ranks"] = [v - d for v, d in zip(z, (0.002, 0.012, -0.004, 0.009, 0.0, 0.006, 0.001, 0.01))]
    row = _by_id(s)["zscore_vs_centered_ranks"]
    assert row["reproduced"] == "inconclusive" and row["n_to_decide"] != "", row


def test_the_summary_of_the_figures_step_feeds_the_rows():
    from neurips26.papers.es_dynamics import method, steps

    regimes_ok = ["task_gradient", "curvature", "off_task_gradient"]
    assert method.shows_sequence(regimes_ok)
    seeds = {}
    for k in range(3):
        seeds[str(k)] = {"reward_windows_es": [-1.0, -0.5, -0.1 + 0.001 * k], "reward_windows_sde": [-1.0, -0.5, -0.1],
                         "regimes_es": regimes_ok if k else ["task_gradient", "off_task_gradient"],
                         "drift_final_es": 12.0 + k * 0.01, "drift_final_sde": 12.0, "peak_reward": -0.1,
                         "final_reward": -0.2, "task_progress_low_rank": 0.99, "task_progress_full_rank": 0.9,
                         "shapings": {"zscore": {"final_reward": -0.1}, "centered_ranks": {"final_reward": -0.2},
                                      "plain": {"final_reward": -0.3}}}
    syn = {"settings": {"dim": 64, "population": 16, "generations": 40, "window": 10}, "seeds": seeds}
    curve = [{"generation": g, "teacher_forced_a": a, "teacher_forced_b": b, "drift": d, "drift_sde": d,
              "perplexity": ppl} for g, a, b, d, ppl in ((0, 0.0, 0.0, 0.0, 11.7), (40, 0.3, 0.28, 13.0, 50.0),
                                                         (80, 0.25, 0.24, 19.2, 300.0))]
    runs = [{"curve": curve, "dim": 81920, "population": 16} for _ in range(3)]
    summary = steps.claims_summary(syn, runs)
    assert summary["synthetic"]["regime_successes"] == 2
    assert len(summary["synthetic"]["reward_gap_seeds"]) == 3
    rows = _by_id(summary)
    assert rows["three_regimes"]["method_value"] == "2/3"
    assert rows["lm_learns"]["reproduced"] == "yes" and rows["sde_drift_lm"]["reproduced"] == "pass"


def test_a_capped_shaping_keeps_the_row_from_deciding_against_it():
    """The tuning protocol: a baseline shaping whose step size stayed on a capped grid edge may be
    under-tuned, so beating it is not a `yes`; a capped Z-score losing is not a `no`."""
    s = _summary(True)
    s["synthetic"]["capped"] = {"zscore": "", "centered_ranks": "", "plain": "plain's alpha = 10 on the high edge of its capped grid"}
    rows = _by_id(s)
    assert rows["zscore_vs_plain"]["reproduced"] == "inconclusive" and "capped" in rows["zscore_vs_plain"]["criterion"]
    assert rows["zscore_vs_centered_ranks"]["reproduced"] == "yes"
    s = _summary(False)
    s["synthetic"]["capped"] = {"zscore": "zscore's alpha = 1e-5 on the low edge of its capped grid"}
    rows = _by_id(s)
    assert rows["zscore_vs_centered_ranks"]["reproduced"] == "inconclusive"


def test_tuning_records_give_the_capped_notes_and_the_fixed_knobs():
    from neurips26.core import tuning
    from neurips26.papers.es_dynamics import steps

    recs = [tuning.Record("plain", "alpha", "capped", [1.0, 3.16], [-0.5, -0.4], 3.16, -0.4, edge="high").to_json(),
            tuning.Record("zscore", "alpha", "tuned", [1e-3, 3e-3, 1e-2], [-0.5, -0.4, -0.5], 3e-3, -0.4).to_json()]
    syn = {"settings": {"alpha": 0.012}, "tuning_records": recs}
    runs = [{"alpha": 3e-4, "sigma": 0.01}]
    records = steps.tuning_records(syn, runs)
    assert {(r.method, r.knob, r.setting, r.status) for r in records} >= {("zscore", "alpha", "lm", "fixed"),
                                                                          ("zscore", "sigma", "lm", "fixed")}
    assert tuning.capped_note([r for r in records if r.setting == ""], "plain")
    assert not tuning.capped_note([r for r in records if r.setting == ""], "zscore")
