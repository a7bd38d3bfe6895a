"""embed_merge claims rows: each says `no` on metrics where its claim is false and `yes` where it holds."""

from __future__ import annotations

import pytest

from neurips26.papers.embed_merge.claims import claim_rows

SEEDS, ITEMS = 3, 300


def _method(norm: float, items: bool) -> dict:
    """Per seed: mean normalised accuracy `norm` (+ a small seed effect) and per-example scores
    whose mean it is."""
    per_seed = []
    for s in range(SEEDS):
        k = round((norm + 0.01 * s) * ITEMS / 1.25)
        per_seed.append([1.25] * k + [0.0] * (ITEMS - k))  # correct / a fine-tuned accuracy of 0.8
    return {"normalized": [sum(x) / ITEMS for x in per_seed], "items": per_seed if items else None}


def _summary(ours: float, baselines: float, share_ratio: float, items: bool = True) -> dict:
    methods = {"weight_averaging": _method(baselines - 0.1, items), "tsv_merge": _method(baselines, items),
               "task_arithmetic": _method(baselines - 0.05, items), "embed_mean_posthoc": _method(baselines - 0.02, items),
               "embed_mean": _method(ours, items), "embed_aligned": _method(ours + (0.05 if ours > baselines else -0.05), items)}
    chance = [0.2, 0.21, 0.19]
    return {"vision": {"tasks": 8, "methods": methods, "holds_fixed": "",
                       "share": [c * share_ratio * (1 + 0.01 * s) for s, c in enumerate(chance)], "chance": chance}}


def _verdicts(summary):
    return {r["claim"]: r["reproduced"] for r in claim_rows(summary, "test")}


@pytest.mark.parametrize("items", [True, False])
def test_every_row_says_yes_when_the_claims_hold(items):
    verdicts = _verdicts(_summary(ours=0.8, baselines=0.6, share_ratio=2.0, items=items))
    assert len(verdicts) == 6
    assert set(verdicts.values()) == {"yes"}, verdicts


@pytest.mark.parametrize("items", [True, False])
def test_every_row_says_no_when_the_claims_fail(items):
    verdicts = _verdicts(_summary(ours=0.5, baselines=0.8, share_ratio=1.05, items=items))
    assert set(verdicts.values()) == {"no"}, verdicts


def test_a_share_barely_above_chance_is_not_a_yes():
    # the review's case: 0.140 against a chance level of 0.133
    summary = _summary(ours=0.8, baselines=0.6, share_ratio=2.0)
    summary["vision"]["share"], summary["vision"]["chance"] = [0.140, 0.142, 0.137], [0.133, 0.1333, 0.1328]
    row = next(r for r in claim_rows(summary, "test") if r["claim"].startswith("fine-tuned updates"))
    assert row["reproduced"] == "no"


def test_rows_pair_by_seed_and_name_what_the_seeds_hold_fixed():
    summary = _summary(ours=0.8, baselines=0.6, share_ratio=2.0)
    summary["vision"]["holds_fixed"] = "the pre-trained encoder"
    rows = claim_rows(summary, "test")
    assert "paired bootstrap over 3 seeds x 300 items" in rows[0]["criterion"]
    assert all("hold fixed: the pre-trained encoder" in r["criterion"] for r in rows)
    best = next(r for r in rows if "field's methods" in r["claim"])
    assert (best["method"], best["baseline"]) == ("embed_aligned", "tsv_merge")


def test_the_posthoc_ablation_is_not_one_of_the_fields_methods():
    summary = _summary(ours=0.8, baselines=0.6, share_ratio=2.0)
    summary["vision"]["methods"]["embed_aligned_posthoc"] = _method(0.95, True)
    row = next(r for r in claim_rows(summary, "test") if "field's methods" in r["claim"])
    assert row["baseline"] == "tsv_merge"
    rows = {r["baseline"]: r for r in claim_rows(summary, "test")}
    assert rows["task_arithmetic"]["method"] == "embed_mean" and rows["embed_mean_posthoc"]["method"] == "embed_mean"


def test_one_seed_is_untested():
    summary = _summary(ours=0.8, baselines=0.6, share_ratio=2.0)
    dom = summary["vision"]
    for m in dom["methods"].values():
        m["normalized"], m["items"] = m["normalized"][:1], m["items"][:1]
    dom["share"], dom["chance"] = dom["share"][:1], dom["chance"][:1]
    assert set(_verdicts(summary).values()) == {"untested"}


def test_per_example_scores_average_to_the_mean_normalised_accuracy():
    from neurips26.papers.embed_merge.steps import _normalised_items

    run = {"individual": {"a": 0.8, "b": 0.5}}
    merge = {"correct": {"a": [1, 0, 1, 1], "b": [0, 1, 0, 0, 0, 1]}}
    items = _normalised_items(run, merge)
    expected = (0.75 / 0.8 + (2 / 6) / 0.5) / 2
    assert len(items) == 10
    assert sum(items) / len(items) == pytest.approx(expected)
    assert _normalised_items(run, {}) is None
