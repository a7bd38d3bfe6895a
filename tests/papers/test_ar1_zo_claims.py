"""ar1_zo claims rows: each says `yes` on metrics where its claim holds and `no` (`fail` for the
check) where it is false, and the summary the figures step builds feeds them."""

from __future__ import annotations

import pytest

from neurips26.papers.ar1_zo.claims import claim_rows

SEEDS, ITEMS = 3, 100
RANKS = [1, 2, 4, 8, 16, 32, 64]


def _items(acc):
    return [[1] * round(a * ITEMS) + [0] * (ITEMS - round(a * ITEMS)) for a in acc]


def _cell(method, rank, acc):
    accs = [acc + 0.01 * s for s in range(SEEDS)]
    return {"method": method, "rank": rank, "accuracy": [round(a * ITEMS) / ITEMS for a in accs], "items": _items(accs)}


def _summary(holds: bool) -> dict:
    def mech(signal_slope, snr_slope, agree):
        return {"signal_slope": [signal_slope + d for d in (-0.02, 0.0, 0.02)],
                "snr_slope": [snr_slope + d for d in (-0.04, 0.0, 0.04)],
                "sign_agreement_max_rank": [agree + d for d in (-0.01, 0.0, 0.01)],
                "snr_max_rank": [1.0] * SEEDS, "signal_r1": [1e-3, 2e-3, 3e-3]}

    if holds:
        naive, ar1 = mech(-1.0, -2.0, 0.55), mech(0.0, 0.0, 0.85)
        acc = {"mezo_full": 0.6, "mezo_lora": 0.6, "lozo": 0.6, "naive_atom": 0.6, "ar1_zo": 0.8}
        ar1_by_rank, naive_by_rank = {1: 0.7, 64: 0.85}, {1: 0.7, 64: 0.55}
    else:
        naive, ar1 = mech(-0.3, 0.5, 0.85), mech(-1.0, -2.0, 0.55)
        naive["signal_r1"] = [2e-3, 2e-3, 3e-3]  # the r = 1 identity broken too
        acc = {"mezo_full": 0.8, "mezo_lora": 0.8, "lozo": 0.8, "naive_atom": 0.8, "ar1_zo": 0.6}
        ar1_by_rank, naive_by_rank = {1: 0.8, 64: 0.6}, {1: 0.7, 64: 0.8}
    cells = {f"{m}@r8": _cell(m, 8, a) for m, a in acc.items()}
    for r in (1, 64):
        cells[f"ar1_zo@r{r}"] = _cell("ar1_zo", r, ar1_by_rank[r])
        cells[f"naive_atom@r{r}"] = _cell("naive_atom", r, naive_by_rank[r])
    return {"ranks": RANKS, "max_rank": 64, "min_rank": 1, "rank": 8, "ranks_sweep": [1, 8, 64],
            "mechanism": {"naive_atom": naive, "ar1_zo": ar1}, "cells": cells, "zero_shot": [0.7] * SEEDS,
            "seeds": SEEDS, "forwards": 300, "noise_floor": 1e-3}


def test_every_row_says_yes_when_the_claims_hold():
    rows = claim_rows(_summary(True), "test")
    assert len(rows) == 12
    want = ["pass" if r["kind"] == "check" else "yes" for r in rows]
    assert [r["reproduced"] for r in rows] == want, [(r["claim"], r["reproduced"]) for r in rows]


def test_every_row_says_no_when_the_claims_fail():
    rows = claim_rows(_summary(False), "test")
    want = ["fail" if r["kind"] == "check" else "no" for r in rows]
    assert [r["reproduced"] for r in rows] == want, [(r["claim"], r["reproduced"]) for r in rows]


def test_a_slope_interval_straddling_the_band_is_inconclusive():
    s = _summary(True)
    s["mechanism"]["naive_atom"]["signal_slope"] = [-1.4, -1.0, -0.6]
    row = claim_rows(s, "test")[0]
    assert row["reproduced"] == "inconclusive"


def test_fewer_than_three_seeds_is_untested():
    s = _summary(True)
    for name in ("naive_atom", "ar1_zo"):
        for k, v in s["mechanism"][name].items():
            s["mechanism"][name][k] = v[:2]
    for c in s["cells"].values():
        c["accuracy"], c["items"] = c["accuracy"][:2], c["items"][:2]
    rows = claim_rows(s, "test")
    assert all(r["reproduced"] == "untested" for r in rows if r["kind"] != "check"), [(r["claim"], r["reproduced"]) for r in rows]


def test_the_summary_of_the_figures_step_feeds_the_rows():
    from neurips26.papers.ar1_zo import steps

    mech = {"ranks": [1, 4, 16], "noise_floor": 1e-3, "seeds": {}}
    for s in range(3):
        mech["seeds"][str(s)] = {
            name: {str(r): {"signal": 1e-3 * (r ** (-1.0 if name == "naive_atom" else 0.0)), "fd_snr": 2.0 * r ** (-2.0 if name == "naive_atom" else 0.0),
                            "sign_agreement": 0.8, "scaling": 1.0} for r in (1, 4, 16)}
            for name in ("naive_atom", "ar1_zo")}
    runs = [{"forwards_per_run": 300, "zero_shot": {"test_accuracy": 0.7},
             "runs": {"ar1_zo@r8": {"method": "ar1_zo", "rank": 8, "test_accuracy": 0.7 + 0.01 * s, "test_correct": [1, 0]}}}
            for s in range(3)]
    summary = steps.claims_summary(mech, runs, {"lora": {"rank": 8}})
    assert summary["mechanism"]["naive_atom"]["signal_slope"] == pytest.approx([-1.0] * 3)
    assert summary["mechanism"]["naive_atom"]["snr_slope"] == pytest.approx([-2.0] * 3)
    assert summary["mechanism"]["ar1_zo"]["signal_slope"] == pytest.approx([0.0] * 3, abs=1e-12)
    assert summary["cells"]["ar1_zo@r8"]["accuracy"] == [0.7, 0.71, 0.72]
    rows = claim_rows(summary, "test")
    assert rows[0]["reproduced"] == "yes" and rows[2]["reproduced"] == "yes"
