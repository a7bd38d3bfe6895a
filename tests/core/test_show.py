"""`neurips26 show <paper>`: a paper's verdict table in the terminal, from the run or the reference."""

from neurips26 import cli
from neurips26.core import claims
from neurips26.core.io import write_csv


def _row(paper, id, verdict, role="claim", kind="comparison", **kw):
    row = {c: "" for c in claims.COLUMNS}
    row.update(paper=paper, id=id, claim=f"claim {id}", role=role, kind=kind, reproduced=verdict,
               effect="0.5", interval="[0.1, 0.9]", margin="0.01 (1% of the baseline)", n="3/3",
               criterion="a long criterion that stays in the csv", scale="default")
    row.update(kw)
    return row


def test_show_reads_the_run_first_then_the_reference(tmp_path, capsys):
    results, reference = tmp_path / "results", tmp_path / "reference"
    (results / "adap").mkdir(parents=True)
    reference.mkdir()
    write_csv(results / "adap" / "claims.csv",
              [_row("adap", "beats_fixed", "yes"), _row("adap", "fixed_null", "no", role="null"),
               _row("adap", "bound", "pass", role="check", kind="check", method_value="1.9", margin="<= 98.2")],
              claims.COLUMNS)
    write_csv(reference / "summary.csv",
              [_row("adap", "from_reference", "no"), _row("acopula", "speedup", "inconclusive")], claims.COLUMNS)
    argv = ["--results", str(results), "--reference", str(reference)]

    assert cli.main(["show", "adap", *argv]) == 0
    out = capsys.readouterr().out
    assert "1 yes, 0 inconclusive, 0 no, 0 untested" in out and str(results / "adap" / "claims.csv") in out
    lines = out.splitlines()
    assert any(line.split() == ["beats_fixed", "yes", "0.5", "[0.1,", "0.9]", "0.01", "3/3"] for line in lines), out
    assert any(line.split()[:3] == ["fixed_null", "null", "no"] for line in lines), out
    assert any(line.split() == ["bound", "pass", "1.9", "<=", "98.2"] for line in lines), out
    assert "from_reference" not in out and "long criterion" not in out

    # before any run of the paper: the reference run's rows, saying so
    assert cli.main(["show", "acopula", *argv]) == 0
    out = capsys.readouterr().out
    assert "speedup" in out and "reference run" in out and "does not exist yet" in out


def test_show_unknown_paper_or_no_rows(tmp_path, capsys):
    assert cli.main(["show", "no_such_paper"]) == 2
    assert "papers: " in capsys.readouterr().out
    empty = tmp_path / "ref"
    empty.mkdir()
    write_csv(empty / "summary.csv", [_row("adap", "x", "yes")], claims.COLUMNS)
    assert cli.main(["show", "nar_dit", "--results", str(tmp_path), "--reference", str(empty)]) == 2
    assert "no claims rows for 'nar_dit'" in capsys.readouterr().out
