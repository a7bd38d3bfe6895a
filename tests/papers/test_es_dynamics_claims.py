"""es_dynamics claims rows: each says `yes` on metrics where its claim holds and `no` where it is
false; the untested rows stay untested."""

from __future__ import annotations

from neurips26.papers.es_dynamics.claims import claim_rows


def _summary(holds: bool) -> dict:
    j = [-0.01, 0.0, 0.01]
    up = lambda v, d=0.0: [v + d + x for x in j]  # noqa: E731
    syn = {"dim": 1024, "population": 16, "generations": 400, "seeds": 3, "window": 20,
           "drift_es": up(12.0), "drift_sde": up(12.0 if holds else 10.0),
           "reward_gap": 0.02 if holds else 0.5, "reward_rise": 1.0, "regime_share": 1.0 if holds else 0.3,
           "peak_reward": up(-0.2 if holds else -0.5), "final_reward": up(-0.4 if holds else -0.2),
           "progress_low_rank": up(0.99 if holds else 0.3), "progress_full_rank": up(0.3 if holds else 0.9),
           "final": {"zscore": up(-0.3 if holds else -0.6), "centered_ranks": up(-0.5 if holds else -0.3),
                     "plain": up(-0.5 if holds else -0.3)}}
    lm = {"seeds": 3, "generations": 80, "dim": 81920, "population": 16,
          "drift": up(19.2), "drift_sde": up(19.2 if holds else 15.0),
          "ppl_start": up(11.7), "ppl_final": up(200.0 if holds else 5.0),
          "task_start": up(0.1), "task_final": up(0.25 if holds else 0.05),
          "task_peak": up(0.35 if holds else 0.0), "peak_generation": [40, 50, 60]}
    return {"synthetic": syn, "lm": lm}


def test_every_row_says_yes_when_the_claims_hold():
    rows = claim_rows(_summary(True), "test")
    got = [r["reproduced"] for r in rows]
    assert got[:-2] == ["yes"] * (len(rows) - 2), [(r["claim"], r["reproduced"]) for r in rows]
    assert got[-2:] == ["untested", "untested"]


def test_every_row_says_no_when_the_claims_fail():
    rows = claim_rows(_summary(False), "test")
    got = [r["reproduced"] for r in rows]
    assert got[:-2] == ["no"] * (len(rows) - 2), [(r["claim"], r["reproduced"]) for r in rows]


def test_rows_with_fewer_than_three_seeds_are_untested():
    s = _summary(True)
    s["synthetic"]["seeds"] = 2
    for k in ("drift_es", "drift_sde", "peak_reward", "final_reward", "progress_low_rank", "progress_full_rank"):
        s["synthetic"][k] = s["synthetic"][k][:2]
    rows = claim_rows(s, "test")
    assert [r["reproduced"] for r in rows[:5]] == ["untested"] * 5


def test_a_shaping_gain_below_the_minimum_effect_is_inconclusive():
    """Z-score ahead of centred ranks on every seed, but by 0.2% of the reward rise (the minimum
    effect is 1%): not a win."""
    s = _summary(True)
    s["synthetic"]["final"]["centered_ranks"] = [v - 0.002 for v in s["synthetic"]["final"]["zscore"]]
    row = next(r for r in claim_rows(s, "test") if "centred-rank" in r["claim"])
    assert row["reproduced"] == "inconclusive", row
