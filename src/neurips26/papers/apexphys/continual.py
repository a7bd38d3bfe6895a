"""The continual protocol: domains arrive one at a time; after each, every domain's test
clips are scored, filling the accuracy matrix R[i, j] = MAE (bpm) on domain j after
training on domain i. Training goes through the project's Lightning trainer.

Backward transfer (forgetting, in bpm; positive = forgotten): BWT = mean_{j<T-1} R[T-1, j] - R[j, j].
Physiological consistency of the predicted waveform: the pulse SNR (dB) at the reference heart
rate and the Pearson r of the predicted pulse with the contact PPG, per test clip, in the same
matrix form (S[i, j]: mean SNR on domain j after task i).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from . import signals
from .baselines import EWC, LwF, Joint, Replay, Strategy
from .method import ApexPhys
from .model import PhysNet, neg_pearson

STRATEGIES = {"finetune": Strategy, "joint": Joint, "ewc": EWC, "lwf": LwF, "replay": Replay, "apexphys": ApexPhys}


def make_module(model: PhysNet, strategy: Strategy, task: int, lr: float):
    import lightning as L

    class ContinualStep(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = model

        def on_train_epoch_start(self):
            if strategy.freeze_norm(task):  # keep the backbone's normalisation statistics
                for m in self.model.layers.modules():
                    if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                        m.eval()

        def training_step(self, batch, batch_idx):
            x, y = batch
            extra = strategy.extra_batch()
            if extra is not None:
                x = torch.cat([x, extra[0].to(x.device)])
                y = torch.cat([y, extra[1].to(y.device)])
            pred = self.model(x, path=strategy.train_path(task))
            fit_loss = neg_pearson(pred, y)
            loss = fit_loss + strategy.penalty(self.model) + strategy.extra_loss(self.model, x, pred)
            self.log("train/neg_pearson", fit_loss, prog_bar=False)
            self.log("train/loss", loss, prog_bar=False)
            return loss

        def configure_optimizers(self):
            return torch.optim.Adam([p for p in self.model.parameters() if p.requires_grad], lr=lr)

    return ContinualStep()


def chunks_of(x: torch.Tensor, y: torch.Tensor, length: int, stride: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Fixed-length chunks of clips: x (N, C, T, H, W), y (N, T)."""
    xs, ys = [], []
    for start in range(0, x.shape[2] - length + 1, stride):
        xs.append(x[:, :, start:start + length])
        ys.append(y[:, start:start + length])
    xs, ys = torch.stack(xs, 1), torch.stack(ys, 1)
    return xs.reshape(-1, *xs.shape[2:]).contiguous(), ys.reshape(-1, length).contiguous()


@torch.no_grad()
def predict_clip(model: PhysNet, x: torch.Tensor, length: int, path: int | None) -> np.ndarray:
    """Pulse for a whole clip: non-overlapping chunks, predictions concatenated (toolbox-style)."""
    model.eval()
    n = x.shape[1] // length
    chunks = torch.stack([x[:, i * length:(i + 1) * length] for i in range(n)])
    return model(chunks, path=path).reshape(-1).double().numpy()


def evaluate_domains(model, strategy, domains, seen: int, length: int, fps: float, band) -> dict:
    """Per domain: predicted and reference heart rate per test clip, the MAE, and the waveform
    metrics (SNR at the reference heart rate, correlation with the contact PPG)."""
    out = {}
    for d in domains:
        pred_hr, gt_hr, paths, snr, wave_r = [], [], [], [], []
        for x, y in zip(d["test_x"], d["test_y"]):
            n = (x.shape[1] // length) * length
            chunked = x[:, :n]
            path = strategy.eval_path(model, torch.stack([chunked[:, i:i + length] for i in range(0, n, length)]), seen)
            paths.append(path)
            pulse = predict_clip(model, chunked, length, path)
            reference = y[:n].double().numpy()
            pred_hr.append(signals.heart_rate(pulse, fps, *band))
            gt_hr.append(signals.heart_rate(reference, fps, *band))
            snr.append(signals.snr_db(pulse, fps, gt_hr[-1], *band))
            wave_r.append(signals.waveform_correlation(pulse, reference, fps, *band))
        err = np.abs(np.array(pred_hr) - np.array(gt_hr))
        out[d["name"]] = {"pred_hr": pred_hr, "gt_hr": gt_hr, "mae": float(err.mean()), "paths": paths,
                          "snr": snr, "wave_r": wave_r, "mean_snr": float(np.mean(snr)),
                          "mean_wave_r": float(np.mean(wave_r))}
    return out


def final_metrics(evals: dict) -> dict:
    pred = np.concatenate([np.array(e["pred_hr"]) for e in evals.values()])
    gt = np.concatenate([np.array(e["gt_hr"]) for e in evals.values()])
    err = pred - gt
    r = float(np.corrcoef(pred, gt)[0, 1]) if pred.std() > 0 and gt.std() > 0 else float("nan")
    return {"mae": float(np.mean([e["mae"] for e in evals.values()])),  # mean over domains
            "rmse": float(np.sqrt(np.mean(err ** 2))), "mape": float(np.mean(np.abs(err) / gt) * 100),
            "pearson": r,
            "snr_db": float(np.mean([e["mean_snr"] for e in evals.values()])),  # mean over domains
            "wave_r": float(np.mean([e["mean_wave_r"] for e in evals.values()]))}


def backward_transfer(R: list[list[float]]) -> float:
    t = len(R)
    if t < 2:
        return float("nan")
    return float(np.mean([R[t - 1][j] - R[j][j] for j in range(t - 1)]))


def run_protocol(domains: list[dict], kind: str, settings: dict, train: dict, model_cfg: dict, seed: int,
                 out: Path, params: dict, fps: float, band, log=print, evaluate_each_task: bool = True) -> dict:
    """Train one method over the domain sequence for one seed; return R and the final metrics.
    Without `evaluate_each_task` only the model after the last task is scored (tuning)."""
    from neurips26.core import tracking
    from neurips26.core.seeding import generator
    from neurips26.core.trainer import fit, make_trainer, train_loader

    def fresh_model():
        torch.manual_seed(seed)
        return PhysNet(in_channels=domains[0]["train_x"].shape[1], widths=tuple(model_cfg["widths"]),
                       spatial_pool=model_cfg["spatial_pool"], branch_rank=model_cfg["branch_rank"])

    model = fresh_model()
    strategy = STRATEGIES[kind](settings, seed)
    length = train["chunk_length"]
    R, S, W, history, snr_history = [], [], [], [], []
    evals = None
    for task in range(len(domains)):
        if task > 0 and strategy.from_scratch(task):
            model = fresh_model()
        strategy.before_task(model, task, domains)
        x, y = strategy.train_chunks(task, domains)
        steps = strategy.steps(task, train["steps_per_task"])
        task_params = {**params, "task": task}
        trainer, resume = make_trainer(out / f"task{task}", task_params, steps, checkpoint_every=steps,
                                       log_every_n_steps=10)
        batch = strategy.new_per_batch(task, train["batch_size"])
        if len(x) < batch:
            raise ValueError(f"config key 'apexphys.train.batch_size': domain {domains[task]['name']} has {len(x)} "
                             f"training chunks, fewer than a batch of {batch}")
        loader = train_loader(trainer, torch.utils.data.TensorDataset(x, y), batch, generator(1000 * seed + task),
                              key="apexphys.train.batch_size")
        model.train()
        fit(trainer, make_module(model, strategy, task, train["lr"]), loader, resume)
        model.cpu()
        strategy.after_task(model, task, domains)
        if not evaluate_each_task and task < len(domains) - 1:
            continue
        evals = evaluate_domains(model, strategy, domains, task, length, fps, band)
        R.append([evals[d["name"]]["mae"] for d in domains])
        S.append([evals[d["name"]]["mean_snr"] for d in domains])
        W.append([evals[d["name"]]["mean_wave_r"] for d in domains])
        seen_mae = float(np.mean(R[-1][:task + 1]))
        history.append(seen_mae)
        snr_history.append(float(np.mean(S[-1][:task + 1])))
        tracking.active().log_metrics({f"seed{seed}/seen_mae": seen_mae}, step=task)
        log(f"  {kind} seed {seed} task {task} ({domains[task]['name']}): "
            + " ".join(f"{v:6.2f}" for v in R[-1]) + f" | seen {seen_mae:.2f} bpm, SNR {snr_history[-1]:.2f} dB")
    final = final_metrics(evals)
    result = {"final": final, "final_eval": evals, "strategy": strategy.info(),
              "branches": len(model.branches), "params": sum(p.numel() for p in model.parameters())}
    if evaluate_each_task:
        result |= {"R": R, "S": S, "W": W, "seen_mae_after_task": history, "seen_snr_after_task": snr_history,
                   "bwt": backward_transfer(R), "plasticity_mae": float(np.mean([R[i][i] for i in range(len(R))]))}
    return result
