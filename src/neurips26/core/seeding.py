"""Seeding and determinism: every step calls `seed_everything` from its params."""

from __future__ import annotations

import os
import random


def seed_everything(seed: int, threads: int | None = None) -> None:
    """Seed Python, NumPy and torch, pin the thread count and ask torch for deterministic kernels.

    The thread count is pinned because float reductions can change with it, and the
    workflow promises byte-identical metrics for the same config on the same machine.
    """
    import numpy as np
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
    if threads:
        torch.set_num_threads(int(threads))
    torch.use_deterministic_algorithms(True, warn_only=True)


def generator(seed: int):
    """A fresh torch.Generator seeded with `seed` (for data generation independent of global state)."""
    import torch

    g = torch.Generator()
    g.manual_seed(int(seed))
    return g
