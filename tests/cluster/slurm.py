"""A real one-node SLURM cluster on localhost, for tests: Debian's slurmctld, slurmd and munge.

`local_slurm()` installs the packages when they are missing (root and apt-get needed),
writes /etc/slurm/slurm.conf (restoring any earlier one afterwards), starts munged,
slurmctld and slurmd as daemons whose state lives in one folder, waits until the node is
idle, yields, and stops exactly the daemons it started. Its munged listens on a socket of its
own in that folder (slurm.conf's AuthInfo names it), so a munged already bound to the system
socket, left running or half started by anything else, neither blocks it nor is used by it. Partitions `cpu` (default) and `gpu`
match profiles/slurm; the `gpu` partition has no GPUs here, and smoke-scale jobs ask for none.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from . import system

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
CONF = Path("/etc/slurm/slurm.conf")


def _installed() -> bool:
    return all(shutil.which(b) for b in ("slurmctld", "slurmd", "munged", "sbatch"))


def unavailable_reason() -> str | None:
    """Why a local cluster cannot be started here, or None when it can."""
    return system.unavailable_reason("SLURM", _installed())


def install() -> None:
    if not _installed():
        system.apt_install(PACKAGES)


def munge_socket(state: Path) -> Path:
    return state / "munge" / "munge.socket"


def slurm_conf(state: Path, cpus: int, memory_mb: int) -> str:
    return f"""\
ClusterName=neurips26-test
SlurmctldHost=localhost(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket={munge_socket(state)}
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=600
ReturnToService=2
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd.pid
StateSaveLocation={state}/ctld
SlurmdSpoolDir={state}/d
SlurmctldLogFile={state}/slurmctld.log
SlurmdLogFile={state}/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=cpu Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=localhost Default=NO MaxTime=INFINITE State=UP
"""


def _wait(check, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise TimeoutError(f"local SLURM: {what} did not come up within {timeout:.0f} s")


def _ok(*cmd: str) -> bool:
    return subprocess.run(list(cmd), capture_output=True, text=True).returncode == 0


def _stop(pidfile: Path) -> None:
    if not pidfile.exists():
        return
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 15)
    except (ValueError, ProcessLookupError):
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(pid, 9)


@contextmanager
def local_slurm(state: Path, cpus: int | None = None, memory_mb: int = 20000):
    """Start the cluster, yield its state folder, stop what was started."""
    install()
    state = Path(state).resolve()
    for sub in ("ctld", "d"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    cpus = cpus or os.cpu_count() or 2
    backup = CONF.read_text() if CONF.exists() else None
    CONF.parent.mkdir(parents=True, exist_ok=True)
    CONF.write_text(slurm_conf(state, cpus, memory_mb))
    munge_dir = munge_socket(state).parent
    munge_dir.mkdir(exist_ok=True)
    munge_dir.chmod(0o755)  # munged wants every user to reach its socket
    shutil.chown(munge_dir, "munge", "munge")
    munge_pid = munge_dir / "munged.pid"
    sock = f"--socket={munge_socket(state)}"
    started = []
    try:
        subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged", sock, f"--pid-file={munge_pid}",
                        f"--log-file={munge_dir / 'munged.log'}", f"--seed-file={munge_dir / 'munged.seed'}"],
                       check=True)
        started.append(munge_pid)
        _wait(lambda: _ok("sh", "-c", f"munge -n {sock} | unmunge {sock}"), "munged")
        subprocess.run(["/usr/sbin/slurmctld"], check=True)
        started.append(state / "slurmctld.pid")
        subprocess.run(["/usr/sbin/slurmd", "-N", "localhost"], check=True)
        started.append(state / "slurmd.pid")

        def idle() -> bool:
            out = subprocess.run(["sinfo", "-h", "-n", "localhost", "-o", "%t"], capture_output=True, text=True)
            return out.returncode == 0 and "idle" in out.stdout

        _wait(idle, "the localhost node")
        yield state
    finally:
        for pidfile in reversed(started):
            _stop(pidfile)
        if backup is None:
            CONF.unlink(missing_ok=True)
        else:
            CONF.write_text(backup)


@contextmanager
def stalled_system_munged():
    """A munged bound to the system socket that answers nothing (started, then stopped with
    SIGSTOP), as a half-started or frozen daemon left on a machine would be; a no-op when
    another munged already holds that socket. Stopped for good on exit."""
    install()
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    pidfile = Path("/run/munge/neurips26-stalled-munged.pid")
    done = subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged", f"--pid-file={pidfile}"],
                          capture_output=True, text=True)
    pid = None
    if done.returncode == 0:
        _wait(pidfile.exists, "the stalled munged's pid file", timeout=10)
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 19)  # SIGSTOP
    try:
        yield pid
    finally:
        if pid is not None:
            os.kill(pid, 18)  # SIGCONT
            _stop(pidfile)


# sacct for a cluster that keeps no accounting: Snakemake's status query (JobIdRaw,State of the
# run's jobs, named by the run's id) is answered from slurmctld's own job table; anything else
# goes to the real sacct, which fails as before
SACCT_SHIM = """#!/bin/sh
case " $* " in
  *" --format=JobIdRaw,State "*)
    name=""; previous=""
    for arg in "$@"; do [ "$previous" = "--name" ] && name="$arg"; previous="$arg"; done
    exec squeue -h -t all --name="$name" -o "%i|%T" ;;
esac
exec {real} "$@"
"""


@lru_cache(maxsize=None)
def path_with_sacct_from_squeue(path: str) -> str:
    """`path` (a PATH) on which `sacct` answers Snakemake's status query from squeue: each folder
    holding sacct is replaced by a folder of links to everything else in it, plus SACCT_SHIM.
    This cluster keeps no accounting, so the real sacct only fails here. Snakemake's SLURM
    executor turns to sacct for a round of status checks whenever one `scontrol show config`
    fails, and a round whose query fails drops its jobs from the ones it watches: the run then
    waits for them until it is killed (seen once under the suite's load)."""
    shadow = Path(tempfile.mkdtemp(prefix="neurips26-path-"))
    atexit.register(shutil.rmtree, shadow, True)
    folders = []
    for entry in path.split(os.pathsep):
        folder = Path(entry)
        if not (folder / "sacct").exists():
            folders.append(entry)
            continue
        copy = shadow / str(len(folders))
        copy.mkdir()
        for item in folder.iterdir():
            if item.name != "sacct":
                (copy / item.name).symlink_to(item)
        (copy / "sacct").write_text(SACCT_SHIM.format(real=folder / "sacct"))
        (copy / "sacct").chmod(0o755)
        folders.append(str(copy))
    return os.pathsep.join(folders)


def diagnosis(state: Path, lines: int = 40) -> str:
    """What a failed cluster test needs to be understood: the daemons' answers and log tails."""
    parts = []
    for cmd in (["scontrol", "ping"], ["sinfo", "-N", "-o", "%N %T %E"], ["squeue", "-h", "-t", "all", "-o", "%i %j %T %r %M"]):
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
            parts.append(f"$ {' '.join(cmd)} (rc {done.returncode})\n{done.stdout}{done.stderr}")
        except subprocess.TimeoutExpired:
            parts.append(f"$ {' '.join(cmd)}: no answer within 20 s")
    for log in (state / "slurmctld.log", state / "slurmd.log", munge_socket(state).parent / "munged.log"):
        tail = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else ["(missing)"]
        parts.append(f"--- {log.name}\n" + "\n".join(tail))
    return "\n".join(parts)


def jobs_seen() -> list[dict[str, str]]:
    """The jobs slurmctld knows, finished ones included (kept MinJobAge seconds after they end)."""
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%j|%T|%P|%k"], capture_output=True, text=True,
                         check=True)
    keys = ("id", "name", "state", "partition", "comment")
    return [dict(zip(keys, line.split("|"))) for line in out.stdout.splitlines() if line.strip()]
