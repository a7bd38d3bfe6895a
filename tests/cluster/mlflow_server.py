"""A real MLflow tracking server backed by PostgreSQL on loopback, for tests.

`tracking_server()` installs Debian's postgresql when it is missing (root and apt-get
needed), creates a throw-away database cluster in a folder, starts `mlflow server` against it
with a shared artifact root, waits for /health, yields the tracking URI, and stops both.
This is the team setup the README documents, in miniature.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from . import system

MLFLOW = str(Path(sys.executable).parent / "mlflow")


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def unavailable_reason() -> str | None:
    return system.unavailable_reason("PostgreSQL", _pg_bin() is not None)


def install() -> Path:
    if _pg_bin() is None:
        system.apt_install(["postgresql"])
    return _pg_bin()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


class Server:
    """`mlflow server` on loopback; stop() and start() again keep the same database."""

    def __init__(self, backend: str, artifacts: Path, log: Path):
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.backend, self.artifacts, self.log = backend, artifacts, log
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 90.0) -> None:
        cmd = [MLFLOW, "server", "--backend-store-uri", self.backend, "--artifacts-destination", str(self.artifacts),
               "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        self.proc = subprocess.Popen(cmd, stdout=self.log.open("a"), stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _healthy(self.uri):
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited; see {self.log}")
            time.sleep(0.5)
        raise TimeoutError(f"mlflow server did not answer /health within {timeout:.0f} s; see {self.log}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.proc = None


@contextmanager
def tracking_server(state: Path):
    """PostgreSQL + mlflow server in `state`; yields the Server (its .uri is the tracking URI)."""
    pg = install()
    state = Path(state).resolve()
    data, sock = state / "pgdata", state / "pgsock"
    state.mkdir(parents=True, exist_ok=True)
    sock.mkdir(exist_ok=True)
    shutil.chown(state, "postgres", "postgres")
    shutil.chown(sock, "postgres", "postgres")
    port = free_port()

    def as_postgres(*cmd: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=True, capture_output=True, text=True)

    as_postgres(str(pg / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres")
    as_postgres(str(pg / "pg_ctl"), "-D", str(data), "-l", str(state / "postgres.log"), "-w", "start",
                "-o", f"-p {port} -k {sock} -c listen_addresses=127.0.0.1")
    server = None
    try:
        as_postgres(str(pg / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "mlflow")
        artifacts = state / "artifacts"
        artifacts.mkdir(exist_ok=True)
        server = Server(f"postgresql://postgres@127.0.0.1:{port}/mlflow", artifacts, state / "mlflow-server.log")
        server.start()
        yield server
    finally:
        if server:
            server.stop()
        subprocess.run(["runuser", "-u", "postgres", "--", str(pg / "pg_ctl"), "-D", str(data), "-m", "fast", "-w",
                        "stop"], capture_output=True)
