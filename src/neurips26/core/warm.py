"""Warm start: one process per local Snakemake run imports the heavy libraries once, and every
job of the run is a fork of it.

A job otherwise pays, before its work, for `import lightning` (7 to 11 s on a 2-core machine),
`import mlflow` (2 to 3 s) and torch (3 s): on the smoke DAG those imports are most of the CPU time.
The Snakefile's `onstart:` starts `serve` for a local run; each job's `python -m neurips26 ...`
is then a small client that hands its arguments, environment, working folder and standard
streams (the job's log) to the server over a Unix socket, and waits for the exit status of the
forked process that runs the step. The fork starts from a process that has only imported
modules (no thread, no CUDA context, no open store), seeds itself from its params as a fresh
process does, and exits the way the CLI does (`__main__`).

The client runs the command itself, as before, when no server is announced in its environment
(SLURM jobs, `--sdm conda`, `NEURIPS26_WARM_START=0`), when the server cannot be reached, or when
its environment differs from the server's in a variable that libraries read once at import
(thread counts of the BLAS and OpenMP runtimes, Hugging Face and torch settings, ...).

Signals the client receives (Snakemake stopping a job) go on to the fork's process group.
Because Snakemake's `benchmark:` measures the client, the CLI's closing line reports the step
process's own CPU time and peak memory (`benchmarks/dag_profile.py` reads them there).

Kept free of heavy imports at the top: the client runs in every job.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

SOCKET_ENV = "NEURIPS26_WARM_SOCKET"
FOLDER_PREFIX = "neurips26-warm-"
SWITCH_ENV = "NEURIPS26_WARM_START"
# what the server imports once; a job imports the rest (its paper's step module) itself
PRELOAD = ("numpy", "pandas", "scipy.stats", "scipy.optimize", "sklearn", "torch", "lightning", "mlflow",
           "mlflow.store.tracking.sqlalchemy_store", "matplotlib.pyplot", "transformers", "neurips26.cli")
# variables read once, when a library is imported or initialised: a job whose value differs from
# the server's runs in a fresh process instead
IMPORT_TIME_PREFIXES = ("OMP_", "GOTO_", "OPENBLAS_", "MKL_", "VECLIB_", "NUMEXPR_", "KMP_", "HF_", "TRANSFORMERS_",
                        "TOKENIZERS_", "TORCH", "PYTORCH_", "CUDA_", "CUBLAS_", "NVIDIA_", "MPL", "MLFLOW_CONFIGURE",
                        "PYTHON", "LD_", "NUMBA_", "DO_NOT_TRACK")
SNAKEMAKE_THREAD_VARS = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                         "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
HEADER = struct.Struct("!I")


def enabled_by_env() -> bool:
    """False when NEURIPS26_WARM_START says 0/false/no/off."""
    return os.environ.get(SWITCH_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def thread_env(threads: int) -> dict[str, str]:
    """The thread variables Snakemake sets for a job of `threads` threads (snakemake/shell.py)."""
    return {name: str(threads) for name in SNAKEMAKE_THREAD_VARS}


def import_time_env(env: dict) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_PREFIXES)}


# ---------------------------------------------------------------- client (every job)

def _recv_line(sock: socket.socket, buffer: bytearray) -> str | None:
    while b"\n" not in buffer:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line.decode()


def run_through_server(argv: list[str]) -> int | None:
    """Run `neurips26 <argv>` in a fork of the server announced in the environment and return its
    exit status; None when there is no server to use (the caller then runs the command itself)."""
    path = os.environ.get(SOCKET_ENV)
    if not path or not enabled_by_env():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    payload = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    message = HEADER.pack(len(payload)) + payload
    try:
        sent = socket.send_fds(sock, [message], [0, 1, 2])
        sock.sendall(message[sent:])
    except OSError:
        sock.close()
        return None
    buffer = bytearray()
    first = _recv_line(sock, buffer)
    if first is None or first == "direct" or first.startswith("error"):
        if first and first.startswith("error"):
            print(f"neurips26: the warm-start server refused the job ({first}); it runs in a fresh process",
                  file=sys.stderr)
        sock.close()
        return None
    pid = int(first.split()[1])

    def forward(signum, _frame):
        try:
            os.killpg(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, forward)
    last = _recv_line(sock, buffer)
    sock.close()
    if last is None:
        print(f"neurips26: the warm-start server at {path} stopped before the job's process {pid} ended",
              file=sys.stderr)
        return 1
    return int(last.split()[1])


# ---------------------------------------------------------------- server (one per local run)

def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    conn.settimeout(30)
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    buffer = bytearray(data)
    while len(buffer) < HEADER.size or len(buffer) < HEADER.size + HEADER.unpack_from(buffer)[0]:
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise ConnectionError("client closed the connection mid-request")
        buffer += chunk
    (size,) = HEADER.unpack_from(buffer)
    conn.settimeout(None)
    return json.loads(bytes(buffer[HEADER.size:HEADER.size + size])), list(fds)


def _preload(modules) -> None:
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # an optional library missing: its jobs import what they need
            print(f"neurips26 warm start: not preloaded: {name} ({exc})", flush=True)
    import threading

    if threading.active_count() != 1:
        raise RuntimeError(f"preloading started threads {threading.enumerate()}: forks would inherit a broken state")
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError("preloading initialised CUDA, which a fork cannot use")


def exit_code(exc: SystemExit) -> int | str | None:
    """The status a SystemExit ends the process with; a stop on a signal is never 0 (Lightning
    stops training on SIGTERM by raising SIGTERMException, a SystemExit without a code)."""
    if type(exc).__name__ == "SIGTERMException" and not exc.code:
        print("neurips26: stopped by SIGTERM", file=sys.stderr)
        return 128 + signal.SIGTERM
    return exc.code


def _exit_status(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def serve(path: str, modules=PRELOAD) -> tuple[dict, list[int]] | None:
    """Listen on `path`, preload `modules`, then fork one process per request. Returns in a fork
    with its request (the caller runs it), and in the server when it stops: on SIGTERM, or when
    the process that started it is gone."""
    parent, server_pid = os.getppid(), os.getpid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)  # clients may connect and queue while the server preloads
    started, before = time.perf_counter(), dict(os.environ)
    _preload(modules)
    # variables the libraries set for themselves while importing, as they would in a fresh job
    set_by_imports = {k: v for k, v in os.environ.items() if k not in before}
    print(f"neurips26 warm start: preloaded {len(modules)} modules in {time.perf_counter() - started:.1f}s, "
          f"serving {path}", flush=True)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    stopping = []
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches Snakemake and the clients, which stop the jobs
    clients: dict[int, socket.socket] = {}
    try:
        while not stopping and os.getppid() == parent:
            ready, _, _ = select.select([listener, wake_r], [], [], 1.0)
            if wake_r in ready:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
            _reap(clients)
            if listener not in ready:
                continue
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            fds: list[int] = []
            # each request inside its own boundary: a bad one gets an error reply, the server goes on
            try:
                _check_peer(conn)
                request, fds = _receive(conn)
                if not (isinstance(request, dict) and isinstance(request.get("argv"), list)
                        and isinstance(request.get("env"), dict) and isinstance(request.get("cwd"), str)
                        and len(fds) == 3):
                    raise ValueError("a request is {argv: [...], cwd: '...', env: {...}} with 3 streams")
                theirs, ours = import_time_env(request["env"]), import_time_env(before)
                if theirs != ours:
                    differ = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
                    print(f"neurips26 warm start: {' '.join(map(str, request['argv'][:2]))} starts a fresh process: "
                          f"its environment differs in {', '.join(differ)}", flush=True)
                    _reply(conn, b"direct\n")
                    _close_all(conn, fds)
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _die_with(server_pid)
                    listener.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    for other in clients.values():
                        if other is not None:
                            other.close()
                    request["env"] = {**set_by_imports, **request["env"]}
                    request["client_fd"] = conn.detach()  # the fork watches its client through it
                    return request, fds
                clients[pid] = conn
                for fd in fds:
                    os.close(fd)
                fds = []
                conn.sendall(f"pid {pid}\n".encode())
            except Exception as exc:  # noqa: BLE001 (the boundary of one request)
                print(f"neurips26 warm start: bad request: {type(exc).__name__}: {exc}", flush=True)
                _reply(conn, f"error {type(exc).__name__}: {exc}".replace("\n", " ").encode() + b"\n")
                pid = next((p for p, c in clients.items() if c is conn), None)
                if pid is not None:  # its client went before it learnt the fork's pid: the fork goes too
                    _kill_group(pid, signal.SIGKILL)
                    clients[pid] = None
                _close_all(conn, fds)
    finally:
        if os.getpid() == server_pid:  # not in a fork, which returned its request above
            _shutdown(listener, path, clients)
            if not stopping:  # the run that started the server is gone without stopping it
                _end_parent_runs("KILLED")
    return None


def _check_peer(conn: socket.socket) -> None:
    """Only processes of the server's own user are served (SO_PEERCRED); the socket's 0700
    folder already keeps others out, this is the second guard."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    if uid != os.getuid():
        raise PermissionError(f"a process of user {uid} connected; only user {os.getuid()} is served")


def _reply(conn: socket.socket, line: bytes) -> None:
    try:
        conn.sendall(line)
    except OSError:  # the client is gone: nothing to tell
        pass


def _close_all(conn: socket.socket, fds: list[int]) -> None:
    conn.close()
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _kill_group(pid: int, signum: int) -> None:
    for kill in (os.killpg, os.kill):  # the group once the fork has made it, else the fork alone
        try:
            kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


PR_SET_PDEATHSIG = 1


def _die_with(server_pid: int) -> None:
    """In a fork: the kernel kills it when the server dies (even by SIGKILL), so no fork trains on
    as an orphan beside the retry of its job."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != server_pid:  # the server died before the call above
        os._exit(128 + signal.SIGKILL)


def _watch_client(fd: int) -> None:
    """In a fork: a thread that waits on the client's connection and kills the job's process group
    when the client is gone (Snakemake killed it, or it was SIGKILLed), within a fraction of a second."""
    import threading

    conn = socket.socket(fileno=fd)

    def watch() -> None:
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="neurips26-client-watch", daemon=True).start()


def _end_parent_runs(status: str) -> None:
    """Close the run's parent MLflow runs still open (Snakemake died without `onerror:`)."""
    from . import tracking

    if not os.environ.get(tracking.PARENT_ENV):
        return
    try:
        tracking.end_invocation(status, only_running=True)
    except Exception as exc:  # noqa: BLE001 (the server is stopping; the store may be gone)
        print(f"neurips26 warm start: could not close the parent runs: {exc}", flush=True)


def _reap(clients: dict[int, socket.socket]) -> None:
    while clients:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid not in clients:
            continue
        conn = clients.pop(pid)
        if conn is not None:
            try:
                conn.sendall(f"exit {_exit_status(status)}\n".encode())
            except OSError:  # the client is gone (killed): nothing to tell
                pass
            conn.close()


def _shutdown(listener: socket.socket, path: str, clients: dict[int, socket.socket]) -> None:
    listener.close()
    Path(path).unlink(missing_ok=True)
    for pid in list(clients):  # forks still running when the run stops go with it
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while clients and time.monotonic() < deadline:
        _reap(clients)
        time.sleep(0.05)
    for conn in clients.values():
        if conn is not None:
            conn.close()
    folder = os.path.dirname(path)
    if os.path.basename(folder).startswith(FOLDER_PREFIX):
        try:
            os.rmdir(folder)
        except OSError:
            pass


def run_request(request: dict, fds: list[int]) -> None:
    """In the fork: become the job (its streams, folder, environment, arguments), run the CLI
    and exit as `python -m neurips26` does."""
    os.setpgrp()  # the client forwards its signals to this group
    if request.get("client_fd") is not None:
        _watch_client(request["client_fd"])
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # TMPDIR may be the job's own
    # look like `python -m neurips26` to code that relaunches the command (Lightning's DDP launcher)
    import importlib.util

    import __main__

    spec = importlib.util.find_spec("neurips26.__main__")
    __main__.__spec__ = spec
    sys.argv = [spec.origin, *request["argv"]]
    from neurips26.cli import finish, main

    # as the interpreter ends on an error, without tearing down the preloaded modules (seconds)
    try:
        rc = main(request["argv"])
    except SystemExit as exc:
        rc = exit_code(exc)
        if not (rc is None or isinstance(rc, int)):
            print(rc, file=sys.stderr)
            rc = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        rc = 1
    finish(rc)


def start(log_path: Path, threads: int = 1) -> tuple[object, str] | None:
    """Start a server for this process's run (from the Snakefile's `onstart:`) and announce its
    socket to the jobs through the environment. The server's environment is that of a job with
    `threads` threads (jobs with another count start fresh processes). Returns (process, socket
    path), or None when NEURIPS26_WARM_START turns it off or the server fails to start."""
    import subprocess

    if not enabled_by_env():
        return None
    folder = tempfile.mkdtemp(prefix=FOLDER_PREFIX)  # short: a socket path has at most 107 bytes
    path = os.path.join(folder, "socket")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        env = dict(os.environ, **thread_env(threads))
        proc = subprocess.Popen([sys.executable, "-m", "neurips26.core.warm", path], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 30
    while not os.path.exists(path):  # bound before preloading: jobs may connect at once
        if proc.poll() is not None or time.monotonic() > deadline:
            print(f"neurips26 warm start: the server did not start (see {log_path}); jobs start fresh processes",
                  file=sys.stderr)
            return None
        time.sleep(0.02)
    os.environ[SOCKET_ENV] = path
    return proc, path


def stop(server) -> None:
    """Stop the server that `start` returned (from `onsuccess:`/`onerror:`)."""
    import subprocess

    if not server:
        return
    proc, path = server
    os.environ.pop(SOCKET_ENV, None)
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    Path(path).unlink(missing_ok=True)
    try:
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        raise SystemExit("usage: python -m neurips26.core.warm SOCKET_PATH")
    job = serve(argv[0])
    if job is not None:
        run_request(*job)


if __name__ == "__main__":
    main()
