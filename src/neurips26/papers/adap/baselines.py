"""Baselines: fixed best-of-n and a difficulty-adaptive best-of-n.

Fixed best-of-n: generate n candidates, verify them in rank order (highest score first) until a
positive; if all n fail, start a fresh batch of n (on deterministic instances verdicts are cached,
as for every policy). n is the value with the lowest mean cost on a
set of training prompts (tuned per cost ratio), so the baseline is as strong as a single n can be.

Difficulty-adaptive (compute-optimal test-time scaling, difficulty estimated from cheap scores): a
probe of n_probe candidates (their generation cost is paid) gives the prompt's mean score; training
prompts are binned by that estimate (quantile bins), and each bin uses the n with the lowest mean
best-of-n cost among its training prompts. The probe candidates are kept: they open the first batch,
which holds max(n, n_probe) candidates (n_probe probed + max(0, n - n_probe) fresh) and is verified in
rank order; later batches are fresh batches of n. Every generated candidate is ranked, none discarded
(`reuse_probe: false` restores the earlier variant that paid for the probe and then discarded it).
"""

from __future__ import annotations

import numpy as np

from .method import Instance, rank_verify


def best_of_n_cost(inst: Instance, n: int, c_g: float, c_v: float, runs: int, rng: np.random.Generator,
                   max_batches: int = 100000, given: np.ndarray | None = None) -> np.ndarray:
    """Costs of best-of-n per run; `given` (runs x g atom indices, already paid) open the first batch,
    which then holds max(n, g) candidates, all verified in rank order."""
    cost = np.zeros(runs)
    live = np.arange(runs)
    verified = np.zeros((runs, len(inst.scores)), bool) if inst.deterministic else None
    for b in range(max_batches):
        if len(live) == 0:
            break
        first = b == 0 and given is not None and given.shape[1] > 0
        size = max(n, given.shape[1]) if first else n
        batch, found = rank_verify(inst, live, size, size, c_g, c_v, rng, verified, given if first else None)
        cost[live] += batch
        live = live[~found]
    return cost


def probe_score(inst: Instance, n_probe: int, rng: np.random.Generator, runs: int) -> np.ndarray:
    return inst.scores[inst.draw_atoms(rng, (runs, n_probe))].mean(1)


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
                             rng: np.random.Generator, reuse_probe: bool = True) -> np.ndarray:
    probe = inst.draw_atoms(rng, (runs, n_probe))
    which = np.searchsorted(edges, inst.scores[probe].mean(1))
    cost = np.full(runs, n_probe * c_g)
    for b in np.unique(which):
        sel = np.flatnonzero(which == b)
        cost[sel] += best_of_n_cost(inst, best_n[b], c_g, c_v, len(sel), rng,
                                    given=probe[sel] if reuse_probe else None)
    return cost


def probe_best_of_n_cost(inst: Instance, n: int, n_probe: int, c_g: float, c_v: float, runs: int,
                         rng: np.random.Generator, reuse_probe: bool = True) -> np.ndarray:
    """Cost of a probe of n_probe candidates followed by best-of-n (the probe opening the first batch
    when reused): what one bin of the difficulty-adaptive baseline pays with batch size n."""
    probe = inst.draw_atoms(rng, (runs, n_probe))
    return n_probe * c_g + best_of_n_cost(inst, n, c_g, c_v, runs, rng, given=probe if reuse_probe else None)
