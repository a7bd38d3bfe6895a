"""es_dynamics: Z-scoring, seed replay, the ES estimator's unbiasedness on a quadratic, the
random-walk drift on a flat objective, the SDE integrator against its closed form, the exact
finite-population step covariance (Monte Carlo), the landscape grid, the peak located on another
curve, the pure-noise null along a fixed direction and the task gradient against finite differences."""

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


class _Linear(method.Quadratic):
    """R = g^T theta (+ evaluation noise): the population rewards are exactly Gaussian."""

    def __init__(self, g, noise=0.0):
        d = len(g)
        self.g, self.dim, self.rank, self.noise, self.trace_h2 = np.asarray(g, float), d, 1, float(noise), 0.0
        self.h, self.opt, self.theta0 = np.zeros(d), np.zeros(d), np.zeros(d)

    def gradient(self, x):
        return self.g

    def reward(self, x):
        return np.asarray(x) @ self.g

    def task_gap(self, x):
        return 0.0


def _one_step(n, sigma, alpha, g, noise, draws, rng):
    """Monte Carlo of one Z-score ES step (vectorised; z-scores with the population std, ddof 0)."""
    eps = rng.standard_normal((draws, n, len(g)))
    r = sigma * eps @ g + noise * rng.standard_normal((draws, n))
    z = (r - r.mean(1, keepdims=True)) / r.std(1, keepdims=True)
    return alpha / (n * sigma) * np.einsum("bn,bnd->bd", z, eps)


@pytest.mark.parametrize("n", [4, 8, 16])
def test_the_step_along_the_gradient_has_the_exact_finite_population_variance(n):
    """Derivation (method docstring): along u = g/||g|| the step is alpha s_a / sigma with s_a the
    population std of N standard normals, so its variance is alpha^2 ((N-1)/N - c_N^2) / sigma^2;
    orthogonal directions get alpha^2 / (N sigma^2). The former 2 alpha^2 / (N sigma^2) is ~4x too large."""
    sigma, alpha, g = 0.1, 0.01, np.array([2.0, 0.0, 0.0])
    steps = _one_step(n, sigma, alpha, g, 0.0, 200_000, np.random.default_rng(n))
    exact = alpha ** 2 * ((n - 1) / n - method.c_population(n) ** 2) / sigma ** 2
    assert method.gradient_step_variance(n, sigma, alpha) == pytest.approx(exact, rel=1e-12)
    var_u = steps[:, 0].var()
    assert var_u == pytest.approx(exact, rel=0.02)
    assert not var_u == pytest.approx(2 * alpha ** 2 / (n * sigma ** 2), rel=0.5)  # the former value
    assert steps[:, 0].mean() == pytest.approx(method.c_population(n) * alpha / sigma, rel=1e-3)
    assert steps[:, 1].var() == pytest.approx(alpha ** 2 / (n * sigma ** 2), rel=0.02)
    assert abs(np.corrcoef(steps[:, 0], steps[:, 1])[0, 1]) < 0.01


def test_the_step_variance_with_evaluation_noise_follows_kappa_rho_squared():
    """Gaussian rewards with correlation rho < 1 to the gradient coordinate: mean c_N alpha rho / sigma and
    variance alpha^2 / (N sigma^2) (1 + kappa_N rho^2) along u."""
    n, sigma, alpha, g, noise = 8, 0.1, 0.01, np.array([1.0, 0.0]), 0.1
    rho = sigma * 1.0 / math.sqrt(sigma ** 2 + noise ** 2)
    steps = _one_step(n, sigma, alpha, g, noise, 200_000, np.random.default_rng(7))
    assert steps[:, 0].mean() == pytest.approx(method.c_population(n) * alpha * rho / sigma, rel=0.01)
    assert steps[:, 0].var() == pytest.approx(method.gradient_step_variance(n, sigma, alpha, rho), rel=0.02)


def test_zscore_es_steps_match_the_sde_closed_form_on_a_linear_reward():
    """The ES code itself (run_es, seed-replayed perturbations) against the SDE's per-generation mean and
    covariance, at N = 8 where the former covariance was 4x too large along the gradient."""
    n, sigma, alpha, g = 8, 0.2, 0.05, np.array([0.0, 3.0, -4.0])
    land = _Linear(g)
    ends = np.array([_es_end(land, n, sigma, alpha, seed) for seed in range(3000)])
    mean, cov = method.sde_linear_closed_form(g, n, sigma, alpha, 1.0)
    u = g / np.linalg.norm(g)
    along = ends @ u
    assert along.mean() == pytest.approx(float(mean @ u), rel=0.01)
    assert along.var(ddof=1) == pytest.approx(float(u @ cov @ u), rel=0.12)
    assert ends[:, 0].var(ddof=1) == pytest.approx(cov[0, 0], rel=0.12)


def _es_end(land, n, sigma, alpha, seed):
    rec_x = []
    orig = method._record
    method._record = lambda land_, x, s_, rec: rec_x.append(x.copy())
    try:
        method.run_es(land, n, sigma, alpha, 1, seed)
    finally:
        method._record = orig
    return rec_x[-1]


def test_generations_to_a_share_of_the_gap_is_the_first_crossing():
    gaps = [10.0, 8.0, 3.0, 0.99, 2.0, 0.5]
    assert method.generations_to_fraction(gaps, 0.1) == 3  # brute force: first t with gap <= 1.0
    assert method.generations_to_fraction(gaps, 0.01) is None
    from neurips26.papers.es_dynamics import steps

    assert steps._reached(None, 400) == 401 and steps._reached(3, 400) == 3


def test_the_landscape_grid_is_every_combination_and_scales_the_constants():
    from neurips26.papers.es_dynamics import LANDSCAPE_GRID, steps

    grid = steps.landscape_grid()
    factors = LANDSCAPE_GRID["factors"]
    assert len(grid) == math.prod(len(v) for v in factors.values()) == 81
    assert len({tuple(sorted(p.items())) for p in grid}) == len(grid)
    assert {"lam_scale": 1.0, "lam_off": 1.0, "off_dim": 1.0, "dist0": 1.0} in grid
    s = {"dim": 64, "rank": 4, "off_dim": 40, "lam_max": 1.0, "lam_min": 0.25, "lam_off": 0.01, "lam_full": 0.25,
         "dist0": 3.0, "noise": 0.0}
    land = steps._landscape(s, 0, factors={"lam_scale": 2.0, "lam_off": 0.5, "off_dim": 0.25, "dist0": 2.0})
    assert land.h[0] == 2.0 and land.h[3] == pytest.approx(0.5)
    assert (land.h[4:] > 0).sum() == 10 and land.h[4] == pytest.approx(0.005)
    assert np.linalg.norm(land.opt) == pytest.approx(6.0)
    base = steps._landscape(s, 0)
    assert (base.h[4:] > 0).sum() == 40 and np.linalg.norm(base.opt) == pytest.approx(3.0)


def test_a_peak_located_on_another_curve_has_no_gain_on_a_flat_curve():
    """A curve that rises and stays (i.i.d. window noise around a plateau): the former reading (argmax and
    value on the same curve) shows a rise-then-decay on every draw; locating the peak on an independent
    curve gives no gain in expectation."""
    from neurips26.papers.es_dynamics import steps

    rng = np.random.default_rng(0)
    same, located = [], []
    for _ in range(2000):
        reported, other = rng.normal(0.0, 1.0, 20), rng.normal(0.0, 1.0, 20)
        same.append(reported[steps.located_peak(reported)] - reported[-1])
        located.append(reported[steps.located_peak(other)] - reported[-1])
    assert np.mean(same) > 1.0 and min(same) >= 0
    se = np.std(located) / math.sqrt(len(located))
    assert abs(np.mean(located)) < 4 * se


def test_a_pure_noise_reward_walks_as_n01_along_a_fixed_direction():
    """The null of the LM task-drift row: Z-scored pure-noise rewards on the seed-replayed perturbations
    move theta along any fixed unit u by N(0, T alpha^2 / (N sigma^2))."""
    n, sigma, alpha, t = 8, 0.05, 0.002, 6
    shape = [torch.zeros(30), torch.zeros(4, 5)]
    u = [torch.randn(30, generator=torch.Generator().manual_seed(1)), torch.randn(4, 5, generator=torch.Generator().manual_seed(2))]
    norm = math.sqrt(sum(float((x ** 2).sum()) for x in u))
    u = [x / norm for x in u]
    unit = alpha * math.sqrt(t / n) / sigma
    vals = []
    for seed in range(400):
        params = [p.clone() for p in shape]
        rng = np.random.default_rng(seed)
        for gen in range(t):
            es.generation_(lambda: float(rng.standard_normal()), params, seed, gen, n, sigma, alpha, "zscore")
        vals.append(sum(float((p * w).sum()) for p, w in zip(params, u)) / unit)
    vals = np.array(vals)
    assert abs(vals.mean()) < 4 / math.sqrt(len(vals))
    assert vals.var(ddof=1) == pytest.approx(1.0, abs=4 * math.sqrt(2 / len(vals)))


def test_the_task_gradient_of_the_answer_logprob_matches_finite_differences(tmp_path):
    """steps.answer_logprob_gradient against central differences of tasks.answer_logprob (the reward the
    LM runs use) along random directions, on a tiny random Llama with an addition tokenizer."""
    from neurips26.core import lm
    from neurips26.papers.es_dynamics import steps
    from neurips26.papers.zo_harness import tasks

    items = tasks.make_addition(40, digits=2, seed=0)
    lm.train_tokenizer([it["prompt"] + it["target"] for it in tasks.make_addition(300, digits=2, seed=1)], vocab_size=120, out=tmp_path)
    tok = lm.load_tokenizer(tmp_path)
    torch.manual_seed(0)
    model = lm.build_model("llama", len(tok), 16, 2, 2, 32, 64, tokenizer=tok).double().eval()
    for p in model.parameters():
        p.requires_grad_(False)
    thetas = steps.perturbed_parameters(model, "blocks")
    grads = steps.answer_logprob_gradient(model, tok, items, thetas, batch_size=16)
    assert all(not p.requires_grad for p in thetas)  # flags restored
    f = lambda: float(np.mean(tasks.answer_logprob(model, tok, items)))  # noqa: E731
    gen = torch.Generator().manual_seed(3)
    for _ in range(3):
        v = [torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in thetas]
        h = 1e-3  # the reward's log-softmax is float32: a smaller step drowns in its rounding
        for p, d in zip(thetas, v):
            p.add_(h * d)
        up = f()
        for p, d in zip(thetas, v):
            p.add_(-2 * h * d)
        down = f()
        for p, d in zip(thetas, v):
            p.add_(h * d)
        fd = (up - down) / (2 * h)
        analytic = sum(float((g.double() * d).sum()) for g, d in zip(grads, v))
        assert analytic == pytest.approx(fd, rel=1e-3, abs=1e-6)
