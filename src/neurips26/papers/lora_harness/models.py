"""Models of the harness and their LoRA adapters.

`minilm_classifier`: the last layer of the packaged all-MiniLM-L6-v2 at the [CLS] position with
a linear head (`data.text_classification.CLSLayerClassifier`: its Linear maps are `query`, `key`,
`value`, `attn_out`, `ffn_in`, `ffn_out`), frozen; the head trains. `tiny_lm`: a causal LM
folder of `lm_assets` (or any Hugging Face id / path at paper scale) and its tokenizer.

`add_lora` injects peft LoRA (W = W0 + s B A, s = alpha / r; A ~ peft's Kaiming init, B = 0) on
the named Linear maps; only the adapters (and a classifier head) train. `lora_pairs` lists every
adapted map's (A, B, s, W0): what pair-aware optimizers (AdaPreLoRA, LoRA-Pro, ScaledAdamW)
need, since W's gradient and the factors' grads are tied by dL/dB = s G A^T, dL/dA = s B^T G.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

ADAPTER = "default"


@dataclass
class LoraPair:
    name: str
    A: nn.Parameter       # (r, n_in)
    B: nn.Parameter       # (m_out, r)
    scaling: float
    base: nn.Module       # the frozen Linear (W0: (m_out, n_in))


def minilm_classifier(classes: int, encoder_dir=None, seed: int = 0):
    """The frozen last MiniLM layer read at [CLS] and a linear head initialised from `seed`."""
    from ...data import text_classification as fed_tasks

    net = fed_tasks.last_layer(encoder_dir, classes)
    gen = torch.Generator().manual_seed(int(seed))
    bound = 1.0 / net.head.in_features ** 0.5
    with torch.no_grad():
        net.head.weight.copy_((torch.rand(net.head.weight.shape, generator=gen) * 2 - 1) * bound)
        net.head.bias.zero_()
    return net


def tiny_lm(model_dir):
    """(model, tokenizer) of a causal LM folder or Hugging Face id, float32, all frozen."""
    from neurips26.core import lm

    model = lm.load_model(model_dir)
    tok = lm.load_tokenizer(model_dir)
    for p in model.parameters():
        p.requires_grad_(False)
    return model, tok


def add_lora(net: nn.Module, rank: int, targets=("query", "value"), alpha: float | None = None, seed: int = 0,
             dropout: float = 0.0, keep_trainable=("head",)) -> nn.Module:
    """peft LoRA of rank `rank` on the Linear maps named in `targets` (lora_alpha = alpha,
    default rank: s = 1), initialised from `seed`; the modules in `keep_trainable` (a
    classifier head) stay trainable, every other non-adapter parameter is frozen."""
    from peft import LoraConfig, inject_adapter_in_model

    keep = {n: [p for p in getattr(net, n).parameters()] for n in keep_trainable if hasattr(net, n)}
    state = torch.get_rng_state()
    torch.manual_seed(int(seed))
    try:
        inject_adapter_in_model(LoraConfig(r=int(rank), lora_alpha=float(alpha if alpha is not None else rank),
                                           lora_dropout=float(dropout), target_modules=list(targets)), net)
    finally:
        torch.set_rng_state(state)
    for name, p in net.named_parameters():
        p.requires_grad_("lora_" in name)
    for ps in keep.values():
        for p in ps:
            p.requires_grad_(True)
    return net


def lora_pairs(net: nn.Module, adapter: str = ADAPTER) -> list[LoraPair]:
    """Every peft LoRA Linear of `net`, in module order."""
    out = []
    for name, m in net.named_modules():
        if hasattr(m, "lora_A") and hasattr(m, "base_layer") and adapter in getattr(m, "lora_A", {}):
            out.append(LoraPair(name, m.lora_A[adapter].weight, m.lora_B[adapter].weight,
                                float(m.scaling[adapter]), m.base_layer))
    return out


def adapter_parameters(net: nn.Module) -> int:
    """Parameters of the deployed adapter: sum over adapted maps of r (m + n)."""
    return int(sum(p.A.numel() + p.B.numel() for p in lora_pairs(net)))
