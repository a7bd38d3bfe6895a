"""Angular Nets: a small ResNet, a tiny ViT and a small BERT-style encoder whose linear,
convolution and attention projections are built by a `LayerFactory`, so the same backbone
runs with full-precision, BNN, XNOR-Net, LSQ or angular layers. Stems (first conv, patch
embedding, token embeddings) and heads stay full precision, as in the paper's recipes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .angular import AngularConv2d, AngularLinear
from .baselines import BinaryConv2d, BinaryLinear, LSQConv2d, LSQLinear

METHODS = ("fp", "bnn", "xnor", "lsq", "angular", "angular_ste")
# angular_ste: the angular W1/A1 forward (signs of the same fp projections G x and G w), trained
# with a straight-through sign instead of the G-Gradient: the STE baseline that binarises the
# same tensors as the 1-bit angular layer.
ANGULAR = ("angular", "angular_ste")


@dataclass
class LayerSpec:
    """Which layer replaces the backbone's linear maps. bits: weights (and activations for
    lsq); a_bits: activation bits of angular layers (defaults to bits)."""

    method: str = "fp"
    bits: float = 32
    a_bits: float | None = None
    nu: float = 1.0
    projection: str = "gaussian"
    centre: str = "sample"
    seed: int = 0
    min_features: int = 0
    gain_init: float = 1.0

    @property
    def weight_bits(self) -> float:
        return 32.0 if self.method == "fp" else (1.0 if self.method in ("bnn", "xnor", "angular_ste") else float(self.bits))

    @property
    def activation_bits(self) -> float:
        if self.method in ANGULAR:
            return float(self.a_bits if self.a_bits is not None else self.bits)
        return self.weight_bits


class LayerFactory:
    def __init__(self, spec: LayerSpec):
        if spec.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {spec.method!r}")
        self.spec = spec
        self.count = 0

    def _angular_kwargs(self):
        s = self.spec
        self.count += 1  # a fresh projection per layer, reproducible from the spec's seed
        return dict(nu=s.nu, a_bits=s.activation_bits, w_bits=s.weight_bits, centre=s.centre,
                    projection_kind=s.projection, seed=s.seed * 1000 + self.count, min_features=s.min_features,
                    gain_init=s.gain_init, gradient="ste" if s.method == "angular_ste" else "g_gradient")

    def linear(self, d_in, d_out, bias=True, signed_input=True):
        m = self.spec.method
        if m == "fp":
            return nn.Linear(d_in, d_out, bias)
        if m in ("bnn", "xnor"):
            return BinaryLinear(d_in, d_out, bias, xnor=m == "xnor")
        if m == "lsq":
            return LSQLinear(d_in, d_out, bias, bits=int(self.spec.bits), signed_input=signed_input)
        return AngularLinear(d_in, d_out, bias, **self._angular_kwargs())

    def conv(self, c_in, c_out, k, stride=1, padding=0, bias=False, signed_input=True):
        m = self.spec.method
        if m == "fp":
            return nn.Conv2d(c_in, c_out, k, stride=stride, padding=padding, bias=bias)
        if m in ("bnn", "xnor"):
            return BinaryConv2d(c_in, c_out, k, stride, padding, bias, xnor=m == "xnor")
        if m == "lsq":
            return LSQConv2d(c_in, c_out, k, stride, padding, bias, bits=int(self.spec.bits), signed_input=signed_input)
        return AngularConv2d(c_in, c_out, k, stride, padding, bias, **self._angular_kwargs())

    @property
    def activation(self) -> type[nn.Module]:
        # sign(ReLU(v)) is constant, so the straight-through binary nets use hard-tanh (as BNN does)
        return nn.Hardtanh if self.spec.method in ("bnn", "xnor") else nn.ReLU


# ---------------------------------------------------------------- ResNet
class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride, factory: LayerFactory):
        super().__init__()
        act = factory.activation
        signed = act is not nn.ReLU
        self.conv1 = factory.conv(c_in, c_out, 3, stride, 1, signed_input=signed)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = factory.conv(c_out, c_out, 3, 1, 1, signed_input=signed)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.act1, self.act2 = act(), act()
        self.stride, self.pad = stride, c_out - c_in

    def shortcut(self, x):
        # parameter-free option-A shortcut: average-pool and zero-pad the channels
        if self.stride > 1:
            x = F.avg_pool2d(x, self.stride)
        return F.pad(x, (0, 0, 0, 0, 0, self.pad)) if self.pad else x

    def forward(self, x):
        out = self.act1(self.bn1(self.conv1(x)))
        return self.act2(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """CIFAR-style ResNet: full-precision stem, stages of BasicBlocks, full-precision head."""

    def __init__(self, factory: LayerFactory, in_channels=3, num_classes=10, widths=(16, 32, 64), blocks=1):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(widths[0]), factory.activation())
        layers, c = [], widths[0]
        for i, w in enumerate(widths):
            for j in range(blocks):
                layers.append(BasicBlock(c, w, 2 if (i > 0 and j == 0) else 1, factory))
                c = w
        self.stages = nn.Sequential(*layers)
        self.head = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.head(self.stages(self.stem(x)).mean((2, 3)))


# ---------------------------------------------------------------- ViT
class Attention(nn.Module):
    def __init__(self, dim, heads, factory: LayerFactory):
        super().__init__()
        self.heads = heads
        self.qkv = factory.linear(dim, 3 * dim)
        self.proj = factory.linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class ViTBlock(nn.Module):
    def __init__(self, dim, heads, mlp, factory: LayerFactory):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, factory)
        self.fc1, self.fc2 = factory.linear(dim, mlp), factory.linear(mlp, dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    """Tiny ViT: full-precision patch embedding and head, pre-norm blocks with swapped projections."""

    def __init__(self, factory: LayerFactory, image_size=16, patch=4, in_channels=3, num_classes=10,
                 dim=64, depth=2, heads=4, mlp_ratio=2.0):
        super().__init__()
        self.embed = nn.Conv2d(in_channels, dim, patch, patch)
        n = (image_size // patch) ** 2
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads, int(dim * mlp_ratio), factory) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(len(t), -1, -1), t], 1) + self.pos
        return self.head(self.norm(self.blocks(t))[:, 0])


# ---------------------------------------------------------------- BERT-style encoder
BERT_PROJECTIONS = ("attention.self.query", "attention.self.key", "attention.self.value",
                    "attention.output.dense", "intermediate.dense", "output.dense")


class BertClassifier(nn.Module):
    """transformers' BertModel at tiny size with every encoder projection swapped for the
    factory's layer; full-precision embeddings and a linear head on [CLS]."""

    def __init__(self, factory: LayerFactory, vocab_size, max_len, num_classes, dim=64, depth=2, heads=4,
                 mlp_ratio=2.0):
        super().__init__()
        from transformers import BertConfig, BertModel

        config = BertConfig(vocab_size=vocab_size, hidden_size=dim, num_hidden_layers=depth,
                            num_attention_heads=heads, intermediate_size=int(dim * mlp_ratio),
                            max_position_embeddings=max_len, type_vocab_size=2, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0)
        self.bert = BertModel(config, add_pooling_layer=False)
        for layer in self.bert.encoder.layer:
            for path in BERT_PROJECTIONS:
                parent_path, name = path.rsplit(".", 1)
                parent = layer.get_submodule(parent_path)
                old = getattr(parent, name)
                setattr(parent, name, factory.linear(old.in_features, old.out_features, old.bias is not None))
        self.head = nn.Linear(dim, num_classes)

    def forward(self, ids, mask):
        return self.head(self.bert(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0])


def build(backbone: str, spec: LayerSpec, arch: dict, data_info: dict) -> nn.Module:
    factory = LayerFactory(spec)
    if backbone == "resnet":
        return ResNet(factory, data_info["channels"], data_info["num_classes"], tuple(arch["widths"]), arch["blocks"])
    if backbone == "vit":
        return ViT(factory, data_info["image_size"], arch["patch"], data_info["channels"], data_info["num_classes"],
                   arch["dim"], arch["depth"], arch["heads"], arch["mlp_ratio"])
    if backbone == "bert":
        return BertClassifier(factory, data_info["vocab_size"], data_info["max_len"], data_info["num_classes"],
                              arch["dim"], arch["depth"], arch["heads"], arch["mlp_ratio"])
    raise ValueError(f"backbone must be resnet, vit or bert, got {backbone!r}")
