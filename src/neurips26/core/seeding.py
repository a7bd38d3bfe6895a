"""Seeding and determinism: every step calls `seed_everything` from its params."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import random
import sys


def _seed_torch(torch, seed: int, threads: int | None) -> None:
    torch.manual_seed(seed)
    if threads:
        torch.set_num_threads(int(threads))
    torch.use_deterministic_algorithms(True, warn_only=True)


class _SeedTorchOnImport(importlib.abc.MetaPathFinder):
    """Seeds torch the moment it is first imported, so a step that never imports torch does not
    pay for its import (about 3 s) and a step that does sees the same seeded state as if torch
    had been seeded before the step."""

    def __init__(self, seed: int, threads: int | None):
        self.seed, self.threads = seed, threads

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)  # find the real spec, once
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _SeedingLoader(spec.loader, self.seed, self.threads)
        return spec


class _SeedingLoader(importlib.abc.Loader):
    def __init__(self, loader, seed: int, threads: int | None):
        self.loader, self.seed, self.threads = loader, seed, threads

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _seed_torch(module, self.seed, self.threads)

    def __getattr__(self, name):  # get_resource_reader, is_package, ... of the real loader
        return getattr(self.loader, name)


def seed_everything(seed: int, threads: int | None = None, lazy: bool = False) -> None:
    """Seed Python, NumPy and torch, pin the thread count and ask torch for deterministic kernels.

    The thread count is pinned because float reductions can change with it, and the
    workflow promises byte-identical metrics for the same config on the same machine.
    With `lazy` (the CLI before a step), torch is seeded when it is first imported, not
    imported here.
    """
    import numpy as np

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    random.seed(seed)
    np.random.seed(seed % (2**32))
    for finder in [f for f in sys.meta_path if isinstance(f, _SeedTorchOnImport)]:
        sys.meta_path.remove(finder)
    if lazy and "torch" not in sys.modules:
        sys.meta_path.insert(0, _SeedTorchOnImport(seed, threads))
        return
    import torch

    _seed_torch(torch, seed, threads)


def generator(seed: int):
    """A fresh torch.Generator seeded with `seed` (for data generation independent of global state)."""
    import torch

    g = torch.Generator()
    g.manual_seed(int(seed))
    return g
