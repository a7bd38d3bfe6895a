"""adapad claims rows: each says `yes` on metrics where its claim holds and `no` where it is false
(the checks say pass / fail); the paper-scale rows stay untested; tasks are strata (one value per
seed) and each task also gets its own row; the convergence row cannot say `yes` when sequential
deflation converges too; self-correction is also read at matched compute; the size row compares
AdaPaD under the max-rank budget with LoRA at the max rank."""

from __future__ import annotations

from neurips26.papers.adapad.claims import claim_rows, of_task, per_seed

CLAIMS = ("self_correction", "self_correction_matched_rounds", "self_correction_matched_work", "converge_zero",
          "advance_warmup", "competitive_adalora", "competitive_lora", "competitive_adalora_topic_sentiment",
          "competitive_adalora_intent", "competitive_lora_topic_sentiment", "competitive_lora_intent",
          "smaller_adapter")
CHECKS = ("floor_split", "decay_rate", "decay_loglinear")
PAIRS = [["intent", "0"], ["intent", "1"], ["intent", "2"],
         ["topic_sentiment", "0"], ["topic_sentiment", "1"], ["topic_sentiment", "2"]]


def _summary(holds: bool) -> dict:
    j = [-0.1, 0.0, 0.1, 0.05, -0.05]
    up = lambda v, scale=1.0: [v + scale * x for x in j]  # noqa: E731
    mech = {"seeds": 5, "rounds": 500, "rank": 5, "advance": 25, "interval": 50,
            "log10_final_adapad": up(-14.0 if holds else -2.0), "log10_final_parallel": up(-14.0 if holds else -2.0),
            "log10_final_sequential": up(-3.0 if holds else -5.0), "frozen_change": 0.0,
            "log10_final_sequential_long": up(-5.0 if holds else -14.0),
            "log10_final_parallel_short": up(-6.0 if holds else -2.0),
            "worker_steps": {"parallel": 2500, "sequential": 500, "sequential_long": 2500, "parallel_short": 500},
            "rate_ratio": up(1.0 if holds else 0.5, 0.1), "min_r2": 0.98 if holds else 0.6,
            "min_r2_per_seed": up(0.99 if holds else 0.6, 0.02),
            "warmup_no_advance": up(20.0 if holds else 5.0), "warmup_advance": up(5.0 if holds else 20.0),
            "floor_gap": 0.0001 if holds else 0.5, "floor": up(0.05, 0.01)}
    k = [-0.01, 0.0, 0.01, 0.005, -0.005, 0.0]
    acc = lambda v: [v + x for x in k]  # noqa: E731
    ft = {"replicates": 6, "tasks": ["intent", "topic_sentiment"], "pairs": PAIRS, "reference": "lora_r4",
          "max_reference": "lora_r8", "margin": 0.02,
          "accuracy": {"adapad": acc(0.90 if holds else 0.80), "adapad_max": acc(0.90 if holds else 0.80),
                       "adalora": acc(0.90), "lora_r4": acc(0.895), "lora_r8": acc(0.90)},
          "size": {"adapad": [27000] * 6, "adapad_max": [36000 if holds else 55000] * 6, "lora_r4": [27648] * 6,
                   "lora_r8": [55296] * 6, "adalora": [23000] * 6}}
    return {"mechanism": mech, "finetune": ft}


def by_id(rows):
    return {r["id"]: r for r in rows}


def test_every_row_says_yes_when_the_claims_hold():
    rows = by_id(claim_rows(_summary(True), "default"))
    for i in CLAIMS:
        assert rows[i]["reproduced"] == "yes", rows[i]
    for i in CHECKS:
        assert rows[i]["kind"] == "check" and rows[i]["reproduced"] == "pass", rows[i]
    assert rows["converge_zero_null_sequential"]["reproduced"] == "no"
    assert rows["finetune_learns"]["reproduced"] == "yes"
    assert rows["glue_deberta"]["reproduced"] == rows["squad_qwen"]["reproduced"] == "untested"


def test_every_row_says_no_when_the_claims_fail():
    rows = by_id(claim_rows(_summary(False), "default"))
    for i in CLAIMS:
        assert rows[i]["reproduced"] == "no", rows[i]
    for i in CHECKS:
        assert rows[i]["reproduced"] == "fail", rows[i]


def test_tasks_are_strata_not_replicates():
    s = _summary(True)
    assert per_seed(list(range(6)), s["finetune"]) == [1.5, 2.5, 3.5]  # (0 + 3) / 2, (1 + 4) / 2, (2 + 5) / 2
    rows = by_id(claim_rows(s, "default"))
    assert rows["competitive_adalora"]["n"] == 3 and rows["smaller_adapter"]["n"] == 3
    assert "/ fixed-rank LoRA at the maximum rank" in rows["smaller_adapter"]["metric"]


def test_convergence_cannot_say_yes_when_sequential_deflation_converges_too():
    s = _summary(True)
    s["mechanism"]["log10_final_sequential"] = [-13.0 + 0.1 * x for x in range(5)]
    rows = by_id(claim_rows(s, "default"))
    assert rows["converge_zero_null_sequential"]["reproduced"] == "yes"
    assert rows["converge_zero"]["reproduced"] == "untested"
    assert "null control" in rows["converge_zero"]["criterion"]


def test_a_difference_inside_the_margin_band_edge_is_inconclusive():
    """AdaPaD 1.5 points below AdaLoRA on average with spread: the interval straddles -margin."""
    s = _summary(True)
    s["finetune"]["accuracy"]["adapad"] = [a - 0.015 + d for a, d in zip(s["finetune"]["accuracy"]["adalora"],
                                                                         [0.02, -0.02, 0.01, -0.02, 0.02, 0.0])]
    row = by_id(claim_rows(s, "default"))["competitive_adalora"]
    assert row["reproduced"] == "inconclusive", row


def test_fewer_than_three_mechanism_seeds_are_untested():
    s = _summary(True)
    s["mechanism"]["seeds"] = 2
    for key in ("log10_final_adapad", "log10_final_parallel", "log10_final_sequential", "rate_ratio",
                "min_r2_per_seed", "warmup_no_advance", "warmup_advance", "log10_final_sequential_long",
                "log10_final_parallel_short"):
        s["mechanism"][key] = s["mechanism"][key][:2]
    rows = by_id(claim_rows(s, "default"))
    for i in ("self_correction", "self_correction_matched_rounds", "self_correction_matched_work", "converge_zero",
              "decay_rate", "decay_loglinear", "advance_warmup", "floor_split"):
        assert rows[i]["reproduced"] == "untested", rows[i]


def test_competitive_rows_are_untested_when_the_runs_do_not_learn():
    s = _summary(True)
    for name in ("adapad", "adapad_max", "adalora", "lora_r4", "lora_r8"):
        s["finetune"]["accuracy"][name] = [v - 0.75 for v in s["finetune"]["accuracy"][name]]  # about 0.15
    rows = by_id(claim_rows(s, "default"))
    assert rows["finetune_learns"]["reproduced"] == "no"
    for i in ("competitive_adalora", "competitive_lora", "competitive_lora_intent", "competitive_adalora_topic_sentiment"):
        assert rows[i]["reproduced"] == "untested"
        assert "regime control 'finetune_learns'" in rows[i]["criterion"]
    assert rows["smaller_adapter"]["reproduced"] == "yes"  # a parameter count: no regime


def test_self_correction_at_matched_compute_is_no_when_sequential_deflation_catches_up():
    """The defect: AdaPaD's `yes` came from r times the worker-steps. With as many steps per
    component, sequential deflation reaches the same error; the matched rows must say no."""
    s = _summary(True)
    s["mechanism"]["log10_final_sequential_long"] = list(s["mechanism"]["log10_final_parallel"])
    s["mechanism"]["log10_final_parallel_short"] = [v + 0.4 for v in s["mechanism"]["log10_final_sequential"]]
    rows = by_id(claim_rows(s, "default"))
    assert rows["self_correction"]["reproduced"] == "yes"
    assert rows["self_correction_matched_rounds"]["reproduced"] == "no"
    assert rows["self_correction_matched_work"]["reproduced"] == "no"
    assert "reversed" in rows["self_correction_matched_work"]["criterion"]
    assert "worker-steps 2500 vs 2500" in rows["self_correction_matched_rounds"]["criterion"]


def test_decay_rows_are_checks_read_at_the_worst_seed():
    s = _summary(True)
    s["mechanism"]["min_r2_per_seed"] = [0.99, 0.99, 0.94, 0.99, 0.99]
    rows = by_id(claim_rows(s, "default"))
    assert rows["decay_loglinear"]["role"] == "check" and rows["decay_loglinear"]["reproduced"] == "fail"
    assert rows["decay_loglinear"]["effect"] == "0.94"
    assert rows["decay_rate"]["reproduced"] == "pass"


def test_a_deficit_on_one_task_shows_in_its_own_row():
    """intent at ceiling (no difference) and topic_sentiment 5 points below: the per-task row says no
    where the mean over the tasks halves the deficit."""
    s = _summary(True)
    ft = s["finetune"]
    ft["accuracy"]["adapad"] = [a - (0.05 + d if t == "topic_sentiment" else 0.0)
                                for (t, _), a, d in zip(PAIRS, ft["accuracy"]["adalora"], [0, 0, 0, 0.004, -0.004, 0.0])]
    assert of_task(ft["accuracy"]["adalora"], ft, "intent") == ft["accuracy"]["adalora"][:3]
    rows = by_id(claim_rows(s, "default"))
    assert rows["competitive_adalora_topic_sentiment"]["reproduced"] == "no"
    assert rows["competitive_adalora_intent"]["reproduced"] == "yes"
    assert abs(float(rows["competitive_adalora"]["effect"]) + 0.025) < 1e-3


def test_size_row_compares_the_max_rank_budget_with_lora_at_the_max_rank():
    """The defect: the size row read AdaPaD under LoRA r = 4's budget against LoRA r = 4 (about 1
    by construction). It now reads adapad_max against LoRA at the maximum rank, not `adapad`."""
    s = _summary(True)
    s["finetune"]["size"]["adapad"] = [5000] * 6  # would pass against anything; must not be read
    s["finetune"]["size"]["adapad_max"] = [55296] * 6  # the whole cap: no stop fired
    row = by_id(claim_rows(s, "default"))["smaller_adapter"]
    assert row["method"] == "adapad_max" and row["baseline"] == "lora_r8"
    assert row["reproduced"] == "no" and row["effect"] == "1"
