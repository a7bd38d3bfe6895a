"""Copies of the workflow for end-to-end tests, and the smoke DAGs they share.

The smoke DAG is the slowest thing the suite does, so it runs once: the tests that read it use
the session fixture `smoke` (`tests/test_workflow.py`); `conftest.py` starts the run in the
background as soon as collection shows a selected test needs it, so it overlaps with the unit
tests instead of running after them. `make test` runs the tests in pytest-xdist workers: the run
lives in a folder that every worker finds (`BASE_ENV`), started once under a lock, and any
worker can wait for it. Reproducibility from scratch is
checked on a copy of the finished run by rerunning one metrics job of every paper
(`metrics_jobs`), not by a second DAG.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
WORKFLOW_FILES = ["Snakefile", "workflow", "config", "profiles", "envs", "reference"]
# the shared runs: fixture name -> cores. It runs four jobs at once on the SQLite store (the
# tracking tests count its runs).
SHARED_RUNS = {"smoke": 4}
DONE = re.compile(r"done in ([0-9.]+)s")
TIMEOUT_S = 3600
# where the test processes find the shared runs' folder
BASE_ENV = "NEURIPS26_SMOKE_BASE"


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
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "NEURIPS26_PARENT", "NEURIPS26_WARM"))}
    env["NEURIPS26_PROGRESS"] = "0"
    return env


def snakemake(cwd: Path, *args: str, timeout: int = 1500, env: dict | None = None) -> subprocess.CompletedProcess:
    """Snakemake in `cwd` with a clean environment, plus `env`."""
    return subprocess.run([SNAKEMAKE, *args], cwd=cwd, env={**clean_env(), **(env or {})}, capture_output=True,
                          text=True, timeout=timeout)


def output(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout + proc.stderr


class SmokeRun:
    """One smoke DAG of the default config in a fresh copy of the workflow, run in the background.

    It lives in a folder, not in a process: the run writes its exit status to `rc` when it ends,
    so any test process (one of pytest-xdist's workers, or the only process) can wait for it."""

    def __init__(self, where: Path):
        self.where = where
        self.wf, self.log, self.rc, self.pid = where / "wf", where / "snakemake.log", where / "rc", where / "pid"

    def launch(self, cores: int) -> None:
        copy_workflow(self.wf)
        command = " ".join([SNAKEMAKE, "--cores", str(cores), "--configfile", "config/smoke.yaml",
                            "--profile", "profiles/default"])
        # the shell writes the exit status once Snakemake has ended; its own session, so that
        # stopping it stops the jobs too
        proc = subprocess.Popen(["sh", "-c", f'{command} > "{self.log}" 2>&1; echo $? > "{self.rc}.part"; '
                                 f'mv "{self.rc}.part" "{self.rc}"'],
                                cwd=self.wf, env=clean_env(), start_new_session=True)
        self.pid.write_text(str(proc.pid))

    def wait(self) -> tuple[Path, str]:
        """(workflow folder, Snakemake's output) once the run has ended; fails unless it succeeded."""
        deadline = time.monotonic() + TIMEOUT_S
        while not self.rc.exists():
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the smoke DAG in {self.wf} ran past {TIMEOUT_S} s")
            time.sleep(1)
        rc = int(self.rc.read_text())
        text = self.log.read_text()
        assert rc == 0, text[-8000:]
        return self.wf, text

    def stop(self) -> None:
        if self.rc.exists() or not self.pid.exists():
            return
        try:
            os.killpg(int(self.pid.read_text()), signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 30
        while not self.rc.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(self.pid.read_text()), signal.SIGKILL)


def base() -> Path:
    """The folder of the shared runs. Under pytest-xdist the controller makes it before the
    workers start (`conftest.py`) and they find it in BASE_ENV; a single process makes its own."""
    if not os.environ.get(BASE_ENV):
        os.environ[BASE_ENV] = tempfile.mkdtemp(prefix="neurips26-smoke-")
    return Path(os.environ[BASE_ENV])


def start(names) -> None:
    """Start the shared runs named (fixture names of SHARED_RUNS) that no test process has
    started yet (a lock in the shared folder makes sure only one does)."""
    if not names:
        return
    folder = base()
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in names:
            run = SmokeRun(folder / name)
            if not run.pid.exists():
                run.launch(SHARED_RUNS[name])


def result(name: str) -> tuple[Path, str]:
    start([name])
    return SmokeRun(base() / name).wait()


def stop_all() -> None:
    """Stop the shared runs and remove their folder: the process that made the folder calls it
    (the controller under pytest-xdist) once every test has ended."""
    folder = os.environ.pop(BASE_ENV, None)
    if not folder:
        return
    for name in SHARED_RUNS:
        SmokeRun(Path(folder) / name).stop()
    shutil.rmtree(folder, ignore_errors=True)


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
