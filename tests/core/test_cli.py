"""The CLI: help lists papers and steps, list shows the config's grid, start-up stays light."""

import subprocess
import sys

from neurips26.cli import main

# what a job must not pay for before its step starts
HEAVY = ("torch", "lightning", "mlflow", "transformers", "dcor")


def test_help_lists_papers_and_steps(capsys):
    try:
        main(["--help"])
    except SystemExit:
        pass
    text = capsys.readouterr().out
    assert "nar_dit" in text and "prepare -> classifier -> train -> evaluate -> size -> figures" in text


def test_list_shows_variants_and_seeds(capsys, root):
    assert main(["list", "--workflow-dir", str(root)]) == 0
    text = capsys.readouterr().out
    assert "nar_dit" in text and "dit, tread, nar, nar_inverted" in text and "seeds: 0, 1, 2" in text
    assert main(["list", "--workflow-dir", str(root), "--configfile", str(root / "config/smoke.yaml")]) == 0
    assert "scale: smoke" in capsys.readouterr().out


def test_unknown_step_and_bad_params_are_clear_errors(tmp_path):
    for argv, message in ((["nar_dit", "sing", "--out", str(tmp_path)], "invalid choice"),
                          (["nar_dit", "prepare", "--out", str(tmp_path), "--params", "{oops"], "not valid JSON"),
                          (["nar_dit", "train", "--out", str(tmp_path), "--input", "data=/no/such/dir"], "/no/such/dir")):
        proc = subprocess.run([sys.executable, "-m", "neurips26", *argv], capture_output=True, text=True)
        assert proc.returncode != 0 and message in proc.stderr, proc.stderr


def test_cli_start_up_imports_no_heavy_library():
    code = ("import sys, contextlib, io, neurips26.cli as c\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    c.main(['--help'])\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "", f"imported at start-up: {proc.stdout}"


def test_no_steps_module_imports_torch_or_lightning():
    """A job's start-up imports its paper's steps module; torch (about 2 s here) and Lightning
    come in only inside the steps that use them, so a figures step does not pay for them."""
    code = ("import sys\nfrom neurips26.papers import SHARED, available, steps_module\n"
            "for paper in [*available(), *SHARED]:\n"
            "    steps_module(paper)\n"
            f"    heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
            "    print(paper, ','.join(heavy) or '-')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rows = dict(line.split() for line in proc.stdout.splitlines())
    assert len(rows) >= 19, proc.stdout
    assert {p: h for p, h in rows.items() if h != "-"} == {}, proc.stdout
