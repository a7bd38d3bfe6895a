"""Stand-in of the federated-LoRA harness interface (Dispatch, registry) until the shared harness lands."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

try:
    from neurips26.papers.fed_harness.aggregators import AGGREGATORS, Dispatch, register  # noqa: F401
except ImportError:
    @dataclass
    class Dispatch:
        B: list[Tensor]
        A: list[Tensor]
        base_delta: Tensor | None

    AGGREGATORS: dict = {}

    def register(name: str):
        def deco(obj):
            AGGREGATORS[name] = obj
            return obj
        return deco
