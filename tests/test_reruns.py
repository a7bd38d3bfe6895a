"""Reruns and resumes through Snakemake and the real CLI, on smoke sizes: a code change or
--forcerun trains again (also with kept checkpoints); a job killed with SIGKILL (at a checkpoint boundary and between two)
resumes and writes the same bytes as an uninterrupted run."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from test_workflow import SNAKEMAKE, copy_workflow, output

ROOT = Path(__file__).resolve().parents[1]
PAUSE_ENV, PAUSE_FILE_ENV = "NEURIPS26_PAUSE_AT_STEP", "NEURIPS26_PAUSE_FILE"


def workflow_with_code(where: Path, extra: dict) -> Path:
    """A copy of the workflow and of the package (so a test can edit the code), and an extra
    config layered on the smoke config."""
    wf = copy_workflow(where / "wf")
    shutil.copytree(ROOT / "src" / "neurips26", where / "src" / "neurips26",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (wf / "extra.yaml").write_text(yaml.safe_dump(extra))
    return wf


def start(wf: Path, target: str, *args: str, env_extra: dict | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "NEURIPS26_"))}
    env.update(NEURIPS26_PROGRESS="0", PYTHONPATH=str(wf.parent / "src"), **(env_extra or {}))
    # no retries (the default profile has one): the test runs the same command again itself
    return subprocess.Popen([SNAKEMAKE, target, *args, "--cores", "1", "--retries", "0",
                             "--configfile", "config/smoke.yaml", "extra.yaml"], cwd=wf, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def run(wf: Path, target: str, *args: str) -> str:
    proc = start(wf, target, *args)
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-6000:]
    return out


def run_killed(wf: Path, target: str, pause_at: int) -> None:
    """Run until the training job pauses before its `pause_at`-th batch, then SIGKILL it."""
    pause_file = wf / "paused.pid"
    pause_file.unlink(missing_ok=True)
    proc = start(wf, target, env_extra={PAUSE_ENV: str(pause_at), PAUSE_FILE_ENV: str(pause_file)})
    deadline = time.time() + 600
    while not pause_file.exists() or not pause_file.read_text():
        assert proc.poll() is None, proc.communicate()[0][-6000:]
        assert time.time() < deadline, "the training job never reached the pause"
        time.sleep(0.2)
    os.kill(int(pause_file.read_text()), signal.SIGKILL)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0, out[-3000:]


def step_log(wf: Path, rel: str) -> str:
    return (wf / rel).read_text()


ND_TRAIN = "results/nar_dit/train/nar/seed0"
ND_EVAL = "results/nar_dit/eval/nar/seed0/metrics.json"


@pytest.mark.workflow
def test_code_change_and_forcerun_retrain(tmp_path):
    wf = workflow_with_code(tmp_path, {"papers": ["nar_dit"]})
    target = f"{ND_TRAIN}/train.json"
    run(wf, target)
    first = {n: (wf / ND_TRAIN / n).read_bytes() for n in ("snapshots.safetensors", "timing.json")}
    info = json.loads((wf / ND_TRAIN / "train.json").read_text())
    assert info["snapshot_steps"][-1] == info["steps"], "the last snapshot is the final step's EMA"
    assert not (wf / ND_TRAIN / "checkpoints").exists(), "a finished job's checkpoints are removed"

    # --forcerun: trains again (new timings), same bytes (seeded)
    run(wf, target, "--forcerun", "nar_dit_train")
    assert (wf / ND_TRAIN / "snapshots.safetensors").read_bytes() == first["snapshots.safetensors"]
    assert (wf / ND_TRAIN / "timing.json").read_bytes() != first["timing.json"]

    # kept checkpoints: --forcerun still trains afresh (and says so); a rerun Snakemake plans for
    # another reason (here a lost output) reuses the kept finished checkpoint, and says so
    (wf / "extra.yaml").write_text(yaml.safe_dump({"papers": ["nar_dit"], "keep_checkpoints": True}))
    run(wf, target, "--forcerun", "nar_dit_train")
    kept = (wf / ND_TRAIN / "timing.json").read_bytes()
    run(wf, target, "--forcerun", "nar_dit_train")
    log = step_log(wf, "results/nar_dit/logs/train/nar_seed0.log")
    assert "retraining (forced)" in log and "reusing" not in log, log
    assert (wf / ND_TRAIN / "timing.json").read_bytes() != kept
    kept = (wf / ND_TRAIN / "timing.json").read_bytes()
    (wf / ND_TRAIN / "train.json").unlink()
    run(wf, target)
    assert "reusing the finished checkpoint" in step_log(wf, "results/nar_dit/logs/train/nar_seed0.log")
    assert (wf / ND_TRAIN / "timing.json").read_bytes() == kept

    # a code change (the learning rate halved in the module): Snakemake reruns the job and the
    # kept finished checkpoint of the old code is not restored; the results follow the new code
    training = wf.parent / "src" / "neurips26" / "papers" / "nar_dit" / "training.py"
    text = training.read_text()
    assert "lr=self.lr, weight_decay=self.weight_decay" in text
    training.write_text(text.replace("lr=self.lr, weight_decay=self.weight_decay",
                                     "lr=self.lr * 0.5, weight_decay=self.weight_decay"))
    out = run(wf, target)
    assert "nar_dit_train" in out
    log = step_log(wf, "results/nar_dit/logs/train/nar_seed0.log")
    assert "reusing" not in log and "resuming" not in log, log
    assert (wf / ND_TRAIN / "snapshots.safetensors").read_bytes() != first["snapshots.safetensors"]


def _resume_case(tmp_path, extra, target, rel_outputs, rerun_clean, pauses, upstream=()):
    """Outputs of an uninterrupted run, then of runs killed at each pause and run again (the
    upstream jobs, which may train too, are built first, so the pause hits the target's job)."""
    ref = workflow_with_code(tmp_path / "ref", extra)
    run(ref, target)
    expected = {rel: (ref / rel).read_bytes() for rel in rel_outputs}
    wf = workflow_with_code(tmp_path / "killed", extra)
    for up in upstream:
        run(wf, up)
    logs = []
    for pause_at in pauses:
        for rel in rerun_clean:
            shutil.rmtree(wf / rel, ignore_errors=True)
        run_killed(wf, target, pause_at)
        out = run(wf, target)
        logs.append(out)
        for rel in rel_outputs:
            assert (wf / rel).read_bytes() == expected[rel], (pause_at, rel)
    return wf, logs


@pytest.mark.workflow
def test_nar_dit_killed_training_resumes_to_identical_metrics(tmp_path):
    # checkpoints every 6 steps of 20; 5 batches an epoch, so step 12 is inside an epoch
    extra = {"papers": ["nar_dit"], "nar_dit": {"train": {"checkpoint_every": 6}}}
    wf, _ = _resume_case(tmp_path, extra, ND_EVAL,
                         [ND_EVAL, f"{ND_TRAIN}/snapshots.safetensors", f"{ND_TRAIN}/train.json"],
                         ["results/nar_dit/train", "results/nar_dit/eval"], pauses=[12, 15],
                         upstream=["results/nar_dit/classifier/classifier.safetensors"])
    log = step_log(wf, "results/nar_dit/logs/train/nar_seed0.log")
    assert "resuming" in log and "from step 12 of 20" in log, log
    db = sqlite3.connect(wf / "results" / "mlflow.db")
    tags = db.execute("select t.value from tags t join tags s on s.run_uuid = t.run_uuid "
                      "where t.key = 'resumed_from_step' and s.key = 'snakemake.rule' "
                      "and s.value = 'nar_dit_train'").fetchall()
    assert ("12",) in tags, tags
    statuses = db.execute("select r.status from runs r join tags s on s.run_uuid = r.run_uuid "
                          "where s.key = 'snakemake.rule' and s.value = 'nar_dit_train'").fetchall()
    assert sorted(s for (s,) in statuses) == ["FINISHED", "FINISHED", "KILLED", "KILLED"], statuses


@pytest.mark.workflow
def test_angular_nets_killed_training_resumes_to_identical_metrics(tmp_path):
    # the digits experiment trains fp then angular_w1a1, 6 steps each, one checkpoint at the
    # end of each: batch 6 is the boundary between them, batch 8 is inside the second
    extra = {"papers": ["angular_nets"]}
    metrics = "results/angular_nets/train/digits/seed0/metrics.json"
    wf, logs = _resume_case(tmp_path, extra, metrics, [metrics], ["results/angular_nets/train"], pauses=[6, 8])
    log = step_log(wf, "results/angular_nets/logs/train/digits_seed0.log")
    assert "reusing the finished checkpoint" in log, log
