"""The DAG on a real SLURM cluster and against a real MLflow tracking server (PostgreSQL),
both started on this machine by the harnesses in tests/cluster/. They need root (as CI has)
to install and start the daemons; elsewhere they skip with the reason."""

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from cluster import mlflow_server, slurm
from test_workflow import SNAKEMAKE, clean_env, copy_workflow, output

ROOT = Path(__file__).resolve().parents[1]
# the paper every run uses, and a second one for the SLURM run (the cheapest other enabled paper)
FIRST = "nar_dit"
ENABLED = yaml.safe_load((ROOT / "config/config.yaml").read_text())["papers"]
SECOND = next((p for p in ("sparse_halfspace", "abmf", "anchor_pca", "crl_spectral") if p in ENABLED),
              next((p for p in ENABLED if p != FIRST), None))


def cluster_env(**extra: str) -> dict[str, str]:
    """The smoke runs' clean environment (smoke_runs.clean_env) without inherited SLURM job
    variables, and with the local cluster's sacct (slurm.py)."""
    env = {k: v for k, v in clean_env().items() if not k.startswith("SLURM_")}
    env["PATH"] = slurm.path_with_sacct_from_squeue(env["PATH"])
    env.update(extra)
    return env


def run(cwd: Path, *args: str, env_extra: dict | None = None, timeout: int = 1200) -> subprocess.CompletedProcess:
    env = cluster_env(**(env_extra or {}))
    return subprocess.run(["timeout", "-k", "20", str(timeout), SNAKEMAKE, *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def _state_dir(prefix: str) -> Path:
    """A state folder the daemons' own users can reach (pytest's tmp folders are root-only)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    return path


# how the tests talk to the local cluster (no accounting: squeue, and short polls); the SQLite
# store is allowed because these runs are small and the store is created before any job
SLURM_ARGS = ("--profile", "profiles/slurm", "--slurm-status-command", "squeue",
              "--slurm-init-seconds-before-status-checks", "2", "--seconds-between-status-checks", "2")
ALLOW_SQLITE = {"cluster": {"allow_sqlite": True}}


@pytest.fixture(scope="module")
def local_cluster():
    """One local SLURM cluster for every test of this module that needs one. A munged that
    holds the system socket and answers nothing runs beside it the whole time: the cluster
    uses its own munged (on a CI machine a stray one once failed every cluster test)."""
    reason = slurm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    with slurm.stalled_system_munged(), slurm.local_slurm(_state_dir("neurips26-slurm-")) as state:
        yield state


def test_smoke_dag_through_slurm(tmp_path, local_cluster):
    papers = [FIRST] + ([SECOND] if SECOND else [])
    wf = copy_workflow(tmp_path / "wf")
    (wf / "cluster.yaml").write_text(yaml.safe_dump(ALLOW_SQLITE))
    submitted_before = {j["id"] for j in slurm.jobs_seen()}
    proc = run(wf, *SLURM_ARGS, "--configfile", "config/smoke.yaml", "cluster.yaml",
               "--config", f"papers=[{','.join(papers)}]")
    assert proc.returncode == 0, output(proc)[-6000:] + "\n" + slurm.diagnosis(local_cluster)
    jobs = [j for j in slurm.jobs_seen() if j["id"] not in submitted_before]
    for paper in papers:
        assert (wf / "results" / paper / "claims.csv").exists()
    assert (wf / "results" / "summary.md").exists()
    submitted = [line for line in output(proc).splitlines() if "has been submitted with SLURM jobid" in line]
    finished = [line for line in output(proc).splitlines()
                if line.startswith("Finished jobid") and "(Rule: all)" not in line]
    assert submitted and len(submitted) == len(finished)
    failed = [j for j in jobs if j["state"] != "COMPLETED"]
    assert not failed, "\n".join(f"{j['id']} {j['state']} {j['comment']}:\n{_slurm_log_tail(wf, j['id'])}" for j in failed)
    assert len(jobs) >= len(submitted)
    comments = " ".join(j["comment"] for j in jobs)
    for paper in papers:
        assert f"rule_{paper}_" in comments
    # smoke scale asks for no GPU, so no job goes to the GPU partition
    partitions = {j["comment"].split("_wildcards")[0].removeprefix("rule_"): j["partition"] for j in jobs}
    assert set(partitions.values()) == {"cpu"}, partitions


def _slurm_log_tail(wf: Path, job_id: str) -> str:
    """The end of the SLURM executor's log of a job (it names each log after the job id)."""
    logs = sorted((wf / ".snakemake" / "slurm_logs").rglob(f"{job_id}.log"))
    return logs[0].read_text()[-3000:] if logs else "(no log of this job)"


# smoke nar_dit, one regime without routing or label dropout: every random draw of a training step
# is then made for the global batch (see training.py), so 2 ranks must reproduce 1 process
TWO_RANKS = {"papers": ["nar_dit"], "nar_dit": {"run_variants": ["dit"], "model": {"class_dropout": 0.0}}}
TRAIN_OUT = "results/nar_dit/train/dit/seed0"
# The same sums in another order (two half-batch means averaged by the all-reduce against one
# mean): float32 rounding, 6e-8 relative per operation; measured 1.3e-7 on the weights after 20
# steps. A real difference (another batch, other noise, twice the batch) moves weights by about
# the learning rate (3e-3) per step, so 1e-5 separates the two by two orders of magnitude each way.
DDP_TOLERANCE = 1e-5


def _snapshots(wf: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(wf / TRAIN_OUT / "snapshots.safetensors"))


def _train_runs(wf: Path) -> int:
    import sqlite3

    with sqlite3.connect(wf / "results" / "mlflow.db") as db:
        return db.execute("select count(*) from tags where key = 'neurips26.step' and value = 'train'").fetchone()[0]


@pytest.fixture(scope="module")
def one_process_run(tmp_path_factory):
    """The smoke training job of TWO_RANKS run locally as one process, uninterrupted."""
    one = copy_workflow(tmp_path_factory.mktemp("one"))
    (one / "overlay.yaml").write_text(yaml.safe_dump(TWO_RANKS))
    proc = run(one, "--cores", "1", "--configfile", "config/smoke.yaml", "overlay.yaml", "--", f"{TRAIN_OUT}/train.json")
    assert proc.returncode == 0, output(proc)[-6000:]
    assert "world size 1" in (one / "results/nar_dit/logs/train/dit_seed0.log").read_text()
    return one


def _largest_difference(a: Path, b: Path) -> float:
    sa, sb = _snapshots(a), _snapshots(b)
    assert sa.keys() == sb.keys()
    return max((sa[k] - sb[k]).abs().max().item() for k in sa)


def test_training_job_with_two_ranks_under_srun_matches_one_process(tmp_path, local_cluster, one_process_run):
    ddp = copy_workflow(tmp_path / "ddp")
    overlay = {**TWO_RANKS, **ALLOW_SQLITE, "nar_dit": {**TWO_RANKS["nar_dit"], "resources": {"train_cpu_ranks": 2}}}
    (ddp / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    started = time.monotonic()
    proc = run(ddp, *SLURM_ARGS, "--configfile", "config/smoke.yaml", "overlay.yaml", "--", f"{TRAIN_OUT}/train.json")
    assert proc.returncode == 0, output(proc)[-6000:] + "\n" + slurm.diagnosis(local_cluster)
    ddp_seconds = time.monotonic() - started
    log = (ddp / "results/nar_dit/logs/train/dit_seed0.log").read_text()
    assert "rank 0 of world size 2" in log and "rank 1 of world size 2" in log, log[-3000:]
    assert "rank 1: outputs and MLflow logging are left to rank 0" in log, log[-3000:]
    assert log.count("trained to step 20 with world size 2") == 2, log[-3000:]
    assert _train_runs(ddp) == 1
    assert not [p for p in (ddp / TRAIN_OUT).rglob("*.tmp")]
    worst = _largest_difference(ddp, one_process_run)
    print(f"2 ranks vs 1 process: largest weight difference {worst:.3g} (2-rank job {ddp_seconds:.0f} s)")
    assert worst < DDP_TOLERANCE


def _job_of_rule(rule: str, since: set) -> str | None:
    return next((j["id"] for j in slurm.jobs_seen() if j["id"] not in since and f"rule_{rule}_" in j["comment"]
                 and j["state"] == "RUNNING"), None)


def test_warning_signal_saves_a_checkpoint_and_the_rerun_finishes_with_the_uninterrupted_result(
        tmp_path, local_cluster, one_process_run):
    wf = copy_workflow(tmp_path / "wf")
    (wf / "overlay.yaml").write_text(yaml.safe_dump({**TWO_RANKS, **ALLOW_SQLITE}))
    pause = tmp_path / "paused"
    before = {j["id"] for j in slurm.jobs_seen()}
    # the job waits before its 13th batch (of 20) until the signal comes
    env = cluster_env(NEURIPS26_PAUSE_AT_STEP="12", NEURIPS26_PAUSE_FILE=str(pause))
    proc = subprocess.Popen(["timeout", "-k", "20", "900", SNAKEMAKE, *SLURM_ARGS, "--configfile", "config/smoke.yaml",
                             "overlay.yaml", "--", f"{TRAIN_OUT}/train.json"],
                            cwd=wf, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not pause.exists() and proc.poll() is None:
            time.sleep(1)
        assert pause.exists(), "the training job never reached its pause"
        job = _job_of_rule("nar_dit_train", before)
        assert job, slurm.jobs_seen()
        # what SLURM sends before the time limit (sbatch --signal=USR1@90), to the job's steps
        subprocess.run(["scancel", "--signal=USR1", job], check=True)
        log, _ = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, log[-6000:] + "\n" + slurm.diagnosis(local_cluster)
    # the first attempt failed after saving; Snakemake's retry resumed from its checkpoint
    assert "Trying to restart job" in log or "attempt 2" in log.lower() or log.count("has been submitted") >= 3, log[-4000:]
    resumed = (wf / "results/nar_dit/logs/train/dit_seed0.log").read_text()
    assert "resuming" in resumed and "from step 13 of 20" in resumed, resumed[-3000:]
    worst = _largest_difference(wf, one_process_run)
    print(f"resumed after the signal vs uninterrupted: largest weight difference {worst:.3g}")
    assert worst == 0.0


def test_paper_scale_dry_run_lists_jobs_with_cluster_resources(tmp_path):
    from test_workflow import stand_in_paths

    wf = copy_workflow(tmp_path / "wf")
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    (wf / "stand_in_paths.yaml").write_text(yaml.safe_dump(stand_in_paths(paper, tmp_path / "data")))
    proc = run(wf, "-n", "--profile", "profiles/slurm", "--configfile", "config/paper.yaml", "stand_in_paths.yaml")
    assert proc.returncode == 0, output(proc)[-4000:]
    text = output(proc)
    for name in ENABLED:
        assert f"rule {name}_" in text or f"localrule {name}_" in text, name
    train = text[text.index("rule nar_dit_train:"):][:1500]
    assert "gpu=8" in train and "slurm_partition=gpu" in train and "mem_mb=64000" in train


def _runs(uri: str):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exps = {e.experiment_id: e.name for e in client.search_experiments()}
    runs = client.search_runs(list(exps), max_results=5000)
    return client, [r for r in runs if r.data.tags.get("neurips26.step") not in (None, "invocation")]


@pytest.mark.skipif(mlflow_server.unavailable_reason() is not None, reason=str(mlflow_server.unavailable_reason()))
def test_smoke_dag_against_mlflow_server(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    with mlflow_server.tracking_server(_state_dir("neurips26-mlflow-")) as server:
        proc = run(wf, "-c2", "--profile", "profiles/default", "--configfile", "config/smoke.yaml",
                   "--config", f"papers=[{FIRST}]", env_extra={"MLFLOW_TRACKING_URI": server.uri})
        assert proc.returncode == 0, output(proc)[-6000:]
        client, runs = _runs(server.uri)
        jobs = [line for line in output(proc).splitlines()
                if line.startswith("Finished jobid") and "(Rule: all)" not in line]
        assert len(runs) == len(jobs)
        assert {r.info.status for r in runs} == {"FINISHED"}
        assert not (wf / "results" / "mlflow.db").exists()
        for r in runs:
            assert r.data.params, r.info.run_name
            assert r.data.tags.get("mlflow.parentRunId")
            assert client.list_artifacts(r.info.run_id), f"no artifacts for {r.info.run_name}"
        evaluations = [r for r in runs if r.data.tags["neurips26.step"] == "evaluate"]
        assert evaluations and all("fd" in r.data.metrics for r in evaluations)


@pytest.mark.skipif(mlflow_server.unavailable_reason() is not None, reason=str(mlflow_server.unavailable_reason()))
def test_server_stopped_mid_run_fails_clearly_and_keeps_no_untracked_result(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    with mlflow_server.tracking_server(_state_dir("neurips26-mlflow-")) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "NEURIPS26_PARENT"))}
        env.update(MLFLOW_TRACKING_URI=server.uri, MLFLOW_HTTP_REQUEST_MAX_RETRIES="1",
                   MLFLOW_HTTP_REQUEST_TIMEOUT="5", NEURIPS26_PROGRESS="0")
        proc = subprocess.Popen(["timeout", "-k", "20", "900", SNAKEMAKE, "-c2", "--profile", "profiles/default",
                                 "--configfile", "config/smoke.yaml", "--config", f"papers=[{FIRST}]"],
                                cwd=wf, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and len(_runs(server.uri)[1]) < 3:
            time.sleep(1)
        server.stop()
        log, _ = proc.communicate(timeout=900)
        assert proc.returncode != 0, log[-4000:]
        assert "MLflow tracking at http://127.0.0.1" in log or "is unreachable" in log, log[-4000:]
        server.start()
        _, runs = _runs(server.uri)
        finished = {(wf / r.data.tags["neurips26.out"]).resolve() for r in runs if r.info.status == "FINISHED"}
    # every job output that survived has a finished run on the server
    kept = [p.parent.resolve() for p in (wf / "results").rglob("*") if p.is_file() and p.suffix in (".json", ".safetensors")
            and "mlartifacts" not in p.parts and "checkpoints" not in p.parts]
    assert kept, "the run was stopped before any job finished"
    for folder in kept:
        assert any(folder == f or f in folder.parents for f in finished), f"{folder} has no finished run"
