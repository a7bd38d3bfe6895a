"""The tuning protocol (neurips26.core.tuning) against brute force and the claims rule's guard."""

import itertools
import math

import numpy as np
import pytest

from neurips26.core import claims, tuning
from tests.core.test_claims import decide, entry


def bowl(centre):
    return lambda lr: -(math.log10(lr) - math.log10(centre)) ** 2


def test_an_interior_best_keeps_the_grid():
    chosen, (rec,) = tuning.search(bowl(0.003), {"lr": [0.001, 0.003, 0.01]}, method="m")
    assert chosen == {"lr": 0.003} and rec.grid == [0.001, 0.003, 0.01]
    assert rec.status == "tuned" and rec.extensions == 0 and rec.edge == ""


def test_a_best_on_the_edge_extends_the_grid_by_its_own_log_step():
    chosen, (rec,) = tuning.search(bowl(0.1), {"lr": [0.001, 0.003, 0.01]}, method="m", extensions=5)
    step = math.sqrt(10)  # the declared grid's spacing: half a decade
    assert rec.grid[3:] == pytest.approx([0.01 * step, 0.01 * step ** 2, 0.01 * step ** 3], rel=1e-5)
    assert chosen["lr"] == pytest.approx(0.1, rel=1e-4) and rec.status == "tuned"
    # the grid grew until the best was interior (one point past the optimum), not to the cap
    assert rec.grid[-1] > chosen["lr"] and rec.extensions == 3


def test_the_cap_is_recorded_when_the_best_stays_on_the_edge():
    chosen, (rec,) = tuning.search(lambda lr: lr, {"lr": [0.001, 0.01]}, method="m", extensions=2)
    assert rec.grid == pytest.approx([0.001, 0.01, 0.1, 1.0]) and chosen["lr"] == pytest.approx(1.0)
    assert rec.status == "capped" and rec.edge == "high" and "cap 2" in rec.note
    assert tuning.capped_note([rec], "m") and not tuning.capped_note([rec], "other")
    # the low edge, a linear grid
    chosen, (rec,) = tuning.search(lambda x: -x, {"x": [1.0, 2.0, 3.0]}, method="m", scale="linear", extensions=1)
    assert rec.grid == [0.0, 1.0, 2.0, 3.0] and rec.status == "capped" and rec.edge == "low"


def test_a_bound_stops_the_extension_and_integers_stay_integers():
    chosen, (rec,) = tuning.search(lambda n: n, {"n": [1, 2, 4, 8]}, method="bon", integer=["n"],
                                   bounds={"n": (1, 32)}, extensions=10)
    assert rec.grid == [1, 2, 4, 8, 16, 32] and all(isinstance(v, int) for v in rec.grid)
    assert rec.status == "capped" and "bound" in rec.note


def test_a_declared_natural_end_is_tuned_and_any_other_edge_stays_capped():
    end = {"n": (1, "n = 1 is the method itself")}
    _, (low,) = tuning.search(lambda n: -n, {"n": [1, 2, 4]}, method="m", integer=["n"], bounds={"n": (1, None)},
                              natural_ends=end)
    assert low.status == "tuned" and low.edge == "low" and low.note == "n = 1 is the method itself"
    # the same search without the declaration is a cap; the other edge is a cap with it
    _, (plain,) = tuning.search(lambda n: -n, {"n": [1, 2, 4]}, method="m", integer=["n"], bounds={"n": (1, None)})
    assert plain.status == "capped"
    _, (high,) = tuning.search(lambda n: n, {"n": [1, 2, 4]}, method="m", integer=["n"], bounds={"n": (1, 8)},
                               natural_ends=end)
    assert high.status == "capped" and high.chosen == 8


def test_search_matches_brute_force_on_random_unimodal_profiles():
    rng = np.random.default_rng(0)
    for _ in range(40):
        centre = 10 ** rng.uniform(-6, 1)
        grid = [1e-4, 1e-3, 1e-2]
        chosen, (rec,) = tuning.search(bowl(centre), {"lr": grid}, method="m", extensions=3)
        # brute force: every point of the widest grid the cap allows
        full = [1e-4 * 10 ** k for k in range(-3, 6)]
        best = max(full, key=bowl(centre))
        if 1e-7 <= best <= 1e1 and best not in (full[0], full[-1]):
            assert chosen["lr"] == pytest.approx(best, rel=1e-4)
            assert rec.status == "tuned"
        else:
            assert rec.status == "capped"


def test_two_knobs_extend_independently_and_profiles_hold_the_other_at_its_choice():
    f = lambda lr, damping: -(math.log10(lr) + 2) ** 2 - (math.log10(damping) + 2) ** 2  # noqa: E731
    chosen, recs = tuning.search(f, {"lr": [1e-3, 1e-2, 1e-1], "damping": [1e-8, 1e-6, 1e-4]}, method="m")
    assert chosen["lr"] == pytest.approx(1e-2) and chosen["damping"] == pytest.approx(1e-2, rel=1e-4)
    lr, damping = recs
    assert lr.status == damping.status == "tuned" and len(lr.grid) == 3 and len(damping.grid) == 5
    assert damping.scores == pytest.approx([f(1e-2, d) for d in damping.grid])
    # every point of the product of the final grids was scored: the best is the brute-force best
    pts = list(itertools.product(lr.grid, damping.grid))
    assert max(pts, key=lambda p: f(*p)) == pytest.approx((chosen["lr"], chosen["damping"]))


def test_a_one_point_grid_is_a_fixed_knob_and_ties_prefer_the_interior():
    chosen, (rec,) = tuning.search(lambda lr: 0.0, {"lr": [0.01]}, method="m")
    assert rec.status == "fixed" and chosen == {"lr": 0.01}
    chosen, (rec,) = tuning.search(lambda lr: 1.0, {"lr": [0.1, 0.2, 0.4]}, method="m", scale="log")
    assert chosen == {"lr": 0.2} and rec.status == "tuned" and rec.extensions == 0


def test_strongest_is_chosen_on_validation_and_never_a_control():
    best, rec = tuning.strongest({"a": 0.5, "b": 0.7, "ideal": 0.9}, controls=["ideal"])
    assert best == "b" and rec.status == "choice" and rec.grid == ["a", "b"]
    with pytest.raises(tuning.TuningError, match="control"):
        tuning.strongest({"a": 0.5, "ideal": 0.9}, candidates=["a", "ideal"], controls=["ideal"])
    assert tuning.strongest({"a": 2.0, "b": 1.0}, maximize=False)[0] == "b"
    with pytest.raises(tuning.TuningError, match="no validation score"):
        tuning.strongest({"a": 1.0}, candidates=["a", "c"])


def test_a_capped_baseline_blocks_yes_and_a_capped_method_blocks_no():
    note = "base's lr = 1 on the high edge of its capped grid"
    row = decide(entry("a"), [10, 11, 12], [1, 2, 3], baseline_capped=note)
    assert row["reproduced"] == "inconclusive" and "would read yes" in row["criterion"] and row["n_to_decide"] == ""
    assert decide(entry("a"), [10, 11, 12], [1, 2, 3], method_capped=note)["reproduced"] == "yes"
    row = decide(entry("a"), [1, 2, 3], [10, 11, 12], method_capped=note)
    assert row["reproduced"] == "inconclusive" and "would read no" in row["criterion"]
    assert decide(entry("a"), [1, 2, 3], [10, 11, 12], baseline_capped=note)["reproduced"] == "no"


def test_records_round_trip_through_json_and_csv(tmp_path):
    _, recs = tuning.search(lambda lr: float("nan") if lr > 0.05 else lr, {"lr": [0.001, 0.01, 0.1]}, method="m",
                            setting="task", metric="accuracy", seed=100)
    back = [tuning.Record.from_json(r.to_json()) for r in recs]
    assert back[0].chosen == recs[0].chosen and math.isnan(back[0].scores[-1])
    _, choice = tuning.strongest({"a": 0.1, "b": 0.2})
    recs = back + [choice, tuning.fixed("m", "steps", 50, "the paper's budget")]
    path = tuning.write_csv(tmp_path / "p" / "tuning.csv", "p", recs)
    rows = tuning.read_csv([path])
    assert [r["status"] for r in rows] == ["tuned", "choice", "fixed"]
    assert rows[0]["grid"] == "0.001;0.01;0.1" and rows[0]["scores"].endswith(";") and rows[1]["chosen"] == "b"
    with pytest.raises(tuning.TuningError, match="reason"):
        tuning.fixed("m", "steps", 50, "")
    pictures, text = tuning.summarize([path], tmp_path)
    assert (tmp_path / "p" / "figures" / "tuning.png").stat().st_size > 5_000
    assert "1 knobs tuned" in text and (tmp_path / "tuning.csv").read_text() == path.read_text()


def test_readme_section_is_inserted_then_replaced():
    rows = [{c: "" for c in tuning.COLUMNS} | {"paper": "p", "method": "m", "knob": "lr", "status": "tuned",
                                               "grid": "0.1;0.2", "chosen": "0.2", "score": "0.9", "metric": "acc"}]
    text = "# p\n\n## Baselines\n\nx\n\n## What reproduced at default scale\n\ny\n"
    once = tuning.readme_with_block(text, rows, "reference/tuning.csv")
    assert once.index(tuning.README_HEADING) < once.index("## What reproduced") and "| 0.1, 0.2 | 0.2 |" in once
    rows[0]["chosen"] = "0.1"
    twice = tuning.readme_with_block(once, rows, "reference/tuning.csv")
    assert twice.count(tuning.README_HEADING) == 1 and "| 0.1, 0.2 | 0.1 |" in twice


def test_settings_read_the_config_block():
    assert tuning.settings({}) == {"extensions": tuning.DEFAULT_EXTENSIONS}
    assert tuning.settings({"tuning": {"extensions": 0}}) == {"extensions": 0}
    with pytest.raises(tuning.TuningError, match="tuning.extensions"):
        tuning.settings({"tuning": {"extensions": -1}})


def test_log_grid_is_geometric_and_centred():
    g = tuning.log_grid(0.01, 5, 2)
    assert g == [0.001, 0.00316228, 0.01, 0.0316228, 0.1]
    ratios = [b / a for a, b in zip(g, g[1:])]
    assert all(abs(r - 10 ** 0.5) < 1e-5 for r in ratios)
    assert tuning.log_grid(0.3, 1, 2) == [0.3]
