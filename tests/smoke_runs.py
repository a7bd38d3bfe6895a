"""Copies of the workflow for end-to-end tests, and the smoke DAGs they share.

The smoke DAG is the slowest thing the suite does, so it runs once: the tests that read it use
the session fixture `smoke` (`tests/test_workflow.py`); `conftest.py` starts the run in the
background as soon as collection shows a selected test needs it, so it overlaps with the unit
tests (which use about one core) instead of running after them. Reproducibility from scratch is
checked on a copy of the finished run by rerunning one metrics job of every paper
(`metrics_jobs`), not by a second DAG.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
WORKFLOW_FILES = ["Snakefile", "workflow", "config", "profiles", "envs", "reference"]
# the shared runs: fixture name -> cores. It runs four jobs at once on the SQLite store (the
# tracking tests count its runs).
SHARED_RUNS = {"smoke": 4}
DONE = re.compile(r"done in ([0-9.]+)s")
TIMEOUT_S = 3600


def copy_workflow(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = ROOT / name
        if not src.exists():  # reference/ may not be recorded yet
            continue
        if src.is_dir():
            shutil.copytree(src, dest / name)
        else:
            shutil.copy2(src, dest / name)
    return dest


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "NEURIPS26_PARENT"))}
    env["NEURIPS26_PROGRESS"] = "0"
    return env


def snakemake(cwd: Path, *args: str, timeout: int = 1500) -> subprocess.CompletedProcess:
    return subprocess.run([SNAKEMAKE, *args], cwd=cwd, env=clean_env(), capture_output=True, text=True,
                          timeout=timeout)


def output(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout + proc.stderr


class SmokeRun:
    """One smoke DAG of the default config in a fresh copy of the workflow, run in the background."""

    def __init__(self, where: Path, cores: int):
        self.wf = copy_workflow(where / "wf")
        self.log = where / "snakemake.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [SNAKEMAKE, "--cores", str(cores), "--configfile", "config/smoke.yaml", "--profile", "profiles/default"],
                cwd=self.wf, env=clean_env(), stdout=log, stderr=subprocess.STDOUT, text=True)

    def wait(self) -> tuple[Path, str]:
        """(workflow folder, Snakemake's output) once the run has ended; fails unless it succeeded."""
        try:
            rc = self.proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"the smoke DAG in {self.wf} ran past {TIMEOUT_S} s") from None
        text = self.log.read_text()
        assert rc == 0, text[-8000:]
        return self.wf, text

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


_runs: dict[str, SmokeRun] = {}
_base: list[Path] = []


def start(names) -> None:
    """Start the shared runs named (fixture names of SHARED_RUNS) that are not running yet."""
    for name in names:
        if name not in _runs:
            if not _base:
                _base.append(Path(tempfile.mkdtemp(prefix="neurips26-smoke-")))
            _runs[name] = SmokeRun(_base[0] / name, SHARED_RUNS[name])


def result(name: str) -> tuple[Path, str]:
    start([name])
    return _runs[name].wait()


def stop_all() -> None:
    for run in _runs.values():
        run.stop()
    for base in _base:
        shutil.rmtree(base, ignore_errors=True)
    _runs.clear()
    _base.clear()


def metrics_jobs(wf: Path, *config_args: str) -> list[dict]:
    """The finished jobs of the run in `wf` that wrote a metrics.json: output, rule, paper and
    the seconds inside the step (the CLI's closing "done in X s" in the job's log), from
    Snakemake's detailed summary."""
    proc = snakemake(wf, "--detailed-summary", *config_args)
    assert proc.returncode == 0, output(proc)[-3000:]
    rows = [line.split("\t") for line in proc.stdout.splitlines()[1:] if "\t" in line]
    jobs = []
    for out, _, rule, logs, *_ in rows:
        if not out.endswith("/metrics.json") or logs in ("-", ""):
            continue
        found = DONE.findall((wf / logs.split(",")[0]).read_text()) if (wf / logs.split(",")[0]).exists() else []
        if found:
            jobs.append({"output": out, "rule": rule, "paper": out.split("/")[1], "seconds": float(found[-1])})
    return jobs
