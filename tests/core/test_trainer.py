"""The Lightning trainer factory: last.ckpt written, resumed only by the same params, and
seeded runs that are bit-identical."""

import lightning as L
import torch

from neurips26.core.seeding import seed_everything
from neurips26.core.trainer import fit, make_trainer


class Regression(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3, 1)
        self.calls = 0

    def training_step(self, batch, batch_idx):
        self.calls += 1
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 3, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]])
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8, shuffle=True,
                                       generator=torch.Generator().manual_seed(seed))


def train(out, params, steps):
    seed_everything(0, threads=1)
    module = Regression()
    trainer, resume = make_trainer(out, params, steps, checkpoint_every=5)
    fit(trainer, module, loader(), resume)
    return module, trainer, resume


def test_checkpoint_and_resume_with_the_same_params(tmp_path):
    params = {"lr": 0.1}
    _, trainer, resume = train(tmp_path, params, 10)
    assert resume is None and trainer.global_step == 10
    assert list((tmp_path / "checkpoints").glob("*/last.ckpt"))
    module, trainer, resume = train(tmp_path, params, 20)
    assert resume is not None and resume.endswith("last.ckpt")
    assert trainer.global_step == 20 and module.calls == 10  # only the remaining steps ran
    _, _, resume = train(tmp_path, {"lr": 0.2}, 5)
    assert resume is None  # other params never resume this run's checkpoint


def test_seeded_runs_are_bit_identical(tmp_path):
    a, _, _ = train(tmp_path / "a", {}, 15)
    b, _, _ = train(tmp_path / "b", {}, 15)
    assert torch.equal(a.layer.weight, b.layer.weight) and torch.equal(a.layer.bias, b.layer.bias)
    assert not torch.equal(a.layer.weight, Regression().layer.weight)


def test_other_code_or_inputs_never_resume_and_finished_jobs_clean_up(tmp_path):
    from neurips26.core import job

    data = tmp_path / "data.bin"
    data.write_bytes(b"one")
    params = {"lr": 0.1}
    try:
        job._CURRENT = job.JobContext(code="a", inputs={"data": data}, keep_checkpoints=True)
        _, _, resume = train(tmp_path, params, 10)
        assert resume is None
        module, _, resume = train(tmp_path, params, 10)
        assert resume is not None and module.calls == 0  # the finished checkpoint is reused
        job._CURRENT = job.JobContext(code="b", inputs={"data": data}, keep_checkpoints=True)
        module, _, resume = train(tmp_path, params, 10)
        assert resume is None and module.calls == 10  # new code: trains afresh
        data.write_bytes(b"two")
        job._CURRENT = job.JobContext(code="b", inputs={"data": data})
        module, _, resume = train(tmp_path, params, 10)
        assert resume is None and module.calls == 10  # new input bytes: trains afresh
        assert job.finish() == [tmp_path / "checkpoints"]
        assert not (tmp_path / "checkpoints").exists()
    finally:
        job._CURRENT = job.JobContext()


def test_a_forced_rerun_trains_afresh_despite_a_kept_finished_checkpoint(tmp_path, monkeypatch):
    from neurips26.core import job

    monkeypatch.setenv(job.RETRAIN_ENV, "p train,other step")
    assert job.retrain_requested("p train") and not job.retrain_requested("p figures")
    monkeypatch.setenv(job.RETRAIN_ENV, "*")
    assert job.retrain_requested("anything")
    try:
        job._CURRENT = job.JobContext(code="a", keep_checkpoints=True)
        train(tmp_path, {}, 10)
        job._CURRENT = job.JobContext(code="a", keep_checkpoints=True, retrain=True)
        module, trainer, resume = train(tmp_path, {}, 10)
        assert resume is None and module.calls == 10 and trainer.global_step == 10
    finally:
        job._CURRENT = job.JobContext()


KILLED_WRITER = """
import os, sys, time
import torch
from neurips26.core import trainer

def stall(fd):  # the new checkpoint's bytes are in the temp file, not yet renamed: stop here
    open(sys.argv[2], "w").write("writing")
    time.sleep(120)

os.fsync = stall
trainer.atomic_torch_save({"step": 2, "weights": torch.ones(1000, 1000)}, sys.argv[1])
"""


def test_a_writer_killed_mid_write_leaves_the_previous_checkpoint(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from neurips26.core.trainer import PART, _check_checkpoint, atomic_torch_save

    last = tmp_path / "ckpt" / "last.ckpt"
    atomic_torch_save({"step": 1, "weights": torch.zeros(3)}, last)
    marker = tmp_path / "writing"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(last), str(marker)])
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    assert list(last.parent.glob(f".*{PART}")), "the new checkpoint is written beside the old one"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _check_checkpoint(last)
    state = torch.load(last, weights_only=True)
    assert state["step"] == 1 and torch.equal(state["weights"], torch.zeros(3))
    # the next trainer of that folder drops the killed write's temp file
    key_dir = tmp_path / "out" / "checkpoints"
    from neurips26.core.trainer import checkpoint_key

    folder = key_dir / checkpoint_key({})
    folder.mkdir(parents=True)
    for part in last.parent.glob(f".*{PART}"):
        part.rename(folder / part.name)
    make_trainer(tmp_path / "out", {}, 5)
    assert not list(folder.glob(f".*{PART}"))


class Averaged(Regression):
    """A module whose own batch-end hook changes its state (as an EMA update does)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("updates", torch.zeros(()))

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.updates += 1


def test_the_final_state_is_saved_once_after_the_modules_batch_end_hooks(tmp_path, monkeypatch):
    from neurips26.core import trainer as trainer_mod

    saves = []
    real = trainer_mod.atomic_torch_save
    monkeypatch.setattr(trainer_mod, "atomic_torch_save",
                        lambda checkpoint, path: (saves.append(checkpoint["global_step"]), real(checkpoint, path)))
    seed_everything(0, threads=1)
    module = Averaged()
    trainer, resume = make_trainer(tmp_path, {}, 10, checkpoint_every=5)
    fit(trainer, module, loader(), resume)
    assert saves == [5, 10]  # the periodic save at 5; the final state once (not again by the periodic one)
    (last,) = tmp_path.glob("checkpoints/*/last.ckpt")
    state = torch.load(last, weights_only=True)["state_dict"]
    assert state["updates"].item() == 10  # written after the last step's batch-end hook


class Logged(Regression):
    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        self.log("loss", loss)
        return loss


def test_held_metrics_reach_the_run_whole_in_few_store_writes(tmp_path, monkeypatch):
    """Every step's metric reaches the job's MLflow run, with its step, in one or two store writes
    (one per logging step before metrics were held: 24 writes of loss and epoch here)."""
    from mlflow.tracking import MlflowClient

    from neurips26.core import tracking

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    writes = []
    real = MlflowClient.log_batch
    monkeypatch.setattr(MlflowClient, "log_batch", lambda self, run_id, metrics=(), *a, **k:
                        (writes.append(len(metrics)), real(self, run_id, metrics, *a, **k))[1])
    with tracking.job_run("nar_dit", "train", {"seed": 0}, out) as run:
        seed_everything(0, threads=1)
        trainer, resume = make_trainer(out, {}, 24, checkpoint_every=24, log_every_n_steps=1)
        fit(trainer, Logged(), loader(), resume)
        run_id = run.run_id
    history = MlflowClient(tracking_uri=uri).get_metric_history(run_id, "loss")
    assert sorted(m.step for m in history) == list(range(24))
    assert all(m.value > 0 for m in history)
    metric_writes = [n for n in writes if n]
    assert 1 <= len(metric_writes) <= 2 and sum(metric_writes) == 2 * 24, writes  # loss and epoch
