"""adaprelora claims rows: `yes` (`pass`) on metrics where each claim holds, `no` (`fail`) where it
is false; the paper-scale rows stay untested."""

from __future__ import annotations

from neurips26.papers.adaprelora.claims import claim_rows

BASES = ("adamw", "loraplus", "scaled_adamw", "lora_pro", "adafactor_proj")


def _summary(holds: bool) -> dict:
    j = [-0.002, 0.0, 0.002]
    up = lambda v: [v + x for x in j]  # noqa: E731
    tasks = {}
    for task, metric in (("topic_sentiment", "accuracy"), ("data_to_text", "bleu")):
        scores = {b: up(0.80) for b in BASES}
        scores["full_adafactor"] = up(0.9)
        scores["adaprelora"] = up(0.85 if holds else 0.70)
        items = {m: [[v] * 10 for v in vals] for m, vals in scores.items()}
        state = {b: 1000 for b in BASES}
        state.update({"lora_pro": 20000, "full_adafactor": 20000, "adaprelora": 800 if holds else 9000})
        peak = {m: 10000 for m in scores}
        peak["adaprelora"] = 10100 if holds else 15000
        tasks[task] = {"metric": metric, "seeds": 3, "tuned": {m: 0.01 for m in scores}, "scores": scores, "items": items,
                       "state_bytes": state, "peak_bytes": peak, "peak_kind": "tracked_tensors",
                       "state_predicted": 800}
    check = {"max_rel_factor_diff": 1e-9 if holds else 0.3, "max_rel_image_diff": 1e-9 if holds else 0.3,
             "max_rel_imbalance_excess": 0.0 if holds else 0.2, "layers": 4, "runs": 2}
    return {"tasks": tasks, "check": check}


def test_every_row_says_yes_or_pass_when_the_claims_hold():
    rows = claim_rows(_summary(True), "test")
    got = {r["claim"]: r["reproduced"] for r in rows}
    tested = [r for r in rows if not r["reproduced"] == "untested"]
    assert len(rows) - len(tested) == 4, got
    assert all(r["reproduced"] in ("yes", "pass") for r in tested), got


def test_every_row_says_no_or_fail_when_the_claims_fail():
    rows = claim_rows(_summary(False), "test")
    got = {r["claim"]: r["reproduced"] for r in rows}
    tested = [r for r in rows if not r["reproduced"] == "untested"]
    assert len(tested) == len(rows) - 4
    assert all(r["reproduced"] in ("no", "fail") for r in tested), got


def test_a_difference_inside_the_margin_is_competitive_but_not_an_improvement():
    s = _summary(True)
    t = s["tasks"]["topic_sentiment"]
    t["scores"]["adaprelora"] = [v - 0.01 for v in t["scores"]["adamw"]]   # 1 point below, margin 2
    t["items"]["adaprelora"] = [[v] * 10 for v in t["scores"]["adaprelora"]]
    rows = {r["claim"]: r["reproduced"] for r in claim_rows(s, "test")}
    assert rows["AdaPreLoRA is competitive with adamw (topic_sentiment)"] == "yes"
    assert rows["AdaPreLoRA improves over the strongest LoRA optimizer (topic_sentiment)"] == "no"


def test_fewer_than_three_seeds_is_untested():
    s = _summary(True)
    for t in s["tasks"].values():
        t["scores"] = {m: v[:2] for m, v in t["scores"].items()}
        t["items"] = {m: v[:2] for m, v in t["items"].items()}
    rows = claim_rows(s, "test")
    assert all(r["reproduced"] == "untested" for r in rows if "competitive with" in r["claim"] or "improves" in r["claim"])


def test_both_sides_at_the_same_floor_is_untested_not_competitive():
    s = _summary(True)
    t = s["tasks"]["data_to_text"]
    t["scores"]["adaprelora"] = [0.0, 0.0, 0.0]
    t["scores"]["scaled_adamw"] = [0.0, 0.0, 0.0]
    rows = {r["claim"]: r["reproduced"] for r in claim_rows(s, "test")}
    assert rows["AdaPreLoRA is competitive with scaled_adamw (data_to_text)"] == "untested"
