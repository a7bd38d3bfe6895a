"""The Lightning modules nar_dit trains: the flow-matching DiT (with its routing policy and an
EMA that is snapshotted along training) and the FD_cls feature classifier. Kept apart from
the model and sampler so that evaluation does not import Lightning."""

from __future__ import annotations

import copy
import time

import lightning as L
import torch
from torch import nn

from .classifier import FeatureCNN
from .diffusion import flow_loss, sample_t
from .model import DiT, RoutingPolicy


class FlowMatchingDiT(L.LightningModule):
    """Trains a DiT with a routing policy; keeps an EMA; snapshots the EMA at `snapshot_steps`."""

    def __init__(self, model: DiT, policy: RoutingPolicy, lr: float, weight_decay: float,
                 warmup_steps: int, ema_decay: float, snapshot_steps: list[int]):
        super().__init__()
        self.model = model
        self.ema = copy.deepcopy(model).requires_grad_(False).eval()
        self.policy = policy
        self.lr, self.weight_decay, self.warmup_steps = lr, weight_decay, warmup_steps
        self.ema_decay = ema_decay
        self.snapshot_steps = set(snapshot_steps)
        self.snapshots: dict[int, dict[str, torch.Tensor]] = {}
        self.train_seconds: dict[int, float] = {}
        self._elapsed = 0.0
        self._tick = None

    def training_step(self, batch, batch_idx):
        x0, y = batch
        # every rank draws the noise of the whole global batch (same seed, same RNG state) and
        # keeps its part, so the ranks together draw what one process would
        world, rank, n = self.trainer.world_size, self.trainer.global_rank, x0.shape[0]
        part = slice(rank * n, (rank + 1) * n)
        t = sample_t(n * world, device=x0.device)[part]
        eps = torch.randn((n * world, *x0.shape[1:]), dtype=x0.dtype, device=x0.device)[part]
        ratios = self.policy.ratios_for(t)
        loss = flow_loss(self.model, x0, y, t, eps, ratios, self.policy.route_start, self.policy.route_end)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def on_train_batch_start(self, batch, batch_idx):
        self._tick = time.perf_counter()

    def optimizer_step(self, *args, **kwargs):
        # EMA, snapshots and the timer move here, not to on_train_batch_end: that hook runs
        # after the checkpoint of the step is written, which would then miss this step
        super().optimizer_step(*args, **kwargs)
        self._after_step()

    @torch.no_grad()
    def _after_step(self):
        self._elapsed += time.perf_counter() - self._tick
        for e, p in zip(self.ema.parameters(), self.model.parameters()):
            e.lerp_(p, 1 - self.ema_decay)
        # inside optimizer_step Lightning has not yet counted this update: it is update number
        # global_step + 1, the step a snapshot is labelled with
        step = self.global_step + 1
        if step in self.snapshot_steps:
            self.snapshots[step] = {k: v.detach().clone() for k, v in self.ema.state_dict().items()}
            self.train_seconds[step] = self._elapsed

    # snapshots taken so far and the training time travel with the checkpoint (the EMA itself
    # is a submodule, so in the state dict), so a resumed job reports every snapshot and the
    # time of the whole run
    def on_save_checkpoint(self, checkpoint):
        checkpoint["ema_snapshots"] = {str(k): v for k, v in self.snapshots.items()}
        checkpoint["train_seconds"] = {str(k): v for k, v in self.train_seconds.items()}
        checkpoint["elapsed_seconds"] = self._elapsed

    def on_load_checkpoint(self, checkpoint):
        self.snapshots = {int(k): v for k, v in checkpoint.get("ema_snapshots", {}).items()}
        self.train_seconds = {int(k): v for k, v in checkpoint.get("train_seconds", {}).items()}
        self._elapsed = float(checkpoint.get("elapsed_seconds", 0.0))

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        warm = max(1, self.warmup_steps)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class ClassifierModule(L.LightningModule):
    def __init__(self, net: FeatureCNN, lr: float):
        super().__init__()
        self.net, self.lr = net, lr

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("classifier/loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.net.parameters(), lr=self.lr, weight_decay=1e-4)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.lr, total_steps=self.trainer.max_steps)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
