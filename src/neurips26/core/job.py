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
# the steps ('<paper> <step>', comma separated; "*": all) whose jobs train afresh, ignoring a
# finished checkpoint: the rules a Snakemake invocation forces (--forcerun, --forceall), or all
# under retrain: true
RETRAIN_ENV = "NEURIPS26_RETRAIN"
PACKAGE = "neurips26"
# the entry point every step goes through: its module-level imports and those of the function
# that runs a step enter every paper's stamp (its other commands' imports do not)
RUNNER, RUNNER_FUNCTION = "cli.py", "_run_step"
# the pinned library versions (a checkout's envs/, beside src/)
LOCK_FILE = Path("envs") / "requirements.lock"


def _package_root() -> Path:
    return Path(__file__).resolve().parents[1]


def _module_file(root: Path, module: str) -> Path | None:
    """The file of `neurips26.<...>` under `root` (a module or a package's __init__), or None."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _with_parents(root: Path, module: str) -> list[Path]:
    """The module's file and the __init__ of every package above it (importing it runs them)."""
    parts = module.split(".")
    files = [_module_file(root, ".".join(parts[:i])) for i in range(1, len(parts) + 1)]
    return [f for f in files if f is not None]


def _module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [PACKAGE, *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(root: Path, path: Path, function: str | None = None) -> set[str]:
    """The `neurips26` modules a file imports, read statically from its `import` statements
    (at any depth: the house imports heavy modules inside functions), relative ones resolved;
    `from pkg import name` counts `pkg.name` when that is a module. With `function`, only the
    module-level statements and those inside that top-level function."""
    source = path.read_bytes()
    key = (str(root), str(path), function, hashlib.sha256(source).digest())
    if key not in _IMPORTS:
        _IMPORTS[key] = _parse_imports(root, path, source, function)
    return set(_IMPORTS[key])


_IMPORTS: dict[tuple, frozenset[str]] = {}


def _parse_imports(root: Path, path: Path, source: bytes, function: str | None) -> frozenset[str]:
    import ast

    tree = ast.parse(source, filename=str(path))
    if function is not None:
        nodes = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        nodes += [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function]
        walk = [sub for n in nodes for sub in ast.walk(n)]
    else:
        walk = list(ast.walk(tree))
    name = _module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in walk:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[:len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names
                         if _module_file(root, f"{base}.{alias.name}") is not None)
    return frozenset(m for m in found if m.split(".")[0] == PACKAGE and _module_file(root, m) is not None)


def code_files(paper: str, root: Path | None = None) -> list[Path]:
    """The files of `neurips26` that a paper's steps run: its package's `__init__` and `steps`
    and every module they import, transitively (the import statements themselves, so a module
    a harness or another shared module pulls in counts, and one nothing imports does not), plus
    the entry point (cli.py and what it imports to run a step) and the package `__init__`s."""
    root = root or _package_root()
    seen: set[Path] = set()
    todo = [(root / RUNNER, RUNNER_FUNCTION)]
    todo += [(f, None) for m in (f"{PACKAGE}.papers.{paper}", f"{PACKAGE}.papers.{paper}.steps")
             for f in _with_parents(root, m)]
    while todo:
        path, function = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in imported_modules(root, path, function):
            todo += [(f, None) for f in _with_parents(root, module) if f not in seen]
    return sorted(seen)


def code_stamp(paper: str, root: Path | None = None) -> str:
    """Hash of the code a paper's steps run (`code_files`) and of the pinned library versions
    (envs/requirements.lock, when the package runs from a checkout): a change to any of them
    changes the rules' params, so Snakemake reruns exactly that paper's jobs, and the checkpoint
    key, so no checkpoint of other code is resumed."""
    root = root or _package_root()
    digest = hashlib.sha256()
    for path in code_files(paper, root):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes())
    lock = root.parents[1] / LOCK_FILE
    if lock.is_file():
        digest.update(str(LOCK_FILE).encode() + b"\0")
        digest.update(lock.read_bytes())
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
    retrain: bool = False
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


def retrain_requested(step: str) -> bool:
    """Whether this invocation forces the job's step ('<paper> <step>', RETRAIN_ENV): it trains afresh."""
    forced = {r for r in os.environ.get(RETRAIN_ENV, "").split(",") if r}
    return "*" in forced or step in forced


def begin(paper: str, inputs: Mapping[str, Path], keep_checkpoints: bool | None = None,
          retrain: bool = False) -> JobContext:
    global _CURRENT
    if keep_checkpoints is None:
        keep_checkpoints = os.environ.get(KEEP_ENV, "0") == "1"
    _CURRENT = JobContext(paper=paper, code=code_stamp(paper), inputs=dict(inputs),
                          keep_checkpoints=keep_checkpoints, retrain=retrain)
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
