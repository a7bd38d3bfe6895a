"""adapad claims rows: each says `yes` on metrics where its claim holds and `no` where it is false
(the check says pass / fail); the paper-scale rows stay untested."""

from __future__ import annotations

from neurips26.papers.adapad.claims import claim_rows

PAPER_SCALE = 2  # the last rows


def _summary(holds: bool) -> dict:
    j = [-0.1, 0.0, 0.1, 0.05, -0.05]
    up = lambda v, scale=1.0: [v + scale * x for x in j]  # noqa: E731
    mech = {"seeds": 5, "rounds": 500, "rank": 5, "advance": 25, "interval": 50,
            "log10_final_adapad": up(-14.0 if holds else -2.0), "log10_final_parallel": up(-14.0),
            "log10_final_sequential": up(-3.0 if holds else -5.0), "frozen_change": 0.0,
            "rate_ratio": up(1.0 if holds else 0.5, 0.1), "min_r2": 0.999 if holds else 0.6,
            "warmup_no_advance": up(20.0 if holds else 5.0), "warmup_advance": up(5.0 if holds else 20.0),
            "floor_gap": 0.0001 if holds else 0.5, "floor": up(0.05, 0.01)}
    k = [-0.01, 0.0, 0.01, 0.005, -0.005, 0.0]
    acc = lambda v: [v + x for x in k]  # noqa: E731
    ft = {"replicates": 6, "tasks": ["paraphrase", "topic_sentiment"], "reference": "lora_r4", "margin": 0.02,
          "accuracy": {"adapad": acc(0.90 if holds else 0.80), "adalora": acc(0.90), "lora_r4": acc(0.895)},
          "size": {"adapad": [18000] * 6, "lora_r4": [27648] * 6, "adalora": [23000] * 6},
          "size_reduction": acc(0.33 if holds else 0.02)}
    return {"mechanism": mech, "finetune": ft}


def test_every_row_says_yes_when_the_claims_hold():
    rows = claim_rows(_summary(True), "test")
    got = [r["reproduced"] for r in rows]
    want = ["pass" if r["kind"] == "check" else "yes" for r in rows[:-PAPER_SCALE]]
    assert got[:-PAPER_SCALE] == want, [(r["claim"], r["reproduced"], r["criterion"]) for r in rows]
    assert got[-PAPER_SCALE:] == ["untested"] * PAPER_SCALE


def test_every_row_says_no_when_the_claims_fail():
    rows = claim_rows(_summary(False), "test")
    got = [r["reproduced"] for r in rows]
    want = ["fail" if r["kind"] == "check" else "no" for r in rows[:-PAPER_SCALE]]
    assert got[:-PAPER_SCALE] == want, [(r["claim"], r["reproduced"], r["criterion"]) for r in rows]


def test_a_difference_inside_the_margin_band_edge_is_inconclusive():
    """AdaPaD 1.5 points below AdaLoRA on average with spread: the interval straddles -margin."""
    s = _summary(True)
    s["finetune"]["accuracy"]["adapad"] = [a - 0.015 + d for a, d in zip(s["finetune"]["accuracy"]["adalora"],
                                                                         [0.02, -0.02, 0.01, -0.01, 0.0, 0.0])]
    row = next(r for r in claim_rows(s, "test") if "AdaLoRA" in r["claim"])
    assert row["reproduced"] == "inconclusive", row


def test_fewer_than_three_mechanism_seeds_are_untested():
    s = _summary(True)
    s["mechanism"]["seeds"] = 2
    for key in ("log10_final_adapad", "log10_final_sequential", "rate_ratio", "warmup_no_advance", "warmup_advance"):
        s["mechanism"][key] = s["mechanism"][key][:2]
    rows = claim_rows(s, "test")
    assert [r["reproduced"] for r in rows[:6]] == ["untested"] * 6
