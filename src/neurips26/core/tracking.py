"""MLflow tracking: one experiment per paper, one run per job, a parent run per invocation.

The store and the experiments are created once, before any job (`start_invocation`, called
from the Snakefile's `onstart:`), because parallel jobs opening a fresh SQLite store race on
its schema migration. The parent runs reach the jobs through NEURIPS26_PARENT_RUNS (JSON:
paper -> run id). With no MLFLOW_TRACKING_URI the store is sqlite:///<cwd>/results/mlflow.db.

A local SQLite store is switched to WAL mode when it is created (readers no longer block the
one writer), and every write a job makes is retried, with backoff and a bound, when SQLite
reports the database locked. A job's run is ended once, by `job_run`, after its outputs are
logged; Lightning's logger leaves it open (`core.trainer`).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

PARENT_ENV = "NEURIPS26_PARENT_RUNS"
# the checkout's state at the invocation, read once there rather than by every job
GIT_ENV = "NEURIPS26_GIT_STATE"
TAG = "neurips26"


def tracking_uri() -> str:
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        return uri
    return f"sqlite:///{(Path.cwd() / 'results' / 'mlflow.db').resolve()}"


def experiment_name(paper: str) -> str:
    return f"neurips26/{paper}"


def _is_local_sqlite(uri: str) -> bool:
    return uri.startswith("sqlite:///")


LOCK_RETRIES = 8


def is_lock_error(exc: BaseException) -> bool:
    return "database is locked" in str(exc) or "database table is locked" in str(exc)


def retry_locked(fn, *args, retries: int = LOCK_RETRIES, **kwargs):
    """`fn(*args, **kwargs)`, retried with jittered exponential backoff (0.2 s doubling, about
    50 s in all) while SQLite reports the database locked; any other error passes through."""
    for attempt in range(retries + 1):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if attempt == retries or not is_lock_error(exc):
                raise
            delay = min(10.0, 0.2 * 2 ** attempt) * (0.5 + random.random())
            print(f"neurips26: tracking store locked, retry {attempt + 1}/{retries} in {delay:.1f}s", file=sys.stderr)
            time.sleep(delay)


def _wal(uri: str) -> None:
    """WAL journal for a local SQLite store (persistent in the file, so set once)."""
    import sqlite3

    con = sqlite3.connect(uri.removeprefix("sqlite:///"), timeout=30)
    try:
        if con.execute("pragma journal_mode").fetchone()[0].lower() != "wal":
            con.execute("pragma journal_mode=wal")
    finally:
        con.close()


def _client():
    import mlflow
    from mlflow.tracking import MlflowClient

    uri = tracking_uri()
    if _is_local_sqlite(uri):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(uri)
    return MlflowClient(tracking_uri=uri)


def ensure_experiment(client, paper: str) -> str:
    name = experiment_name(paper)
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    artifact_location = None
    uri = tracking_uri()
    if _is_local_sqlite(uri):
        artifact_location = (_artifact_root(uri) / paper).as_uri()
    return client.create_experiment(name, artifact_location=artifact_location)


def _artifact_root(uri: str) -> Path:
    """Where a local SQLite store keeps its artifacts: `mlartifacts/` beside the store file."""
    return (Path(uri.removeprefix("sqlite:///")).parent / "mlartifacts").resolve()


def relocate_artifacts(uri: str | None = None) -> int:
    """Point the experiments and runs of a local SQLite store at the `mlartifacts/` folder beside
    the store, wherever the store now is. MLflow records absolute artifact locations; a store
    copied or moved with its `results/` folder (another mount path, a moved checkout) would
    otherwise go on writing into the old folder. Returns how many experiments were moved."""
    import sqlite3

    uri = uri or tracking_uri()
    if not _is_local_sqlite(uri) or not Path(uri.removeprefix("sqlite:///")).exists():
        return 0
    root = _artifact_root(uri)
    con = sqlite3.connect(uri.removeprefix("sqlite:///"), timeout=30)
    moved = 0
    try:
        with con:
            rows = con.execute("select experiment_id, name, artifact_location from experiments "
                               "where name like ?", (f"{experiment_name('')}%",)).fetchall()
            for exp_id, name, location in rows:
                wanted = (root / name.removeprefix(experiment_name(""))).as_uri()
                if not location or location == wanted or not location.startswith("file://"):
                    continue
                con.execute("update experiments set artifact_location = ? where experiment_id = ?", (wanted, exp_id))
                con.execute("update runs set artifact_uri = ? || substr(artifact_uri, ?) "
                            "where experiment_id = ? and substr(artifact_uri, 1, ?) = ?",
                            (wanted, len(location) + 1, exp_id, len(location), location))
                moved += 1
    finally:
        con.close()
    return moved


def git_state(repo: str | Path = ".") -> dict[str, str]:
    """The commit and whether the checkout has uncommitted changes ('unknown' outside git)."""
    def run(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                                  timeout=10, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    commit = run("rev-parse", "HEAD")
    status = run("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit or "unknown",
            "dirty": "unknown" if status is None else str(bool(status)).lower()}


def start_invocation(papers: list[str]) -> dict[str, str]:
    """Create the store, each paper's experiment and a parent run in it; export their ids."""
    client = _client()
    uri = tracking_uri()
    git = git_state()
    os.environ[GIT_ENV] = json.dumps(git)
    retry_locked(relocate_artifacts, uri)
    parents = {}
    for paper in papers:
        exp_id = ensure_experiment(client, paper)
        if _is_local_sqlite(uri):
            _wal(uri)  # after the first write: MLflow has created and migrated the store
        run = client.create_run(exp_id, run_name="snakemake invocation", tags={
            f"{TAG}.paper": paper, f"{TAG}.step": "invocation",
            "mlflow.source.git.commit": git["commit"], f"{TAG}.git_dirty": git["dirty"],
        })
        parents[paper] = run.info.run_id
    os.environ[PARENT_ENV] = json.dumps(parents)
    return parents


def end_invocation(status: str, only_running: bool = False) -> None:
    """Close the parent runs that start_invocation opened (FINISHED, FAILED, or KILLED when the
    warm-start server outlives a Snakemake that died; `only_running`: leave closed ones as they are)."""
    parents = json.loads(os.environ.get(PARENT_ENV, "{}"))
    if not parents:
        return
    uri = tracking_uri()
    if only_running and _is_local_sqlite(uri):
        # straight into the file: no MLflow import (seconds) in a server that is stopping
        import sqlite3

        con = sqlite3.connect(uri.removeprefix("sqlite:///"), timeout=30)
        try:
            with con:
                con.executemany("update runs set status = ?, end_time = ? where run_uuid = ? and status = 'RUNNING'",
                                [(status, int(time.time() * 1000), run_id) for run_id in parents.values()])
        finally:
            con.close()
        return
    try:
        client = _client()
        for run_id in parents.values():
            if only_running and retry_locked(client.get_run, run_id).info.status != "RUNNING":
                continue
            retry_locked(client.set_terminated, run_id, status=status)
    except Exception as exc:  # the store may be the reason the workflow failed
        if not is_tracking_error(exc):
            raise
        print(f"neurips26: could not close the parent runs at {tracking_uri()}: {exc}", file=sys.stderr)


def is_tracking_error(exc: BaseException) -> bool:
    """True for failures of the tracking store (server down, refused, timed out), as opposed
    to failures of the step itself."""
    try:
        from mlflow.exceptions import MlflowException
    except ImportError:  # pragma: no cover - mlflow is a dependency
        return False
    import requests

    return isinstance(exc, (MlflowException, requests.exceptions.RequestException))


def flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested params as dotted keys with string values (MLflow params are flat strings)."""
    out: dict[str, str] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = json.dumps(value) if not isinstance(value, str) else value
    return out


class JobRun:
    """Handle to the active job run: log metrics, know the run id for Lightning's logger."""

    def __init__(self, run_id: str, experiment: str):
        self.run_id = run_id
        self.experiment = experiment
        # files to log as artifacts; None means every file under the job's out folder
        self.outputs: list[Path] | None = None

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        import mlflow

        clean = {k: float(v) for k, v in metrics.items() if v is not None}
        if clean:
            retry_locked(mlflow.log_metrics, clean, step=step)

    def set_tag(self, key: str, value: str) -> None:
        import mlflow

        retry_locked(mlflow.set_tag, key, value)


class _NoRun(JobRun):
    def __init__(self):
        super().__init__(run_id="", experiment="")

    def log_metrics(self, metrics, step=None) -> None:
        pass

    def set_tag(self, key, value) -> None:
        pass


_ACTIVE: JobRun = _NoRun()


def active() -> JobRun:
    """The job run of this process (a no-op logger when tracking is off)."""
    return _ACTIVE


@contextmanager
def job_run(paper: str, step: str, params: Mapping[str, Any], out: Path,
            job: Mapping[str, Any] | None = None, enabled: bool = True,
            system_metrics: bool = False) -> Iterator[JobRun]:
    """One MLflow run for one job: tags, params, and every file under `out` as artifacts. With
    `system_metrics`, MLflow samples CPU, memory and (with nvidia-ml-py) GPU utilisation into the
    run as `system/...` metrics every MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL seconds (10)."""
    global _ACTIVE
    if not enabled:
        yield _ACTIVE
        return
    import mlflow

    client = _client()
    exp_id = retry_locked(ensure_experiment, client, paper)
    job = dict(job or {})
    git = json.loads(os.environ[GIT_ENV]) if os.environ.get(GIT_ENV) else git_state()
    tags = {
        f"{TAG}.paper": paper,
        f"{TAG}.step": step,
        f"{TAG}.variant": str(params.get("variant", "")),
        f"{TAG}.seed": str(params.get("seed", "")),
        f"{TAG}.git_dirty": git["dirty"],
        "mlflow.source.git.commit": git["commit"],
        f"{TAG}.out": str(out),
    }
    if job.get("rule"):
        tags["snakemake.rule"] = str(job["rule"])
    if job.get("wildcards"):
        tags["snakemake.wildcards"] = json.dumps(job["wildcards"], sort_keys=True)
    parent = json.loads(os.environ.get(PARENT_ENV, "{}")).get(paper)
    if parent:
        tags["mlflow.parentRunId"] = parent
    name = "/".join(str(x) for x in (step, params.get("variant"), params.get("seed")) if x not in (None, ""))
    retry_locked(_close_killed_runs, client, exp_id, str(out))
    run = retry_locked(mlflow.start_run, experiment_id=exp_id, run_name=name, tags=tags,
                       log_system_metrics=system_metrics)
    _ACTIVE = JobRun(run.info.run_id, experiment_name(paper))
    try:
        retry_locked(mlflow.log_params, {k: v[:6000] for k, v in flatten(params).items()})
        yield _ACTIVE
        _log_outputs(out, _ACTIVE.outputs)
    except BaseException:
        _end_run("FAILED")
        raise
    _end_run("FINISHED")


def _close_killed_runs(client, exp_id: str, out: str) -> None:
    """A job killed outright (SIGKILL, a lost node) leaves its run RUNNING; the next job on
    the same outputs marks it KILLED, so each job has one run that ends."""
    quoted = out.replace("'", "\\'")
    for run in client.search_runs([exp_id], filter_string=f"tags.`{TAG}.out` = '{quoted}' and attributes.status = 'RUNNING'"):
        client.set_terminated(run.info.run_id, status="KILLED")


def _end_run(status: str) -> None:
    """End the job's run: the one place it is ended, after its outputs are logged."""
    global _ACTIVE
    import mlflow

    run = mlflow.active_run()
    try:
        mlflow.end_run(status=status)
    except Exception as exc:
        # end_run drops the run from the stack before it writes; finish the write here
        if run is None or not is_lock_error(exc):
            raise
        retry_locked(_client().set_terminated, run.info.run_id, status=status)
    finally:
        _ACTIVE = _NoRun()


def _log_outputs(out: Path, files: list[Path] | None, max_bytes: int = 200 * 2**20) -> None:
    """The job's output files as artifacts (checkpoint folders stay local)."""
    import mlflow

    out = Path(out)
    if not out.exists():
        return
    if files is None:
        files = [p for p in out.rglob("*") if p.is_file()]
    for path in sorted(Path(p) for p in files):
        rel = path.relative_to(out)
        if "checkpoints" in rel.parts or path.name.startswith(".") or path.stat().st_size > max_bytes:
            continue
        retry_locked(mlflow.log_artifact, str(path), artifact_path=str(rel.parent) if rel.parent != Path(".") else None)
