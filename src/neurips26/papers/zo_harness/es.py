"""Evolution strategies with seed-replayed populations (used by `es_dynamics`).

A generation at theta draws a population eps_1..eps_N ~ N(0, I) (member i of generation t of a
run seeded s replays from the integer `member_seed(s, t, i)`, never stored), evaluates
R_i = R(theta + sigma eps_i), shapes the rewards into fitness weights w_i and steps

    theta <- theta + alpha / (N sigma) * sum_i w_i eps_i.

Fitness shapings: `zscore` w_i = (R_i - mean R) / std R (population std, ddof 0, so sum w_i^2 = N;
Qiu et al. / Abdi et al. 2026's Z-score ES), `centered_ranks` (OpenAI-ES, Salimans et al. 2017:
ranks mapped linearly onto [-0.5, 0.5]) and `plain` w_i = R_i - mean R (the unnormalised estimator
with a mean baseline). A population whose rewards are all equal gives w = 0 (no step).

API (torch is imported inside the functions):

    es.member_seed(seed, generation, member) -> int
    es.shape_fitness(rewards, shaping) -> numpy array
    es.population(shapes, seed, generation, n) -> list[list[Tensor]]     # eps_i, replayed
    es.generation_(reward_fn, params, seed, generation, n, sigma, alpha, shaping="zscore", counter=None) -> dict
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from . import zo

SHAPINGS = ("zscore", "centered_ranks", "plain")


def member_seed(seed: int, generation: int, member: int) -> int:
    """The perturbation seed of member `member` of generation `generation` of a run seeded `seed`."""
    return zo.step_seed(zo.step_seed(seed, generation), member)


def centered_ranks(rewards: Sequence[float]) -> np.ndarray:
    """OpenAI-ES fitness shaping: rank 0..N-1 (ties by order) mapped to [-0.5, 0.5]."""
    r = np.asarray(rewards, dtype=np.float64)
    n = len(r)
    ranks = np.empty(n)
    ranks[np.argsort(r, kind="stable")] = np.arange(n)
    return ranks / max(n - 1, 1) - 0.5


def shape_fitness(rewards: Sequence[float], shaping: str = "zscore") -> np.ndarray:
    """Fitness weights of one population's rewards (see the module docstring)."""
    r = np.asarray(rewards, dtype=np.float64)
    if shaping == "zscore":
        c = r - r.mean()
        std = np.sqrt(np.mean(c * c))
        return c / std if std > 1e-12 * max(1.0, np.abs(r).max()) else np.zeros_like(r)
    if shaping == "centered_ranks":
        return centered_ranks(r) if np.ptp(r) > 0 else np.zeros_like(r)
    if shaping == "plain":
        return r - r.mean()
    raise ValueError(f"unknown fitness shaping {shaping!r}; known: {', '.join(SHAPINGS)}")


def population(tensors: Sequence, seed: int, generation: int, n: int) -> list[list]:
    """The N perturbations of a generation (each a list of tensors shaped like `tensors`)."""
    return [zo.gaussian(tensors, member_seed(seed, generation, i)) for i in range(n)]


def generation_(reward_fn: Callable[[], float], params: Sequence, seed: int, generation: int, n: int,
                sigma: float, alpha: float, shaping: str = "zscore", counter: zo.QueryCounter | None = None) -> dict:
    """One ES generation in place on `params` (tensors): evaluate the N perturbed rewards (each
    perturbation replayed from its seed, applied and undone), shape them, and step theta by
    alpha / (N sigma) sum_i w_i eps_i (replayed once more). Returns the rewards and weights."""
    rewards = []
    for i in range(n):
        s = member_seed(seed, generation, i)
        zo.perturb_(params, s, sigma)
        rewards.append(float(reward_fn()))
        zo.perturb_(params, s, -sigma)
        if counter is not None:
            counter.add(1)
    w = shape_fitness(rewards, shaping)
    coef = alpha / (n * sigma)
    for i in range(n):
        if w[i] != 0.0:
            zo.update_(params, member_seed(seed, generation, i), coef * float(w[i]))
    return {"rewards": rewards, "weights": w.tolist()}
