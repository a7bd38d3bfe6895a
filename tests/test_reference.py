"""The committed reference run: complete, and every paper README's claims table generated from it."""

from pathlib import Path

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
