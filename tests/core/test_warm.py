"""The warm start (core/warm.py): a job handed to the server runs in a fork with the job's own
arguments, folder, environment and streams, returns its exit status, receives the signals its
client receives, and falls back to a fresh process where the fork could differ from one. That a
warm-started step writes the same bytes as a fresh process is checked on every paper by the
smoke DAG's rerun test (tests/test_workflow.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from neurips26.core import warm

# a server whose CLI is replaced by probes (its forks run these instead of a paper's step)
SERVER = textwrap.dedent("""
    import json, os, sys, time
    import neurips26.cli as cli
    from neurips26.core import warm

    def probe(argv):
        if argv[0] == "echo":
            print(json.dumps({"cwd": os.getcwd(), "argv": argv, "probe": os.environ.get("PROBE"), "pid": os.getpid(),
                              "pgid": os.getpgrp(), "set_by_imports": os.environ.get("SET_BY_IMPORT"),
                              "argv0": sys.argv[0], "main": sys.modules["__main__"].__spec__.name}))
            print("to stderr", file=sys.stderr)
            return int(argv[1])
        if argv[0] == "sleep":
            open(argv[1], "w").write(str(os.getpid()))
            time.sleep(120)
            return 0
        if argv[0] == "sigterm":  # as Lightning stops a fit on SIGTERM: a SystemExit without a code
            class SIGTERMException(SystemExit):
                pass
            raise SIGTERMException
        raise SystemExit("probe failed: " + argv[1])

    cli.main = probe
    sys.path.insert(0, sys.argv[2])  # sets_a_variable: as torch sets variables for itself when imported
    job = warm.serve(sys.argv[1], modules=("json", "sets_a_variable"))
    if job is not None:
        warm.run_request(*job)
""")


@pytest.fixture
def server(tmp_path):
    path = str(tmp_path / "s")
    (tmp_path / "sets_a_variable.py").write_text("import os\nos.environ['SET_BY_IMPORT'] = 'yes'\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop(warm.SOCKET_ENV, None)
    proc = subprocess.Popen([sys.executable, "-c", SERVER, path, str(tmp_path)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while not os.path.exists(path):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
        time.sleep(0.02)
    yield path, proc
    proc.terminate()
    proc.wait(timeout=20)
    assert not os.path.exists(path), "the server leaves its socket behind"


def client(path, *argv, cwd, **env):
    full = {**os.environ, "OMP_NUM_THREADS": "1", warm.SOCKET_ENV: path, **env}
    return subprocess.Popen([sys.executable, "-m", "neurips26", *argv], cwd=cwd, env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_fork_runs_the_job_with_its_folder_environment_streams_and_exit_status(server, tmp_path):
    path, _ = server
    job = tmp_path / "job"
    job.mkdir()
    proc = client(path, "echo", "3", cwd=job, PROBE="the job's")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    seen = json.loads(out)
    assert seen["cwd"] == str(job) and seen["argv"] == ["echo", "3"] and seen["probe"] == "the job's"
    assert seen["pid"] != proc.pid and seen["pgid"] == seen["pid"], "the fork leads its own process group"
    assert seen["set_by_imports"] == "yes", "what the libraries set while importing reaches the job"
    # as under `python -m neurips26`, for code that relaunches the command (Lightning's DDP launcher)
    assert seen["main"] == "neurips26.__main__" and seen["argv0"].endswith("neurips26/__main__.py")
    assert err.strip() == "to stderr"


def test_an_error_exits_as_a_fresh_process_would(server, tmp_path):
    proc = client(server[0], "fail", "here", cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "probe failed: here" in err


def test_a_signal_to_the_client_reaches_the_fork(server, tmp_path):
    marker = tmp_path / "pid"
    proc = client(server[0], "sleep", str(marker), cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    fork = int(marker.read_text())
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    with pytest.raises(ProcessLookupError):
        os.kill(fork, 0)


def test_a_job_whose_thread_count_differs_starts_a_fresh_process(server, tmp_path):
    # a fresh process runs the real CLI, which has no command 'echo'
    proc = client(server[0], "echo", "3", cwd=tmp_path, OMP_NUM_THREADS="2")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "invalid choice: 'echo'" in err
    proc = client(server[0], "echo", "3", cwd=tmp_path, NEURIPS26_WARM_START="0")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "invalid choice: 'echo'" in err


def test_without_a_server_the_client_runs_the_command_itself(tmp_path):
    proc = client(str(tmp_path / "none"), "--help", cwd=tmp_path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "papers and their steps" in out, err


def test_the_server_stops_with_the_process_that_started_it(tmp_path, monkeypatch):
    """...removes its folder and closes the run's parent MLflow runs as KILLED."""
    import sqlite3

    from neurips26.core import tracking

    # the parent run as MLflow's store holds it (the server closes it with a plain SQL update)
    db = tmp_path / "mlflow.db"
    with sqlite3.connect(db) as con:
        con.execute("create table runs (run_uuid text, status text, end_time integer)")
        con.execute("insert into runs values ('parent', 'RUNNING', null)")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    monkeypatch.setenv(tracking.PARENT_ENV, json.dumps({"some_paper": "parent"}))
    folder = tmp_path / f"{warm.FOLDER_PREFIX}x"
    folder.mkdir()
    path = str(folder / "s")
    starter = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys, time
        proc = subprocess.Popen([sys.executable, "-c",
            "from neurips26.core import warm; warm.serve({path!r}, modules=())"])
        print(proc.pid, flush=True)
        time.sleep(120)
    """)], stdout=subprocess.PIPE, text=True)
    pid = int(starter.stdout.readline())
    deadline = time.monotonic() + 30
    while not os.path.exists(path):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    starter.kill()
    starter.wait()
    deadline = time.monotonic() + 15
    while Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z":
        assert time.monotonic() < deadline, "the server outlived the run that started it"
        time.sleep(0.1)
    assert not os.path.exists(path) and not folder.exists()
    with sqlite3.connect(db) as con:
        assert con.execute("select status from runs").fetchall() == [("KILLED",)]


def wait_for_pid(marker: Path, proc) -> int:
    deadline = time.monotonic() + 60
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    return int(marker.read_text())


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return True  # ended, not yet reaped
        time.sleep(0.02)
    return False


def raw_request(path: str, payload: bytes, fds=(0, 1, 2)) -> str:
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(path)
        message = warm.HEADER.pack(len(payload)) + payload
        try:
            socket.send_fds(sock, [message], list(fds))
        except (BrokenPipeError, ConnectionResetError):  # refused before the request was read
            pass
        return sock.recv(4096).decode()


def test_a_malformed_request_gets_an_error_and_the_server_and_its_jobs_go_on(server, tmp_path):
    path, proc = server
    marker = tmp_path / "pid"
    running = client(path, "sleep", str(marker), cwd=tmp_path)
    fork = wait_for_pid(marker, running)
    for payload in (b'{"argv": ["echo", "0"], "cwd": "/"}', b"not json", b'["a list"]'):
        assert raw_request(path, payload).startswith("error "), payload
    assert raw_request(path, b'{"argv": ["echo", "0"], "cwd": "/", "env": {}}', fds=()).startswith("error ")
    os.kill(fork, 0)  # the running job goes on
    assert proc.poll() is None
    echo = client(path, "echo", "4", cwd=tmp_path)
    out, err = echo.communicate(timeout=60)
    assert echo.returncode == 4 and json.loads(out)["pid"] != echo.pid, err
    running.kill()
    running.wait()


def test_a_sigkilled_clients_fork_is_gone_within_a_second(server, tmp_path):
    marker = tmp_path / "pid"
    proc = client(server[0], "sleep", str(marker), cwd=tmp_path)
    fork = wait_for_pid(marker, proc)
    proc.kill()
    proc.wait()
    assert gone_within(fork, 1.0), "the fork outlived its SIGKILLed client"


def test_a_sigkilled_servers_forks_are_gone(server, tmp_path):
    path, server_proc = server
    forks = []
    for i in range(2):
        marker = tmp_path / f"pid{i}"
        forks.append((client(path, "sleep", str(marker), cwd=tmp_path), marker))
    pids = [wait_for_pid(marker, proc) for proc, marker in forks]
    server_proc.kill()
    server_proc.wait()
    for pid in pids:
        assert gone_within(pid, 2.0), "a fork outlived its SIGKILLed server"
    for proc, _ in forks:
        proc.wait(timeout=10)
        assert proc.returncode != 0
    os.unlink(path)  # a SIGKILLed server cannot remove its socket (the fixture checks it is gone)


def test_a_step_stopped_on_sigterm_exits_non_zero(server, tmp_path):
    proc = client(server[0], "sigterm", cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err


@pytest.mark.skipif(os.geteuid() != 0, reason="connecting as another user needs root")
def test_a_process_of_another_user_is_refused(tmp_path):
    import pwd
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="neurips26-peer-"))  # under /tmp, which others may enter
    folder.chmod(0o777)
    path = str(folder / "s")
    server = subprocess.Popen([sys.executable, "-c", f"from neurips26.core import warm; warm.serve({path!r}, modules=())"])
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.chmod(path, 0o777)
        nobody = pwd.getpwnam("nobody").pw_uid
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child becomes `nobody` and asks for a job
            try:
                os.setuid(nobody)
                os.write(writer, raw_request(path, b'{"argv": ["x"], "cwd": "/", "env": {}}').encode() or b"-")
            except BaseException as exc:
                os.write(writer, repr(exc).encode())
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        os.close(writer)
        answer = os.read(reader, 4096).decode()
        assert answer.startswith("error PermissionError"), answer
        assert server.poll() is None
    finally:
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(folder, ignore_errors=True)


def test_start_announces_the_socket_and_stop_removes_it(tmp_path, monkeypatch):
    monkeypatch.delenv(warm.SOCKET_ENV, raising=False)
    server = warm.start(tmp_path / "log" / "warm.log")
    try:
        assert server is not None and os.environ[warm.SOCKET_ENV] == server[1] and os.path.exists(server[1])
    finally:
        warm.stop(server)
    assert warm.SOCKET_ENV not in os.environ and not os.path.exists(server[1])
    monkeypatch.setenv(warm.SWITCH_ENV, "off")
    assert warm.start(tmp_path / "log" / "warm.log") is None
