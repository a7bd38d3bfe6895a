"""angular_nets claims rows: each says `no` on metrics where its claim is false and `yes` where it holds."""

from __future__ import annotations

import pytest

from neurips26.papers.angular_nets.claims import claim_rows

SEEDS = 3
ITEMS = 200


def _scores(acc: float, seed: int) -> dict:
    """Per-example correctness of one seed: accuracy `acc` plus a small seed effect."""
    k = round((acc + 0.01 * seed) * ITEMS)
    correct = [1] * k + [0] * (ITEMS - k)
    return correct


def _entry(acc: float, items: bool) -> dict:
    correct = [_scores(acc, s) for s in range(SEEDS)]
    return {"accuracy": [sum(c) / ITEMS for c in correct], "correct": correct if items else None}


def _summary(angular: float, baseline: float, items: bool = True, recovered: bool = True) -> dict:
    fam = {"bnn": ("bnn", 1), "xnor": ("xnor", 1), "angular_ste_w1a1": ("angular_ste", 1), "lsq_w2a2": ("lsq", 2),
           "angular_w1a1": ("angular", 1), "angular_w2a2": ("angular", 2)}
    methods = {n: {"family": f, "weight_bits": b, "activation_bits": b,
                   **_entry(angular if f == "angular" else baseline - (0.05 if n == "xnor" else 0), items)}
               for n, (f, b) in fam.items()}
    nu_study = {"0.5": _entry(baseline, items), "4": _entry(angular, items)}
    # under the condition (norm < threshold): all recovered, or one miss among them
    trials = [{"n": 64, "g_gradient_norm": 1e-4, "threshold": 2e-4, "recovered": True} for _ in range(20)]
    trials[0]["recovered"] = recovered
    # outside it (a large gradient, or lambda_min = 0): misses do not count against the claim
    trials += [{"n": 8, "g_gradient_norm": 1e-5, "threshold": 0.0, "recovered": False} for _ in range(10)]
    trials += [{"n": 64, "g_gradient_norm": 0.1, "threshold": 2e-4, "recovered": False} for _ in range(5)]
    return {"experiments": {"vit": {"methods": methods, "nu_study": nu_study, "data_fixed": False, "data": "shapes"}},
            "planted": {"trials": trials, "condition_margin": 0.5}}


def _verdicts(summary: dict) -> dict:
    return {r["claim"]: r["reproduced"] for r in claim_rows(summary, "test")}


PLANTED = "a small G-gradient guarantees exact recovery of the planted binary target"


@pytest.mark.parametrize("items", [True, False])
def test_every_row_says_yes_when_the_claims_hold(items):
    verdicts = _verdicts(_summary(angular=0.7, baseline=0.5, items=items, recovered=True))
    assert len(verdicts) == 5
    assert verdicts.pop(PLANTED) == "pass"
    assert set(verdicts.values()) == {"yes"}, verdicts


@pytest.mark.parametrize("items", [True, False])
def test_every_row_says_no_when_the_claims_fail(items):
    verdicts = _verdicts(_summary(angular=0.4, baseline=0.6, items=items, recovered=False))
    assert verdicts.pop(PLANTED) == "fail"
    assert set(verdicts.values()) == {"no"}, verdicts


def test_the_matched_row_compares_with_ste_on_the_same_projected_signs():
    summary = _summary(angular=0.7, baseline=0.5)
    summary["experiments"]["vit"]["methods"]["angular_ste_w1a1"].update(_entry(0.75, True))
    row = next(r for r in claim_rows(summary, "test") if r["claim"].startswith("the G-Gradient"))
    assert row["baseline"] == "angular_ste_w1a1" and row["reproduced"] == "no"


def test_the_one_bit_row_compares_with_the_strongest_binary_baseline_and_says_when_data_is_fixed():
    summary = _summary(angular=0.7, baseline=0.5)
    summary["experiments"]["vit"]["data_fixed"] = True
    row = next(r for r in claim_rows(summary, "test") if r["claim"].startswith("1-bit"))
    assert "A1 after an fp projection" in row["claim"]
    assert row["baseline"] == "bnn"
    assert "paired bootstrap over 3 seeds x 200 items" in row["criterion"]
    assert "replicates hold fixed: the shapes train and test sets" in row["criterion"]


def test_a_gain_below_one_point_is_not_a_yes():
    verdicts = _verdicts(_summary(angular=0.505, baseline=0.5))
    assert verdicts["2-bit angular nets beat LSQ at 2 bits (vit)"] == "inconclusive"


def test_fewer_than_three_seeds_or_no_small_gradient_trial_is_untested():
    summary = _summary(angular=0.7, baseline=0.5)
    for m in summary["experiments"]["vit"]["methods"].values():
        m["accuracy"], m["correct"] = m["accuracy"][:2], m["correct"][:2]
    summary["planted"]["trials"] = [t for t in summary["planted"]["trials"] if t["g_gradient_norm"] >= t["threshold"]]
    rows = claim_rows(summary, "test")
    assert [r["reproduced"] for r in rows if not r["claim"].startswith("more")] == ["untested"] * 4
