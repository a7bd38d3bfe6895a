"""What every job pays before and around its work, on this machine: a fresh interpreter, the CLI,
MLflow (import, opening the SQLite store with its schema check, one run with params and an
artifact), torch, Lightning, matplotlib. Each is timed in fresh processes (median of --repeats).
Then what a local run's jobs pay instead under the warm start (core/warm.py): the server's one
preload, and a command's round trip through it.

    python benchmarks/job_overhead.py [--repeats 3] [--workdir DIR --configfile config/smoke.yaml]

With --workdir (a finished run, as for dag_profile.py), it counts that run's jobs and the jobs
that built a Lightning trainer (their logs print "world size") and prints the job time that these
fixed costs alone would take in fresh processes (a floor: the torch import of jobs that do not
train is not counted) and under the warm start, against the run's measured job time.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TRACKED_JOB = """
import os, pathlib, sys
os.environ["MLFLOW_TRACKING_URI"] = "sqlite:///" + sys.argv[1] + "/mlflow.db"
from neurips26.core import tracking
out = pathlib.Path(sys.argv[1]) / "out"
out.mkdir(exist_ok=True)
(out / "metrics.json").write_text("{}")
with tracking.job_run("overhead", "evaluate", {"seed": 0, "variant": "a", "train": {"steps": 1}}, out):
    pass
"""

TRACKED = "one tracked job (import, open the store, run, params, artifact)"
PROBES = {
    "interpreter (python -c pass)": ["-c", "pass"],
    "CLI start (neurips26 --help)": ["-m", "neurips26", "--help"],
    "a command in a fresh process (neurips26 list)": ["-m", "neurips26", "list"],
    "import mlflow": ["-c", "import mlflow"],
    TRACKED: ["-c", TRACKED_JOB],
    "import torch": ["-c", "import torch"],
    "import lightning (torch included)": ["-c", "import lightning"],
    "import matplotlib.pyplot": ["-c", "import matplotlib.pyplot"],
}


WARM_PRELOAD = "warm-start server: preloading once (torch, Lightning, MLflow, ...)"
WARM_CLIENT = "a command through the warm-start server (neurips26 list in a fork)"


def timed(args: list[str], repeats: int, env: dict | None = None) -> float:
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], check=True, capture_output=True, cwd=ROOT, env=env)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def warm_costs(repeats: int) -> dict[str, float]:
    """The server's one-off preload and a job's round trip through it (core/warm.py, started as a
    run's onstart: does), with the environment of a one-thread Snakemake job."""
    from neurips26.core import warm

    with tempfile.TemporaryDirectory(prefix="neurips26-warm-log-") as folder:
        log = Path(folder) / "warm.log"
        server = warm.start(log, threads=1)
        if server is None:
            raise SystemExit("job_overhead: the warm-start server did not start (is NEURIPS26_WARM_START off?)")
        try:
            deadline = time.monotonic() + 300
            while not (found := re.search(r"preloaded \d+ modules in ([0-9.]+)s", log.read_text())):
                if server[0].poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"job_overhead: the warm-start server did not preload: {log.read_text()}")
                time.sleep(0.1)
            client = timed(["-m", "neurips26", "list"], repeats, env=dict(os.environ, **warm.thread_env(1)))
        finally:
            warm.stop(server)
    return {WARM_PRELOAD: float(found.group(1)), WARM_CLIENT: client}


def measure(repeats: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="neurips26-overhead-") as store:
        # the store exists before any job, as in a run (the Snakefile's onstart creates it)
        subprocess.run([sys.executable, "-c", TRACKED_JOB, store], check=True, capture_output=True, cwd=ROOT)
        costs = {name: timed(args + ([store] if name == TRACKED else []), repeats) for name, args in PROBES.items()}
    return {**costs, **warm_costs(repeats)}


def run_counts(workdir: Path, configfiles: list[str]) -> tuple[int, int, float]:
    """(jobs, jobs that built a Lightning trainer, job-seconds) of a finished run."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import dag_profile

    found = dag_profile.jobs(dag_profile.workflow_rules(configfiles, workdir), workdir)
    if not found:
        raise SystemExit(f"job_overhead: no benchmark files under {workdir / 'results'}: run the DAG first")
    logs = [p for p in (workdir / "results").rglob("*.log") if "logs" in p.parts]
    trainers = sum(1 for log in logs if "world size" in log.read_text(errors="replace"))
    return len(found), trainers, sum(j["seconds"] for j in found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", type=Path, help="a finished run to set the costs against")
    ap.add_argument("--configfile", action="append", default=[], help="the configs of that run")
    ap.add_argument("--cores", type=int, default=2)
    args = ap.parse_args(argv)

    costs = measure(args.repeats)
    print("| what | seconds (median of %d) |\n|---|---|" % args.repeats)
    for name, seconds in costs.items():
        print(f"| {name} | {seconds:.2f} |")
    if args.workdir is None:
        return 0
    jobs, trainers, job_seconds = run_counts(args.workdir.resolve(), args.configfile)
    per_job = costs[TRACKED]
    lightning = costs["import lightning (torch included)"] - costs["interpreter (python -c pass)"]
    floor = jobs * per_job + trainers * lightning
    print(f"\n{jobs} jobs ({trainers} build a Lightning trainer), {job_seconds:.0f} job-seconds measured.")
    print(f"Fixed costs in fresh processes: {jobs} x {per_job:.1f} s (interpreter and tracked run) + {trainers} x "
          f"{lightning:.1f} s (Lightning) = {floor:.0f} job-seconds; on {args.cores} cores at least "
          f"{floor / args.cores / 60:.1f} min before any step does its work.")
    warm_floor = costs[WARM_PRELOAD] + jobs * costs[WARM_CLIENT]
    store_and_run = per_job - costs["import mlflow"]
    print(f"With a warm start (the default of a local run): one preload of {costs[WARM_PRELOAD]:.1f} s + {jobs} x "
          f"{costs[WARM_CLIENT]:.2f} s = {warm_floor:.0f} job-seconds; each job still opens the store and logs its "
          f"run inside its step ({store_and_run:.1f} s: the tracked job less the MLflow import), "
          f"{jobs * store_and_run:.0f} job-seconds in all.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
