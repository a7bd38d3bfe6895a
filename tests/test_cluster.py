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
from test_workflow import SNAKEMAKE, copy_workflow, output

ROOT = Path(__file__).resolve().parents[1]
# the paper every run uses, and a second one for the SLURM run (the cheapest other enabled paper)
FIRST = "nar_dit"
ENABLED = yaml.safe_load((ROOT / "config/config.yaml").read_text())["papers"]
SECOND = next((p for p in ("sparse_halfspace", "abmf", "anchor_pca", "crl_spectral") if p in ENABLED),
              next((p for p in ENABLED if p != FIRST), None))


def run(cwd: Path, *args: str, env_extra: dict | None = None, timeout: int = 1200) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "NEURIPS26_PARENT", "SLURM_"))}
    env["NEURIPS26_PROGRESS"] = "0"
    env.update(env_extra or {})
    return subprocess.run(["timeout", "-k", "20", str(timeout), SNAKEMAKE, *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def _state_dir(prefix: str) -> Path:
    """A state folder the daemons' own users can reach (pytest's tmp folders are root-only)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    return path


@pytest.mark.skipif(slurm.unavailable_reason() is not None, reason=str(slurm.unavailable_reason()))
def test_smoke_dag_through_slurm(tmp_path):
    papers = [FIRST] + ([SECOND] if SECOND else [])
    wf = copy_workflow(tmp_path / "wf")
    with slurm.local_slurm(_state_dir("neurips26-slurm-")):
        proc = run(wf, "--profile", "profiles/slurm", "--configfile", "config/smoke.yaml",
                   "--config", f"papers=[{','.join(papers)}]",
                   "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2",
                   "--seconds-between-status-checks", "2")
        assert proc.returncode == 0, output(proc)[-6000:]
        jobs = slurm.jobs_seen()
    for paper in papers:
        assert (wf / "results" / paper / "claims.csv").exists()
    assert (wf / "results" / "summary.md").exists()
    submitted = [line for line in output(proc).splitlines() if "has been submitted with SLURM jobid" in line]
    finished = [line for line in output(proc).splitlines()
                if line.startswith("Finished jobid") and "(Rule: all)" not in line]
    assert submitted and len(submitted) == len(finished)
    assert {j["state"] for j in jobs} == {"COMPLETED"}
    assert len(jobs) >= len(submitted)
    comments = " ".join(j["comment"] for j in jobs)
    for paper in papers:
        assert f"rule_{paper}_" in comments
    partitions = {j["comment"].split("_wildcards")[0].removeprefix("rule_"): j["partition"] for j in jobs}
    assert partitions.get("nar_dit_train") == "gpu" and partitions.get("nar_dit_prepare") == "cpu"


def test_paper_scale_dry_run_lists_jobs_with_cluster_resources(tmp_path):
    from test_workflow import _placeholders

    wf = copy_workflow(tmp_path / "wf")
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    (wf / "placeholders.yaml").write_text(yaml.safe_dump(_placeholders(paper, tmp_path / "data")))
    proc = run(wf, "-n", "--profile", "profiles/slurm", "--configfile", "config/paper.yaml", "placeholders.yaml")
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
