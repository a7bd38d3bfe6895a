"""Atomic, safe file output: every write goes to a temp file in the same folder, then renames.
Reads that meet a truncated or empty file raise `InputFileError`, naming the file."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Mapping


class InputFileError(ValueError):
    """An input file that exists but cannot be read: truncated, empty, not the expected format."""

    def __init__(self, path, problem: str):
        super().__init__(f"input file {path}: {problem}")
        self.path = Path(path)


def umask() -> int:
    """The process's file-creation mask (read from /proc where it can be, so that it is not changed
    even for an instant; otherwise set and restored)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temp path beside `path`; rename it onto `path` only if the block succeeds. The file
    gets the mode a plain `open` would give it (0666 less the umask: 0644 under umask 022), not the
    0600 of the temp file, so that a shared run is readable by whom the umask allows."""
    from .job import global_rank

    path = Path(path)
    if global_rank() != 0:  # the other ranks of a multi-process job compute the same files: rank 0 writes them
        with tempfile.TemporaryDirectory(prefix="neurips26-rank-") as scratch:
            yield Path(scratch) / path.name
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_bytes(path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path, text: str) -> None:
    write_bytes(path, text.encode())


def _json_default(obj):
    # numpy and torch scalars
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")


def dumps_json(obj: Any) -> str:
    """Canonical JSON: sorted keys, fixed float formatting, so equal data give equal bytes."""
    return json.dumps(obj, indent=2, sort_keys=True, default=_json_default, allow_nan=True) + "\n"


def write_json(path, obj: Any) -> None:
    write_text(path, dumps_json(obj))


def read_json(path) -> Any:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"expected input file {path} does not exist")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"not valid JSON ({exc}); truncated?") from None


def write_csv(path, rows: Iterable[Mapping[str, Any]], columns: list[str] | None = None) -> None:
    rows = list(rows)
    if columns is None:
        columns = list(rows[0].keys()) if rows else []
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction="raise")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    write_text(path, buf.getvalue())


def significant(x, digits: int = 10, floor: float = 0.0) -> float:
    """`x` as a float with `digits` significant digits (non-finite values and 0 as they are),
    so that metrics files do not carry last-bit noise of float reductions. A value whose
    magnitude is below `floor` is round-off (a residual that is zero in exact arithmetic, whose
    last bits move with the memory alignment of the arrays summed) and is written as 0.0."""
    import math

    x = float(x)
    if math.isfinite(x) and abs(x) < floor:
        return 0.0
    return x if not math.isfinite(x) or x == 0.0 else float(f"{x:.{digits}g}")


def rounded(obj, digits: int = 10, floor: float = 0.0, keep_nonfinite: bool = False):
    """`obj` (a number, or dicts, lists, tuples and arrays of them) with every float at `digits`
    significant digits (`significant`); non-finite floats become None (JSON has no NaN) unless
    `keep_nonfinite`. Ints, strings, bools and None stay as they are; tuples and arrays become lists."""
    import math

    import numpy as np

    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        if not math.isfinite(x) and not keep_nonfinite:
            return None
        return significant(x, digits, floor)
    if isinstance(obj, dict):
        return {k: rounded(v, digits, floor, keep_nonfinite) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    if isinstance(obj, (list, tuple)):
        return [rounded(v, digits, floor, keep_nonfinite) for v in obj]
    return obj


def read_csv(path, delimiter: str = ",") -> list[dict[str, str]]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"expected input file {path} does not exist")
    with path.open(newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        if not reader.fieldnames:
            raise InputFileError(path, "empty CSV (no header row)")
        return list(reader)


def save_tensors(path, tensors: Mapping[str, Any], metadata: Mapping[str, str] | None = None) -> None:
    """Save a flat dict of tensors as safetensors (contiguous copies, atomic)."""
    from safetensors.torch import save_file

    clean = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
    with atomic_path(path) as tmp:
        save_file(clean, str(tmp), metadata=dict(metadata) if metadata else None)


def load_tensors(path) -> dict:
    from safetensors.torch import load_file

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"expected tensor file {path} does not exist")
    try:
        return load_file(str(path))
    except Exception as exc:  # safetensors raises its own error type, without the file name
        raise InputFileError(path, f"cannot read as safetensors ({exc}); truncated or corrupt?") from None


def load_tensor_metadata(path) -> dict[str, str]:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            return dict(f.metadata() or {})
    except Exception as exc:
        raise InputFileError(path, f"cannot read as safetensors ({exc}); truncated or corrupt?") from None
