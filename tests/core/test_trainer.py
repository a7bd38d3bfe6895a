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
