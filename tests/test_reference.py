"""The committed reference run: complete, and every paper README's claims table generated from it."""

from pathlib import Path

import pytest
import yaml

from neurips26.core import claims, reference, report, tuning
from neurips26.core.io import read_csv, read_json

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "reference" / "summary.csv"


def test_reference_covers_every_enabled_paper_with_valid_rows():
    rows = read_csv(REF)
    enabled = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["papers"]
    assert sorted({r["paper"] for r in rows}) == sorted(enabled)
    for r in rows:
        assert list(r) == claims.COLUMNS
        allowed = claims.CHECK_VERDICTS if r["kind"] == "check" else claims.CLAIM_VERDICTS
        assert r["kind"] in claims.KINDS and r["reproduced"] in allowed, r
        assert r["criterion"], r
    meta = read_json(ROOT / "reference" / "run.json")
    assert meta["rows"] == len(rows) and meta["commit"]


def test_reference_tuning_covers_every_paper_and_no_choice_sits_on_an_unrecorded_edge():
    """Every enabled paper records its knobs; a tuned knob whose chosen value is an end of the grid
    it tried is recorded `capped` (or its grid is one point, `fixed`), unless that end is the knob's
    natural end (best-of-n's n = 1, anchor PCA's gamma = 0, pooled PCA, a merge strength of 1) or every point
    scored the same, which the row's note then says."""
    rows = tuning.read_csv([ROOT / "reference" / "tuning.csv"])
    enabled = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["papers"]
    assert sorted({r["paper"] for r in rows}) == sorted(enabled)
    for r in rows:
        assert r["status"] in tuning.STATUSES, r
        if r["status"] == "tuned":
            grid = [float(x) for x in r["grid"].split(";")]
            assert len(grid) > 1, (r["paper"], r["method"], r["knob"])
            if float(r["chosen"]) in (min(grid), max(grid)):
                # an end declared to core.tuning.search as the knob's natural end keeps its edge and its reason
                natural = r["edge"] in ("low", "high") and bool(r["note"])
                assert natural or float(r["chosen"]) == min(grid) and any(
                    w in r["note"] for w in ("natural lower end", "complete on its low side", "every gamma scores the same")
                ), (r["paper"], r["method"], r["knob"], r["note"])
        if r["status"] == "capped":
            assert r["edge"] in ("low", "high") and r["note"], r
        if r["status"] == "fixed":
            assert r["note"], (r["paper"], r["method"], r["knob"])


def _first_number(text):
    return report._number(text.replace("ratio ", ""))


def test_reference_verdicts_follow_the_rule():
    """No `no` whose interval reaches its margin, no `yes` whose interval reaches 0 (1 for a ratio),
    every comparison with a margin and its source, every row with an id declared in its paper's
    claims.yaml."""
    for r in read_csv(REF):
        declared = {e["id"]: e for e in claims.load_spec(r["paper"])}
        assert r["id"] in declared, (r["paper"], r["id"])
        if r["kind"] != "comparison":
            continue
        assert r["margin"] and r["margin_source"], (r["paper"], r["id"])
        iv = report._interval(r["interval"])
        if r["reproduced"] == "no":
            assert iv[1] < _first_number(r["margin"]), (r["paper"], r["id"])
        if r["reproduced"] == "yes":
            zero = 1.0 if declared[r["id"]].get("transform") == "log" else 0.0
            assert iv[0] > zero and float(r["p_holm"]) < 0.05, (r["paper"], r["id"])


def test_every_readme_table_matches_the_reference():
    stale = reference.write_readmes(REF, check=True)
    assert not stale, f"README claims tables differ from reference/summary.csv (run `neurips26 readme`): {stale}"
    for paper in {r["paper"] for r in read_csv(REF)}:
        table = report.readme_table_rows(reference.readme_path(paper).read_text())
        ref = [r for r in read_csv(REF) if r["paper"] == paper]
        assert [(t["claim"], t["reproduced"]) for t in table] == [(r["claim"], r["reproduced"]) for r in ref]


def _row(paper, claim, verdict):
    row = {c: "" for c in claims.COLUMNS}
    row.update(paper=paper, claim=claim, kind="comparison", reproduced=verdict, criterion="c", scale="default")
    return row


def test_partial_update_replaces_only_the_named_papers(tmp_path, monkeypatch):
    from neurips26.core import io

    monkeypatch.setattr("neurips26.core.tracking.git_state",
                        lambda *_: {"commit": "new", "dirty": "false"})
    monkeypatch.setattr("neurips26.core.config.load_config", lambda *_: {"x": 1})
    ref = tmp_path / "reference"
    ref.mkdir()
    io.write_csv(ref / "summary.csv", [_row("a", "a1", "yes"), _row("b", "b1", "no"), _row("c", "c1", "yes")],
                 claims.COLUMNS)
    io.write_json(ref / "run.json", {"commit": "old", "config_hash": "h0", "papers": ["a", "b", "c"]})
    results = tmp_path / "results"
    results.mkdir()
    old_knob, new_knob = tuning.fixed("m", "lr", 0.1, "old"), tuning.fixed("m", "lr", 0.2, "new")
    tuning.write_csv(ref / "tuning.csv", "a", [old_knob])
    with open(ref / "tuning.csv", "a") as f:
        f.write("b,,m,lr,fixed,0.1,,0.1,,,,,0,,,old\n")
    tuning.write_csv(results / "tuning.csv", "b", [new_knob])
    # a run of b alone, and a new paper d
    io.write_csv(results / "summary.csv", [_row("b", "b1", "yes"), _row("b", "b2", "no"), _row("d", "d1", "no")],
                 claims.COLUMNS)
    reference.make_reference(results, ref, papers=["b", "d"], workflow_dir=tmp_path)
    rows = read_csv(ref / "summary.csv")
    assert [(r["paper"], r["claim"], r["reproduced"]) for r in rows] == [
        ("a", "a1", "yes"), ("b", "b1", "yes"), ("b", "b2", "no"), ("c", "c1", "yes"), ("d", "d1", "no")]
    assert [(r["paper"], r["note"]) for r in tuning.read_csv([ref / "tuning.csv"])] == [("a", "old"), ("b", "new")]
    meta = read_json(ref / "run.json")
    assert meta["paper_runs"]["a"]["commit"] == "old" and meta["paper_runs"]["b"]["commit"] == "new"
    assert meta["paper_runs"]["d"]["commit"] == "new" and meta["rows"] == 5
    # naming a paper the run did not produce is an error, and the reference stays as it was
    with pytest.raises(ValueError, match="has no rows of e"):
        reference.make_reference(results, ref, papers=["e"], workflow_dir=tmp_path)
    assert read_json(ref / "run.json")["rows"] == 5


def test_compare_names_the_papers_recorded_on_another_cpu_than_this_run(tmp_path):
    """Float rounding follows the CPU's kernels, so compare.md names the papers whose reference
    rows came from another CPU (or an unrecorded one) than this run's, and says nothing when all
    came from this run's CPU."""
    from neurips26.core import io

    avx2 = {"system": "Linux", "arch": "x86_64", "cpus": 2, "cpu": "Some CPU", "vector": "AVX2"}
    avx512 = {**avx2, "vector": "AVX-512"}
    for side in ("ref", "run"):
        (tmp_path / side).mkdir()
        io.write_csv(tmp_path / side / "summary.csv", [_row("a", "a1", "yes"), _row("b", "b1", "no")], claims.COLUMNS)
    meta = {"commit": "c", "config_hash": "h", "machine": avx512,
            "paper_runs": {"a": {"commit": "c", "cpu": "Some CPU, AVX2"}, "b": {"commit": "c", "cpu": "Some CPU, AVX-512"}}}
    io.write_json(tmp_path / "ref" / "run.json", meta)
    md = tmp_path / "compare.md"

    reference.compare_folders(tmp_path / "ref", tmp_path / "run", md, current_machine=avx512)
    text = md.read_text()
    assert "This run's CPU is Some CPU, AVX-512. Reference rows recorded on another CPU: a (Some CPU, AVX2)." in text
    assert "b (" not in text
    reference.compare_folders(tmp_path / "ref", tmp_path / "run", md, current_machine=avx2)
    assert "on another CPU: b (Some CPU, AVX-512)" in md.read_text()
    # rows of a paper recorded before the CPU was: said, not guessed
    meta["paper_runs"]["a"] = {"commit": "old"}
    io.write_json(tmp_path / "ref" / "run.json", meta)
    reference.compare_folders(tmp_path / "ref", tmp_path / "run", md, current_machine=avx512)
    assert "on a CPU the reference does not record: a" in md.read_text()
    # every row from this run's CPU: nothing to say; the run's machine comes from its run_info.json
    meta["paper_runs"]["a"] = {"commit": "c", "cpu": "Some CPU, AVX-512"}
    io.write_json(tmp_path / "ref" / "run.json", meta)
    io.write_json(tmp_path / "run" / "run_info.json", {"config_hash": "h", "machine": avx512})
    reference.compare_folders(tmp_path / "ref", tmp_path / "run", md)
    assert "CPU" not in md.read_text()


def test_machine_records_the_cpu_and_its_vector_unit():
    m = reference.machine()
    assert m["cpu"] and m["vector"] in {"AVX-512", "AVX2", "NEON", "unknown"} and m["cpus"] >= 1
    flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    if " avx512f" in flags:
        assert m["vector"] == "AVX-512"
