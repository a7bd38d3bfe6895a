"""D-dimensional inner-product encoders s(x, y) = f(x)^T g(y) fitted by contrastive losses.

On a discrete joint the encoders are embedding tables F (n x D) and G (n x D), and the
population losses are exact sums over states, so the fit is a deterministic full-batch
optimisation (a plain torch L-BFGS loop: small, no data loader, no Lightning):

  InfoNCE (symmetric, many-negatives limit; minimiser PMI + const)
      L(S) = -sum_ij p_ij S_ij + 1/2 [sum_i p_i log sum_j q_j e^{S_ij} + sum_j q_j log sum_i p_i e^{S_ij}]
  spectral contrastive loss (HaoChen et al. 2021; the baseline; minimiser p / (p_X p_Y))
      L_sc(S) = -2 sum_ij p_ij S_ij + sum_ij p_i q_j S_ij^2

with S = F G^T. The paper's claim is that the InfoNCE fit at dimension D is a rank-D spectral
approximation of the (centred) PMI operator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .pmi import DiscreteJoint


def infonce_population_loss(scores: torch.Tensor, joint: torch.Tensor, px: torch.Tensor, py: torch.Tensor):
    fit = -(joint * scores).sum()
    row = px @ torch.logsumexp(scores + py.log()[None, :], dim=1)
    col = py @ torch.logsumexp(scores + px.log()[:, None], dim=0)
    return fit + 0.5 * (row + col)


def spectral_population_loss(scores: torch.Tensor, joint: torch.Tensor, px: torch.Tensor, py: torch.Tensor):
    return -2 * (joint * scores).sum() + (px[:, None] * py[None, :] * scores ** 2).sum()


LOSSES = {"infonce": infonce_population_loss, "spectral": spectral_population_loss}
# L-BFGS memory of the table fits (both losses); its step comes from a strong-Wolfe line search
LBFGS_HISTORY = 20


# the first chunk of iterations after which the stopping rule is read; chunks then double
FIRST_CHUNK = 32


@dataclass
class TableFit:
    """A fitted pair of embedding tables, the scores at the end of every chunk, and how the fit
    stopped: `converged` when the monitored error settled, False when the iteration cap ended it."""

    scores: np.ndarray
    loss: float
    iterations: int = 0
    converged: bool = False
    trace_steps: list[int] = field(default_factory=list)
    trace_scores: list[np.ndarray] = field(default_factory=list)
    trace_monitor: list[float] = field(default_factory=list)
    monitor_earlier: float = float("nan")   # the monitored error at the start of the last chunk
    iterations_earlier: int = 0


def settled(previous: float, current: float, tolerance: float, floor: float = 0.0) -> bool:
    """The stopping rule: |current - previous| <= tolerance * max(current, floor)."""
    return abs(current - previous) <= tolerance * max(current, floor)


def fit_tables(joint: DiscreteJoint, dim: int, loss: str, iterations: int, seed: int,
               init_scale: float = 0.1, trace: bool = False, monitor=None, tolerance: float = 0.0,
               floor: float = 0.0) -> TableFit:
    """Minimise the population `loss` over rank-`dim` scores F G^T from a random start.

    Full-batch L-BFGS with a strong-Wolfe line search, run in chunks of doubling length (from
    FIRST_CHUNK). With `monitor` (scores -> error) the fit stops at the end of the first chunk over
    which the error changed by at most `tolerance` relative to itself (or to `floor`, for errors
    near 0), and at `iterations` (the cap) otherwise; without it, it runs all `iterations`. The
    scores at the end of every chunk are kept with `trace`."""
    g = torch.Generator().manual_seed(int(seed))
    n_x, n_y = joint.n
    f = (init_scale * torch.randn(n_x, dim, generator=g, dtype=torch.float64)).requires_grad_()
    h = (init_scale * torch.randn(n_y, dim, generator=g, dtype=torch.float64)).requires_grad_()
    p = torch.from_numpy(joint.joint)
    px, py = torch.from_numpy(joint.px), torch.from_numpy(joint.py)
    objective = LOSSES[loss]
    opt = torch.optim.LBFGS([f, h], lr=1.0, max_iter=1, history_size=LBFGS_HISTORY, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-10, tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        value = objective(f @ h.T, p, px, py)
        value.backward()
        return value

    out = TableFit(scores=np.zeros((n_x, n_y)), loss=float("nan"))
    done, chunk = 0, FIRST_CHUNK
    previous = None if monitor is None else monitor((f @ h.T).detach().numpy())
    while done < iterations:
        chunk = min(chunk, iterations - done)
        opt.param_groups[0]["max_iter"] = chunk
        opt.param_groups[0]["max_eval"] = int(chunk * 1.25) + 1
        opt.step(closure)
        out.iterations_earlier = done
        done += chunk
        chunk *= 2
        scores = (f @ h.T).detach().numpy().copy()
        if trace:
            out.trace_steps.append(done)
            out.trace_scores.append(scores)
        if monitor is not None:
            current = monitor(scores)
            out.trace_monitor.append(current)
            out.monitor_earlier = previous
            if settled(previous, current, tolerance, floor):
                out.converged = True
                break
            previous = current
    out.iterations = done
    with torch.no_grad():
        out.scores = (f @ h.T).numpy().copy()
        out.loss = float(objective(f @ h.T, p, px, py))
    return out


def spectral_closed_form(joint: DiscreteJoint, dim: int) -> np.ndarray:
    """The rank-D minimiser of the spectral contrastive loss: the weighted truncated SVD of the
    density ratio (L_sc = ||S - p/(p_X p_Y)||^2_{L2(p_X x p_Y)} - const)."""
    from .pmi import truncated_svd

    return truncated_svd(joint, joint.density_ratio(), dim)


def log_score(density_ratio_scores: np.ndarray, floor: float) -> np.ndarray:
    """A PMI estimate from a density-ratio score (the spectral loss's target): log max(s, floor)."""
    return np.log(np.maximum(density_ratio_scores, floor))
