"""The one Lightning trainer factory every paper trains with.

MLFlowLogger bound to the job's run, `last.ckpt` checkpointing with resume, seeded and
deterministic, a progress bar only when a person watches (a terminal, not CI), and devices,
nodes and strategy taken from what the job was given (`accelerator="auto"`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import tracking


def params_key(params: Mapping[str, Any]) -> str:
    """Short hash of the params: a checkpoint only resumes the run that wrote it."""
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:12]


def show_progress() -> bool:
    if os.environ.get("NEURIPS26_PROGRESS") in ("0", "1"):
        return os.environ["NEURIPS26_PROGRESS"] == "1"
    return sys.stderr.isatty() and not os.environ.get("CI")


def _devices_from_allocation() -> tuple[Any, int, str]:
    """Devices, nodes and strategy from the job's allocation (SLURM sets these; local: auto)."""
    nodes = int(os.environ.get("SLURM_JOB_NUM_NODES", os.environ.get("SLURM_NNODES", "1")))
    gpus = os.environ.get("SLURM_GPUS_ON_NODE")
    devices: Any = int(gpus) if gpus and gpus.isdigit() and int(gpus) > 0 else "auto"
    multi = nodes > 1 or (isinstance(devices, int) and devices > 1)
    return devices, nodes, ("ddp" if multi else "auto")


def make_trainer(out: Path, params: Mapping[str, Any], max_steps: int, *,
                 checkpoint_every: int | None = None, callbacks: Sequence = (),
                 log_every_n_steps: int = 25, gradient_clip_val: float | None = None,
                 precision: str = "32-true"):
    """A configured `lightning.Trainer`, plus the checkpoint it should resume from (or None)."""
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint

    ckpt_dir = Path(out) / "checkpoints" / params_key(params)
    checkpoint = ModelCheckpoint(dirpath=ckpt_dir, save_last=True, save_top_k=0,
                                 every_n_train_steps=checkpoint_every or max(1, max_steps // 4))
    loggers = []
    run = tracking.active()
    if run.run_id:
        from lightning.pytorch.loggers import MLFlowLogger

        loggers.append(MLFlowLogger(experiment_name=run.experiment, run_id=run.run_id,
                                    tracking_uri=tracking.tracking_uri()))
    devices, nodes, strategy = _devices_from_allocation()
    trainer = L.Trainer(
        accelerator="auto", devices=devices, num_nodes=nodes, strategy=strategy,
        max_steps=max_steps, max_epochs=-1, precision=precision,
        deterministic=True, benchmark=False,
        logger=loggers or False, log_every_n_steps=log_every_n_steps,
        callbacks=[checkpoint, *callbacks],
        enable_progress_bar=show_progress(), enable_model_summary=False,
        num_sanity_val_steps=0, limit_val_batches=0,
        gradient_clip_val=gradient_clip_val, default_root_dir=str(out),
    )
    last = ckpt_dir / "last.ckpt"
    return trainer, (str(last) if last.exists() else None)


def fit(trainer, module, train_dataloaders, ckpt_path: str | None = None) -> None:
    """`trainer.fit`, resuming from `ckpt_path` when a checkpoint of the same params exists."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        warnings.filterwarnings("ignore", message=".*LeafSpec.*")
        trainer.fit(module, train_dataloaders=train_dataloaders, ckpt_path=ckpt_path)
