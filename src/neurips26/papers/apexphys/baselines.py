"""Continual-learning strategies the paper compares to, all on the same PhysNet and budget.

Each strategy sees the domains one at a time (`before_task` / training / `after_task`) and
may add a term to the negative-Pearson loss:
- sequential fine-tuning: nothing (the lower bound);
- joint training (the upper bound): after domain t, a model trained from scratch on the union of
  domains 0..t with the total number of steps the continual methods have spent by then,
  (t + 1) x steps_per_task;
- EWC (Kirkpatrick et al. 2017): + lambda/2 * sum_i F_i (theta_i - theta*_i)^2, with F the
  diagonal Fisher of each finished task (normalised to mean 1) summed over tasks;
- LwF (Li & Hoiem 2017): + alpha * (1 - r(f_theta(x), f_old(x))) on the new domain's chunks,
  the previous model's pulse as a soft target;
- experience replay: a fixed number of chunks per finished domain; once the buffer holds any,
  every batch is replay_batch buffer chunks plus batch_size - replay_batch new ones, so replay
  sees as many samples per step as every other method.
"""

from __future__ import annotations

import copy
from typing import Callable, Iterable

import torch

from .model import PhysNet, neg_pearson


def diagonal_fisher(nll: Callable[[object], torch.Tensor], params: list[torch.Tensor],
                    samples: Iterable) -> list[torch.Tensor]:
    """Diagonal Fisher information E[(d nll(sample) / d theta)^2], one gradient per sample."""
    fisher = [torch.zeros_like(p) for p in params]
    n = 0
    for sample in samples:
        grads = torch.autograd.grad(nll(sample), params, allow_unused=True)
        for f, g in zip(fisher, grads):
            if g is not None:
                f += g.detach() ** 2
        n += 1
    return [f / max(n, 1) for f in fisher]


def chunk_fisher(model: PhysNet, x: torch.Tensor, y: torch.Tensor, path: int | None = None) -> list[torch.Tensor]:
    """Fisher of the backbone under the negative-Pearson pseudo-likelihood, per chunk (BN in eval mode)."""
    was_training = model.training
    model.eval()
    params = model.backbone_parameters()
    fisher = diagonal_fisher(lambda i: neg_pearson(model(x[i:i + 1], path=path), y[i:i + 1]), params, range(len(x)))
    model.train(was_training)
    return fisher


def normalise(fisher: list[torch.Tensor]) -> list[torch.Tensor]:
    mean = torch.cat([f.flatten() for f in fisher]).mean().clamp_min(1e-20)
    return [f / mean for f in fisher]


class Strategy:
    """Sequential fine-tuning; the base every other strategy extends."""

    name = "finetune"

    def __init__(self, settings: dict, seed: int):
        self.settings = settings
        self.seed = seed
        self.generator = torch.Generator().manual_seed(10_000 + seed)

    def train_chunks(self, task: int, domains: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
        return domains[task]["train_x"], domains[task]["train_y"]

    def before_task(self, model: PhysNet, task: int, domains: list[dict]) -> None:
        pass

    def after_task(self, model: PhysNet, task: int, domains: list[dict]) -> None:
        pass

    def train_path(self, task: int) -> int | None:
        return None

    def from_scratch(self, task: int) -> bool:
        """Whether task `task` starts from a freshly initialised model."""
        return False

    def steps(self, task: int, steps_per_task: int) -> int:
        return steps_per_task

    def new_per_batch(self, task: int, batch_size: int) -> int:
        """How many chunks of the current task's training data each batch holds."""
        return batch_size

    def freeze_norm(self, task: int) -> bool:
        return False

    def extra_batch(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        return None

    def penalty(self, model: PhysNet) -> torch.Tensor | float:
        return 0.0

    def extra_loss(self, model: PhysNet, x: torch.Tensor, pred: torch.Tensor) -> torch.Tensor | float:
        return 0.0

    def eval_path(self, model: PhysNet, x_clip: torch.Tensor, seen: int) -> int | None:
        return None

    def info(self) -> dict:
        return {}


class Joint(Strategy):
    name = "joint"

    def from_scratch(self, task):
        return True

    def steps(self, task, steps_per_task):
        return (task + 1) * steps_per_task

    def train_chunks(self, task, domains):
        return (torch.cat([d["train_x"] for d in domains[:task + 1]]),
                torch.cat([d["train_y"] for d in domains[:task + 1]]))


class QuadraticAnchor(Strategy):
    """sum_i w_i (theta_i - theta*_i)^2 over the backbone, w from Fisher information."""

    def __init__(self, settings, seed):
        super().__init__(settings, seed)
        self.weights: list[torch.Tensor] | None = None
        self.anchor: list[torch.Tensor] | None = None
        self.strength = 0.0

    def penalty(self, model):
        if self.weights is None:
            return 0.0
        total = 0.0
        for p, w, a in zip(model.backbone_parameters(), self.weights, self.anchor):
            total = total + (w.to(p.device) * (p - a.to(p.device)) ** 2).sum()
        return 0.5 * self.strength * total


class EWC(QuadraticAnchor):
    name = "ewc"

    def __init__(self, settings, seed):
        super().__init__(settings, seed)
        self.strength = float(settings["ewc_lambda"])

    def after_task(self, model, task, domains):
        d = domains[task]
        fisher = normalise(chunk_fisher(model, d["train_x"], d["train_y"]))
        self.weights = fisher if self.weights is None else [w + f for w, f in zip(self.weights, fisher)]
        self.anchor = [p.detach().clone() for p in model.backbone_parameters()]


class LwF(Strategy):
    name = "lwf"

    def __init__(self, settings, seed):
        super().__init__(settings, seed)
        self.old: PhysNet | None = None
        self.alpha = float(settings["lwf_alpha"])

    def before_task(self, model, task, domains):
        if task > 0:
            self.old = copy.deepcopy(model).eval()
            for p in self.old.parameters():
                p.requires_grad_(False)

    def extra_loss(self, model, x, pred):
        if self.old is None:
            return 0.0
        self.old.to(x.device)
        with torch.no_grad():
            target = self.old(x)
        return self.alpha * neg_pearson(pred, target)


class Replay(Strategy):
    name = "replay"

    def __init__(self, settings, seed):
        super().__init__(settings, seed)
        self.buffer_x: list[torch.Tensor] = []
        self.buffer_y: list[torch.Tensor] = []
        self.per_domain = int(settings["replay_per_domain"])
        self.replay_batch = int(settings["replay_batch"])

    def after_task(self, model, task, domains):
        d = domains[task]
        pick = torch.randperm(len(d["train_x"]), generator=self.generator)[:self.per_domain]
        self.buffer_x.append(d["train_x"][pick])
        self.buffer_y.append(d["train_y"][pick])

    def new_per_batch(self, task, batch_size):
        if not self.buffer_x:
            return batch_size
        if self.replay_batch >= batch_size:
            raise ValueError(f"config key 'apexphys.variants.*.replay_batch': {self.replay_batch} replayed chunks "
                             f"leave no room for new ones in train.batch_size {batch_size}")
        return batch_size - self.replay_batch

    def extra_batch(self):
        if not self.buffer_x:
            return None
        bx, by = torch.cat(self.buffer_x), torch.cat(self.buffer_y)
        pick = torch.randint(len(bx), (self.replay_batch,), generator=self.generator)
        return bx[pick], by[pick]

    def info(self):
        return {"buffer_chunks": sum(len(b) for b in self.buffer_x)}
