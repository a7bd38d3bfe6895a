"""Baselines the paper compares angular layers to, on the same backbones and budgets.

- BNN (Courbariaux et al. 2016): y = sign(x) . sign(W) (no rescaling: the BatchNorm or
  LayerNorm that follows sets the scale), straight-through sign with the hard-tanh gradient
  1[|v| <= 1] for both weights and activations, and the latent real weights clipped to
  [-1, 1] after every update (`clip_latent_weights`).
- XNOR-Net (Rastegari et al. 2016): y = beta(x) alpha_o (sign(x) . sign(W_o)), alpha_o = mean|W_o|,
  beta(x) = mean|x| over the input vector (per token / per patch), same straight-through sign.
- LSQ (Esser et al. 2020): b-bit uniform quantizers with learned step sizes for weights
  (signed) and activations (signed, or unsigned after a ReLU), round with a straight-through
  gradient and the step-size gradient scaled by g = 1 / sqrt(N * Q_p), N the number of weights
  of the layer for the weight step and the number of features of one sample (the input's
  numel over its batch size) for the activation step, as in the LSQ paper.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SignSTE(torch.autograd.Function):
    """sign(v) forward (sign(0) = +1), hard-tanh straight-through gradient backward."""

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return torch.where(v >= 0, 1.0, -1.0).to(v.dtype)

    @staticmethod
    def backward(ctx, grad):
        (v,) = ctx.saved_tensors
        return grad * (v.abs() <= 1).to(grad.dtype)


def sign_ste(v):
    return SignSTE.apply(v)


def round_ste(v):
    return (v.round() - v).detach() + v


def grad_scale(v, scale):
    return (v - v * scale).detach() + v * scale


class _Binary(nn.Module):
    """Shared by BNN and XNOR: binarise the weight and the input, then the dense op."""

    xnor = False

    @property
    def clips_latent(self) -> bool:
        """BNN keeps its real-valued latent weights in [-1, 1] (outside, the hard-tanh STE gives
        them no gradient and they would never flip back); XNOR-Net does not clip."""
        return not self.xnor

    def _binary_weight(self):
        wb = sign_ste(self.weight)
        if self.xnor:
            alpha = self.weight.abs().flatten(1).mean(1)
            wb = wb * alpha.view(-1, *([1] * (self.weight.dim() - 1)))
        return wb


@torch.no_grad()
def clip_latent_weights(model: nn.Module) -> None:
    """BNN's weight clipping, called after every optimiser step."""
    for m in model.modules():
        if isinstance(m, _Binary) and m.clips_latent:
            m.weight.clamp_(-1.0, 1.0)


class BinaryLinear(nn.Linear, _Binary):
    def __init__(self, in_features, out_features, bias=True, xnor=False):
        super().__init__(in_features, out_features, bias)
        self.xnor = xnor

    def forward(self, x):
        y = F.linear(sign_ste(x), self._binary_weight(), self.bias if not self.xnor else None)
        if self.xnor:
            y = y * x.abs().mean(-1, keepdim=True)
            if self.bias is not None:
                y = y + self.bias
        return y


class BinaryConv2d(nn.Conv2d, _Binary):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True, xnor=False):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=bias)
        self.xnor = xnor

    def forward(self, x):
        y = F.conv2d(sign_ste(x), self._binary_weight(), None, self.stride, self.padding)
        if self.xnor:
            # beta: mean |x| over each receptive field (XNOR-Net's K matrix)
            k = torch.ones(1, self.in_channels, *self.kernel_size, dtype=x.dtype, device=x.device)
            y = y * F.conv2d(x.abs(), k / k.numel(), None, self.stride, self.padding)
        if self.bias is not None:
            y = y + self.bias.view(1, -1, 1, 1)
        return y


class LSQQuantizer(nn.Module):
    """Learned-step-size quantizer: s * clip(round(v / s), -Q_n, Q_p)."""

    def __init__(self, bits: int, signed: bool = True, per_sample: bool = False):
        super().__init__()
        self.bits, self.signed, self.per_sample = int(bits), signed, per_sample
        self.q_n = 2 ** (self.bits - 1) if signed else 0
        self.q_p = 2 ** (self.bits - 1) - 1 if signed else 2 ** self.bits - 1
        self.step = nn.Parameter(torch.tensor(1.0))
        self.register_buffer("initialised", torch.tensor(False))

    def forward(self, v):
        if not bool(self.initialised):
            with torch.no_grad():  # LSQ init: 2 mean|v| / sqrt(Q_p)
                self.step.copy_(2 * v.abs().mean() / math.sqrt(self.q_p) + 1e-8)
                self.initialised.fill_(True)
        features = v[0].numel() if self.per_sample else v.numel()  # activations: one sample's features
        g = 1.0 / math.sqrt(features * self.q_p)
        s = grad_scale(self.step, g)
        return round_ste((v / s).clamp(-self.q_n, self.q_p)) * s


class LSQLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, bits=2, signed_input=True):
        super().__init__(in_features, out_features, bias)
        self.bits = bits
        self.weight_q, self.input_q = LSQQuantizer(bits, True), LSQQuantizer(bits, signed_input, per_sample=True)

    def forward(self, x):
        return F.linear(self.input_q(x), self.weight_q(self.weight), self.bias)


class LSQConv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True, bits=2,
                 signed_input=True):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=bias)
        self.bits = bits
        self.weight_q, self.input_q = LSQQuantizer(bits, True), LSQQuantizer(bits, signed_input, per_sample=True)

    def forward(self, x):
        return F.conv2d(self.input_q(x), self.weight_q(self.weight), self.bias, self.stride, self.padding)
