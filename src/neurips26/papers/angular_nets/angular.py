"""Angular layers: low-bit random-feature estimators of the angular kernel, trained through
the continuous cosine geometry (the G-Gradient).

A layer keeps full-precision latent weights W (out x d) and a random projection G
(N = max(min_features, int(nu d)) rows, a buffer the training loop may redraw). With x_c, w_c
the centred input and weight row (see `CENTRE_MODES`) and
z_x = G x_c / |x_c|, z_w = G w_c / |w_c| (each entry standard normal for Gaussian G),
the forward pass is the low-bit estimate

    y = gain * (1 / (N c)) * sum_j q_a(z_x)_j q_w(z_w)_j + bias,    c = E[q_a(u) q_w(u)],

whose expectation over G is gain * K(rho) + bias with rho = cos(x_c, w_c). For 1-bit sign
quantizers K(rho) = 1 - 2 theta / pi = (2 / pi) arcsin(rho); for k-bit quantizers K is
tabulated by quadrature (`kernel_table`). The backward pass is the gradient of
gain * K(rho) + bias (the G-Gradient), cosine-normalisation Jacobian included:

    y = y_est.detach() + (K(rho) - K(rho).detach()) * gain + bias.

So no straight-through sign: the gradient is that of the expected forward pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# Uniform quantizers optimal in MSE for a standard normal input (Max 1960 / Lloyd tables):
# step of the mid-rise uniform quantizer with 2^b levels.
UNIFORM_STEP = {2: 0.9957, 3: 0.5860, 4: 0.3352}
TERNARY_THRESHOLD = 0.6120  # MSE-optimal symmetric ternary threshold for N(0, 1)
BITS_CHOICES = (1.0, 1.58, 2.0, 3.0, 4.0)


@dataclass(frozen=True)
class Quantizer:
    """A scalar quantizer of a standardised projection: q(z) = levels[#thresholds below z]."""

    bits: float
    thresholds: tuple[float, ...]
    levels: tuple[float, ...]

    @property
    def code_bits(self) -> int:
        """Bits per stored code (ternary packs 5 trits in a byte: 1.6 bits, see pack_codes)."""
        return 1 if self.bits == 1 else (2 if self.bits == 1.58 else int(self.bits))


@lru_cache(maxsize=None)
def quantizer(bits: float) -> Quantizer:
    bits = float(bits)
    if bits == 1:
        return Quantizer(1.0, (0.0,), (-1.0, 1.0))
    if bits == 1.58:
        t = TERNARY_THRESHOLD
        return Quantizer(1.58, (-t, t), (-1.0, 0.0, 1.0))
    if bits in UNIFORM_STEP:
        b, step = int(bits), UNIFORM_STEP[int(bits)]
        half = 2 ** (b - 1)
        thresholds = tuple(step * k for k in range(-half + 1, half))
        levels = tuple(step * (k + 0.5) for k in range(-half, half))
        return Quantizer(bits, thresholds, levels)
    raise ValueError(f"angular bits must be one of {BITS_CHOICES}, got {bits}")


def quantize_codes(z: torch.Tensor, q: Quantizer) -> torch.Tensor:
    """Integer codes 0..len(levels)-1 of z (the index of its quantization bin)."""
    return torch.bucketize(z.contiguous(), torch.tensor(q.thresholds, dtype=z.dtype, device=z.device), right=True)


def quantize(z: torch.Tensor, q: Quantizer) -> torch.Tensor:
    if q.bits == 1:
        return torch.where(z >= 0, 1.0, -1.0).to(z.dtype)
    return torch.tensor(q.levels, dtype=z.dtype, device=z.device)[quantize_codes(z, q)]


# ---------------------------------------------------------------- the kernel K(rho)
def expected_products(rho: np.ndarray, qa: Quantizer, qw: Quantizer, nodes: int = 8) -> np.ndarray:
    """E[q_a(u) q_w(v)] for (u, v) standard bivariate normal with correlation rho (vectorised).

    Writing q(u) = l_0 + sum_i d_i 1[u > t_i], the product expands into orthant probabilities
    L(a, b, rho) = P(u > a, v > b). Plackett's identity dL/drho = phi_2(a, b, rho) gives
    L(a, b, sin T) = (1 - Phi(a))(1 - Phi(b)) + (1 / 2 pi) int_0^T exp(-(a^2 - 2ab sin t + b^2) / (2 cos^2 t)) dt,
    whose integrand is smooth in t, integrated here by Gauss-Legendre between grid points."""
    from scipy.special import ndtr

    rho = np.clip(np.asarray(rho, dtype=np.float64), -1.0, 1.0)
    theta = np.arcsin(rho)
    la, ta, lw, tw = (np.array(v, dtype=np.float64) for v in (qa.levels, qa.thresholds, qw.levels, qw.thresholds))
    da, dw = np.diff(la), np.diff(lw)
    a, b = ta[:, None, None], tw[None, :, None]
    # int_0^theta for every rho: on [0, theta] by Gauss-Legendre after splitting into pieces
    x, w = np.polynomial.legendre.leggauss(nodes)
    pieces = 8
    edges = np.linspace(0.0, 1.0, pieces + 1)
    t = (edges[:-1, None] + (x[None, :] + 1) / 2 / pieces).ravel()  # in (0, 1), piece-major
    wt = np.tile(w / 2 / pieces, pieces)
    ts = theta[:, None] * t[None, :]  # (R, M)
    sin, cos2 = np.sin(ts), np.cos(ts) ** 2
    cos2 = np.maximum(cos2, 1e-300)
    expo = np.exp(-(a[..., None] ** 2 - 2 * a[..., None] * b[..., None] * sin[None, None] + b[..., None] ** 2)
                  / (2 * cos2[None, None]))  # (A, B, R, M)
    integral = (expo * wt).sum(-1) * theta[None, None, :] / (2 * np.pi)
    orthant = (1 - ndtr(a)) * (1 - ndtr(b)) + integral  # (A, B, R)
    tail_a, tail_w = 1 - ndtr(ta), 1 - ndtr(tw)
    out = la[0] * lw[0] + la[0] * (dw * tail_w).sum() + lw[0] * (da * tail_a).sum()
    return out + np.einsum("i,j,ijr->r", da, dw, orthant)


def expected_product(rho: float, qa: Quantizer, qw: Quantizer) -> float:
    return float(expected_products(np.array([rho]), qa, qw)[0])


@lru_cache(maxsize=None)
def kernel_table(a_bits: float, w_bits: float, points: int = 2049) -> tuple[np.ndarray, np.ndarray]:
    """K(rho) = E[q_a(u) q_w(v)] / E[q_a(u) q_w(u)] on a uniform rho grid over [-1, 1]."""
    qa, qw = quantizer(a_bits), quantizer(w_bits)
    rho = np.linspace(-1.0, 1.0, points)
    values = expected_products(rho, qa, qw)
    return rho, values / expected_product(1.0, qa, qw)


def normaliser(a_bits: float, w_bits: float) -> float:
    """c = E[q_a(u) q_w(u)]: divides the estimator so that K(1) = 1."""
    return expected_product(1.0, quantizer(a_bits), quantizer(w_bits))


def angular_kernel(rho: torch.Tensor, a_bits: float, w_bits: float) -> torch.Tensor:
    """The expected forward K(rho), differentiable in rho: (2/pi) arcsin for 1-bit x 1-bit, the
    piecewise-linear interpolation of `kernel_table` otherwise."""
    if a_bits == 1 and w_bits == 1:
        return (2.0 / math.pi) * torch.asin(rho.clamp(-1 + 1e-4, 1 - 1e-4))
    grid, values = kernel_table(float(a_bits), float(w_bits))
    table = torch.tensor(values, dtype=rho.dtype, device=rho.device)
    h = 2.0 / (len(grid) - 1)
    r = rho.clamp(-1.0, 1.0)
    idx = ((r + 1.0) / h).floor().clamp(0, len(grid) - 2).long().detach()
    left = table[idx]
    slope = (table[idx + 1] - left) / h
    return left + (r - (idx.to(r.dtype) * h - 1.0)) * slope


# ---------------------------------------------------------------- projections
def projection(n_rows: int, dim: int, kind: str, generator: torch.Generator) -> torch.Tensor:
    """G (n_rows x dim): i.i.d. N(0, 1), or stacked random orthogonal blocks with rows of norm
    sqrt(dim) (the same row norm a Gaussian row has on average; the blocks are independent)."""
    if kind == "gaussian":
        return torch.randn(n_rows, dim, generator=generator)
    if kind == "orthogonal":
        blocks = []
        for _ in range(math.ceil(n_rows / dim)):
            q, r = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=torch.float64))
            blocks.append((q * torch.sign(torch.diagonal(r))).T.float() * math.sqrt(dim))
        return torch.cat(blocks)[:n_rows]
    raise ValueError(f"projection kind must be 'gaussian' or 'orthogonal', got {kind!r}")


def centre_rows(t: torch.Tensor) -> torch.Tensor:
    return t - t.mean(dim=-1, keepdim=True)


# ---------------------------------------------------------------- layers
CENTRE_MODES = ("sample", "patch", "none")
GRADIENTS = ("g_gradient", "ste")


def n_features(dim: int, nu: float, min_features: int = 0) -> int:
    """N random features of a layer with input dimension d: max(min_features, int(nu d)), the
    authors' rule (CIFAR `Conv2dGGM`: max(500, int(K N_scale)); `linearggm`: int(N_factor d))."""
    return max(1, int(min_features), int(nu * dim))


def _centre_mode(centre) -> str:
    if centre is True:
        return "patch"
    if centre is False or centre is None:
        return "none"
    if centre not in CENTRE_MODES:
        raise ValueError(f"angular centre must be one of {CENTRE_MODES}, got {centre!r}")
    return centre


class _AngularBase(nn.Module):
    def _setup(self, dim: int, out: int, nu: float, a_bits: float, w_bits: float, bias: bool,
               centre, projection_kind: str, seed: int, min_features: int = 0, gain_init: float = 1.0,
               gradient: str = "g_gradient"):
        self.dim, self.out_features, self.nu = dim, out, float(nu)
        self.a_bits, self.w_bits, self.centre = float(a_bits), float(w_bits), _centre_mode(centre)
        if gradient not in GRADIENTS:
            raise ValueError(f"angular gradient must be one of {GRADIENTS}, got {gradient!r}")
        if gradient == "ste" and (self.a_bits != 1 or self.w_bits != 1):
            raise ValueError("the straight-through variant of an angular layer is 1-bit only")
        self.gradient = gradient
        self.qa, self.qw = quantizer(a_bits), quantizer(w_bits)
        self.min_features = int(min_features)
        self.n_rows = n_features(dim, nu, min_features)
        self.projection_kind, self.projection_seed = projection_kind, int(seed)
        self.register_buffer("G", self._make_projection(int(seed)))
        self.scale = 1.0 / (self.n_rows * normaliser(self.a_bits, self.w_bits))
        self.gain = nn.Parameter(torch.full((out,), float(gain_init)))
        self.bias = nn.Parameter(torch.zeros(out)) if bias else None
        if self.a_bits != 1 or self.w_bits != 1:
            kernel_table(self.a_bits, self.w_bits)  # tabulate once, up front

    def _make_projection(self, seed: int) -> torch.Tensor:
        G = projection(self.n_rows, self.dim, self.projection_kind, torch.Generator().manual_seed(seed))
        # patch centring: centring x is the same as centring the rows of G, since G (P x) = (G P) x
        return centre_rows(G) if self.centre == "patch" else G

    @torch.no_grad()
    def resample_projection(self, round_index: int) -> None:
        """Draw a fresh G (round r of the training loop's resampling), reproducible from the
        layer's seed and r."""
        self.G.copy_(self._make_projection(self.projection_seed + 1_000_003 * int(round_index)).to(self.G))

    def effective_weight(self) -> torch.Tensor:
        w = self.weight.flatten(1)
        return centre_rows(w) if self.centre == "patch" else w

    def weight_codes(self) -> torch.Tensor:
        """The stored low-bit weights: codes of q_w(G w_c / |w_c|), shape (N, out)."""
        w = self.effective_weight()
        z = (self.G @ w.T) / w.norm(dim=1).clamp_min(1e-12)
        return quantize_codes(z, self.qw)

    def _combine(self, estimate, cosine, shape_fn):
        if self.gradient == "ste":
            y = estimate  # straight-through signs: the gradient came with the estimate
        else:
            surrogate = angular_kernel(cosine, self.a_bits, self.w_bits)
            y = estimate.detach() + (surrogate - surrogate.detach())
        y = y * shape_fn(self.gain)
        if self.bias is not None:
            y = y + shape_fn(self.bias)
        return y

    def extra_repr(self):
        return (f"dim={self.dim}, out={self.out_features}, N={self.n_rows} (nu={self.nu}, min {self.min_features}), "
                f"bits w{self.w_bits:g}/a{self.a_bits:g}, centre={self.centre}, G={self.projection_kind}, "
                f"gradient={self.gradient}")


def _ste_sign(z: torch.Tensor) -> torch.Tensor:
    from .baselines import sign_ste

    return sign_ste(z)


class AngularLinear(_AngularBase):
    """Drop-in for nn.Linear(in_features, out_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, nu: float = 1.0,
                 a_bits: float = 1, w_bits: float = 1, centre="sample",
                 projection_kind: str = "gaussian", seed: int = 0, min_features: int = 0,
                 gain_init: float = 1.0, gradient: str = "g_gradient"):
        super().__init__()
        self.in_features = in_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        self._setup(in_features, out_features, nu, a_bits, w_bits, bias, centre, projection_kind, seed,
                    min_features, gain_init, gradient)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.effective_weight()
        # a linear layer's input vector is one sample (a token): "sample" and "patch" centre it alike
        xc = centre_rows(x) if self.centre != "none" else x
        x_norm = (xc.square().sum(-1, keepdim=True) + 1e-6).sqrt()
        w_norm = w.norm(dim=1).clamp_min(1e-12)
        G = self.G
        if self.gradient == "ste":
            zx = (xc @ G.T) / x_norm
            zw = (w @ G.T) / w_norm[:, None]
            return self._combine((_ste_sign(zx) @ _ste_sign(zw).T) * self.scale, None, lambda t: t)
        with torch.no_grad():
            zx = (xc @ G.T) / x_norm
            zw = (w @ G.T) / w_norm[:, None]
            estimate = (quantize(zx, self.qa) @ quantize(zw, self.qw).T) * self.scale
        cosine = (xc / x_norm) @ (w / w_norm[:, None]).T
        return self._combine(estimate, cosine, lambda t: t)


class AngularConv2d(_AngularBase):
    """Drop-in for nn.Conv2d: every receptive-field patch (d = C k k) is an input vector.
    centre="sample" subtracts each sample's mean over (C, H, W) before the patches are taken
    (the authors' ImageNet `Conv2dGGM`); "patch" centres every patch and weight row."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, bias: bool = True, nu: float = 1.0, a_bits: float = 1,
                 w_bits: float = 1, centre="sample", projection_kind: str = "gaussian", seed: int = 0,
                 min_features: int = 0, gain_init: float = 1.0, gradient: str = "g_gradient"):
        super().__init__()
        self.in_channels, self.kernel_size, self.stride, self.padding = in_channels, kernel_size, stride, padding
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size, kernel_size))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        self._setup(in_channels * kernel_size ** 2, out_channels, nu, a_bits, w_bits, bias, centre,
                    projection_kind, seed, min_features, gain_init, gradient)

    def _conv(self, x, kernels):
        return F.conv2d(x, kernels.reshape(-1, self.in_channels, self.kernel_size, self.kernel_size),
                        stride=self.stride, padding=self.padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.dim
        if self.centre == "sample":
            x = x - x.mean(dim=(1, 2, 3), keepdim=True)
        w = self.effective_weight()
        w_norm = w.norm(dim=1).clamp_min(1e-12)
        ones = torch.ones(1, d, dtype=x.dtype, device=x.device)
        patch_sq = self._conv(x * x, ones)
        # |x_c|^2 = |x|^2 - (sum x)^2 / d per patch
        sq = patch_sq - self._conv(x, ones) ** 2 / d if self.centre == "patch" else patch_sq
        x_norm = (sq.clamp_min(0) + 1e-6).sqrt()
        if self.gradient == "ste":
            zx = self._conv(x, self.G) / x_norm
            zw = (w @ self.G.T) / w_norm[:, None]
            estimate = (_ste_sign(zx).movedim(1, -1) @ _ste_sign(zw).T).movedim(-1, 1) * self.scale
            return self._combine(estimate, None, lambda t: t.view(1, -1, 1, 1))
        with torch.no_grad():
            zx = self._conv(x, self.G) / x_norm  # in patch mode G has centred rows: this is G x_c
            zw = (w @ self.G.T) / w_norm[:, None]
            qx = quantize(zx.movedim(1, -1), self.qa)
            estimate = (qx @ quantize(zw, self.qw).T).movedim(-1, 1) * self.scale
        # patch mode: x . w_c = x_c . w_c, since w_c sums to zero
        cosine = self._conv(x, w / w_norm[:, None]) / x_norm
        return self._combine(estimate, cosine, lambda t: t.view(1, -1, 1, 1))


# ---------------------------------------------------------------- bit packing
def pack_codes(codes: np.ndarray, bits: float) -> bytes:
    """Pack integer codes: 1, 2 or 4 bits each, or ternary as 5 trits per byte (1.6 bits)."""
    codes = np.asarray(codes, dtype=np.uint8).ravel()
    if bits == 1.58:
        pad = (-len(codes)) % 5
        c = np.concatenate([codes, np.zeros(pad, np.uint8)]).reshape(-1, 5).astype(np.uint16)
        return (c @ (3 ** np.arange(5, dtype=np.uint16))).astype(np.uint8).tobytes()
    b = int(bits)
    if b not in (1, 2, 4, 8) and b != 3:
        raise ValueError(f"cannot pack {bits}-bit codes")
    if b == 8:
        return codes.tobytes()
    if b == 3:  # 3-bit codes in a plain bit stream
        bitstream = ((codes[:, None] >> np.arange(3)) & 1).astype(np.uint8).ravel()
        return np.packbits(bitstream, bitorder="little").tobytes()
    per = 8 // b
    pad = (-len(codes)) % per
    c = np.concatenate([codes, np.zeros(pad, np.uint8)]).reshape(-1, per)
    return (c << (np.arange(per, dtype=np.uint8) * b)).sum(1).astype(np.uint8).tobytes()


def unpack_codes(data: bytes, bits: float, count: int) -> np.ndarray:
    raw = np.frombuffer(data, dtype=np.uint8)
    if bits == 1.58:
        out = (raw[:, None].astype(np.uint16) // (3 ** np.arange(5, dtype=np.uint16))) % 3
        return out.ravel()[:count].astype(np.uint8)
    b = int(bits)
    if b == 8:
        return raw[:count].copy()
    if b == 3:
        bitstream = np.unpackbits(raw, bitorder="little")[:count * 3].reshape(-1, 3)
        return (bitstream << np.arange(3, dtype=np.uint8)).sum(1).astype(np.uint8)
    per = 8 // b
    out = (raw[:, None] >> (np.arange(per, dtype=np.uint8) * b)) & ((1 << b) - 1)
    return out.ravel()[:count].astype(np.uint8)


def packed_sign_matmul(x_bits: np.ndarray, w_bits: np.ndarray, n: int) -> np.ndarray:
    """(1/n) sum_j s_x[j] s_w[j] for sign vectors packed as uint64 words (bit 1 = +1):
    agreements minus disagreements = n - 2 popcount(x xor w)."""
    xor = np.bitwise_xor(x_bits[:, None, :], w_bits[None, :, :])
    mismatches = np.bitwise_count(xor).sum(-1, dtype=np.int64)
    return (n - 2 * mismatches) / n


def pack_signs_u64(signs: np.ndarray) -> np.ndarray:
    """Rows of +-1 (or >= 0 / < 0) to rows of uint64 words, padded with agreeing zeros."""
    bits = (np.asarray(signs) >= 0).astype(np.uint8)
    pad = (-bits.shape[1]) % 64
    bits = np.concatenate([bits, np.zeros((bits.shape[0], pad), np.uint8)], axis=1)
    return np.packbits(bits, axis=1, bitorder="little").view(np.uint64)
