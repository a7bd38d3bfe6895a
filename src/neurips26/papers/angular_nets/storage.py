"""Bit-packed storage of a trained model: what an inference deployment would keep.

- angular layers: the codes of q_w(G w_c / |w_c|) (N x out at the weight bit-width), the
  per-output gain and bias in fp32, and the 8-byte seed G is regenerated from;
- BNN / XNOR-Net layers: sign(W) one bit per weight (+ XNOR's per-output alpha, bias);
- LSQ layers: the b-bit integer codes of W plus the two learned step sizes;
- everything else (stems, heads, norms, embeddings, BatchNorm running statistics): fp32.
"""

from __future__ import annotations

import numpy as np
import torch

from .angular import AngularConv2d, AngularLinear, pack_codes
from .baselines import BinaryConv2d, BinaryLinear, LSQConv2d, LSQLinear

FP32 = 4


def _fp32(*tensors) -> int:
    return sum(t.numel() * FP32 for t in tensors if t is not None)


@torch.no_grad()
def packed_layers(model: torch.nn.Module) -> dict[str, bytes]:
    """name -> packed weight bytes of every quantized layer."""
    out = {}
    for name, m in model.named_modules():
        if isinstance(m, (AngularLinear, AngularConv2d)):
            out[name] = pack_codes(m.weight_codes().numpy(), m.w_bits)
        elif isinstance(m, (BinaryLinear, BinaryConv2d)):
            out[name] = pack_codes((m.weight.flatten() >= 0).numpy().astype(np.uint8), 1)
        elif isinstance(m, (LSQLinear, LSQConv2d)):
            q = m.weight_q
            codes = (m.weight / q.step).round().clamp(-q.q_n, q.q_p) + q.q_n
            out[name] = pack_codes(codes.flatten().numpy().astype(np.uint8), m.bits)
    return out


@torch.no_grad()
def storage_bytes(model: torch.nn.Module) -> int:
    """Bytes of the deployable model with every quantized weight bit-packed."""
    packed = packed_layers(model)
    total = sum(len(b) for b in packed.values())
    covered = set()
    for name, m in model.named_modules():
        if name not in packed:
            continue
        prefix = f"{name}." if name else ""
        covered |= {prefix + n for n, _ in m.named_parameters()} | {prefix + n for n, _ in m.named_buffers()}
        if isinstance(m, (AngularLinear, AngularConv2d)):
            total += _fp32(m.gain, m.bias) + 8
        elif isinstance(m, (BinaryLinear, BinaryConv2d)):
            total += _fp32(m.bias) + (m.weight.shape[0] * FP32 if m.xnor else 0)
        else:
            total += _fp32(m.bias) + 2 * FP32
    for n, p in model.named_parameters():
        if n not in covered:
            total += _fp32(p)
    for n, b in model.named_buffers():
        if n not in covered and b.is_floating_point():
            total += _fp32(b)
    return total
