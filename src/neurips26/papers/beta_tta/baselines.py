"""The baselines BETA is compared with, each run online over the same stream and batches.

- source: argmax p_a(x), the API unadapted (one query per image).
- LAME (Boudiaf et al., 2022), output-only: z_i ∝ p_i * exp(sum_j W_ij z_j), iterated to a fixed
  point, W the symmetric k-nearest-neighbour affinity of the batch. A black box gives no
  features: the affinity is computed on the API's probability vectors (sqrt p, cosine), over the
  current batch and the cached answers of the `window` - 1 batches before it (tuned).
- TENT (Wang et al., 2021), white-box: entropy of the model's own prediction, one Adam step per
  batch on the LayerNorm affine parameters of a copy of the source model; the prediction is that
  of the forward pass before the step (TENT's protocol).
- TPT (Shu et al., 2022), gray-box: per test image, K views (the image and K-1 augmentations),
  the rho fraction with the lowest entropy kept, one step on a per-image token prompt
  minimising the entropy of their mean prediction, then the prediction on the image; the
  prompt is reset for every image (episodic). K + 1 model evaluations per image.
- ZOO: an input-space prompt delta (a 3 x g x g grid upsampled to the image, added, clipped)
  shared over the stream and optimised on the API's mean prediction entropy of each batch with
  SPSA (two-sided, Rademacher directions: g_hat = (L(d + c u) - L(d - c u)) / (2c) u) or CMA-ES
  (the `cma` package, pop-size lambda). A budget of q queries per image buys (q - 1) // 2 SPSA
  steps or (q - 1) // lambda CMA-ES generations per batch, plus the final prediction call.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn.functional as F

from . import models
from .method import augment, entropy


# ---------------------------------------------------------------- LAME
def knn_affinity(features: np.ndarray, k: int) -> np.ndarray:
    """Symmetric kNN affinity on cosine similarity (W_ij = 1 if j is among i's k nearest, or i
    among j's), no self-loops."""
    f = features / np.maximum(np.linalg.norm(features, axis=1, keepdims=True), 1e-12)
    sim = f @ f.T
    np.fill_diagonal(sim, -np.inf)
    k = min(k, len(f) - 1)
    w = np.zeros_like(sim)
    if k <= 0:
        return w
    idx = np.argsort(-sim, axis=1, kind="stable")[:, :k]
    np.put_along_axis(w, idx, 1.0, axis=1)
    return np.maximum(w, w.T)


def lame(probs: np.ndarray, affinity: np.ndarray, iterations: int = 100, tol: float = 1e-8) -> np.ndarray:
    """LAME's bound-optimisation fixed point, from z = p."""
    logp = np.log(np.clip(probs, 1e-12, None))
    z = probs.copy()
    for _ in range(iterations):
        logits = logp + affinity @ z
        z_new = np.exp(logits - logits.max(1, keepdims=True))
        z_new /= z_new.sum(1, keepdims=True)
        if np.abs(z_new - z).max() < tol:
            z = z_new
            break
        z = z_new
    return z


def lame_window(batches: list[np.ndarray], knn: int, iterations: int = 100) -> np.ndarray:
    """LAME on the API answers of the last batches (oldest first), kNN affinity on sqrt p; the
    refined assignments of the last batch only."""
    p = np.concatenate(batches)
    z = lame(p, knn_affinity(np.sqrt(p), knn), iterations)
    return z[len(p) - len(batches[-1]):]


# ---------------------------------------------------------------- TENT
class Tent:
    def __init__(self, model: models.ViT, cfg: dict):
        self.net = copy.deepcopy(model).train()
        for p in self.net.parameters():
            p.requires_grad_(False)
        self.params = models.norm_parameters(self.net)
        for p in self.params:
            p.requires_grad_(True)
        self.opt = torch.optim.Adam(self.params, lr=cfg["lr"])
        self.steps = cfg["steps_per_batch"]
        self.evaluations = 0

    def step(self, x):
        pred = None
        for _ in range(self.steps):
            logits = self.net(x)
            self.evaluations += len(x)
            if pred is None:
                pred = logits.argmax(-1).detach()
            loss = entropy(torch.log_softmax(logits, -1)).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        return pred


# ---------------------------------------------------------------- TPT
class Tpt:
    def __init__(self, model: models.ViT, cfg: dict, seed: int):
        self.net = copy.deepcopy(model).eval()
        for p in self.net.parameters():
            p.requires_grad_(False)
        self.cfg = cfg
        self.gen = torch.Generator().manual_seed(seed)
        self.evaluations = 0

    def step(self, x):
        c = self.cfg
        b = len(x)
        prompt = torch.zeros(b, self.net.tokens, self.net.dim, requires_grad=True)
        opt = torch.optim.AdamW([prompt], lr=c["lr"], weight_decay=0.0)
        views = torch.cat([x[None], augment(x, c["views"] - 1, self.gen, c["min_crop_scale"])], 0)  # (K, B, ...)
        k = views.shape[0]
        keep = max(1, int(round(c["select"] * k)))
        for _ in range(c["steps"]):
            logits = self.net(views.flatten(0, 1), prompt.repeat(k, 1, 1)).reshape(k, b, -1)
            self.evaluations += k * b
            logp = torch.log_softmax(logits, -1)
            idx = entropy(logp).detach().topk(keep, dim=0, largest=False).indices
            sel = logp.gather(0, idx[..., None].expand(-1, -1, logp.shape[-1]))
            avg = torch.logsumexp(sel, 0) - math.log(keep)  # log of the mean probability
            loss = entropy(avg).sum()  # per-image prompts: the sum separates over images
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            self.evaluations += b
            return self.net(x, prompt).argmax(-1)


# ---------------------------------------------------------------- ZOO
def spsa_gradient(loss, d: np.ndarray, c: float, rng: np.random.Generator) -> np.ndarray:
    """Two-sided SPSA estimate with a Rademacher direction (unbiased for linear losses)."""
    u = rng.choice([-1.0, 1.0], size=d.shape)
    return (loss(d + c * u) - loss(d - c * u)) / (2 * c) * u


class InputPrompt:
    """delta in R^{3 x g x g}, bilinearly upsampled to the image and added (then clipped)."""

    def __init__(self, grid: int, size: int):
        self.grid, self.size, self.dim = grid, size, 3 * grid * grid

    def apply(self, x: torch.Tensor, d: np.ndarray) -> torch.Tensor:
        delta = torch.as_tensor(d, dtype=torch.float32).reshape(1, 3, self.grid, self.grid)
        delta = F.interpolate(delta, size=(self.size, self.size), mode="bilinear", align_corners=False)
        return (x + delta).clamp(0, 1)


class Zoo:
    def __init__(self, api, cfg: dict, optimizer: str, budget: int, size: int, seed: int):
        self.api, self.cfg, self.optimizer, self.budget = api, cfg, optimizer, budget
        self.prompt = InputPrompt(cfg["grid"], size)
        self.d = np.zeros(self.prompt.dim)
        self.rng = np.random.default_rng(seed)
        self.es = None
        self.t = 0
        if optimizer == "cma":
            import cma

            self.es = cma.CMAEvolutionStrategy(np.zeros(self.prompt.dim), cfg["cma_sigma0"],
                                               {"popsize": cfg["cma_popsize"], "seed": seed + 1, "verbose": -9,
                                                "CMA_diagonal": cfg["cma_diagonal"]})
        elif optimizer != "spsa":
            raise ValueError(f"config key 'beta_tta.zoo.optimizers': unknown optimizer '{optimizer}'")

    def _loss(self, x):
        def loss(d):
            p = self.api.predict(self.prompt.apply(x, d))
            return float(-(p * np.log(np.clip(p, 1e-12, None))).sum(1).mean())
        return loss

    def step(self, x):
        loss = self._loss(x)
        c = self.cfg
        if self.optimizer == "spsa":
            for _ in range((self.budget - 1) // 2):
                self.t += 1
                a = c["spsa_lr"] / (self.t + c["spsa_stability"]) ** c["spsa_alpha"]
                ck = c["spsa_perturbation"] / self.t ** c["spsa_gamma"]
                g = spsa_gradient(loss, self.d, ck, self.rng)
                self.d = np.clip(self.d - a * g, -c["max_delta"], c["max_delta"])
        else:
            for _ in range((self.budget - 1) // c["cma_popsize"]):
                cands = self.es.ask()
                cands = [np.clip(v, -c["max_delta"], c["max_delta"]) for v in cands]
                self.es.tell(cands, [loss(v) for v in cands])
            self.d = np.clip(np.asarray(self.es.mean), -c["max_delta"], c["max_delta"])
        return torch.as_tensor(self.api.predict(self.prompt.apply(x, self.d)).argmax(1))
