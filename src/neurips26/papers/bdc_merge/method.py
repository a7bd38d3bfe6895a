"""BDC-Merge: fuse a larger source LM into a smaller target LM of another architecture with
Brownian distance correlation, from a small calibration set and without any gradient step.

1. Layer coupling. For source layer l and target layer m, the bias-corrected distance
   correlation R_lm = dCor^2_u(H^s_l, H^t_m) of their outputs over the calibration words. Each
   target layer m takes the `layer_top_k` most dependent source layers with weights
   beta_lm = R_lm / sum_{l' in top-k} R_l'm (non-negative part).
2. Neuron coupling. For a coupled pair and each site (input or output of a weight matrix),
   D_ij = max(dCor^2_u(x^s_i, y^t_j), 0) between source neuron i and target neuron j
   (neuron-level BDCorr, bias-corrected so that unrelated neurons score about 0 and take no
   weight from a matching one; `neuron_weight="dcor"` uses the plain dCor, an ablation).
   dCor has no sign, so the sign of the Pearson correlation rho_ij orients the pair, and the
   ratio of standard deviations sets its scale.
3. Lifting. Out (d_t x d_s) maps source activations to target ones: row j keeps the k most
   dependent source neurons with weights w_ij = D_ij / sum_top-k D, and
   Out_ji = w_ij sign(rho_ij) sigma^t_j / sigma^s_i; In (d_s x d_t) maps target inputs to source
   inputs the same way. A source weight W^s (out_s x in_s) becomes Out W^s In (out_t x in_t).
4. Fusion with strength alpha:  W'_t = (1 - alpha) W_t + alpha sum_l beta_lm Out_lm W^s_l In_lm
   (biases alike), for q/k/v/o and gate/up/down of every target layer and, with a shared
   vocabulary, the token embeddings (E' = (1-alpha) E_t + alpha E_s Out^T) and the LM head
   (H' = (1-alpha) H_t + alpha H_s In). alpha = 0 returns the target unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from . import activations as act
from .bdcorr import layer_dependence, neuron_distance_correlation, neuron_distance_correlation_sqr


@dataclass
class FusionPlan:
    """Everything fusion needs: per target layer, the weighted source layers and, per weight
    matrix, the (Out, In) operators of each coupled pair; model-level operators likewise."""
    layer_weights: torch.Tensor                      # (L_s x L_t), columns sum to 1 over coupled layers
    operators: dict = field(default_factory=dict)    # (l, m, matrix) -> (Out, In)
    model_operators: dict = field(default_factory=dict)  # matrix -> Out (embed) or In (head)
    matrices: tuple = ()
    layer_dependence: torch.Tensor | None = None


def layer_coupling(dependence: torch.Tensor, top_k: int) -> torch.Tensor:
    """Per target layer (column), the top-k source layers by dependence, weights normalised."""
    dep = dependence.clamp_min(0)
    weights = torch.zeros_like(dep)
    k = min(top_k, dep.shape[0])
    for m in range(dep.shape[1]):
        vals, idx = dep[:, m].topk(k)
        if vals.sum() <= 0:  # no positive dependence: fall back on the most dependent layer alone
            idx, vals = dependence[:, m].argmax()[None], torch.ones(1, dtype=dep.dtype)
        weights[idx, m] = vals / vals.sum()
    return weights


def lift(D: torch.Tensor, rho: torch.Tensor, sd_from: torch.Tensor, sd_to: torch.Tensor, top_k: int,
         eps: float = 1e-8) -> torch.Tensor:
    """Operator mapping activations of the `from` side (columns) to the `to` side (rows).

    D, rho: (d_from x d_to) dependence and Pearson correlation. Row j of the result combines
    the top-k `from` neurons most dependent on `to` neuron j."""
    d_from, d_to = D.shape
    k = min(top_k, d_from)
    vals, idx = D.topk(k, dim=0)                      # (k x d_to)
    weights = vals / vals.sum(0, keepdim=True).clamp_min(eps)
    signs = torch.sign(rho.gather(0, idx))
    signs[signs == 0] = 1.0
    scale = sd_to[None, :] / sd_from[idx].clamp_min(eps)
    op = torch.zeros(d_to, d_from)
    cols = torch.arange(d_to)[None, :].expand(k, d_to)
    op.index_put_((cols.reshape(-1), idx.reshape(-1)), (weights * signs * scale).reshape(-1).float(), accumulate=True)
    return op


NEURON_WEIGHTS = ("dcor2_u", "dcor")


def neuron_dependence(src: torch.Tensor, tgt: torch.Tensor, weight: str, memory_bytes: int, device=None) -> torch.Tensor:
    """Neuron-level dependence D (d_s x d_t) the lifted operators weight by.

    dcor2_u: the bias-corrected dCor^2_u clamped at 0, near zero for independent neurons at any
    calibration size; dcor: the plain dCor, which is about 0.11 for two independent neurons at
    n = 256 (an ablation: it spreads weight from an exact match onto unrelated neurons)."""
    if weight not in NEURON_WEIGHTS:
        raise ValueError(f"config key 'bdc_merge.bdc.neuron_weight': {weight!r} is not one of {list(NEURON_WEIGHTS)}")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")  # the n x n distance blocks are the heavy part
    src, tgt = src.to(device), tgt.to(device)
    if weight == "dcor":
        return neuron_distance_correlation(src, tgt, memory_bytes=memory_bytes)
    return neuron_distance_correlation_sqr(src, tgt, memory_bytes=memory_bytes, bias_corrected=True).clamp_min(0)


def _pair_operator_cache(src: torch.Tensor, tgt: torch.Tensor, top_k: int, memory_bytes: int,
                         weight: str = "dcor2_u", device=None):
    D = neuron_dependence(src, tgt, weight, memory_bytes, device)   # (d_s x d_t)
    rho = act.pearson(src, tgt)
    sd_s, sd_t = src.std(0), tgt.std(0)
    out = lift(D, rho, sd_s, sd_t, top_k)              # (d_t x d_s): source -> target
    inn = lift(D.T, rho.T, sd_t, sd_s, top_k)          # (d_s x d_t): target -> source
    return out, inn


def plan(source_acts: act.Activations, target_acts: act.Activations, matrices: list[str], layer_top_k: int,
         neuron_top_k: int, memory_bytes: int, shared_vocabulary: bool, neuron_weight: str = "dcor2_u",
         device=None) -> FusionPlan:
    """BDC-Merge's fusion operators from paired calibration activations."""
    dep = layer_dependence([la["hidden"] for la in source_acts.layers], [la["hidden"] for la in target_acts.layers])
    weights = layer_coupling(dep, layer_top_k)
    result = FusionPlan(layer_weights=weights, matrices=tuple(matrices), layer_dependence=dep)
    layer_mats = [m for m in matrices if m in act.MATRICES]
    pair = dict(top_k=neuron_top_k, memory_bytes=memory_bytes, weight=neuron_weight, device=device)
    for m in range(weights.shape[1]):
        for l in torch.nonzero(weights[:, m]).flatten().tolist():
            sites: dict = {}
            for name in layer_mats:
                _, site_in, site_out = act.MATRICES[name]
                for site in (site_in, site_out):
                    if site not in sites:
                        sites[site] = _pair_operator_cache(source_acts.layers[l][site], target_acts.layers[m][site], **pair)
                result.operators[(l, m, name)] = (sites[site_out][0], sites[site_in][1])
    if shared_vocabulary:
        if "embed_tokens" in matrices:
            result.model_operators["embed_tokens"] = _pair_operator_cache(
                source_acts.model["embed_out"], target_acts.model["embed_out"], **pair)[0]
        if "lm_head" in matrices:
            result.model_operators["lm_head"] = _pair_operator_cache(
                source_acts.model["head_in"], target_acts.model["head_in"], **pair)[1]
    return result


def restrict(fusion: FusionPlan, matrices) -> FusionPlan:
    """The same plan fusing only `matrices` (for comparisons on a matched set of weight matrices)."""
    keep = tuple(m for m in fusion.matrices if m in matrices)
    return FusionPlan(layer_weights=fusion.layer_weights,
                      operators={k: v for k, v in fusion.operators.items() if k[2] in keep},
                      model_operators={k: v for k, v in fusion.model_operators.items() if k in keep},
                      matrices=keep, layer_dependence=fusion.layer_dependence)


@torch.no_grad()
def fuse(source, target, fusion: FusionPlan, strength: float):
    """A copy of `target` with its weights fused with the source's through `fusion`."""
    import copy

    merged = copy.deepcopy(target)
    if strength == 0:
        return merged
    s_layers, t_layers = act.decoder_layers(source), act.decoder_layers(merged)
    for m, t_layer in enumerate(t_layers):
        for name in fusion.matrices:
            if name not in act.MATRICES:
                continue
            path = act.MATRICES[name][0]
            t_mod = act.submodule(t_layer, path)
            w_mix = torch.zeros_like(t_mod.weight)
            b_mix = torch.zeros_like(t_mod.bias) if t_mod.bias is not None else None
            for l in torch.nonzero(fusion.layer_weights[:, m]).flatten().tolist():
                beta = float(fusion.layer_weights[l, m])
                out_op, in_op = fusion.operators[(l, m, name)]
                s_mod = act.submodule(s_layers[l], path)
                out_op, in_op = out_op.to(w_mix.device), in_op.to(w_mix.device)
                w_mix += beta * (out_op @ s_mod.weight.float().to(w_mix.device) @ in_op).to(w_mix.dtype)
                if b_mix is not None and s_mod.bias is not None:
                    b_mix += beta * (out_op @ s_mod.bias.float().to(w_mix.device)).to(b_mix.dtype)
            t_mod.weight.mul_(1 - strength).add_(strength * w_mix)
            if b_mix is not None:
                t_mod.bias.mul_(1 - strength).add_(strength * b_mix)
    if "embed_tokens" in fusion.model_operators:
        e_t, e_s = merged.get_input_embeddings().weight, source.get_input_embeddings().weight
        op = fusion.model_operators["embed_tokens"].to(e_t.device)
        e_t.mul_(1 - strength).add_((strength * (e_s.float().to(e_t.device) @ op.T)).to(e_t.dtype))
    tied = merged.get_output_embeddings().weight is merged.get_input_embeddings().weight
    if "lm_head" in fusion.model_operators and not tied:
        h_t, h_s = merged.get_output_embeddings().weight, source.get_output_embeddings().weight
        op = fusion.model_operators["lm_head"].to(h_t.device)
        h_t.mul_(1 - strength).add_((strength * (h_s.float().to(h_t.device) @ op)).to(h_t.dtype))
    return merged
