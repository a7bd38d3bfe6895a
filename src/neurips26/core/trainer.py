"""The one Lightning trainer factory every paper trains with.

MLFlowLogger bound to the job's run (it never ends the run: the CLI does, once the outputs
are logged), `last.ckpt` checkpointing with resume, seeded and deterministic, a progress bar
only when a person watches (a terminal, not CI), and devices, nodes and strategy taken from
what the job was given (`accelerator="auto"`).

Checkpoints live in `<out>/checkpoints/<key>/`, the key a hash of the params, the code stamp
and the content of the job's inputs (`core.job`): a checkpoint is resumed only by the job
that wrote it. A finished checkpoint of the same key is reused (training is skipped, and the
log says so); a checkpoint of another key is never read. Everything a resume needs is in the
checkpoint: weights, optimizer and loops (Lightning), the global RNG states and the train
loader's position in its epoch (`ResumeState`), and whatever the module adds in
`on_save_checkpoint`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import zipfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import job, tracking

FINISHED = "finished.json"
# test hook: before the job's N-th training batch (counted over every fit of the process, so
# after the checkpoints of the steps before it are written) write the pid to PAUSE_FILE and
# wait, so a test can kill the job at a known point
PAUSE_ENV = "NEURIPS26_PAUSE_AT_STEP"
PAUSE_FILE_ENV = "NEURIPS26_PAUSE_FILE"
_CLASSES: dict[str, type] = {}
_BATCHES_STARTED = [0]
# SLURM's warning before the time limit (sbatch --signal=USR1@N, workflow/rules/common.smk)
WARNING_SIGNAL = "SIGUSR1"
_WARNED = [False]


class Preempted(SystemExit):
    """The job got SLURM's warning signal and saved its checkpoint: it stops without outputs
    (failing, so Snakemake runs it again) and the rerun resumes from that checkpoint."""


def checkpoint_key(params: Mapping[str, Any]) -> str:
    """Short hash of the params, the code stamp and the input hashes of the running job."""
    ctx = job.current()
    payload = {"params": params, "code": ctx.code, "inputs": ctx.input_digests()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:12]


def show_progress() -> bool:
    if os.environ.get("NEURIPS26_PROGRESS") in ("0", "1"):
        return os.environ["NEURIPS26_PROGRESS"] == "1"
    return sys.stderr.isatty() and not os.environ.get("CI")


def _tasks_per_node(value: str) -> int:
    """SLURM's tasks-per-node list ('2', '4(x2)', '4,2') as one number: the first node's."""
    head = value.split(",")[0].split("(")[0]
    return int(head) if head.isdigit() else 1


def _devices_from_allocation() -> tuple[Any, int, str]:
    """Devices, nodes and strategy from the job's allocation. Under an srun of several tasks
    (the rule's `{resources.mpi}`), each task is one rank: devices per node = tasks per node,
    which Lightning's SLURM environment checks against SLURM_NTASKS_PER_NODE; on CPUs the ranks
    talk over gloo. Otherwise the GPUs of the allocation, or whatever Lightning finds (local)."""
    nodes = int(os.environ.get("SLURM_JOB_NUM_NODES", os.environ.get("SLURM_NNODES", "1")))
    if int(os.environ.get("SLURM_NTASKS", "1")) > 1:
        per_node = os.environ.get("SLURM_NTASKS_PER_NODE") or os.environ.get("SLURM_TASKS_PER_NODE", "1")
        return _tasks_per_node(per_node), nodes, "ddp"
    gpus = os.environ.get("SLURM_GPUS_ON_NODE")
    devices: Any = int(gpus) if gpus and gpus.isdigit() and int(gpus) > 0 else "auto"
    multi = nodes > 1 or (isinstance(devices, int) and devices > 1)
    return devices, nodes, ("ddp" if multi else "auto")


PART = ".part"


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> None:
    """`torch.save` to a temp file in the destination folder, synced, then renamed over `path`:
    the previous file stays whole until the new one is complete, a kill at any point leaves one
    of the two, and the bytes are written once (no copy from $TMPDIR across file systems, no
    second copy in memory)."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}{PART}")
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:  # the rename itself survives a crash of the machine once the folder is synced
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _atomic_io_class():
    from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO

    class AtomicCheckpointIO(TorchCheckpointIO):
        """Lightning's checkpoint writes through `atomic_torch_save`."""

        def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
            if storage_options is not None:
                raise TypeError("AtomicCheckpointIO takes no storage_options")
            atomic_torch_save(checkpoint, path)

    return AtomicCheckpointIO


def _periodic_checkpoint_class():
    from lightning.pytorch.callbacks import ModelCheckpoint

    class PeriodicCheckpoint(ModelCheckpoint):
        """`last.ckpt` every n steps, except at the last step: `fit` saves the final state once,
        after every batch-end hook of the module (an EMA update, say), which run after the callbacks'."""

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            if trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps:
                return
            super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    return PeriodicCheckpoint


def _check_checkpoint(path: Path) -> None:
    """A checkpoint cut short (a full disk, a copy interrupted) stops the step, naming it."""
    try:
        with zipfile.ZipFile(path) as archive:
            archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        from .io import InputFileError

        raise InputFileError(path, f"checkpoint truncated or corrupt ({exc}); delete it to train afresh") from None


# metrics a fit holds before writing them in one batch (MLflow takes at most 1,000 per batch), and the
# seconds after which held metrics are written anyway, so a live UI follows a long fit
HOLD_METRICS = 1000
HOLD_SECONDS = 30.0


def _logger_class():
    from lightning.pytorch.loggers import MLFlowLogger

    class Holding:
        """The MLflow client as the logger sees it: metric-only batches are held, the rest passes."""

        def __init__(self, client, logger):
            self._client, self._logger = client, logger

        def log_batch(self, run_id, metrics=(), params=(), tags=(), **kwargs):
            if params or tags:
                self._logger.flush()
                return self._client.log_batch(run_id, metrics=metrics, params=params, tags=tags, **kwargs)
            self._logger.hold(list(metrics))

        def __getattr__(self, name):
            return getattr(self._client, name)

    class JobRunLogger(MLFlowLogger):
        """Logs into the job's run and leaves it open: the CLI ends it after the outputs.

        Metrics are held and written in one batch (one store transaction: 5 ms on an idle SQLite store,
        25-30 ms on a loaded one) when HOLD_METRICS are held or HOLD_SECONDS have passed, after each
        checkpoint, and when the fit ends or fails (Lightning finalizes its loggers either way), instead of
        one transaction per logging step. The metrics, steps and timestamps written are the same."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._held: list = []
            self._since = time.monotonic()
            self.writes = 0  # batches written to the store (read by the tests)

        @property
        def experiment(self):
            client = super().experiment
            return Holding(client, self) if hasattr(client, "log_batch") else client

        def hold(self, metrics) -> None:
            self._held.extend(metrics)
            if len(self._held) >= HOLD_METRICS or time.monotonic() - self._since >= HOLD_SECONDS:
                self.flush()

        def flush(self) -> None:
            held, self._held, self._since = self._held, [], time.monotonic()
            client = super().experiment
            for start in range(0, len(held), HOLD_METRICS):
                tracking.retry_locked(client.log_batch, run_id=self.run_id, metrics=held[start:start + HOLD_METRICS],
                                      **self._log_batch_kwargs)
                self.writes += 1

        def after_save_checkpoint(self, checkpoint_callback) -> None:
            self.flush()  # what a resumed job's run holds matches its checkpoint
            super().after_save_checkpoint(checkpoint_callback)

        def finalize(self, status: str = "success") -> None:
            self.flush()  # the run itself stays open

    return JobRunLogger


def make_trainer(out: Path, params: Mapping[str, Any], max_steps: int, *,
                 checkpoint_every: int | None = None, callbacks: Sequence = (),
                 log_every_n_steps: int = 25, gradient_clip_val: float | None = None,
                 precision: str = "32-true"):
    """A configured `lightning.Trainer`, plus the checkpoint it should resume from (or None)."""
    # cuBLAS is deterministic only with a fixed workspace, read when CUDA starts (after this)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import lightning as L
    import torch
    ckpt_dir = Path(out) / "checkpoints" / checkpoint_key(params)
    job.current().checkpoint_dirs.append(ckpt_dir)
    if job.current().retrain and _finished_step(ckpt_dir) >= 0:
        # a forced rerun trains afresh; an unfinished checkpoint (this rerun killed) still resumes
        import shutil

        print(f"neurips26: retraining (forced): the finished checkpoint {ckpt_dir} is set aside", flush=True)
        shutil.rmtree(ckpt_dir)
    checkpoint = _periodic_checkpoint_class()(dirpath=ckpt_dir, save_last=True, save_top_k=0,
                                              every_n_train_steps=checkpoint_every or max(1, max_steps // 4))
    loggers = []
    run = tracking.active()
    if run.run_id:
        loggers.append(_logger_class()(experiment_name=run.experiment, run_id=run.run_id,
                                       tracking_uri=tracking.tracking_uri()))
    devices, nodes, strategy = _devices_from_allocation()
    for stale in ckpt_dir.glob(f".*{PART}") if ckpt_dir.exists() else ():  # a write killed before its rename
        stale.unlink(missing_ok=True)
    plugins = [_atomic_io_class()()]
    from lightning.pytorch.plugins.environments import SLURMEnvironment

    if SLURMEnvironment.detect():  # the warning signal is handled below, not by Lightning's requeue
        plugins.append(SLURMEnvironment(auto_requeue=False))
    trainer = L.Trainer(
        plugins=plugins,
        accelerator="auto", devices=devices, num_nodes=nodes, strategy=strategy,
        max_steps=max_steps, max_epochs=-1, precision=precision,
        # some CUDA backward ops have no deterministic kernel (avg_pool3d, linear interpolate):
        # on a GPU they warn instead of stopping the job; on CPUs every op used here is deterministic
        deterministic="warn" if torch.cuda.is_available() else True, benchmark=False,
        logger=loggers or False, log_every_n_steps=log_every_n_steps,
        callbacks=[_resume_state_class()(ckpt_dir, max_steps), checkpoint, *callbacks],
        enable_progress_bar=show_progress(), enable_model_summary=False,
        num_sanity_val_steps=0, limit_val_batches=0,
        gradient_clip_val=gradient_clip_val, default_root_dir=str(out),
    )
    requested = os.environ.get("SLURM_GPUS_ON_NODE") or os.environ.get("SLURM_GPUS") or "none named"
    print(f"neurips26: rank {trainer.global_rank} of world size {trainer.world_size} "
          f"({nodes} node(s), {trainer.num_devices} device(s) each, {trainer.strategy.__class__.__name__}); "
          f"GPUs seen {torch.cuda.device_count()}, requested {requested}", flush=True)
    last = ckpt_dir / "last.ckpt"
    if not last.exists():
        return trainer, None
    _check_checkpoint(last)
    return trainer, str(last)


class RankBatches:
    """The batches of one rank: every global batch of `batches` cut into `world` equal parts, this
    rank's part. Every rank draws the same global order (the same seeded generator), so the ranks
    together train on exactly the batches one process would, and DDP's gradient mean over ranks
    equals that process's mean over the global batch."""

    def __init__(self, batches, rank: int, world: int):
        self.batches, self.rank, self.world = batches, rank, world
        self.sampler = batches.sampler  # where the resume state finds the order's generator

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        for batch in self.batches:
            size = len(batch) // self.world
            yield batch[self.rank * size:(self.rank + 1) * size]


def train_loader(trainer, dataset, global_batch: int, generator, *, num_workers: int = 0,
                 key: str = "train.batch_size"):
    """A shuffled DataLoader (drop_last) whose global batch is `global_batch` over all ranks of
    `trainer`: each rank loads global_batch / world_size. With one rank it draws exactly what
    `DataLoader(dataset, batch_size, shuffle=True, drop_last=True, generator=generator)` draws."""
    import torch

    world = trainer.world_size
    if global_batch % world:
        raise ValueError(f"config key '{key}': the global batch {global_batch} does not split over {world} ranks")
    order = torch.utils.data.RandomSampler(dataset, generator=generator)
    batches = RankBatches(torch.utils.data.BatchSampler(order, global_batch, drop_last=True), trainer.global_rank, world)
    return torch.utils.data.DataLoader(dataset, batch_sampler=batches, generator=generator, num_workers=num_workers)


def _finished_step(ckpt_dir: Path) -> int:
    """The step a finished checkpoint in `ckpt_dir` stopped at (-1: none)."""
    marker = ckpt_dir / FINISHED
    if not (marker.exists() and (ckpt_dir / "last.ckpt").exists()):
        return -1
    return int(json.loads(marker.read_text())["global_step"])


def _resume_state(trainer):
    return next(cb for cb in trainer.callbacks if isinstance(cb, _resume_state_class()))


def fit(trainer, module, train_dataloaders, ckpt_path: str | None = None) -> None:
    """`trainer.fit`, resuming from `ckpt_path` (a checkpoint of the same key); the final
    state is saved as a finished checkpoint, so a rerun of the same key need not train."""
    import warnings

    state = _resume_state(trainer)
    # one process, or a loader already cut per rank (train_loader): the resume state wraps it;
    # any other loader under DDP goes to Lightning as it is, to be sharded by its sampler
    if trainer.world_size == 1 or isinstance(getattr(train_dataloaders, "batch_sampler", None), RankBatches):
        train_dataloaders = state.wrap(train_dataloaders)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        warnings.filterwarnings("ignore", message=".*LeafSpec.*")
        warnings.filterwarnings("ignore", message=".*resuming from a checkpoint that ended before the epoch.*")
        trainer.fit(module, train_dataloaders=train_dataloaders, ckpt_path=ckpt_path, weights_only=True)
    print(f"neurips26: rank {trainer.global_rank} trained to step {trainer.global_step} with world size {trainer.world_size}",
          flush=True)
    if state.preempted_at is not None:
        raise Preempted(f"neurips26: {WARNING_SIGNAL} (SLURM's warning before the time limit) at step "
                        f"{state.preempted_at}: checkpoint saved in {state.ckpt_dir}; the rerun resumes from it")
    if not state.finished_before:
        (state.ckpt_dir / FINISHED).unlink(missing_ok=True)
        trainer.save_checkpoint(state.ckpt_dir / "last.ckpt")
        if trainer.is_global_zero:
            from .io import write_json

            write_json(state.ckpt_dir / FINISHED, {"global_step": trainer.global_step})


def _rng_states() -> dict:
    """The global RNG states, in types a weights-only load accepts."""
    import random

    import numpy as np
    import torch

    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    states = {"torch": torch.get_rng_state(), "python": random.getstate(),
              "numpy": {"keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                        "has_gauss": int(has_gauss), "gauss": float(gauss)}}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def _set_rng_states(states: Mapping) -> None:
    import random

    import numpy as np
    import torch

    torch.set_rng_state(states["torch"])
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    n = states["numpy"]
    np.random.set_state(("MT19937", n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def _generators(loader) -> list:
    """The torch.Generators a DataLoader draws its order from (its own and its sampler's)."""
    found = []
    for owner in (loader, getattr(loader, "sampler", None), getattr(getattr(loader, "batch_sampler", None), "sampler", None)):
        g = getattr(owner, "generator", None)
        if g is not None and all(g is not f for f in found):
            found.append(g)
    return found


class _ResumableLoader:
    """The train loader, seen by Lightning as a plain iterable: at each epoch's start it notes
    the RNG states the epoch's order is drawn from; on resume it restores those of the
    interrupted epoch and skips the batches already trained on, so the order is the same."""

    def __init__(self, loader, state):
        self.loader, self.state = loader, state

    def __len__(self):
        return len(self.loader)

    def __iter__(self):  # a generator: nothing runs until Lightning asks for the first batch
        import torch

        state = self.state
        resume = state.pending
        state.pending = None
        if resume is not None:
            torch.set_rng_state(resume["epoch_start"]["torch"])
            for g, saved in zip(_generators(self.loader), resume["epoch_start"]["generators"]):
                g.set_state(saved)
        state.epoch_start = {"torch": torch.get_rng_state(),
                             "generators": [g.get_state() for g in _generators(self.loader)]}
        state.batches_done = 0
        iterator = iter(self.loader)
        if resume is not None:
            for _ in range(resume["batches_done"]):
                next(iterator)
            state.batches_done = resume["batches_done"]
            _set_rng_states(resume["rng"])
        yield from iterator


def _resume_state_class():
    """`ResumeState`, built on first use so that importing this module does not import Lightning."""
    if "ResumeState" in _CLASSES:
        return _CLASSES["ResumeState"]
    from lightning.pytorch.callbacks import Callback

    class ResumeState(Callback):
        """Saves and restores what Lightning leaves out of a checkpoint: the global RNG states and
        where the train loader stands in its epoch. Logs (and tags the run) when a job resumes."""

        def __init__(self, ckpt_dir: Path, max_steps: int):
            self.ckpt_dir, self.max_steps = Path(ckpt_dir), max_steps
            self.finished_before = _finished_step(self.ckpt_dir) >= max_steps
            self.epoch_start: dict | None = None
            self.batches_done = 0
            self.pending: dict | None = None
            self.loader = None
            self.preempted_at: int | None = None
            self._previous_handler = None

        @property
        def state_key(self) -> str:
            return "neurips26.ResumeState"

        def wrap(self, loader):
            if not hasattr(loader, "__len__"):
                return loader
            self.loader = _ResumableLoader(loader, self)
            return self.loader

        def on_train_start(self, trainer, pl_module):
            import signal

            def warned(signum, frame):
                _WARNED[0] = True

            # after Lightning's own handlers, which it installs when fit starts
            self._previous_handler = signal.signal(getattr(signal, WARNING_SIGNAL), warned)

        def on_train_end(self, trainer, pl_module):
            import signal

            if self._previous_handler is not None:
                signal.signal(getattr(signal, WARNING_SIGNAL), self._previous_handler)

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            pause = os.environ.get(PAUSE_ENV)
            if pause and int(pause) == _BATCHES_STARTED[0]:
                print(f"neurips26: paused before training batch {pause} of the job ({PAUSE_ENV})", flush=True)
                if os.environ.get(PAUSE_FILE_ENV):
                    Path(os.environ[PAUSE_FILE_ENV]).write_text(str(os.getpid()))
                deadline = time.monotonic() + 3600
                while time.monotonic() < deadline and not _WARNED[0]:  # the warning signal ends the pause
                    time.sleep(0.1)
            _BATCHES_STARTED[0] += 1

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.batches_done += 1
            # every rank must save at the same step: stop when any rank got the signal
            if trainer.strategy.reduce_boolean_decision(_WARNED[0], all=False) and self.preempted_at is None:
                self.preempted_at = trainer.global_step
                trainer.save_checkpoint(self.ckpt_dir / "last.ckpt")
                print(f"neurips26: {WARNING_SIGNAL} received: saved {self.ckpt_dir / 'last.ckpt'} at step "
                      f"{trainer.global_step}; stopping", flush=True)
                trainer.should_stop = True

        def state_dict(self) -> dict:
            state: dict[str, Any] = {"rng": _rng_states()}
            if self.loader is not None and self.epoch_start is not None:
                if self.batches_done >= len(self.loader):  # the epoch is over: the next starts from here
                    import torch

                    state["loader"] = {"epoch_start": {"torch": torch.get_rng_state(),
                                                       "generators": [g.get_state() for g in _generators(self.loader.loader)]},
                                       "batches_done": 0}
                else:
                    state["loader"] = {"epoch_start": self.epoch_start, "batches_done": self.batches_done}
            return state

        def load_state_dict(self, state_dict: dict) -> None:
            _set_rng_states(state_dict["rng"])
            if "loader" in state_dict:
                self.pending = {**state_dict["loader"], "rng": state_dict["rng"]}

        def on_load_checkpoint(self, trainer, pl_module, checkpoint):
            step = checkpoint.get("global_step", 0)
            if self.finished_before:
                print(f"neurips26: reusing the finished checkpoint {self.ckpt_dir} (step {step}): "
                      f"same params, code and inputs, so training is skipped", flush=True)
            else:
                print(f"neurips26: resuming {self.ckpt_dir} from step {step} of {self.max_steps}", flush=True)
                tracking.active().set_tag("resumed_from_step", str(step))

    _CLASSES["ResumeState"] = ResumeState
    return ResumeState
