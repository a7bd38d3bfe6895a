"""Memory of a LoRA optimizer, measured.

`optimizer_state_bytes(opt)`: the bytes of every tensor in `opt.state` (nested dicts and lists
included), the O((m + n) r) versus O(m n) quantity the LoRA optimizer papers compare.

`peak_step_bytes(fn)`: the peak memory while `fn()` runs (one training step). On a GPU,
`torch.cuda.max_memory_allocated` above the allocation before the step (kind
"cuda_max_allocated"). On CPUs, `TensorTracker`: a `TorchDispatchMode` that sees the outputs of
every ATen op run inside it (forward, backward on the autograd thread, the optimizer), counts
each new storage's bytes while a tensor holding it is alive and records the peak of that sum
(kind "tracked_tensors": the step's transient tensors, activations saved for backward,
gradients and new optimizer state; not the parameters and state alive before the step, which
`optimizer_state_bytes` and the parameter count give). Deterministic for a deterministic step.
"""

from __future__ import annotations

import weakref
from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


def _tensor_bytes(x) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, dict):
        return sum(_tensor_bytes(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return sum(_tensor_bytes(v) for v in x)
    return 0


def optimizer_state_bytes(opt: torch.optim.Optimizer) -> int:
    """Bytes of the tensors an optimizer keeps between steps (its `state`)."""
    return int(sum(_tensor_bytes(s) for s in opt.state.values()))


class TensorTracker(TorchDispatchMode):
    """Live bytes of the storages created under the mode, and their peak."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}
        self.current = 0
        self.peak = 0

    def _free(self, key: int) -> None:
        self.current -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor) or t.device.type == "meta":
                continue
            storage = t.untyped_storage()
            key, nbytes = storage.data_ptr(), storage.nbytes()
            if nbytes == 0 or key in self.live:
                continue
            self.live[key] = nbytes
            self.current += nbytes
            self.peak = max(self.peak, self.current)
            weakref.finalize(t, self._free, key)
        return out


def peak_step_bytes(fn: Callable[[], object], device: torch.device | str | None = None) -> tuple[int, str]:
    """(peak bytes while fn() runs, kind): CUDA's allocator peak above the start on a GPU, the
    tracked tensors' peak on CPUs."""
    dev = torch.device(device) if device is not None else None
    if dev is not None and dev.type == "cuda":
        torch.cuda.synchronize(dev)
        start = torch.cuda.memory_allocated(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        fn()
        torch.cuda.synchronize(dev)
        return int(torch.cuda.max_memory_allocated(dev) - start), "cuda_max_allocated"
    tracker = TensorTracker()
    with tracker:
        fn()
    return int(tracker.peak), "tracked_tensors"
