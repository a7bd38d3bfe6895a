"""`make ui`: MLflow's web UI on a run's store answers quickly and leaves no process after Ctrl-C."""

import os
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from neurips26.core import ui

# the bound on 2 idle cores; a loaded machine (the suite's own smoke DAG, a run) stretches it
DEADLINE_S = 15.0 * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store as a run leaves it (created outside the timed start)."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    folder = tmp_path_factory.mktemp("ui")
    SqlAlchemyStore(f"sqlite:///{folder / 'mlflow.db'}", str(folder / "mlartifacts")).create_experiment("neurips26/x")
    return folder / "mlflow.db"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _group_members(pgid):
    members = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(pid))
    return members


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _descendants(root):
    children, found = {}, []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(ppid, []).append(int(pid))
    todo = [root]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def test_the_environment_names_are_mlflows():
    from mlflow import environment_variables as ev
    from mlflow.server import constants

    assert ui.BACKEND_STORE == constants.BACKEND_STORE_URI_ENV_VAR
    assert ui.REGISTRY_STORE == constants.REGISTRY_STORE_URI_ENV_VAR
    assert ui.ARTIFACT_ROOT == constants.ARTIFACT_ROOT_ENV_VAR
    assert ui.BOOT_ID == ev._MLFLOW_SERVER_BOOT_ID.name
    assert ui.IN_JOB_EXECUTOR == ev._MLFLOW_IN_JOB_EXECUTOR.name
    assert ui.SGI_NAME == ev._MLFLOW_SGI_NAME.name
    for name in ("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "MLFLOW_SERVER_JOB_ENABLE_PERIODIC_TASKS",
                 "MLFLOW_ENABLE_WORKSPACES", "MLFLOW_DISABLE_TELEMETRY"):
        assert getattr(ev, name).name == name
    assert (ui._mlflow_dir() / "server" / "uvicorn_log_config.yaml").exists()


def test_make_ui_answers_and_ctrl_c_stops_every_process(root, store):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    # its own process group, as a terminal's foreground job; -o: do not reinstall the environment
    proc = subprocess.Popen(["make", "-s", "-o", ".venv/.installed", "ui", f"UI_STORE={store}", f"UI_PORT={port}"],
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    started = time.monotonic()
    try:
        while not ui.healthy(url, timeout=0.5):
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() - started < DEADLINE_S, f"no answer from {url} within {DEADLINE_S:.0f} s"
            time.sleep(0.2)
        answered = time.monotonic() - started
        with urllib.request.urlopen(url, timeout=5) as resp:
            assert resp.status == 200 and b"MLflow" in resp.read()
        tree = _descendants(proc.pid)
        commands = [open(f"/proc/{p}/cmdline").read().replace("\0", " ") for p in tree]
        assert sum("uvicorn" in c for c in commands) == 1, commands  # one worker
        assert not any("huey" in c or "_job_runner" in c for c in commands), commands
        server_group = next(p for p, c in zip(tree, commands) if "uvicorn" in c)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in the terminal
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert f"MLflow UI for {store}: {url}" in out and "MLflow UI stopped" in out, out
    time.sleep(0.5)
    left = [p for p in tree if _alive(p)] + _group_members(proc.pid) + _group_members(server_group)
    assert left == [], left
    print(f"answered after {answered:.1f} s (deadline {DEADLINE_S:.0f} s)")
