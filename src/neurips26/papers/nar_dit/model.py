"""Class-conditional Diffusion Transformer with stochastic token routing (TREAD) and
Noise-Aware Routing (NAR).

DiT (Peebles & Xie, 2023): patchify, adaLN-Zero blocks conditioned on timestep and class,
a linear decoder back to patches. TREAD (Krause et al., 2025): during training a fresh random
subset of each sample's tokens skips blocks route_start..route_end and is scattered back to its
position after route_end, so those blocks see only the kept tokens. NAR (this paper): the
routing ratio of a sample depends on its noise level; each mini-batch is split by noise level
into low, middle and high groups with increasing ratios r_low < r_mid < r_high, which, read as
an implicit route-sensitivity regulariser E_r ||f(x; route) - f(x)||^2, puts the strongest
regularisation on the noisiest samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

# DiT's size presets (depth, hidden, heads), plus two small ones for CPU scales.
PRESETS = {
    "XL": (28, 1152, 16), "L": (24, 1024, 16), "B": (12, 768, 12), "S": (12, 384, 6),
    "XS": (8, 256, 4), "T": (6, 128, 4),
}


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def sincos_pos_embed_2d(dim: int, grid: int) -> torch.Tensor:
    """Fixed 2-D sine-cosine position embedding (grid*grid, dim), as in DiT/MAE."""
    if dim % 4:
        raise ValueError(f"hidden size {dim} must be divisible by 4 for 2-D sin-cos embeddings")
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim / 4.0))
    coords = torch.arange(grid, dtype=torch.float64)
    gy, gx = torch.meshgrid(coords, coords, indexing="ij")

    def emb(pos):
        out = pos.reshape(-1, 1) * omega.reshape(1, -1)
        return torch.cat([torch.sin(out), torch.cos(out)], dim=1)

    return torch.cat([emb(gx), emb(gy)], dim=1).float()


class TimestepEmbedder(nn.Module):
    """Scalar timestep (noise level, t in [0, 1]) -> vector, through sinusoids and an MLP."""

    def __init__(self, hidden: int, freq_dim: int = 256):
        super().__init__()
        self.freq_dim = freq_dim
        self.mlp = nn.Sequential(nn.Linear(freq_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = self.freq_dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
        args = (t.float() * 1000.0)[:, None] * freqs[None]
        return self.mlp(torch.cat([torch.cos(args), torch.sin(args)], dim=-1))


class LabelEmbedder(nn.Module):
    """Class labels -> vectors; index `num_classes` is the null class used for guidance."""

    def __init__(self, num_classes: int, hidden: int, dropout: float):
        super().__init__()
        self.num_classes = num_classes
        self.dropout = dropout
        self.table = nn.Embedding(num_classes + 1, hidden)

    def forward(self, y: torch.Tensor, train: bool) -> torch.Tensor:
        if train and self.dropout > 0:
            drop = torch.rand(y.shape[0], device=y.device) < self.dropout
            y = torch.where(drop, torch.full_like(y, self.num_classes), y)
        return self.table(y)


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        out = nn.functional.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class DiTBlock(nn.Module):
    """Transformer block with adaLN-Zero conditioning (shift, scale, gate for attn and MLP)."""

    def __init__(self, hidden: int, heads: int, mlp_ratio: float = 4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.attn = Attention(hidden, heads)
        self.norm2 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        inner = int(hidden * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(hidden, inner), nn.GELU(approximate="tanh"), nn.Linear(inner, hidden))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 6 * hidden))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + gate_a.unsqueeze(1) * self.attn(modulate(self.norm1(x), shift_a, scale_a))
        return x + gate_m.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_m, scale_m))


class FinalLayer(nn.Module):
    def __init__(self, hidden: int, patch: int, out_channels: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(hidden, patch * patch * out_channels)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 2 * hidden))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        return self.linear(modulate(self.norm(x), shift, scale))


@dataclass(frozen=True)
class DiTConfig:
    image_size: int = 16
    in_channels: int = 3
    patch: int = 2
    depth: int = 6
    hidden: int = 128
    heads: int = 4
    mlp_ratio: float = 4.0
    num_classes: int = 10
    class_dropout: float = 0.1

    @classmethod
    def from_preset(cls, preset: str, **kw) -> "DiTConfig":
        if preset not in PRESETS:
            raise KeyError(f"unknown DiT preset '{preset}'; presets: {', '.join(PRESETS)}")
        depth, hidden, heads = PRESETS[preset]
        return cls(depth=depth, hidden=hidden, heads=heads, **kw)

    @property
    def tokens(self) -> int:
        return (self.image_size // self.patch) ** 2


class DiT(nn.Module):
    """DiT with an optional routed segment: blocks route_start..route_end (inclusive) run on a
    per-sample subset of tokens; the others bypass them and are scattered back unchanged."""

    def __init__(self, cfg: DiTConfig):
        super().__init__()
        if cfg.image_size % cfg.patch:
            raise ValueError(f"image_size {cfg.image_size} is not divisible by patch {cfg.patch}")
        self.cfg = cfg
        self.x_embedder = nn.Conv2d(cfg.in_channels, cfg.hidden, kernel_size=cfg.patch, stride=cfg.patch)
        self.t_embedder = TimestepEmbedder(cfg.hidden)
        self.y_embedder = LabelEmbedder(cfg.num_classes, cfg.hidden, cfg.class_dropout)
        self.register_buffer("pos_embed", sincos_pos_embed_2d(cfg.hidden, cfg.image_size // cfg.patch)[None],
                             persistent=False)
        self.blocks = nn.ModuleList(DiTBlock(cfg.hidden, cfg.heads, cfg.mlp_ratio) for _ in range(cfg.depth))
        self.final_layer = FinalLayer(cfg.hidden, cfg.patch, cfg.in_channels)
        self.initialize_weights()

    def initialize_weights(self) -> None:
        """DiT's init: xavier linears, zeroed adaLN modulation and output layer (adaLN-Zero)."""
        def basic(m):
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        self.apply(basic)
        w = self.x_embedder.weight.data
        nn.init.xavier_uniform_(w.view(w.shape[0], -1))
        nn.init.zeros_(self.x_embedder.bias)
        nn.init.normal_(self.y_embedder.table.weight, std=0.02)
        nn.init.normal_(self.t_embedder.mlp[0].weight, std=0.02)
        nn.init.normal_(self.t_embedder.mlp[2].weight, std=0.02)
        for block in self.blocks:
            nn.init.zeros_(block.adaLN_modulation[-1].weight)
            nn.init.zeros_(block.adaLN_modulation[-1].bias)
        for layer in (self.final_layer.adaLN_modulation[-1], self.final_layer.linear):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def unpatchify(self, x: torch.Tensor) -> torch.Tensor:
        p, c = self.cfg.patch, self.cfg.in_channels
        h = w = int(x.shape[1] ** 0.5)
        x = x.reshape(x.shape[0], h, w, p, p, c)
        return torch.einsum("nhwpqc->nchpwq", x).reshape(x.shape[0], c, h * p, w * p)

    def embed(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos_embed
        return tokens, self.t_embedder(t) + self.y_embedder(y, self.training)

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor,
                route_ratios: torch.Tensor | None = None, route_start: int = 0, route_end: int = -1,
                generator: torch.Generator | None = None) -> torch.Tensor:
        """Predict the velocity. `route_ratios` (B,) is each sample's routing ratio; None or all
        zero runs the dense model."""
        h, c = self.embed(x, t, y)
        routed = route_ratios is not None and bool((route_ratios > 0).any())
        end = route_end % len(self.blocks)
        k = 0
        while k < len(self.blocks):
            if routed and k == route_start:
                h = self.routed_segment(h, c, route_ratios, route_start, end, generator)
                k = end + 1
                continue
            h = self.blocks[k](h, c)
            k += 1
        return self.unpatchify(self.final_layer(h, c))

    def routed_segment(self, h: torch.Tensor, c: torch.Tensor, ratios: torch.Tensor, start: int, end: int,
                       generator: torch.Generator | None = None) -> torch.Tensor:
        """Run blocks start..end on each sample's kept tokens; routed tokens bypass them.

        Samples with the same ratio keep the same number of tokens and form one sub-batch,
        so the segment costs (1 - ratio) of its dense work, as in TREAD."""
        b, n, d = h.shape
        out = h.clone()
        for ratio in torch.unique(ratios).tolist():
            idx = (ratios == ratio).nonzero(as_tuple=True)[0]
            keep = kept_tokens(n, ratio)
            # drawn where the generator lives (a seeded CPU generator gives the same routes on any device)
            scores = torch.rand(len(idx), n, generator=generator, device=generator.device if generator is not None else h.device)
            perm = torch.argsort(scores.to(h.device), dim=1)[:, :keep]
            sub = torch.gather(h[idx], 1, perm.unsqueeze(-1).expand(-1, -1, d))
            for block in self.blocks[start:end + 1]:
                sub = block(sub, c[idx])
            rows = out[idx]
            rows.scatter_(1, perm.unsqueeze(-1).expand(-1, -1, d), sub)
            out[idx] = rows
        return out


def kept_tokens(n_tokens: int, ratio: float) -> int:
    """Tokens that go through the routed blocks at routing ratio `ratio` (at least one)."""
    return max(1, n_tokens - int(round(ratio * n_tokens)))


def noise_group(t: torch.Tensor, boundaries: tuple[float, ...] = (1 / 3, 2 / 3)) -> torch.Tensor:
    """Group index of each sample by its noise level's rank within the mini-batch:
    0 = lowest-noise part, len(boundaries) = highest. Boundaries are rank quantiles."""
    b = t.shape[0]
    rank = torch.empty(b, dtype=torch.long, device=t.device)
    rank[torch.argsort(t, stable=True)] = torch.arange(b, device=t.device)
    quantile = (rank.double() + 0.5) / b
    bounds = torch.tensor(boundaries, dtype=torch.float64, device=t.device)
    return torch.bucketize(quantile, bounds, right=True)


@dataclass(frozen=True)
class RoutingPolicy:
    """How each sample of a mini-batch gets its routing ratio.

    kind: 'none' (plain DiT), 'tread' (one ratio for all), 'nar' (ratio by noise group:
    `ratios` low -> high noise, split at the rank quantiles `boundaries`)."""

    kind: str = "none"
    ratio: float = 0.0
    ratios: tuple[float, ...] = ()
    boundaries: tuple[float, ...] = (1 / 3, 2 / 3)
    route_start: int = 1
    route_end: int = -2

    def __post_init__(self):
        if self.kind not in ("none", "tread", "nar"):
            raise ValueError(f"unknown routing kind '{self.kind}' (none, tread, nar)")
        if self.kind == "nar" and len(self.ratios) != len(self.boundaries) + 1:
            raise ValueError(f"NAR needs one ratio per noise group: {len(self.boundaries) + 1} ratios "
                             f"for boundaries {self.boundaries}, got {self.ratios}")

    def ratios_for(self, t: torch.Tensor) -> torch.Tensor | None:
        if self.kind == "none":
            return None
        if self.kind == "tread":
            return torch.full_like(t, self.ratio, dtype=torch.float32)
        table = torch.tensor(self.ratios, dtype=torch.float32, device=t.device)
        return table[noise_group(t, self.boundaries)]

    def mean_ratio(self) -> float:
        if self.kind == "none":
            return 0.0
        if self.kind == "tread":
            return self.ratio
        edges = (0.0, *self.boundaries, 1.0)
        return sum(r * (hi - lo) for r, lo, hi in zip(self.ratios, edges[:-1], edges[1:]))


def forward_flops(cfg: DiTConfig, tokens_per_block: list[int]) -> float:
    """Multiply-adds x2 of one forward pass for one sample, given the tokens each block sees
    (linear layers 2*(4 + 2*mlp_ratio)*d^2 per token, attention 4*n*d per token)."""
    d = cfg.hidden
    per_token_linear = 2 * (4 + 2 * cfg.mlp_ratio) * d * d
    total = 0.0
    for n in tokens_per_block:
        total += n * per_token_linear + 4 * n * n * d
    n_all = cfg.tokens
    patch_dim = cfg.patch * cfg.patch * cfg.in_channels
    total += 2 * n_all * patch_dim * d * 2  # embed and final linear
    return total


def train_step_flops(cfg: DiTConfig, policy: RoutingPolicy, batch: int) -> float:
    """Expected FLOPs of one training step (forward + backward ~ 3x forward) under `policy`,
    averaged over the noise groups by their share of the batch."""
    n = cfg.tokens
    start, end = policy.route_start, policy.route_end % cfg.depth
    if policy.kind == "none":
        shares = [(1.0, 0.0)]
    elif policy.kind == "tread":
        shares = [(1.0, policy.ratio)]
    else:
        edges = (0.0, *policy.boundaries, 1.0)
        shares = [(hi - lo, r) for r, lo, hi in zip(policy.ratios, edges[:-1], edges[1:])]
    flops = 0.0
    for share, ratio in shares:
        kept = kept_tokens(n, ratio) if ratio > 0 else n
        per_block = [kept if start <= k <= end else n for k in range(cfg.depth)]
        flops += share * forward_flops(cfg, per_block)
    return 3.0 * flops * batch
