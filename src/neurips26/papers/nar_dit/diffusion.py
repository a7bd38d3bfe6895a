"""Flow-matching training and sampling for the DiT, as TREAD trains it.

Rectified flow: x_t = (1 - t) x_0 + t eps with t ~ logit-normal(0, 1), the network predicts
the velocity v = eps - x_0 (loss ||v_theta(x_t, t, y) - v||^2). Larger t is more noise, so the
NAR noise groups are formed by t. Sampling integrates dx/dt = v from t = 1 to 0 with Euler or
Heun steps, optionally with classifier-free guidance v_u + s (v_c - v_u). An EMA of the
weights is kept and is what gets evaluated.
"""

from __future__ import annotations

import torch

from .model import DiT


def sample_t(n: int, generator: torch.Generator | None = None, device=None) -> torch.Tensor:
    """Logit-normal(0, 1) timesteps in (0, 1)."""
    draw_on = generator.device if generator is not None else device
    return torch.sigmoid(torch.randn(n, generator=generator, device=draw_on).to(device))


def noise_group_edges(boundaries) -> list[float]:
    """The t values at the rank-quantile boundaries of the logit-normal training distribution."""
    normal = torch.distributions.Normal(0.0, 1.0)
    return [float(torch.sigmoid(normal.icdf(torch.tensor(b)))) for b in boundaries]


def flow_loss(model: DiT, x0: torch.Tensor, y: torch.Tensor, t: torch.Tensor, eps: torch.Tensor,
              route_ratios=None, route_start: int = 0, route_end: int = -1, reduce: bool = True):
    tt = t.view(-1, 1, 1, 1)
    xt = (1 - tt) * x0 + tt * eps
    pred = model(xt, t, y, route_ratios, route_start, route_end)
    per_sample = (pred - (eps - x0)).pow(2).flatten(1).mean(1)
    return per_sample.mean() if reduce else per_sample


@torch.no_grad()
def guided_velocity(model: DiT, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor, cfg_scale: float) -> torch.Tensor:
    """Classifier-free guidance: v_u + s (v_c - v_u), the conditional prediction v_c (label y)
    and the unconditional one v_u (the null class `num_classes`, which training sees with
    probability `class_dropout`) from one doubled batch. At s = 1 it is v_c, one plain call."""
    if cfg_scale == 1.0:
        return model(x, t, y)
    null = torch.full_like(y, model.cfg.num_classes)
    v = model(torch.cat([x, x]), torch.cat([t, t]), torch.cat([y, null]))
    v_c, v_u = v.chunk(2)
    return v_u + cfg_scale * (v_c - v_u)


@torch.no_grad()
def sample(model: DiT, y: torch.Tensor, noise: torch.Tensor, steps: int = 10, method: str = "heun",
           cfg_scale: float = 1.0) -> torch.Tensor:
    """Integrate the probability-flow ODE from noise (t=1) to data (t=0)."""

    def velocity(x, t):
        tb = torch.full((x.shape[0],), t, dtype=x.dtype, device=x.device)
        return guided_velocity(model, x, tb, y, cfg_scale)

    ts = torch.linspace(1.0, 0.0, steps + 1).tolist()
    x = noise
    for t_cur, t_next in zip(ts[:-1], ts[1:]):
        d = velocity(x, t_cur)
        x_next = x + (t_next - t_cur) * d
        if method == "heun" and t_next > 0:
            x_next = x + (t_next - t_cur) * 0.5 * (d + velocity(x_next, t_next))
        elif method not in ("heun", "euler"):
            raise ValueError(f"config key 'nar_dit.evaluate.sampler': unknown sampler '{method}'")
        x = x_next
    return x


def route_sensitivity(model: DiT, x0, y, t, probe_ratio: float, route_start: int, route_end: int,
                      repeats: int, generator: torch.Generator) -> float:
    """E ||f(x_t; routed at probe_ratio) - f(x_t)||^2 / E ||f(x_t)||^2 over random routes:
    the size of the route-induced perturbation that routing penalises during training."""
    with torch.no_grad():
        eps = torch.randn(x0.shape, generator=generator, device=generator.device).to(x0.device)
        tt = t.view(-1, 1, 1, 1)
        xt = (1 - tt) * x0 + tt * eps
        dense = model(xt, t, y)
        ratios = torch.full_like(t, probe_ratio)
        diff = 0.0
        for _ in range(repeats):
            routed = model(xt, t, y, ratios, route_start, route_end, generator=generator)
            diff += (routed - dense).pow(2).mean().item()
        return diff / repeats / max(dense.pow(2).mean().item(), 1e-12)
