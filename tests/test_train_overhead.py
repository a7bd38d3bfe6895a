"""benchmarks/train_overhead.py at toy size: two cheap loops for two steps, one timed run per
side. Checks the shape of what it reports (finite positive times, ratio = project / bare, the
parts of the framework time, the skipped loop with its reason), never a speed."""

import json
import math
from pathlib import Path

import pytest
from benchmark_scripts import load

NAME = "train_overhead"

ROOT = Path(__file__).resolve().parents[1]
LOOPS = ("angular_nets", "apexphys")


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("train_overhead") / "overhead.json"
    argv = ["--steps", "2", "--repeats", "1", "--configfile", str(ROOT / "config" / "smoke.yaml"),
            "--json", str(out), "--only", "beta_tta_adapt"]
    for name in LOOPS:
        argv += ["--only", name]
    result = load(NAME).main(argv)
    return result, json.loads(out.read_text())


def test_each_loop_has_positive_times_and_their_ratio(toy_run):
    result, written = toy_run
    assert [r["loop"] for r in written["rows"]] == list(LOOPS)
    assert written["rows"] == json.loads(json.dumps(result["rows"]))
    for r in written["rows"]:
        assert r["steps"] == 2 and len(r["project_runs"]) == 1 and len(r["bare_runs"]) == 1
        for key in ("project_s", "bare_s"):
            assert math.isfinite(r[key]) and r[key] > 0, (r["loop"], key, r[key])
        assert r["ratio"] == r["project_s"] / r["bare_s"]
        assert r["project_cpu_s"] > 0 and r["bare_cpu_s"] > 0
        assert r["cpu_ratio"] == r["project_cpu_s"] / r["bare_cpu_s"]
        assert r["framework_s"] == pytest.approx(r["project_s"] - r["bare_s"])
        parts = [r[k] for k in ("setup_s", "checkpoint_s", "logging_s", "loader_s")]
        assert all(math.isfinite(p) and p >= 0 for p in parts), parts
        assert r["other_s"] == pytest.approx(r["framework_s"] - sum(parts))
        # the project loop builds its trainer and saves at least the final checkpoint
        assert r["setup_s"] > 0 and r["checkpoint_s"] > 0


def test_skipped_loop_says_why_and_has_no_numbers(toy_run, capsys):
    _, written = toy_run
    assert [s["loop"] for s in written["skipped"]] == ["beta_tta_adapt"]
    assert written["skipped"][0]["reason"]
    assert "beta_tta_adapt" not in {r["loop"] for r in written["rows"]}


def test_table_lists_every_measured_loop(toy_run):
    result, _ = toy_run
    text = load(NAME).table(result["rows"])
    head, *lines = text.splitlines()
    assert head.split()[:5] == ["loop", "steps", "project", "s", "bare"]
    assert [line.split()[0] for line in lines] == list(LOOPS)
    assert all("2*" in line for line in lines)  # steps set by --steps are marked
    markdown = load(NAME).table(result["rows"], markdown=True)
    assert markdown.startswith("| loop | steps |") and markdown.count("\n") == len(LOOPS) + 1


def test_calibration_loop_runs_only_when_named():
    module = load(NAME)
    assert "null_model" in module.LOOPS and "null_model" not in module.DEFAULT_LOOPS


def test_unknown_loop_is_refused():
    with pytest.raises(SystemExit, match="unknown loop"):
        load(NAME).run(load(NAME).parse_args(["--only", "no_such_loop"]))
