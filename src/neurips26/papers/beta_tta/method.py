"""BETA: black-box efficient test-time adaptation through a local white-box steering model.

The API f returns probabilities p_a(x) only, once per test image. The client holds a small
white-box steering model g_theta (a ViT trained on its own source data, with an additive token
prompt P); theta = (P, LayerNorm affine of g) is adapted online, batch by batch:

  prediction harmonisation   log p_h(x) = lam * log p_a(x) + (1 - lam) * log softmax(g_theta(x) / T) - log Z
  entropy objective           L_ent = 1/|S| sum_{i in S} H(p_h(x_i))            (gradient through g only)
  reliability filter          S = {i : H(p_h(x_i)) < e0 * log C}
  consistency                 L_con = 1/|V_i| sum_{v in V_i} CE(stopgrad p_h(x_i), softmax(g_theta(a_v(x_i)) / T))
  view selection              V_i = the rho fraction of K augmented views a_v(x_i) with the lowest
                              steering entropy (TPT's confidence selection, for the prompt update)
  update                      theta <- Adam(theta, grad of L_ent + beta * L_con); predict argmax p_h(x) with the
                              updated theta and the cached p_a(x): no API call beyond the one inference.

Switches (config `beta`), each ablated: `adapt_steering` (off: the frozen steering model is
only ensembled), `harmonise` (off: the objective uses p_s = softmax(g/T) alone, the API's
answer enters only the prediction), `consistency` (off: beta = 0), `filtering` (off: S = every
sample, V_i = every view).
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F

from . import models


def entropy(logp: torch.Tensor) -> torch.Tensor:
    return -(logp.exp() * logp).sum(-1)


def augment(x: torch.Tensor, views: int, generator: torch.Generator, min_scale: float = 0.6) -> torch.Tensor:
    """`views` random resized crops (area scale in [min_scale, 1], random centre) with random
    horizontal flips of every image: (views, B, C, H, W)."""
    b = x.shape[0]
    n = views * b
    scale = torch.sqrt(min_scale + (1 - min_scale) * torch.rand(n, generator=generator))
    shift = (1 - scale)[:, None] * (2 * torch.rand(n, 2, generator=generator) - 1)
    flip = torch.where(torch.rand(n, generator=generator) < 0.5, -1.0, 1.0)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0], theta[:, 1, 1] = scale * flip, scale
    theta[:, :, 2] = shift
    xs = x.repeat(views, 1, 1, 1)
    grid = F.affine_grid(theta, list(xs.shape), align_corners=False)
    out = F.grid_sample(xs, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    return out.reshape(views, b, *x.shape[1:])


def harmonise(log_api: torch.Tensor, steer_logits: torch.Tensor, lam: float, temperature: float) -> torch.Tensor:
    """log p_h: the normalised geometric mixture of the API's and the steering model's answers."""
    return torch.log_softmax(lam * log_api + (1 - lam) * torch.log_softmax(steer_logits / temperature, -1), -1)


class Beta:
    """Online BETA over a stream: `step(x)` calls the API once on the batch, adapts the
    steering model and returns the harmonised predictions."""

    def __init__(self, api, steering: models.ViT, cfg: dict, classes: int, seed: int):
        self.api, self.cfg, self.classes = api, cfg, classes
        self.net = copy.deepcopy(steering).eval()
        self.prompt = torch.zeros(1, self.net.tokens, self.net.dim, requires_grad=True)
        for p in self.net.parameters():
            p.requires_grad_(False)
        params = [self.prompt]
        if cfg.get("tune_norms", True):
            params += models.norm_parameters(self.net)
        for p in params:
            p.requires_grad_(True)
        self.params = params
        self.opt = torch.optim.Adam(params, lr=cfg["lr"])
        self.gen = torch.Generator().manual_seed(seed)
        self.selected, self.seen = 0, 0
        self.evaluations = 0  # images through the steering model (views included)

    def steer(self, x):
        return self.net(x, self.prompt)

    def step(self, x: torch.Tensor) -> torch.Tensor:
        c = self.cfg
        log_api = torch.log(torch.as_tensor(self.api.predict(x), dtype=torch.float32).clamp_min(1e-12))
        lam, temp = c["api_weight"], c["temperature"]
        if c["adapt_steering"]:
            for _ in range(c["steps_per_batch"]):
                logits = self.steer(x)
                self.evaluations += len(x)
                logp_h = harmonise(log_api, logits, lam, temp) if c["harmonise"] else torch.log_softmax(logits / temp, -1)
                ent = entropy(logp_h)
                if c["filtering"]:
                    keep = ent.detach() < c["entropy_margin"] * math.log(self.classes)
                else:
                    keep = torch.ones_like(ent, dtype=torch.bool)
                self.selected += int(keep.sum())
                self.seen += len(keep)
                loss = (ent * keep).sum() / keep.sum().clamp_min(1)
                if c["consistency"] and c["consistency_weight"] > 0 and c["views"] > 0:
                    views = augment(x, c["views"], self.gen, c["min_crop_scale"])
                    v_logits = self.steer(views.flatten(0, 1)).reshape(c["views"], len(x), -1)
                    self.evaluations += c["views"] * len(x)
                    v_logp = torch.log_softmax(v_logits / temp, -1)
                    if c["filtering"]:  # keep the rho most confident views of each sample
                        k = max(1, int(round(c["view_select"] * c["views"])))
                        idx = entropy(v_logp).detach().topk(k, dim=0, largest=False).indices
                        v_logp = v_logp.gather(0, idx[..., None].expand(-1, -1, v_logp.shape[-1]))
                    target = logp_h.detach().exp()
                    loss = loss + c["consistency_weight"] * -(target[None] * v_logp).sum(-1).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
        self.evaluations += len(x)
        with torch.no_grad():
            return harmonise(log_api, self.steer(x), lam, temp).argmax(-1)
