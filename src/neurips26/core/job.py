"""What a job knows about itself beyond its params: the code it runs, the files it reads, and
whether its checkpoints outlive it.

The CLI opens the context before a step (`begin`) and closes it once the step's outputs are
written and logged (`finish`). `core.trainer` keys checkpoints on it, so a checkpoint is only
ever resumed by the same params, the same code and the same input bytes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

KEEP_ENV = "NEURIPS26_KEEP_CHECKPOINTS"
# folders whose .py files make up the code a paper's steps run, besides the paper's own package
SHARED_CODE = ("core", "data")


def code_stamp(paper: str) -> str:
    """Hash of the code a paper's steps run: core/, data/, the shared step groups (papers use
    their functions, e.g. the LM pretraining of lm_assets), the harness packages the paper's
    `__init__` names in `USES` (e.g. a federated or zeroth-order harness two papers share) and
    the paper's own package."""
    from ..papers import SHARED, uses

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    groups = [f"papers/{g}" for g in (*SHARED, *uses(paper)) if g != paper]
    for folder in (*SHARED_CODE, *groups, f"papers/{paper}"):
        for path in sorted((root / folder).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _skipped(rel: Path) -> bool:
    # checkpoints, temp files and logs of a folder input are not data the step reads
    return any(part == "checkpoints" or part.startswith(".") for part in rel.parts)


def content_digest(path: str | os.PathLike) -> str:
    """sha256 of a file, or of every file under a folder (relative names and bytes)."""
    path = Path(path)
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        rel = file.relative_to(path) if file != path else Path(file.name)
        if file != path and _skipped(rel):
            continue
        digest.update(str(rel).encode() + b"\0")
        with file.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


@dataclass
class JobContext:
    paper: str = ""
    code: str = ""
    inputs: Mapping[str, Path] = field(default_factory=dict)
    keep_checkpoints: bool = False
    checkpoint_dirs: list[Path] = field(default_factory=list)
    _digests: dict[str, str] | None = None

    def input_digests(self) -> dict[str, str]:
        """Content hash of each input, computed on first use (only training steps need them)."""
        if self._digests is None:
            self._digests = {name: content_digest(path) for name, path in sorted(self.inputs.items())}
        return self._digests


_CURRENT = JobContext()


def global_rank() -> int:
    """This process's rank among the job's training processes: SLURM_PROCID under an srun of
    several tasks, RANK or LOCAL_RANK where Lightning or torchrun started the processes, else 0.
    Only rank 0 writes outputs and logs to MLflow."""
    if int(os.environ.get("SLURM_NTASKS", "1")) > 1 and "SLURM_PROCID" in os.environ:
        return int(os.environ["SLURM_PROCID"])
    for key in ("RANK", "LOCAL_RANK"):
        if os.environ.get(key, "").isdigit():
            return int(os.environ[key])
    return 0


def current() -> JobContext:
    return _CURRENT


def begin(paper: str, inputs: Mapping[str, Path], keep_checkpoints: bool | None = None) -> JobContext:
    global _CURRENT
    if keep_checkpoints is None:
        keep_checkpoints = os.environ.get(KEEP_ENV, "0") == "1"
    _CURRENT = JobContext(paper=paper, code=code_stamp(paper), inputs=dict(inputs),
                          keep_checkpoints=keep_checkpoints)
    return _CURRENT


def finish() -> list[Path]:
    """Remove the checkpoint folders of this finished job (unless kept); return what went."""
    global _CURRENT
    removed = []
    if not _CURRENT.keep_checkpoints:
        for folder in dict.fromkeys(d.parent for d in _CURRENT.checkpoint_dirs):
            if folder.exists():
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    _CURRENT = JobContext()
    return removed
