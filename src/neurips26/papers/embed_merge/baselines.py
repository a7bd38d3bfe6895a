"""The field's merging methods, each a small registered class with its paper reference.

All take the pre-trained state dict theta_0, the fine-tuned ones theta_t (same keys, backbone
only; each task keeps its own head) and a scale lambda, and return a merged state dict. Task
vectors are tau_t = theta_t - theta_0.

    weight averaging   theta = mean_t theta_t
    Task Arithmetic    theta = theta_0 + lambda sum_t tau_t
    TIES               trim each tau_t to its top-k% magnitudes, elect a sign per entry
                       (sign of the sum of trimmed vectors), average the entries that agree:
                       theta = theta_0 + lambda tau_m
    DARE               drop each entry of tau_t with probability p, rescale by 1/(1-p), then
                       Task Arithmetic
    TSV-Merge          per matrix, each tau_t's top (min(d)/T) singular triplets; the stacked
                       singular vectors are orthogonalised (U_perp = P Q^T of U = P S Q^T) and
                       theta = theta_0 + lambda U_perp blockdiag(S_t) V_perp^T
    Iso-C              per matrix, the sum M = sum_t tau_t = U S V^T with its spectrum made
                       flat: theta = theta_0 + lambda mean(S) U V^T
    embed_mean/aligned the paper's method (method.py)

For parameters that are not weight matrices, the spectral methods (TSV-Merge, Iso-C and ours)
use lambda times the mean task vector.
"""

from __future__ import annotations

import abc

import torch

from .method import EmbeddingSpace, embedding_update, is_matrix

METHODS: dict[str, type] = {}


def register(cls):
    METHODS[cls.name] = cls
    return cls


def vector_dtype(t: torch.Tensor) -> torch.dtype:
    """Task vectors are kept in float32 (float64 when the weights already are): at paper scale
    eight ViT-L/14 task vectors take 9.7 GB in float32, twice that in float64."""
    return torch.promote_types(t.dtype, torch.float32)


def task_vectors(pretrained: dict, finetuned: list[dict]) -> list[dict]:
    return [{k: ft[k].to(vector_dtype(w0)) - w0.to(vector_dtype(w0)) for k, w0 in pretrained.items()}
            for ft in finetuned]


def _add(pretrained: dict, update: dict, scale: float) -> dict:
    return {k: (w0.to(vector_dtype(w0)) + scale * update[k].to(vector_dtype(w0))).to(w0.dtype)
            for k, w0 in pretrained.items()}


def apply(pretrained: dict, update: dict, scale: float) -> dict:
    """theta_0 + scale * update, in the pre-trained dtype."""
    return _add(pretrained, update, scale)


def _flatten(tv: dict, keys: list[str]) -> torch.Tensor:
    return torch.cat([tv[k].reshape(-1) for k in keys])


def _unflatten(flat: torch.Tensor, like: dict, keys: list[str]) -> dict:
    out, i = {}, 0
    for k in keys:
        n = like[k].numel()
        out[k] = flat[i:i + n].reshape(like[k].shape)
        i += n
    return out


class MergeMethod(abc.ABC):
    name = ""
    reference = ""
    uses_scale = True

    def __init__(self, **settings):
        self.settings = settings

    @abc.abstractmethod
    def update(self, pretrained: dict, finetuned: list[dict]) -> dict:
        """The merged update; every method here merges as theta_0 + scale * update."""

    def merge(self, pretrained: dict, finetuned: list[dict], scale: float = 1.0) -> dict:
        """The merged state dict (the scale is ignored by methods without one)."""
        return _add(pretrained, self.update(pretrained, finetuned), scale if self.uses_scale else 1.0)


def mean_update(pretrained, finetuned) -> dict:
    """The mean task vector, matrix by matrix (weight averaging's update; the controls' before their scale)."""
    tvs = task_vectors(pretrained, finetuned)
    return {k: torch.stack([tv[k] for tv in tvs]).mean(0) for k in pretrained}


@register
class WeightAveraging(MergeMethod):
    name = "weight_averaging"
    reference = "Wortsman et al., Model soups, ICML 2022"
    uses_scale = False

    def update(self, pretrained, finetuned):
        return mean_update(pretrained, finetuned)


@register
class TaskArithmetic(MergeMethod):
    name = "task_arithmetic"
    reference = "Ilharco et al., Editing models with task arithmetic, ICLR 2023"

    def update(self, pretrained, finetuned):
        tvs = task_vectors(pretrained, finetuned)
        return {k: torch.stack([tv[k] for tv in tvs]).sum(0) for k in pretrained}


def ties_vector(tvs: list[torch.Tensor], keep: float) -> torch.Tensor:
    """TIES on flat task vectors: trim to the top `keep` share of magnitudes, elect, disjoint mean."""
    trimmed = []
    for tv in tvs:
        k = int(round(keep * tv.numel()))
        out = torch.zeros_like(tv)
        if k > 0:
            idx = torch.topk(tv.abs(), k, sorted=False).indices
            out[idx] = tv[idx]
        trimmed.append(out)
    stack = torch.stack(trimmed)
    elected = torch.sign(stack.sum(0))
    agree = (torch.sign(stack) == elected) & (stack != 0)
    count = agree.sum(0)
    return torch.where(count > 0, (stack * agree).sum(0) / count.clamp_min(1), torch.zeros_like(elected))


@register
class TIES(MergeMethod):
    name = "ties"
    reference = "Yadav et al., TIES-Merging: resolving interference when merging models, NeurIPS 2023"

    def update(self, pretrained, finetuned):
        keys = list(pretrained)
        tvs = [_flatten(tv, keys) for tv in task_vectors(pretrained, finetuned)]
        return _unflatten(ties_vector(tvs, self.settings.get("keep", 0.2)), pretrained, keys)


def dare(tv: torch.Tensor, keep_mask: torch.Tensor, drop: float) -> torch.Tensor:
    """Drop-and-rescale of one task vector given its keep mask."""
    return tv * keep_mask / (1.0 - drop)


@register
class DARE(MergeMethod):
    name = "dare"
    reference = "Yu et al., Language models are Super Mario (DARE), ICML 2024"

    def update(self, pretrained, finetuned):
        drop = self.settings.get("drop", 0.9)
        g = torch.Generator().manual_seed(int(self.settings.get("seed", 0)))
        keys = list(pretrained)
        total = None
        for tv in task_vectors(pretrained, finetuned):
            flat = _flatten(tv, keys)
            mask = (torch.rand(flat.shape, generator=g, dtype=torch.float64) >= drop).double()
            part = dare(flat, mask, drop)
            total = part if total is None else total + part
        return _unflatten(total, pretrained, keys)


def _polar(x: torch.Tensor) -> torch.Tensor:
    """The orthogonal factor P Q^T of x = P S Q^T (the closest matrix with orthonormal columns)."""
    p, _, qh = torch.linalg.svd(x, full_matrices=False)
    return p @ qh


def tsv_matrix(deltas: list[torch.Tensor]) -> torch.Tensor:
    t = len(deltas)
    k = max(1, min(deltas[0].shape) // t)
    us, ss, vs = [], [], []
    for d in deltas:
        u, s, vh = torch.linalg.svd(d, full_matrices=False)
        us.append(u[:, :k]), ss.append(s[:k]), vs.append(vh[:k].T)
    u, s, v = torch.cat(us, 1), torch.cat(ss), torch.cat(vs, 1)
    return _polar(u) @ torch.diag(s) @ _polar(v).T


def iso_c_matrix(deltas: list[torch.Tensor]) -> torch.Tensor:
    u, s, vh = torch.linalg.svd(torch.stack(deltas).sum(0), full_matrices=False)
    return s.mean() * (u @ vh)


class _Spectral(MergeMethod):
    @abc.abstractmethod
    def matrix(self, deltas: list[torch.Tensor]) -> torch.Tensor:
        """The merged update of one weight matrix."""

    def update(self, pretrained, finetuned):
        tvs = task_vectors(pretrained, finetuned)
        update = {}
        for k, w0 in pretrained.items():
            deltas = [tv[k] for tv in tvs]
            if is_matrix(k, w0):  # one matrix at a time in float64
                update[k] = self.matrix([d.double() for d in deltas]).to(deltas[0].dtype)
            else:
                update[k] = torch.stack(deltas).mean(0)
        return update


@register
class TSVMerge(_Spectral):
    name = "tsv_merge"
    reference = "Gargiulo et al., Task singular vectors: reducing task interference in model merging, CVPR 2025"

    def matrix(self, deltas):
        return tsv_matrix(deltas)


@register
class IsoC(_Spectral):
    name = "iso_c"
    reference = "Marczak et al., No task left behind: isotropic model merging, ICML 2025"

    def matrix(self, deltas):
        return iso_c_matrix(deltas)


def _space(settings) -> EmbeddingSpace:
    return EmbeddingSpace(**{k: settings[k] for k in ("basis", "rank_mode", "rank_energy", "rank_fraction", "rank")
                             if k in settings})


@register
class EmbedMean(MergeMethod):
    name = "embed_mean"
    reference = "this paper: averaging model embeddings in the pre-trained low-rank space"

    def update(self, pretrained, finetuned):
        return embedding_update(pretrained, finetuned, _space(self.settings))


@register
class EmbedAligned(MergeMethod):
    name = "embed_aligned"
    reference = "this paper: averaging in the aligned subspace of the model embeddings"

    def update(self, pretrained, finetuned):
        s = self.settings
        return embedding_update(pretrained, finetuned, _space(s), aligned=True,
                                aligned_energy=s.get("aligned_energy", 0.95),
                                aligned_rescale=s.get("aligned_rescale", True))


# The same two merges applied to fully fine-tuned models, whose updates are projected onto the
# pre-trained space afterwards (E_t = U_r^T dW_t V_r): the ablation of the paper's confinement.
# On one task and at full rank of square matrices they return the fine-tuned model; in general
# embed_mean_posthoc equals Task Arithmetic of the projected task vectors at scale lambda / T.
@register
class EmbedMeanPosthoc(EmbedMean):
    name = "embed_mean_posthoc"
    reference = "ablation: full fine-tunes projected onto the pre-trained space, then averaged"


@register
class EmbedAlignedPosthoc(EmbedAligned):
    name = "embed_aligned_posthoc"
    reference = "ablation: full fine-tunes projected onto the pre-trained space, aligned average"


# Controls of the pre-trained subspace: the same averaging of models fine-tuned inside a random
# subspace of the same rank (W0 + R_u E R_v^T) or with a LoRA of the same parameter count
# (W0 + B A). Their fine-tunes share one random basis (one LoRA A at start) per seed, and only the
# matrices move, so averaging the models' updates is averaging their embeddings in that space:
# theta = theta_0 + lambda mean_t tau_t (as embed_mean of in-space fine-tunes).
class _MeanUpdate(MergeMethod):
    def update(self, pretrained, finetuned):
        return mean_update(pretrained, finetuned)


@register
class RandomSubspaceMean(_MeanUpdate):
    name = "random_subspace_mean"
    reference = "control: fine-tunes inside a random subspace of the pre-trained rank, averaged"


@register
class LoRAMean(_MeanUpdate):
    name = "lora_mean"
    reference = "control: same-parameter LoRA fine-tunes (Hu et al., ICLR 2022), averaged"


CONTROLS = {"random_subspace_mean": "random_subspace", "lora_mean": "lora"}  # method -> fine-tunes it merges


def make(name: str, settings: dict) -> MergeMethod:
    if name not in METHODS:
        raise KeyError(f"config key 'embed_merge.merge.methods': unknown method '{name}'; known: {sorted(METHODS)}")
    return METHODS[name](**settings)
