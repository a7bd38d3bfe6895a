"""Baselines: fixed best-of-n and a difficulty-adaptive best-of-n.

Fixed best-of-n: generate n candidates, verify them in rank order (highest score first) until a
positive; if all n fail, start a fresh batch of n (on deterministic instances verdicts are cached,
as for every policy). n is the value with the lowest mean cost on a
set of training prompts (tuned per cost ratio), so the baseline is as strong as a single n can be.

Difficulty-adaptive (compute-optimal test-time scaling, difficulty estimated from cheap scores): a
probe of n_probe candidates (their generation cost is paid) gives the prompt's mean score; training
prompts are binned by that estimate (quantile bins), and each bin uses the n with the lowest mean
best-of-n cost among its training prompts.
"""

from __future__ import annotations

import numpy as np

from .method import Instance, rank_verify


def best_of_n_cost(inst: Instance, n: int, c_g: float, c_v: float, runs: int, rng: np.random.Generator,
                   max_batches: int = 100000) -> np.ndarray:
    cost = np.zeros(runs)
    live = np.arange(runs)
    verified = np.zeros((runs, len(inst.scores)), bool) if inst.deterministic else None
    for _ in range(max_batches):
        if len(live) == 0:
            break
        batch, found = rank_verify(inst, live, n, n, c_g, c_v, rng, verified)
        cost[live] += batch
        live = live[~found]
    return cost


def probe_score(inst: Instance, n_probe: int, rng: np.random.Generator, runs: int) -> np.ndarray:
    s, _ = inst.draw(rng, (runs, n_probe))
    return s.mean(1)


def tune_fixed_n(train_costs: np.ndarray, grid) -> int:
    """train_costs[prompt, n-index] mean costs; the n with the lowest mean over prompts."""
    return int(grid[int(np.argmin(train_costs.mean(0)))])


def tune_difficulty_bins(train_costs: np.ndarray, train_probe: np.ndarray, grid, bins: int):
    """Quantile edges of the training prompts' probe scores and the best n per bin."""
    edges = np.quantile(train_probe, np.linspace(0, 1, bins + 1)[1:-1])
    which = np.searchsorted(edges, train_probe)
    best = []
    for b in range(bins):
        rows = train_costs[which == b]
        best.append(int(grid[int(np.argmin(rows.mean(0)))]) if len(rows) else int(grid[0]))
    return edges, best


def difficulty_adaptive_cost(inst: Instance, edges, best_n, n_probe: int, c_g: float, c_v: float, runs: int,
                             rng: np.random.Generator) -> np.ndarray:
    probe = probe_score(inst, n_probe, rng, runs)
    which = np.searchsorted(edges, probe)
    cost = np.full(runs, n_probe * c_g)
    for b in np.unique(which):
        sel = np.flatnonzero(which == b)
        cost[sel] += best_of_n_cost(inst, best_n[b], c_g, c_v, len(sel), rng)
    return cost
