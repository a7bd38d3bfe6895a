"""beta_tta tuning protocol (steps.tune_methods, core.tuning): every knob of every method is tuned
on the same kind of grid; a validation best on a grid edge extends that grid, a best still on the
edge at the cap (or at a knob's bound) is recorded `capped`, and the claims rows read the capped
note; the fixed knobs are recorded with their reasons."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from neurips26.core import tuning
from neurips26.papers.beta_tta import check_config, steps

CONFIG = Path(__file__).resolve().parents[2] / "config" / "config.yaml"


@pytest.fixture(scope="module")
def params():
    block = yaml.safe_load(CONFIG.read_text())["beta_tta"]
    return {**block, "tuning": {"extensions": 3}}


def _peak(at: dict, default: float = 0.5):
    """Validation accuracy peaking (in log distance) at `at[knob]` for every knob; other methods flat."""
    def score(name, point):
        if not point:
            return default
        return 0.9 - sum(0.05 * abs(math.log(v / at[k])) for k, v in point.items() if k in at)
    return score


def _by(records, method, knob):
    return next(r for r in records if r.method == method and r.knob == knob)


def test_every_gradient_method_gets_the_same_lr_grid_and_the_knobs_are_recorded(params):
    chosen, records, validation, choice, _ = steps.tune_methods(params, _peak({}), "vit_shapes", 100)
    grids = {m: _by(records, m, "lr").grid for m in ("beta", "beta_no_harmonise", "beta_no_consistency",
                                                    "beta_no_filter", "tent", "tpt")}
    assert all(g == grids["beta"] for g in grids.values())
    assert grids["beta"] == params["tune"]["lr"]
    assert "beta_frozen" not in chosen and "source" not in chosen  # nothing to tune
    assert _by(records, "lame", "knn").status == "tuned"
    # CMA-ES at budget 5 with a population of 10 runs no generation: its gain is fixed, with the reason
    fixed = _by(records, "zoo_cma_5", "cma_sigma0")
    assert fixed.status == "fixed" and "no optimiser step" in fixed.note
    assert set(chosen) >= {"zoo_spsa_5", "zoo_spsa_25", "zoo_spsa_251", "zoo_cma_25", "zoo_cma_251"}
    assert all(r.note for r in records if r.status == "fixed")
    assert choice["zoo"] in ("zoo_spsa_251", "zoo_cma_251")


def test_a_best_beyond_the_edge_extends_the_grid(params, monkeypatch):
    # TENT's validation accuracy peaks at lr 0.15, past the grid's top (0.05): the grid grows by its own
    # spacing until the best is interior
    chosen, records, *_ = steps.tune_methods(params, _peak({"lr": 0.15, "spsa_lr": 0.1, "cma_sigma0": 0.02,
                                                            "knn": 4}), "vit_shapes", 100)
    r = _by(records, "tent", "lr")
    assert len(r.grid) > len(params["tune"]["lr"]) and max(r.grid) > 0.05
    assert r.status == "tuned" and r.extensions >= 1 and r.edge == ""
    assert chosen["tent"]["lr"] == pytest.approx(0.158, rel=0.01)
    # a peak far past the cap (3 steps of half a decade) stays on the edge: recorded capped
    chosen, records, *_ = steps.tune_methods(params, _peak({"lr": 100.0, "spsa_lr": 0.1, "cma_sigma0": 0.02,
                                                            "knn": 4}), "vit_shapes", 100)
    r = _by(records, "tent", "lr")
    assert r.status == "capped" and r.edge == "high" and r.extensions == 3 and len(r.grid) == 8
    assert "tent's lr" in tuning.capped_note(records, "tent", "vit_shapes")
    # LAME's neighbour count cannot go below 1: a best at k = 1 is capped by the knob's bound
    chosen, records, *_ = steps.tune_methods(params, _peak({"knn": 0.1, "lr": 0.005, "spsa_lr": 0.1,
                                                            "cma_sigma0": 0.02}), "vit_shapes", 100)
    r = _by(records, "lame", "knn")
    assert chosen["lame"]["knn"] == 1 and r.status == "capped" and "bound" in r.note


def test_the_tuned_knobs_reach_each_method(params):
    tuned = {"tent": {"lr": 0.05}, "lame": {"knn": 2}, "beta_no_filter": {"lr": 0.0005}, "zoo_cma_251": {"cma_sigma0": 0.06}}
    assert steps.method_config(params, "tent", tuned)["lr"] == 0.05
    assert steps.method_config(params, "lame", tuned)["knn"] == 2
    cfg = steps.method_config(params, "beta_no_filter", tuned)
    assert cfg["lr"] == 0.0005 and cfg["filtering"] is False
    assert steps.method_config(params, "beta", tuned)["lr"] == params["beta"]["lr"]
    assert steps.method_config(params, "zoo_cma_251", tuned)["cma_sigma0"] == 0.06
    assert steps.method_config(params, "zoo_spsa_251", tuned)["spsa_lr"] == params["zoo"]["spsa_lr"]


def test_the_tuning_seed_must_not_be_a_test_seed(params):
    block = {**params, "tune": {**params["tune"], "seed": params["seeds"][0]}}
    assert any(p.startswith("tune.seed") for p in check_config(block))
    assert not any(p.startswith("tune.seed") for p in check_config(params))
