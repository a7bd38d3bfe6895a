"""`make ui` / `neurips26 ui`: MLflow's web UI on a run's store, light enough for a laptop.

`mlflow ui` as it comes starts 4 web workers and the job-execution consumers (huey), about a dozen
processes that took about 100 s to answer on 2 cores, and stopping its parent left most of them
running. Here MLflow's web app runs under uvicorn with one worker and without job execution (this
UI only reads runs), started directly rather than through `mlflow server`, which would import
MLflow once more in a process of its own before the app (about half the start-up time). The
server runs in a process group of its own; Ctrl-C (SIGINT) or SIGTERM stops the whole group, and
SIGKILL follows for anything still there.

The environment below is what `mlflow server` hands its uvicorn workers (mlflow.server._run_server,
MLflow 3.17); tests/core/test_ui.py checks the names against the installed MLflow.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

STOP_GRACE_S = 5.0
APP = "mlflow.server.fastapi_app:app"
# mlflow.server.constants and mlflow.environment_variables
BACKEND_STORE = "_MLFLOW_SERVER_FILE_STORE"
REGISTRY_STORE = "_MLFLOW_SERVER_REGISTRY_STORE"
ARTIFACT_ROOT = "_MLFLOW_SERVER_ARTIFACT_ROOT"
BOOT_ID = "_MLFLOW_SERVER_BOOT_ID"
IN_JOB_EXECUTOR = "_MLFLOW_IN_JOB_EXECUTOR"
SGI_NAME = "_MLFLOW_SGI_NAME"
SWITCHES = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_SERVER_JOB_ENABLE_PERIODIC_TASKS": "false",
            "MLFLOW_ENABLE_WORKSPACES": "false", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}


def _mlflow_dir() -> Path:
    spec = importlib.util.find_spec("mlflow")  # without importing it (seconds)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("neurips26 ui: MLflow is not installed in this environment")
    return Path(list(spec.submodule_search_locations)[0])


def server_command(host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "uvicorn", "--log-config", str(_mlflow_dir() / "server" / "uvicorn_log_config.yaml"),
            "--host", host, "--port", str(port), "--workers", "1", APP]


def server_env(store: Path) -> dict[str, str]:
    """The environment of the web app: the store, the artifacts beside it (`mlartifacts/`, where
    core.tracking puts them), and job execution, workspaces and telemetry off."""
    uri = f"sqlite:///{store}"
    env = dict(os.environ)
    env.update({BACKEND_STORE: uri, REGISTRY_STORE: uri, ARTIFACT_ROOT: (store.parent / "mlartifacts").as_uri(),
                BOOT_ID: uuid.uuid4().hex, IN_JOB_EXECUTOR: "false", SGI_NAME: "uvicorn", **SWITCHES})
    return env


def healthy(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as resp:
            return resp.status == 200
    except OSError:
        return False


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(proc: subprocess.Popen, grace: float = STOP_GRACE_S) -> None:
    """SIGTERM to the server's process group, then SIGKILL to whatever is left after `grace` s."""
    pgid = proc.pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()
            if not group_alive(pgid):
                break
            time.sleep(0.1)
        if not group_alive(pgid):
            break
    proc.poll()


def serve(store: Path, host: str = "127.0.0.1", port: int = 5000) -> int:
    store = Path(store).resolve()
    if not store.exists():
        print(f"neurips26 ui: no MLflow store at {store} (a run writes it: make run)")
        return 2
    url = f"http://{host}:{port}"
    proc = subprocess.Popen(server_command(host, port), env=server_env(store), start_new_session=True)
    stopping = []

    def on_signal(signum, _frame):
        stopping.append(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    started = time.monotonic()
    print(f"MLflow UI for {store}: {url}  (starting; Ctrl-C stops it)", flush=True)
    try:
        announced = False
        while not stopping and proc.poll() is None:
            if not announced and healthy(url):
                print(f"MLflow UI answering at {url} after {time.monotonic() - started:.1f} s", flush=True)
                announced = True
            time.sleep(0.2 if not announced else 0.5)
    finally:
        stop_group(proc)
        for s, handler in old.items():
            signal.signal(s, handler)
    if stopping:
        print("MLflow UI stopped", flush=True)
        return 0
    return proc.returncode or 0
