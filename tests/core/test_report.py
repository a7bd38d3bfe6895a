"""Summary counts, README tables generated from claims rows, and `neurips26 compare`."""

import csv

import pytest

from neurips26 import cli
from neurips26.core import claims, report
from neurips26.core.io import write_csv


def _entry(id, claim, kind="comparison", **kw):
    e = {"id": id, "claim": claim, "kind": kind, "metric": "acc", "method": "ours"}
    if kind == "comparison":
        e.update(direction="higher", baseline=kw.pop("baseline", "base"), margin=0.01, margin_source="stated",
                 replicate="seeds", scale=["default"], regime="none: test", null="none: test")
    else:
        e.update(tolerance=1e-6)
    return {**e, **kw}


def _rows():
    p1 = claims.Sheet("p1", "default", claims.validate_spec({"paper": "p1", "claims": [
        _entry("a", "beats base"), _entry("b", "beats other", baseline="other"), _entry("c", "identity", "check")]},
        "p1/claims.yaml"))
    p1.comparison("a", [3, 4, 5], [1, 2, 3])
    p1.comparison("b", [1, 2, 3], [0.9, 2.1, 2.95])
    p1.check("c", 1e-9)
    p2 = claims.Sheet("p2", "default", claims.validate_spec({"paper": "p2", "claims": [_entry("s", "scale")]}, "p2"))
    p2.untested("s", "beyond the grid")
    return p1.rows() + p2.rows()


def _write(path, rows):
    write_csv(path, rows, claims.COLUMNS)
    return path


def test_summary_counts_and_legend(tmp_path):
    f = _write(tmp_path / "claims.csv", _rows())
    report.summarize([f], tmp_path)
    md = (tmp_path / "summary.md").read_text()
    assert "3 claims from 2 papers: 1 yes, 1 inconclusive, 0 no, 1 untested; checks: 1 of 1 passed" in md
    assert "| p1 | 1 | 1 | 0 | 0 | 1/1 | 0/0 | 0/0 |" in md
    assert "How to read a verdict" in md and "Checks (not reproductions)" in md
    with open(tmp_path / "summary.csv") as fh:
        assert next(csv.reader(fh)) == claims.COLUMNS


def test_readme_table_round_trip():
    rows = [{k: str(v) for k, v in r.items()} for r in _rows() if r["paper"] == "p1"]
    text = f"# p1\n\nprose\n\n{report.README_BEGIN}\nold\n{report.README_END}\n\nmore prose\n"
    new = report.readme_with_table(text, rows, "reference/summary.csv")
    assert new.startswith("# p1\n\nprose\n\n") and new.endswith("\n\nmore prose\n")
    parsed = report.readme_table_rows(new)
    assert [r["claim"] for r in parsed] == [r["claim"] for r in rows]
    assert [r["reproduced"] for r in parsed] == ["yes", "inconclusive", "pass"]
    with pytest.raises(ValueError, match="markers"):
        report.readme_with_table("no markers", rows, "x")


def _compare(tmp_path, mutate):
    ref = [{k: str(v) for k, v in r.items()} for r in _rows()]
    cur = [dict(r) for r in ref]
    mutate(cur)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _write(tmp_path / "a" / "summary.csv", ref)
    _write(tmp_path / "b" / "summary.csv", cur)
    return cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b")])


def test_compare_identical_exits_zero(tmp_path, capsys):
    assert _compare(tmp_path, lambda rows: None) == 0
    assert "all verdicts as in the reference" in capsys.readouterr().out
    assert (tmp_path / "b" / "compare.md").exists()


def test_compare_reports_a_flipped_verdict(tmp_path, capsys):
    def flip(rows):
        rows[0]["reproduced"] = "no"
    assert _compare(tmp_path, flip) == 1
    out = capsys.readouterr().out
    assert "1 verdicts changed" in out and "beats base yes -> no" in out


def test_compare_reports_a_moved_number_without_failing(tmp_path, capsys):
    def move(rows):
        rows[0]["effect"] = "9.5"   # far outside the reference interval
    assert _compare(tmp_path, move) == 0
    out = capsys.readouterr().out
    assert "1 numbers outside their interval" in out


def test_compare_reports_a_dropped_row(tmp_path, capsys):
    assert _compare(tmp_path, lambda rows: rows.pop(2)) == 1
    assert "1 rows only in the reference" in capsys.readouterr().out
