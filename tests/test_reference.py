"""The committed reference run: complete, and every paper README's claims table generated from it."""

from pathlib import Path

import pytest
import yaml

from neurips26.core import claims, reference, report
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
    # a run of b alone, and a new paper d
    io.write_csv(results / "summary.csv", [_row("b", "b1", "yes"), _row("b", "b2", "no"), _row("d", "d1", "no")],
                 claims.COLUMNS)
    reference.make_reference(results, ref, papers=["b", "d"], workflow_dir=tmp_path)
    rows = read_csv(ref / "summary.csv")
    assert [(r["paper"], r["claim"], r["reproduced"]) for r in rows] == [
        ("a", "a1", "yes"), ("b", "b1", "yes"), ("b", "b2", "no"), ("c", "c1", "yes"), ("d", "d1", "no")]
    meta = read_json(ref / "run.json")
    assert meta["paper_runs"]["a"]["commit"] == "old" and meta["paper_runs"]["b"]["commit"] == "new"
    assert meta["paper_runs"]["d"]["commit"] == "new" and meta["rows"] == 5
    # naming a paper the run did not produce is an error, and the reference stays as it was
    with pytest.raises(ValueError, match="has no rows of e"):
        reference.make_reference(results, ref, papers=["e"], workflow_dir=tmp_path)
    assert read_json(ref / "run.json")["rows"] == 5
