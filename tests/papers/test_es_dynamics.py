"""es_dynamics: Z-scoring, seed replay, the ES estimator's unbiasedness on a quadratic, the
random-walk drift on a flat objective, and the SDE integrator against its closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from neurips26.papers.es_dynamics import check_config, method
from neurips26.papers.zo_harness import es, zo


def test_zscore_weights_have_zero_mean_and_unit_variance():
    r = np.random.default_rng(0).normal(3.0, 5.0, size=37)
    w = es.shape_fitness(r, "zscore")
    assert abs(w.mean()) < 1e-12
    assert abs((w ** 2).mean() - 1.0) < 1e-12
    assert np.all(es.shape_fitness(np.ones(5), "zscore") == 0)  # a flat population takes no step


def test_centered_ranks_are_openai_es():
    w = es.shape_fitness([3.0, -1.0, 10.0, 0.5], "centered_ranks")
    assert np.allclose(w, [1 / 6, -0.5, 0.5, -1 / 6])


def test_seed_replay_regenerates_the_same_perturbation_and_restores():
    params = [torch.randn(7, 3), torch.randn(5)]
    first = es.population(params, seed=4, generation=9, n=3)
    again = es.population(params, seed=4, generation=9, n=3)
    for a, b in zip(first, again):
        assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(first[0][0], first[1][0])
    before = [p.clone() for p in params]
    s = es.member_seed(4, 9, 1)
    zo.perturb_(params, s, 0.3)
    assert torch.allclose(params[0] - before[0], 0.3 * first[1][0], atol=1e-6)
    zo.perturb_(params, s, -0.3)
    assert all(torch.allclose(p, q, atol=1e-6) for p, q in zip(params, before))


def test_es_estimate_on_a_quadratic_is_unbiased_for_the_smoothed_gradient():
    # E[R(theta + sigma eps)] = R(theta) - sigma^2 tr(H) / 2 on a quadratic, so the smoothed gradient is g itself
    rng = np.random.default_rng(1)
    d, sigma, draws = 6, 0.3, 200_000
    a = rng.standard_normal((d, d))
    h = a @ a.T / d
    opt, theta = rng.standard_normal(d), rng.standard_normal(d)
    g = -h @ (theta - opt)
    eps = rng.standard_normal((draws, d))
    x = theta + sigma * eps - opt
    r = -0.5 * np.einsum("ni,ij,nj->n", x, h, x)
    per_draw = r[:, None] * eps / sigma  # the plain (unshaped) one-sample estimate
    mean, se = per_draw.mean(0), per_draw.std(0) / math.sqrt(draws)
    assert np.all(np.abs(mean - g) < 4.5 * se), (mean, g, se)


def test_zscore_es_drift_on_a_flat_objective_is_the_random_walk():
    # flat reward + evaluation noise: E ||theta_T - theta_0||^2 = T alpha^2 d / (N sigma^2) exactly
    land = method.Quadratic(dim=200, rank=1, off_dim=0, lam_max=1e-12, lam_min=1e-12, lam_off=0.0, dist0=1e-9, seed=0, noise=1.0)
    n, sigma, alpha, t = 8, 0.1, 0.01, 30
    finals = np.array([method.run_es(land, n, sigma, alpha, t, seed)["drift"][-1] ** 2 for seed in range(40)])
    want = method.random_walk_drift2(200, n, sigma, alpha, t)
    se = finals.std(ddof=1) / math.sqrt(len(finals))
    assert abs(finals.mean() - want) < 4 * se + 1e-3 * want, (finals.mean(), want, se)


def test_sde_integrator_matches_the_closed_form_on_a_linear_reward():
    # R = g^T theta with no noise: constant drift c_N alpha g_hat / sigma and constant Sigma
    d, n, sigma, alpha, t = 5, 6, 0.2, 0.05, 20
    g = np.array([3.0, -1.0, 0.0, 2.0, 0.5])

    class Linear(method.Quadratic):
        def __init__(self):
            self.dim, self.rank, self.noise, self.trace_h2 = d, 1, 0.0, 0.0
            self.h, self.opt, self.theta0 = np.zeros(d), np.zeros(d), np.zeros(d)

        def gradient(self, x):
            return g

        def reward(self, x):
            return float(np.asarray(x) @ g)

        def task_gap(self, x):
            return 0.0

    mean, cov = method.sde_linear_closed_form(g, n, sigma, alpha, t)
    ends = np.array([_sde_end(Linear(), n, sigma, alpha, t, seed) for seed in range(1500)])
    se = np.sqrt(np.diag(cov) / len(ends))
    assert np.all(np.abs(ends.mean(0) - mean) < 4.5 * se)
    emp = np.cov(ends.T)
    assert np.allclose(emp, cov, atol=4.5 * np.sqrt(2 / len(ends)) * np.max(np.diag(cov)))


def _sde_end(land, n, sigma, alpha, t, seed):
    rec_x = []
    orig = method._record
    method._record = lambda land_, x, s_, rec: rec_x.append(x.copy())
    try:
        method.run_sde(land, n, sigma, alpha, t, seed, substeps=2)
    finally:
        method._record = orig
    return rec_x[-1]


def test_c_population_is_the_mean_sample_std():
    x = np.random.default_rng(3).standard_normal((200_000, 16))
    assert abs(x.std(1).mean() - method.c_population(16)) < 2e-3


def test_regime_sequence_detection():
    assert method.shows_sequence(["task_gradient", "curvature", "off_task_gradient", "off_task_gradient"])
    assert not method.shows_sequence(["task_gradient", "off_task_gradient", "curvature", "off_task_gradient"])
    assert not method.shows_sequence(["task_gradient", "curvature", "curvature"])


def test_check_config_names_the_keys():
    block = {"synthetic": {"dim": 10, "rank": 8, "off_dim": 5, "population": 16, "alpha_grid": {"centre": {"zscore": 1.0}},
                           "seeds": [0], "tune_seed": 0, "window": 20, "generations": 30},
             "lm": {"eval_every": 5, "generations": 2}}
    text = " ".join(check_config(block))
    for key in ("synthetic.off_dim", "synthetic.population", "synthetic.alpha_grid.centre.plain", "synthetic.tune_seed",
                "synthetic.window", "lm.eval_every"):
        assert key in text


def test_every_shaping_gets_the_same_number_of_step_sizes_over_the_same_span():
    import yaml

    from neurips26.papers.es_dynamics import SHAPINGS, alpha_grid

    s = yaml.safe_load(open("config/config.yaml"))["es_dynamics"]["synthetic"]
    spans = set()
    for shaping in SHAPINGS:
        grid = alpha_grid(s, shaping)
        assert len(grid) == s["alpha_grid"]["points"]
        steps = [math.log10(b / a) for a, b in zip(grid, grid[1:])]
        assert max(steps) - min(steps) < 1e-4
        spans.add(round(math.log10(grid[-1] / grid[0]), 4))
        assert math.sqrt(grid[0] * grid[-1]) == pytest.approx(s["alpha_grid"]["centre"][shaping], rel=1e-4)
    assert spans == {s["alpha_grid"]["decades"]}


def test_step_size_tuning_extends_the_grid_while_the_best_sits_on_an_edge():
    """The synthetic job's search, its ES run replaced: the last-window reward of Z-score peaks at
    alpha = 1e-3, below the low edge of its grid (0.0012 ... 0.12); plain's peaks far above its grid
    (capped after 3 steps); centred ranks' at its centre (no extension)."""
    from neurips26.papers.es_dynamics import steps

    s = {"window": 2, "tune_seed": 100, "sigma": 0.07,
         "alpha_grid": {"points": 5, "decades": 2.0, "centre": {"zscore": 0.012, "centered_ranks": 0.04, "plain": 0.316228}}}
    peak = {"zscore": 1e-3, "centered_ranks": 0.04, "plain": 1e3}

    def fake(shaping, alpha):
        return [-1.0, -abs(math.log10(alpha / peak[shaping]))] * 3

    tuned, trials, records = steps.tune_shapings(s, 3, run=fake)
    rec = {(r.method, r.knob): r for r in records}
    # the best (0.0012, nearest the peak) was the low edge; one step of half a decade makes it interior
    assert tuned["zscore"] == pytest.approx(0.0012)
    assert rec[("zscore", "alpha")].status == "tuned" and rec[("zscore", "alpha")].extensions == 1
    assert len(trials["zscore"]) == 6 and min(rec[("zscore", "alpha")].grid) == pytest.approx(0.0012 / math.sqrt(10), rel=1e-4)
    assert rec[("centered_ranks", "alpha")].extensions == 0 and tuned["centered_ranks"] == pytest.approx(0.04)
    plain = rec[("plain", "alpha")]
    assert plain.status == "capped" and plain.edge == "high" and plain.extensions == 3
    assert rec[("plain", "sigma")].status == "fixed"
