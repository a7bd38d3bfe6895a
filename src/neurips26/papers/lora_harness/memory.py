"""Memory of a LoRA optimizer, measured.

`optimizer_state_bytes(opt)`: the bytes of every tensor in `opt.state` (nested dicts and lists
included), the O((m + n) r) versus O(m n) quantity the LoRA optimizer papers compare.

`peak_step_bytes(fn)`: the peak memory while `fn()` runs (one training step): the resident
parameters (frozen and trainable) and optimizer state, the gradients, and the step's transient
tensors (activations saved for backward, temporaries). On a GPU, `torch.cuda.max_memory_allocated`
during the step (kind "cuda_max_allocated": every tensor on the device, the model and the optimizer
state included). On CPUs, `TensorTracker` (kind "tracked_tensors"): a `TorchDispatchMode` that sees
the inputs and outputs of every ATen op run inside it (forward, backward on the autograd thread,
the optimizer). A storage an op creates counts while a tensor holding it is alive. A storage that
existed before the step counts as resident, from the step's start until it dies, when it is an
`nn.Parameter` or an op writes into it (optimizer state, trainable parameters); one only read (the
training set a minibatch is indexed from) is data, not the model's memory, and does not count.
The peak is the largest sum over the step. Deterministic for a deterministic step.
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


def _storage(t) -> tuple[int, int] | None:
    if not isinstance(t, torch.Tensor) or t.device.type == "meta":
        return None
    s = t.untyped_storage()
    return (s.data_ptr(), s.nbytes()) if s.nbytes() else None


def _written(func, args, kwargs) -> list:
    """The tensors an op writes into (its schema's `a!` arguments)."""
    out = []
    for i, a in enumerate(getattr(func, "_schema").arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            out += tree_flatten(args[i] if i < len(args) else kwargs.get(a.name))[0]
    return out


class TensorTracker(TorchDispatchMode):
    """The storages the ops under the mode create (live bytes over time) and the resident ones
    they touch that existed before (see the module docstring); `peak` after the mode exits."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}          # created in the step: key -> bytes
        self.before: dict[int, list] = {}       # existed before: key -> [bytes, resident, death index]
        self.gone: list[list] = []              # records of storages from before that died in the step
        self.current = 0
        self.trace = [0]                        # created bytes after every change

    def _free(self, key: int) -> None:
        self.current -= self.live.pop(key, 0)
        self.trace.append(self.current)

    def _free_before(self, key: int) -> None:
        rec = self.before.pop(key, None)
        if rec is not None:
            rec[2] = len(self.trace)
            self.gone.append(rec)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        written = {id(t) for t in _written(func, args, kwargs)}
        for t in tree_flatten((args, kwargs))[0]:
            st = _storage(t)
            if st is None or st[0] in self.live:
                continue
            key, nbytes = st
            rec = self.before.get(key)
            if rec is None:
                rec = self.before[key] = [nbytes, False, None]
                weakref.finalize(t, self._free_before, key)
            rec[1] = rec[1] or isinstance(t, torch.nn.Parameter) or id(t) in written
        out = func(*args, **kwargs)
        for t in tree_flatten(out)[0]:
            st = _storage(t)
            if st is None or st[0] in self.live or st[0] in self.before:
                continue
            self.live[st[0]] = st[1]
            self.current += st[1]
            self.trace.append(self.current)
            weakref.finalize(t, self._free, st[0])
        return out

    @property
    def peak(self) -> int:
        """Largest over the step of the created bytes plus the resident bytes still alive."""
        records = [r for r in (*self.before.values(), *self.gone) if r[1]]
        resident = sum(r[0] for r in records)
        deaths = sorted((r[2], r[0]) for r in records if r[2] is not None)
        best, k = 0, 0
        for i, created in enumerate(self.trace):
            while k < len(deaths) and deaths[k][0] <= i:
                resident -= deaths[k][1]
                k += 1
            best = max(best, created + resident)
        return int(best)


def peak_step_bytes(fn: Callable[[], object], device: torch.device | str | None = None) -> tuple[int, str]:
    """(peak bytes while fn() runs, kind): CUDA's allocator peak on a GPU, the tracked tensors'
    peak on CPUs; both hold the resident parameters, gradients and optimizer state."""
    dev = torch.device(device) if device is not None else None
    if dev is not None and dev.type == "cuda":
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        fn()
        torch.cuda.synchronize(dev)
        return int(torch.cuda.max_memory_allocated(dev)), "cuda_max_allocated"
    tracker = TensorTracker()
    with tracker:
        fn()
    return tracker.peak, "tracked_tensors"
