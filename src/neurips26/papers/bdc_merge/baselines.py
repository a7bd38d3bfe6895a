"""Baselines of BDC-Merge, all producing a `method.FusionPlan` fused by `method.fuse`.

Transport and Merge (cross-architecture merging by optimal transport): neuron cost
C_ij = 1 - rho_ij (Pearson), inner entropic transport Q_lm = Sinkhorn(C, uniform, uniform)
(POT's `ot.sinkhorn`) for every source/target layer pair, layer cost c_lm = <C_lm, Q_lm> on
the layers' outputs, outer transport P = Sinkhorn(c) between layers; a source weight maps to
the target's shape through the barycentric maps Out = diag(1/b) Q^T and In = diag(1/a) Q and is
fused with the target's attention weights (q/k/v/o) with layer weights P_lm / sum_l P_lm.
Its supervised adaptation after fusion trains LoRA adapters (peft) on the calibration text.

Naive truncate-and-average: target layer m takes source layer round(m (L_s - 1) / (L_t - 1)),
and every source weight is cut to the target's shape (leading rows and columns) and averaged.
"""

from __future__ import annotations

import numpy as np
import torch

from . import activations as act
from .method import FusionPlan


def sinkhorn_plan(cost: torch.Tensor, reg: float, iterations: int) -> torch.Tensor:
    import ot

    c = cost.double().numpy()
    a = np.full(c.shape[0], 1.0 / c.shape[0])
    b = np.full(c.shape[1], 1.0 / c.shape[1])
    Q = ot.sinkhorn(a, b, c, reg, numItermax=iterations, stopThr=1e-7)
    return torch.from_numpy(np.asarray(Q)).float()


def transport_maps(src: torch.Tensor, tgt: torch.Tensor, reg: float, iterations: int):
    cost = 1.0 - act.pearson(src, tgt)
    Q = sinkhorn_plan(cost, reg, iterations)                     # (d_s x d_t)
    out = Q.T / Q.sum(0)[:, None].clamp_min(1e-30)               # (d_t x d_s), rows sum to 1
    inn = Q / Q.sum(1)[:, None].clamp_min(1e-30)                 # (d_s x d_t), rows sum to 1
    return out, inn, float((cost * Q).sum())


def transport_plan(source_acts: act.Activations, target_acts: act.Activations, matrices: list[str],
                   reg_inner: float, reg_outer: float, iterations: int, layer_top_k: int | None = None,
                   shared_vocabulary: bool = False) -> FusionPlan:
    """Transport and Merge's plan. `layer_top_k` keeps, per target layer, only the source layers
    with the largest outer-plan mass (renormalised), so operators are built only for the layer
    pairs in use (None: every pair, as the public code); embed_tokens / lm_head are mapped through
    the transport between the embedding outputs / LM-head inputs when the vocabularies match."""
    Ls, Lt = len(source_acts.layers), len(target_acts.layers)
    layer_cost = torch.zeros(Ls, Lt)
    for l in range(Ls):
        for m in range(Lt):
            layer_cost[l, m] = transport_maps(source_acts.layers[l]["hidden"], target_acts.layers[m]["hidden"],
                                              reg_inner, iterations)[2]
    P = sinkhorn_plan(layer_cost, reg_outer, iterations)
    if layer_top_k is not None and layer_top_k < Ls:
        keep = torch.zeros_like(P, dtype=torch.bool)
        keep.scatter_(0, P.topk(layer_top_k, dim=0).indices, True)
        P = P * keep
    weights = P / P.sum(0, keepdim=True)
    result = FusionPlan(layer_weights=weights, matrices=tuple(matrices), layer_dependence=-layer_cost)
    for name in matrices:
        if name not in act.MATRICES and name not in act.MODEL_MATRICES:
            raise ValueError(f"config key 'bdc_merge.transport.matrices': unknown matrix {name}")
    for m in range(Lt):
        for l in torch.nonzero(weights[:, m]).flatten().tolist():
            sites: dict = {}
            for name in [n for n in matrices if n in act.MATRICES]:
                _, site_in, site_out = act.MATRICES[name]
                for site in (site_in, site_out):
                    if site not in sites:
                        sites[site] = transport_maps(source_acts.layers[l][site], target_acts.layers[m][site],
                                                     reg_inner, iterations)
                result.operators[(l, m, name)] = (sites[site_out][0], sites[site_in][1])
    if shared_vocabulary:
        if "embed_tokens" in matrices:
            result.model_operators["embed_tokens"] = transport_maps(
                source_acts.model["embed_out"], target_acts.model["embed_out"], reg_inner, iterations)[0]
        if "lm_head" in matrices:
            result.model_operators["lm_head"] = transport_maps(
                source_acts.model["head_in"], target_acts.model["head_in"], reg_inner, iterations)[1]
    return result


def truncation_plan(source, target, matrices: list[str]) -> FusionPlan:
    s_layers, t_layers = act.decoder_layers(source), act.decoder_layers(target)
    Ls, Lt = len(s_layers), len(t_layers)
    weights = torch.zeros(Ls, Lt)
    for m in range(Lt):
        weights[round(m * (Ls - 1) / max(1, Lt - 1)), m] = 1.0
    result = FusionPlan(layer_weights=weights, matrices=tuple(matrices))
    for m in range(Lt):
        l = int(weights[:, m].argmax())
        for name in matrices:
            if name not in act.MATRICES:
                continue
            path = act.MATRICES[name][0]
            (o_t, i_t), (o_s, i_s) = act.submodule(t_layers[m], path).weight.shape, act.submodule(s_layers[l], path).weight.shape
            result.operators[(l, m, name)] = (torch.eye(o_t, o_s), torch.eye(i_s, i_t))
    d_s = source.get_input_embeddings().weight.shape[1]
    d_t = target.get_input_embeddings().weight.shape[1]
    if "embed_tokens" in matrices:
        result.model_operators["embed_tokens"] = torch.eye(d_t, d_s)
    if "lm_head" in matrices:
        result.model_operators["lm_head"] = torch.eye(d_s, d_t)
    return result


def lora_adapt(model, tokenizer, texts: list[str], out, params: dict, rank: int, alpha: float, steps: int,
               lr: float, batch_size: int, seed: int):
    """Supervised adaptation after fusion: LoRA adapters on every projection, trained with the
    next-token loss on `texts` through the shared Lightning trainer, then merged into the weights."""
    from peft import LoraConfig, get_peft_model

    from neurips26.core import lm

    targets = sorted({path.split(".")[-1] for path, _, _ in act.MATRICES.values()})
    peft_model = get_peft_model(model, LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0,
                                                  target_modules=targets, bias="none"))
    data = tokenizer(texts, return_tensors="pt", padding=True)["input_ids"]
    torch.manual_seed(seed)
    module_model = _MaskedLM(peft_model, tokenizer.pad_token_id)
    lm.pretrain(module_model, data, out, params, steps, min(batch_size, data.shape[0]), lr, weight_decay=0.0,
                warmup=max(1, steps // 10), seed=seed)
    return peft_model.merge_and_unload()


class _MaskedLM(torch.nn.Module):
    """Wraps a causal LM so padded positions carry no loss (labels -100)."""

    def __init__(self, model, pad_id: int):
        super().__init__()
        self.model = model
        self.pad_id = pad_id

    def forward(self, input_ids, labels=None):
        mask = input_ids != self.pad_id
        mask[:, 0] = True
        labels = input_ids.masked_fill(~mask, -100)
        return self.model(input_ids=input_ids, attention_mask=mask.long(), labels=labels)
