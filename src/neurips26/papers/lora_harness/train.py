"""One LoRA fine-tuning loop for every optimizer, and the evaluation of its result.

`finetune(net, task, make_optimizer, ...)` trains `net` for `steps` steps through
`neurips26.core.trainer` (checkpoint, resume, MLflow, devices): each step draws a minibatch of
`batch_size` rows from Generator([seed, step]) (the same rows for every optimizer of a seed),
then zero_grad, loss (+ `extra_loss(net)`), backward, `optimizer.step()`, the learning-rate
schedule (`constant`, or `linear` decay to 0 after `warmup` linear warm-up steps) and
`after_step(net, step)`. Optimization is manual (the optimizer sees exactly one step per
minibatch, whatever it does inside: a pair-aware optimizer reads `models.lora_pairs`). At step
`measure_at` the whole step runs under `memory.peak_step_bytes`; after training,
`memory.optimizer_state_bytes` counts the optimizer's state. Checkpoints hold the parameters
that were trainable at the start or are trainable now (the frozen base is rebuilt by the
caller), the loss curve and the memory figures, so a finished run of the same key is reused.

`evaluate(net, task)`: test accuracy (ClsData) or exact match, corpus BLEU-4 and mean ROUGE-L F
of greedy decodes (LMData, torchmetrics), with per-item scores for paired intervals.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from . import memory
from .tasks import ClsData, LMData


@dataclass
class FitResult:
    losses: list[float] = field(default_factory=list)   # training loss of every step
    seconds: float = 0.0                                  # wall time of the fit (not for metrics.json)
    state_bytes: int = 0                                  # optimizer state after training
    peak_bytes: int = 0                                   # peak of the measured step
    peak_kind: str = ""


def batch_rows(n: int, batch: int, seed: int, step: int) -> np.ndarray:
    """The sorted rows of step `step`'s minibatch (Generator([seed, step]))."""
    return np.sort(np.random.default_rng([int(seed), int(step)]).choice(n, size=min(batch, n), replace=False))


def task_size(task) -> int:
    return len(task.train.labels) if isinstance(task, ClsData) else len(task)


def loss_on(net, task, idx, device=None) -> torch.Tensor:
    """Cross-entropy of the rows `idx` of the task's training set (targets only for an LM)."""
    idx = torch.as_tensor(idx).cpu()
    if isinstance(task, ClsData):
        d = task.train
        return F.cross_entropy(net(d.hidden[idx].to(device), d.mask[idx].to(device)), d.labels[idx].to(device))
    mask = task.attention_mask[idx]
    L = int(mask.sum(1).max())
    out = net(input_ids=task.input_ids[idx, :L].to(device), attention_mask=mask[:, :L].to(device),
              labels=task.labels[idx, :L].to(device))
    return out.loss


class _Steps(torch.utils.data.Dataset):
    def __init__(self, n: int, steps: int, batch: int, seed: int):
        self.n, self.steps, self.batch, self.seed = n, steps, batch, seed

    def __len__(self):
        return self.steps

    def __getitem__(self, s):
        return torch.as_tensor(batch_rows(self.n, self.batch, self.seed, s))


def _schedule(kind: str, steps: int, warmup: int) -> Callable[[int], float]:
    if kind == "constant":
        return lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0
    if kind == "linear":
        return lambda s: (s + 1) / warmup if s < warmup else max(0.0, (steps - s) / max(1, steps - warmup))
    raise ValueError(f"unknown learning-rate schedule '{kind}' (constant or linear)")


def _module_class():
    import lightning as L

    class FinetuneModule(L.LightningModule):
        def __init__(self, net, task, make_optimizer, steps, schedule, warmup, after_step, extra_loss, measure_at,
                     grad_clip):
            super().__init__()
            self.automatic_optimization = False
            self.strict_loading = False
            self.net, self.task, self.make_optimizer = net, task, make_optimizer
            self.steps, self.schedule, self.warmup = steps, schedule, warmup
            self.after_step, self.extra_loss, self.measure_at, self.grad_clip = after_step, extra_loss, measure_at, grad_clip
            self.result = FitResult()
            self.frozen_at_start = {f"net.{n}" for n, p in net.named_parameters() if not p.requires_grad}

        def configure_optimizers(self):
            opt = self.make_optimizer(self.net)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, _schedule(self.schedule, self.steps, self.warmup))
            return [opt], [{"scheduler": sched, "interval": "step"}]

        def _step(self, idx):
            opt = self.optimizers()
            opt.zero_grad()
            loss = loss_on(self.net, self.task, idx, self.device)
            if self.extra_loss is not None:
                loss = loss + self.extra_loss(self.net)
            self.manual_backward(loss)
            if self.grad_clip:
                torch.nn.utils.clip_grad_norm_([p for p in self.net.parameters() if p.requires_grad], self.grad_clip)
            opt.step()
            self.lr_schedulers().step()
            return loss

        def training_step(self, idx, _):
            step = self.global_step
            if step == self.measure_at:
                box = {}
                self.result.peak_bytes, self.result.peak_kind = memory.peak_step_bytes(
                    lambda: box.setdefault("loss", self._step(idx)), self.device)
                loss = box["loss"]
            else:
                loss = self._step(idx)
            if self.after_step is not None:
                with torch.no_grad():
                    self.after_step(self.net, step)
            value = float(loss.detach())
            self.result.losses.append(value)
            self.log("train/loss", value, on_step=True, batch_size=len(idx))

        def on_save_checkpoint(self, checkpoint):
            trainable = {f"net.{n}" for n, p in self.net.named_parameters() if p.requires_grad}
            checkpoint["state_dict"] = {k: v for k, v in checkpoint["state_dict"].items()
                                        if k not in self.frozen_at_start or k in trainable}
            r = self.result
            checkpoint["finetune"] = {"losses": list(r.losses), "peak_bytes": int(r.peak_bytes), "peak_kind": r.peak_kind}

        def on_load_checkpoint(self, checkpoint):
            saved = checkpoint.get("finetune", {})
            self.result.losses = list(saved.get("losses", []))
            self.result.peak_bytes = int(saved.get("peak_bytes", 0))
            self.result.peak_kind = str(saved.get("peak_kind", ""))

    return FinetuneModule


def finetune(net, task, make_optimizer, *, steps: int, batch_size: int, seed: int, out, key: dict,
             schedule: str = "linear", warmup: int = 0, after_step=None, extra_loss=None,
             measure_at: int | None = None, grad_clip: float | None = None) -> FitResult:
    """Train `net` on `task` with the optimizer `make_optimizer(net)`; `key` names the run (its
    checkpoint: every setting that changes the result belongs in it)."""
    from neurips26.core import trainer as core_trainer

    if steps < 1:
        raise ValueError(f"fine-tuning needs at least one step (got {steps})")
    at = min(2, steps - 1) if measure_at is None else int(measure_at)
    module = _module_class()(net, task, make_optimizer, steps, schedule, warmup, after_step, extra_loss, at, grad_clip)
    params = {"lora_harness": key, "steps": steps, "batch_size": batch_size, "seed": seed, "schedule": schedule,
              "warmup": warmup, "measure_at": at, "grad_clip": grad_clip}
    trainer, ckpt = core_trainer.make_trainer(Path(out), params, steps, checkpoint_every=steps, log_every_n_steps=max(1, steps // 4))
    loader = torch.utils.data.DataLoader(_Steps(task_size(task), steps, batch_size, seed), batch_size=None, shuffle=False)
    t0 = time.perf_counter()
    with warnings.catch_warnings():  # checkpoints after the optimizer step are what a resume needs
        warnings.filterwarnings("ignore", message=".*ModelCheckpoint with manual optimization.*")
        warnings.filterwarnings("ignore", message=".*module\\(s\\) in eval mode.*")
        core_trainer.fit(trainer, module, loader, ckpt_path=ckpt)
    res = module.result
    res.seconds = time.perf_counter() - t0
    res.state_bytes = memory.optimizer_state_bytes(trainer.optimizers[0])
    net.cpu()
    return res


@torch.no_grad()
def evaluate(net, task, batch_size: int = 256, max_new_tokens: int | None = None) -> dict:
    """Scores on the task's test set (see the module docstring)."""
    was = net.training
    net.eval()
    try:
        if isinstance(task, ClsData):
            d = task.test
            pred = torch.cat([net(d.hidden[i:i + batch_size], d.mask[i:i + batch_size]).argmax(1)
                              for i in range(0, len(d.labels), batch_size)])
            correct = (pred == d.labels).int().tolist()
            return {"accuracy": float(np.mean(correct)), "correct": correct}
        return _generation_scores(net, task.test or task, max_new_tokens)
    finally:
        net.train(was)


def _generation_scores(model, test: LMData, max_new_tokens: int | None) -> dict:
    from torchmetrics.text import BLEUScore, ROUGEScore

    tok = test.tokenizer
    if tok is None:
        raise ValueError("an LM task without its tokenizer: build it with tasks.lm_task")
    preds = decode(model, tok, test.prompts, max_new_tokens or int(test.labels.ne(-100).sum(1).max()) + 4)
    refs = test.targets
    exact = [int(p.strip() == r.strip()) for p, r in zip(preds, refs)]
    bleu = float(BLEUScore(n_gram=4)(preds, [[r] for r in refs]))
    rouge = ROUGEScore(rouge_keys=("rougeL",))
    per_rouge = [float(rouge(p, r)["rougeL_fmeasure"]) for p, r in zip(preds, refs)]
    return {"exact_match": float(np.mean(exact)), "bleu": bleu, "rouge_l": float(np.mean(per_rouge)),
            "exact": exact, "rouge_items": per_rouge, "examples": [{"prompt": a, "output": p, "reference": r}
                                                                  for a, p, r in list(zip(test.prompts, preds, refs))[:5]]}


def decode(model, tok, prompts, max_new_tokens: int, batch_size: int = 128) -> list[str]:
    """Greedy continuations of `prompts` up to eos, batched by prompt length (no padding)."""
    device = next(model.parameters()).device
    ids = [tok(p)["input_ids"] for p in prompts]
    out = [""] * len(prompts)
    by_len: dict[int, list[int]] = {}
    for i, x in enumerate(ids):
        by_len.setdefault(len(x), []).append(i)
    for _, rows in sorted(by_len.items()):
        for s in range(0, len(rows), batch_size):
            chunk = rows[s:s + batch_size]
            x = torch.tensor([ids[i] for i in chunk], device=device)
            y = model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=max_new_tokens,
                               do_sample=False, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
            for i, row in zip(chunk, y[:, x.shape[1]:].tolist()):
                if tok.eos_token_id in row:
                    row = row[:row.index(tok.eos_token_id)]
                out[i] = tok.decode(row, skip_special_tokens=True).strip()
    return out
