"""The verdict pictures (core.claims_plot) and the compact summary.md, from a hand-made claims table."""

import math
import struct

import pytest

from neurips26.core import claims, claims_plot, report
from neurips26.core.io import write_csv


def _row(paper, id, kind="comparison", role="claim", effect="", interval="", margin="", verdict="yes",
         criterion="rule", n="3/3", claim=None):
    row = {c: "" for c in claims.COLUMNS}
    row.update(paper=paper, id=id, claim=claim or f"the claim {id}", role=role, kind=kind, metric="acc",
               method="ours", method_value=effect, baseline="base", effect=effect, interval=interval,
               margin=margin, criterion=criterion, reproduced=verdict, n=n, scale="default")
    return row


def hand_made():
    return [
        _row("p1", "beats_base", effect="0.12", interval="[0.05, 0.19]", margin="0.01"),
        _row("p1", "beats_other", effect="0.004", interval="[-0.02, 0.03]",
             margin="0.0131 (1% of the baseline)", verdict="inconclusive"),
        _row("p1", "faster", effect="1.8", interval="[1.5, 2.2]", margin="ratio 1.05 (5%)"),
        _row("p1", "worse", effect="-0.3", interval="[-0.4, -0.2]", margin="2", verdict="no"),
        _row("p1", "slope", "target", effect="1.88", interval="[1.79, 1.98]", margin="in [1.7, 2.3]", n="3"),
        _row("p1", "speedup", "target", effect="3810", margin=">= 100", verdict="inconclusive", n=""),
        _row("p1", "error_rate", "target", effect="0", interval="[0, 0.0203]", margin="<= 1e-05",
             verdict="inconclusive", n="180"),
        _row("p1", "regime_holds", role="regime", effect="0.2", interval="[0.1, 0.3]", margin="0.01"),
        _row("p1", "no_idea_null", "target", role="null", effect="0.9", interval="[0.85, 0.95]",
             margin="<= 0.35", verdict="no", n="5"),
        _row("p1", "guarded", effect="0.01", interval="[-0.01, 0.03]", margin="0.01", verdict="untested",
             criterion="untested: its regime control 'x' does not hold in this run; effect = a - b"),
        _row("p1", "beyond_grid", "target", effect="n/a", margin="<= 0.0001", verdict="untested", n="",
             criterion="untested: delta = 1e-4 is not in this scale's delta grid; n/a"),
        _row("p1", "identity", "check", role="check", effect="1e-12", margin="<= 1e-08", verdict="pass", n=""),
        _row("p2", "", claim="a claim written before rows had ids, long enough to be shortened on the axis",
             effect="0.5", interval="[0.1, 0.9]"),
        _row("p2", "", "check", role="check", effect="0.016", verdict="fail", criterion="pass if value <= 0.001"),
    ]


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


def test_margin_and_interval_parsing():
    assert claims_plot.parse_margin("ratio 1.05 (5%)") == {"margin": 1.05, "ratio": True}
    assert claims_plot.parse_margin("4.55 (5% of the baseline)") == {"margin": 4.55, "ratio": False}
    assert claims_plot.parse_margin("2") == {"margin": 2.0, "ratio": False}
    assert claims_plot.parse_margin(">= 1") == {"band": (1.0, math.inf)}
    assert claims_plot.parse_margin("<= 0.05") == {"band": (-math.inf, 0.05)}
    assert claims_plot.parse_margin("in [1.7, 2.3]") == {"band": (1.7, 2.3)}
    assert claims_plot.parse_margin("") == {}
    assert claims_plot.parse_interval("[-0.275, 0.0205]") == (-0.275, 0.0205)
    assert claims_plot.parse_interval("") is None
    assert claims_plot.untested_reason(hand_made()[9]) == "its regime control 'x' does not hold in this run"
    p = claims_plot.plotted(hand_made()[2])
    assert p["ratio"] and p["null"] == 1.0 and p["margin"] == 1.05
    assert claims_plot.plotted(hand_made()[10]) is None  # no number: listed, not drawn
    assert claims_plot.plotted(hand_made()[11]) is None  # a check is not drawn


def test_pictures_render_from_a_hand_made_table(tmp_path):
    f = tmp_path / "in.csv"
    write_csv(f, hand_made(), claims.COLUMNS)
    written = report.summarize([f], tmp_path)
    pictures = [tmp_path / "summary.png", tmp_path / "p1" / "figures" / "claims.png",
                tmp_path / "p2" / "figures" / "claims.png"]
    for path in pictures:
        assert path in written and path.stat().st_size > 5_000
    w, h = _png_size(tmp_path / "p1" / "figures" / "claims.png")
    w2, h2 = _png_size(tmp_path / "p2" / "figures" / "claims.png")
    assert h > h2 > 0 and w > 500  # one strip per drawn row: p1 has 10, p2 one
    md = (tmp_path / "summary.md").read_text()
    assert md.index("![Verdicts per paper](summary.png)") < md.index("| paper |")
    assert "[p1](p1/figures/claims.png)" in md and "[p2](p2/figures/claims.png)" in md


def test_a_paper_with_only_checks_or_no_rows_still_gets_its_picture(tmp_path):
    rows = [r for r in hand_made() if r["kind"] == "check"]
    claims_plot.paper_figure([r for r in rows if r["paper"] == "p1"], tmp_path / "checks.png", "p1")
    claims_plot.paper_figure([], tmp_path / "empty.png", "p3")
    assert _png_size(tmp_path / "checks.png")[1] > 0 and _png_size(tmp_path / "empty.png")[1] > 0
    written = claims_plot.draw(rows, tmp_path / "out", papers=["p3"])
    assert (tmp_path / "out" / "p3" / "figures" / "claims.png") in written


def test_summary_md_is_compact(tmp_path, monkeypatch):
    """About 300 rows (19 papers) stay under 30 KB: the criteria are in summary.csv only."""
    monkeypatch.setattr(claims_plot, "draw", lambda rows, out, papers=None: [])
    base = hand_made()[:12]
    rows = [{**r, "paper": f"paper_{i % 19:02d}", "id": f"{r['id']}_{i:03d}",
             "criterion": r["criterion"] + "; " + "a long criterion " * 20} for i, r in enumerate(base * 25)]
    f = tmp_path / "in.csv"
    write_csv(f, rows, claims.COLUMNS)
    report.summarize([f], tmp_path)
    md = (tmp_path / "summary.md").read_text()
    assert len(md.encode()) < 30_000, len(md.encode())
    assert "a long criterion" not in md
    assert "a long criterion" in (tmp_path / "summary.csv").read_text()
    assert report.LEGEND in md
    assert "|beats_base_000|yes|0.12 [0.05, 0.19]|0.01|3/3|" in md
    assert "|guarded_009|untested: regime x fails|" in md


@pytest.mark.parametrize("margin, short", [("0.0131 (1% of the baseline)", "0.0131"), ("ratio 1.05 (5%)", "ratio 1.05"),
                                           ("in [1.7, 2.3]", "in [1.7, 2.3]")])
def test_compact_margin(margin, short):
    assert report.compact_row(_row("p", "a", margin=margin))["margin"] == short


def test_a_claims_file_without_rows_gets_a_picture_too(tmp_path):
    full, empty = tmp_path / "p1" / "claims.csv", tmp_path / "p4" / "claims.csv"
    write_csv(full, [r for r in hand_made() if r["paper"] == "p1"], claims.COLUMNS)
    write_csv(empty, [], claims.COLUMNS)
    written = report.summarize([full, empty], tmp_path)
    assert tmp_path / "p4" / "figures" / "claims.png" in written
    assert "| p4 | 0 | 0 | 0 | 0 | 0/0 | 0/0 | 0/0 |" in (tmp_path / "summary.md").read_text()
