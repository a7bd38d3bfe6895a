"""Model merging in the pre-trained model's low-rank embedding space (the paper's method).

Every weight matrix of the pre-trained model, W0 = U S V^T, has an intrinsic bottleneck: the
top-r singular directions U_r, V_r (r from an energy threshold or a share of the full rank).
A fine-tuned update dW_t = W_t - W0 is expressed as its *model embedding* in that space,

    E_t = U_r^T dW_t V_r            (basis "two_sided", r x r)     or
    E_t = U_r^T dW_t                (basis "left",      r x d_in),

and merging averages the embeddings and maps the average back:

    W = W0 + lambda * U_r mean_t(E_t) V_r^T.

Second step, the aligned subspace: within the embedding space the task embeddings share a few
directions. P_k (Q_k) are the top-k left (right) singular vectors of the embeddings stacked side
by side [E_1 ... E_T] (on top of each other), k from an energy threshold; the merged embedding
is kept inside that aligned subspace, E = P_k P_k^T mean_t(E_t) Q_k Q_k^T, and, optionally,
rescaled to the mean Frobenius norm of the task embeddings (averaging vectors that point in
different directions shrinks them; the rescale undoes that per layer).

Parameters that are not weight matrices (biases, norms, position embeddings, class token) are
merged by lambda times the mean of their updates.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class EmbeddingSpace:
    """How the low-rank space of a pre-trained matrix is chosen (README: 'our reading')."""

    basis: str = "two_sided"        # two_sided: U_r^T dW V_r; left: U_r^T dW
    rank_mode: str = "energy"       # energy | fraction | fixed
    rank_energy: float = 0.9        # energy: smallest r with sum_{i<=r} s_i^2 >= energy * sum s_i^2
    rank_fraction: float = 0.5      # fraction: r = ceil(fraction * min(d_out, d_in))
    rank: int = 16                  # fixed: r = min(rank, min(d_out, d_in))


def is_matrix(name: str, tensor: torch.Tensor) -> bool:
    """A weight matrix of a linear map (embedding tables and token/position parameters are not)."""
    return tensor.ndim == 2 and name.endswith("weight") and "embedding" not in name


def choose_rank(s: torch.Tensor, space: EmbeddingSpace) -> int:
    full = s.numel()
    if space.rank_mode == "energy":
        energy = torch.cumsum(s.double() ** 2, 0) / (s.double() ** 2).sum().clamp_min(1e-300)
        return int(min(full, int((energy < space.rank_energy - 1e-12).sum().item()) + 1))
    if space.rank_mode == "fraction":
        return int(max(1, min(full, -(-space.rank_fraction * full // 1))))
    if space.rank_mode == "fixed":
        return int(max(1, min(full, space.rank)))
    raise ValueError(f"config key 'embed_merge.method.rank_mode': unknown '{space.rank_mode}'")


_SVD_CACHE: dict = {}


def _svd(w0: torch.Tensor):
    """SVD of a pre-trained matrix, cached: every merge of a run reuses the same few matrices."""
    key = (w0.data_ptr(), tuple(w0.shape), float(w0.double().sum()), float((w0.double() ** 2).sum()))
    if key not in _SVD_CACHE:
        if len(_SVD_CACHE) > 256:
            _SVD_CACHE.clear()
        _SVD_CACHE[key] = torch.linalg.svd(w0.double(), full_matrices=False)
    return _SVD_CACHE[key]


def pretrained_basis(w0: torch.Tensor, space: EmbeddingSpace) -> tuple[torch.Tensor, torch.Tensor]:
    """(U_r, V_r): the top-r left and right singular vectors of the pre-trained matrix."""
    u, s, vh = _svd(w0)
    r = choose_rank(s, space)
    return u[:, :r], vh[:r].T


def embed(delta: torch.Tensor, u: torch.Tensor, v: torch.Tensor, basis: str) -> torch.Tensor:
    """The model embedding of an update."""
    if basis == "two_sided":
        return u.T @ delta.double() @ v
    if basis == "left":
        return u.T @ delta.double()
    raise ValueError(f"config key 'embed_merge.method.basis': unknown '{basis}'")


def unembed(e: torch.Tensor, u: torch.Tensor, v: torch.Tensor, basis: str) -> torch.Tensor:
    """Map an embedding back to weight space."""
    return u @ e @ v.T if basis == "two_sided" else u @ e


def round_trip(delta: torch.Tensor, w0: torch.Tensor, space: EmbeddingSpace) -> torch.Tensor:
    u, v = pretrained_basis(w0, space)
    return unembed(embed(delta, u, v, space.basis), u, v, space.basis).to(delta.dtype)


def energy_basis(stacked: torch.Tensor, energy: float) -> torch.Tensor:
    """Top singular vectors of `stacked` holding `energy` of its squared spectrum."""
    u, s, _ = torch.linalg.svd(stacked, full_matrices=False)
    cum = torch.cumsum(s ** 2, 0) / (s ** 2).sum().clamp_min(1e-300)
    k = int((cum < energy - 1e-12).sum().item()) + 1
    return u[:, :min(k, u.shape[1])]


def aligned_mean(embeddings: list[torch.Tensor], energy: float, basis: str, rescale: bool) -> torch.Tensor:
    """The mean embedding restricted to the aligned subspace of the task embeddings."""
    mean = torch.stack(embeddings).mean(0)
    if sum(float(e.norm()) for e in embeddings) == 0.0:
        return mean
    p = energy_basis(torch.cat(embeddings, dim=1), energy)
    merged = p @ (p.T @ mean)
    if basis == "two_sided":
        q = energy_basis(torch.cat([e.T for e in embeddings], dim=1), energy)
        merged = merged @ q @ q.T
    if rescale and float(merged.norm()) > 0:
        target = torch.stack([e.norm() for e in embeddings]).mean()
        merged = merged * (target / merged.norm())
    return merged


def embedding_update(pretrained: dict, finetuned: list[dict], space: EmbeddingSpace,
                     aligned: bool = False, aligned_energy: float = 0.95, aligned_rescale: bool = True) -> dict:
    """U_r (mean or aligned mean of E_t) V_r^T for matrices; mean(dW_t) elsewhere. Each matrix is
    embedded in float64 (one matrix at a time); the returned update is float32 (float64 when the
    weights are)."""
    updates = {}
    for name, w0 in pretrained.items():
        out_dtype = torch.promote_types(w0.dtype, torch.float32)
        if is_matrix(name, w0):
            u, v = pretrained_basis(w0, space)
            embs = [embed(ft[name].double() - w0.double(), u, v, space.basis) for ft in finetuned]
            e = aligned_mean(embs, aligned_energy, space.basis, aligned_rescale) if aligned else torch.stack(embs).mean(0)
            update = unembed(e, u, v, space.basis)
        else:
            update = torch.stack([ft[name].double() - w0.double() for ft in finetuned]).mean(0)
        updates[name] = update.to(out_dtype)
    return updates


def embedding_merge(pretrained: dict, finetuned: list[dict], scale: float, space: EmbeddingSpace,
                    aligned: bool = False, aligned_energy: float = 0.95, aligned_rescale: bool = True) -> dict:
    """W0 + scale * embedding_update(...)."""
    update = embedding_update(pretrained, finetuned, space, aligned, aligned_energy, aligned_rescale)
    return {k: (w0.double() + scale * update[k]).to(w0.dtype) for k, w0 in pretrained.items()}


def subspace_share(pretrained: dict, finetuned: dict, space: EmbeddingSpace) -> dict:
    """How much of a task update lies in the pre-trained low-rank space: per matrix the share
    ||U_r U_r^T dW V_r V_r^T||^2 / ||dW||^2 and the share a random subspace of the same size
    would hold in expectation ((r/d_out)(r/d_in), or r/d_out for 'left'); totals are
    energy-weighted over matrices."""
    inside = total = chance = 0.0
    per_layer = {}
    for name, w0 in pretrained.items():
        if not is_matrix(name, w0):
            continue
        delta = finetuned[name].double() - w0.double()
        u, v = pretrained_basis(w0, space)
        proj = unembed(embed(delta, u, v, space.basis), u, v, space.basis)
        e_in, e_all = float((proj ** 2).sum()), float((delta ** 2).sum())
        r = u.shape[1]
        c = (r / w0.shape[0]) * (r / w0.shape[1]) if space.basis == "two_sided" else r / w0.shape[0]
        per_layer[name] = {"share": e_in / e_all if e_all > 0 else 0.0, "chance": c, "rank": r,
                           "full_rank": min(w0.shape)}
        inside, total, chance = inside + e_in, total + e_all, chance + c * e_all
    return {"share": inside / total if total else 0.0, "chance": chance / total if total else 0.0,
            "layers": per_layer}


# ---------------------------------------------------------------- fine-tuning inside the space
CONSTRAINED = ("subspace", "random_subspace", "lora")  # the fine-tuning modes with a frozen W0


def random_basis(w0: torch.Tensor, space: EmbeddingSpace, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(R_u, R_v): orthonormal bases of uniformly random subspaces with the sizes of the pre-trained
    top-r subspace of `w0` (the same r): Q factors of Gaussian matrices (signs fixed by R's diagonal)."""
    r = pretrained_basis(w0, space)[0].shape[1]

    def orth(n: int) -> torch.Tensor:
        q, rr = torch.linalg.qr(torch.randn(n, r, generator=generator, dtype=torch.float64))
        return q * torch.sign(torch.diagonal(rr)).where(torch.diagonal(rr) != 0, torch.ones(()).double())

    return orth(w0.shape[0]), orth(w0.shape[1])


def lora_rank(r: int, d_out: int, d_in: int, basis: str = "two_sided") -> int:
    """The LoRA rank k whose k (d_out + d_in) trainable entries come closest to the in-space
    embedding's r x r (two_sided) or r x d_in (left), at least 1."""
    params = r * r if basis == "two_sided" else r * d_in
    return max(1, int(round(params / (d_out + d_in))))


class SubspaceDelta(torch.nn.Module):
    """Parametrisation of a pre-trained weight W0 as W = W0 + U_r E V_r^T (two_sided) or
    W = W0 + U_r E (left), with the model embedding E the only trainable tensor (zero at start).
    Registered with torch.nn.utils.parametrize; the original weight stays frozen at W0. `bases`
    replaces the pre-trained (U_r, V_r) (the random-subspace control)."""

    def __init__(self, w0: torch.Tensor, space: EmbeddingSpace, bases: tuple | None = None):
        super().__init__()
        u, v = bases if bases is not None else pretrained_basis(w0.detach(), space)
        self.basis = space.basis
        self.register_buffer("u", u.to(w0.dtype).contiguous())
        self.register_buffer("v", v.to(w0.dtype).contiguous())
        cols = u.shape[1] if space.basis == "two_sided" else w0.shape[1]
        self.embedding = torch.nn.Parameter(torch.zeros(u.shape[1], cols, dtype=w0.dtype))

    def forward(self, w0: torch.Tensor) -> torch.Tensor:
        return w0 + unembed(self.embedding, self.u, self.v, self.basis)


class LoRADelta(torch.nn.Module):
    """The same-parameter LoRA control: W = W0 + B A with B (d_out x k) zero and A (k x d_in)
    Gaussian with variance 1/d_in at start (Hu et al., LoRA, ICLR 2022), k from `lora_rank`."""

    def __init__(self, w0: torch.Tensor, k: int, generator: torch.Generator):
        super().__init__()
        d_out, d_in = w0.shape
        a = torch.randn(k, d_in, generator=generator, dtype=torch.float64) / d_in ** 0.5
        self.a = torch.nn.Parameter(a.to(w0.dtype))
        self.b = torch.nn.Parameter(torch.zeros(d_out, k, dtype=w0.dtype))

    def forward(self, w0: torch.Tensor) -> torch.Tensor:
        return w0 + self.b @ self.a


def confine_to_subspace(module: torch.nn.Module, space: EmbeddingSpace, mode: str = "subspace",
                        seed: int = 0) -> list[torch.nn.Parameter]:
    """Freeze every parameter of `module` and re-parametrise each weight matrix (`is_matrix`):
    `subspace` W0 + U_r E V_r^T with the pre-trained (U_r, V_r) (the paper's confinement);
    `random_subspace` the same with random orthonormal bases of the same sizes; `lora`
    W0 + B A with as many trainable entries as E (`lora_rank`). The random bases and LoRA's A are
    drawn from `seed` matrix by matrix, so every task fine-tuned with one seed shares them (a merge
    averages in one space). Returns the trainable tensors."""
    from torch.nn.utils import parametrize

    if mode not in CONSTRAINED:
        raise ValueError(f"unknown constrained fine-tuning mode '{mode}'; known: {', '.join(CONSTRAINED)}")
    for p in module.parameters():
        p.requires_grad_(False)
    targets = [(name, w) for name, w in module.named_parameters() if is_matrix(name, w)]
    gen = torch.Generator().manual_seed(int(seed))
    trainable = []
    for name, w in targets:
        owner_name, _, attr = name.rpartition(".")
        owner = module.get_submodule(owner_name) if owner_name else module
        if mode == "lora":
            r = pretrained_basis(w.detach(), space)[0].shape[1]
            delta = LoRADelta(w.detach(), lora_rank(r, *w.shape, basis=space.basis), gen)
            trainable += [delta.a, delta.b]
        else:
            bases = random_basis(w.detach(), space, gen) if mode == "random_subspace" else None
            delta = SubspaceDelta(w.detach(), space, bases)
            trainable.append(delta.embedding)
        parametrize.register_parametrization(owner, attr, delta, unsafe=False)
    return trainable


def release_subspace(module: torch.nn.Module) -> None:
    """Fold every SubspaceDelta into a plain weight (W0 + U_r E V_r^T) so that the module's state
    dict has the pre-trained keys again."""
    from torch.nn.utils import parametrize

    for sub in list(module.modules()):
        if parametrize.is_parametrized(sub):
            for attr in list(sub.parametrizations.keys()):
                parametrize.remove_parametrizations(sub, attr, leave_parametrized=True)
