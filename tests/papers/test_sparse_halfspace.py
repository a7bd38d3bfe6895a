"""sparse_halfspace against independent references: Monte Carlo for the Gaussian error formula,
closed-form targets for the bisection on n and the exponent fit, a hand-rolled validation for the l1-SVM's C,
scipy's SLSQP for the l1/l2 projection and the constrained hinge program, numpy's eigh for the
filter's top directions, exhaustive search for the sparse direction, and the planted support."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from neurips26.papers.sparse_halfspace import check_config
from neurips26.papers.sparse_halfspace.baselines import (averaging, l1_svm, sparse_averaging, svm,
                                                         tuned_svm)
from neurips26.papers.sparse_halfspace.data import SparseHalfspace, gaussian_error, support_recovered
from neurips26.papers.sparse_halfspace.method import (clean_second_moment, constrained_hinge, hinge_objective,
                                                      learn_sparse_halfspace, project_l1_l2, soft_outlier_removal,
                                                      fit_exponents, hard_filter, sample_size_for_target,
                                                      truncated_power)

@pytest.fixture(autouse=True)
def one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


DECOY = {"kind": "decoy", "decoy_scale": 3.0, "flip_scale": 1.0}
FLIPS = {"kind": "boundary_flip", "boundary_width": 0.3}
ALGO = dict(margin=0.1, tau=0.5, hard_slack=1.5, filter_slack=2.0, max_rounds=50, min_mass=0.5, iterations=200)


def test_gaussian_error_is_angle_over_pi_by_monte_carlo():
    rng = np.random.default_rng(0)
    d = 6
    w_star = np.zeros(d)
    w_star[:2] = [0.6, 0.8]
    x = rng.standard_normal((400_000, d))
    for w in (w_star + 0.3 * rng.standard_normal(d), rng.standard_normal(d), -w_star + 0.1 * rng.standard_normal(d)):
        mc = np.mean(np.sign(x @ w) != np.sign(x @ w_star))
        assert gaussian_error(w, w_star) == pytest.approx(mc, abs=3e-3)
    assert gaussian_error(w_star, w_star) == pytest.approx(0.0, abs=1e-7)
    assert gaussian_error(-w_star, w_star) == pytest.approx(1.0)


def test_clean_distribution_has_the_margin_labels_and_second_moment():
    rng = np.random.default_rng(1)
    prob = SparseHalfspace.make(40, 3, 0.3, rng)
    x, y = prob.clean(200_000, rng)
    z = x @ prob.w_star
    assert np.abs(z).min() >= 0.3 - 1e-12
    assert np.all(y == np.sign(z))
    assert np.mean(z ** 2) == pytest.approx(clean_second_moment(0.3), rel=1e-2)
    other = x @ prob.decoy
    assert np.mean(other ** 2) == pytest.approx(1.0, rel=1e-2)
    assert len(prob.support) == 3 and not set(prob.support) & set(np.flatnonzero(prob.decoy))


def test_adversary_sits_on_the_decoy_and_the_wrong_side():
    rng = np.random.default_rng(2)
    prob = SparseHalfspace.make(30, 3, 0.1, rng)
    x, y, bad = prob.sample(1000, 0.2, DECOY, rng)
    assert bad.sum() == 200
    assert np.all(y[bad] == 1) and np.all(x[bad] @ prob.w_star < 0)
    assert np.mean(x[bad] @ prob.decoy) == pytest.approx(3.0, rel=0.05)


@pytest.mark.parametrize("seed", range(6))
def test_projection_onto_l1_l2_ball_matches_slsqp(seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(8) * rng.choice([0.3, 1.0, 3.0])
    radius = [1.0, 1.5, 2.0, 3.0][seed % 4]
    ours = project_l1_l2(v, radius)
    cons = [{"type": "ineq", "fun": lambda w: 1 - w @ w},
            {"type": "ineq", "fun": lambda w: radius - np.sum(np.sqrt(w ** 2 + 1e-12))}]
    ref = minimize(lambda w: 0.5 * np.sum((w - v) ** 2), np.zeros(8), constraints=cons, method="SLSQP",
                   options={"ftol": 1e-12, "maxiter": 500}).x
    assert np.linalg.norm(ours) <= 1 + 1e-9 and np.abs(ours).sum() <= radius + 1e-7
    assert ours == pytest.approx(ref, abs=2e-4)


def test_constrained_hinge_reaches_the_slsqp_optimum():
    rng = np.random.default_rng(3)
    prob = SparseHalfspace.make(10, 2, 0.1, rng)
    x, y, _ = prob.sample(80, 0.1, DECOY, rng)
    q = rng.uniform(0.2, 1.0, len(y))
    radius = np.sqrt(2.0)
    w = constrained_hinge(x, y, q, 0.5, radius, iterations=3000)
    # the same program as a smooth one: slack variables for the hinge, w = u - v for the l1 ball
    n, d = x.shape

    def objective(z):
        return q @ z[2 * d:] / q.sum()

    cons = [{"type": "ineq", "fun": lambda z: z[2 * d:] - (1 - y * (x @ (z[:d] - z[d:2 * d])) / 0.5)},
            {"type": "ineq", "fun": lambda z: radius - z[:2 * d].sum()},
            {"type": "ineq", "fun": lambda z: 1 - np.sum((z[:d] - z[d:2 * d]) ** 2)}]
    start = np.concatenate([np.maximum(w, 0), np.maximum(-w, 0), np.maximum(0, 1 - y * (x @ w) / 0.5)])
    ref = minimize(objective, start, constraints=cons, bounds=[(0, None)] * (2 * d + n), method="SLSQP",
                   options={"ftol": 1e-12, "maxiter": 1000})
    assert ref.success
    assert hinge_objective(w, x, y, q, 0.5) == pytest.approx(ref.fun, abs=5e-3)
    assert np.abs(w).sum() <= radius + 1e-7 and np.linalg.norm(w) <= 1 + 1e-9


def test_truncated_power_finds_the_best_sparse_direction_by_exhaustive_search():
    rng = np.random.default_rng(4)
    n, d, k = 300, 9, 2
    x = rng.standard_normal((n, d))
    x[:, [2, 6]] += 1.2 * rng.standard_normal((n, 1))  # a planted sparse direction
    q = rng.uniform(0.5, 1.0, n)
    s = x.T @ (q[:, None] * x) / q.sum()
    best = max(np.linalg.eigvalsh(s[np.ix_(pair, pair)])[-1] for pair in itertools.combinations(range(d), k))
    u, value = truncated_power(x, q, k)
    assert np.count_nonzero(u) <= k
    assert value == pytest.approx(best, rel=1e-6)
    u_dense, value_dense = truncated_power(x, q, None, iterations=500, tol=1e-12)
    assert value_dense == pytest.approx(np.linalg.eigvalsh(s)[-1], rel=1e-6)


def test_soft_outlier_removal_downweights_the_decoy_points():
    rng = np.random.default_rng(5)
    prob = SparseHalfspace.make(200, 5, 0.1, rng)
    x, y, bad = prob.sample(1000, 0.1, DECOY, rng)
    res = soft_outlier_removal(x, 5, 0.1, 2.0, 50, 0.5)
    assert res.final_variance <= res.threshold
    share = res.weights[bad].sum() / res.weights.sum()
    assert share < 0.6 * bad.mean()
    # clean data alone: (almost) nothing removed
    xc, _ = prob.clean(1000, rng)
    assert soft_outlier_removal(xc, 5, 0.1, 2.0, 50, 0.5).weights.sum() > 0.97 * 1000


def test_no_noise_recovers_the_support():
    rng = np.random.default_rng(6)
    prob = SparseHalfspace.make(500, 5, 0.1, rng)
    x, y, bad = prob.sample(600, 0.0, DECOY, rng)
    learned = learn_sparse_halfspace(x, y, 5, **ALGO)
    assert support_recovered(learned.w, prob.support)
    assert gaussian_error(learned.w, prob.w_star) < 0.05


def test_ours_beats_baselines_under_the_adversary_in_high_dimension():
    rng = np.random.default_rng(7)
    prob = SparseHalfspace.make(1000, 5, 0.1, rng)
    x, y, bad = prob.sample(800, 0.1, DECOY, rng)
    ours = gaussian_error(learn_sparse_halfspace(x, y, 5, **ALGO, malicious=bad).w, prob.w_star)
    dense = gaussian_error(learn_sparse_halfspace(x, y, None, **ALGO).w, prob.w_star)
    others = [gaussian_error(w, prob.w_star) for w in (averaging(x, y), l1_svm(x, y, 0.1, 0), svm(x, y, 1.0, 0))]
    assert ours < min(others + [dense])


def test_averaging_is_exact_in_expectation_on_clean_gaussian_data():
    rng = np.random.default_rng(8)
    prob = SparseHalfspace.make(20, 3, 0.0, rng)
    x, y = prob.clean(200_000, rng)
    assert averaging(x, y) == pytest.approx(np.sqrt(2 / np.pi) * prob.w_star, abs=1.2e-2)


def test_check_config_names_the_key():
    problems = check_config({"problem": {"sparsity": 10, "dims": [16, 64]}, "noise_sweep": {"d": 64}})
    assert any(p.startswith("problem.dims") for p in problems)
    assert check_config({"problem": {"sparsity": 5, "dims": [64, 256], "sample_sizes": [10, 20]},
                         "noise_sweep": {"d": 64}}) == []


def test_boundary_flips_sit_near_the_boundary_with_flipped_labels_towards_the_decoy():
    rng = np.random.default_rng(11)
    prob = SparseHalfspace.make(100, 4, 0.1, rng)
    x, y, bad = prob.sample(2000, 0.25, FLIPS, rng)
    z = x[bad] @ prob.w_star
    assert np.all((np.abs(z) >= 0.1 - 1e-9) & (np.abs(z) <= 0.4 + 1e-9))
    assert np.all(y[bad] == -np.sign(z))                       # every label is wrong
    assert np.all(y[bad] * (x[bad] @ prob.decoy) >= 0)          # and agrees with the decoy
    assert bad.sum() == 500 and np.all(y[~bad] == np.sign(x[~bad] @ prob.w_star))
    # the points look clean: their squared norm is typical for N(0, I_d)
    assert np.mean(np.sum(x[bad] ** 2, axis=1)) == pytest.approx(100, rel=0.05)
    with pytest.raises(ValueError, match="adversary.kind"):
        prob.sample(10, 0.5, {"kind": "nope"}, rng)


@pytest.mark.parametrize("target, truth", [(0.1, 100.0), (0.05, 400.0), (0.02, 2500.0)])
def test_bisection_for_n_brackets_the_closed_form(target, truth):
    """error(n) = 1 / sqrt(n): the smallest n with error <= target is 1 / target^2."""
    calls = []

    def error_at(n):
        calls.append(n)
        return 1 / np.sqrt(n)

    n, reached = sample_size_for_target(error_at, target, 20, 4000, steps=6)
    assert reached
    ratio = (4000 / 20) ** (2.0 ** -6)
    assert truth <= n <= truth * ratio * 1.01
    assert len(calls) <= 8


def test_bisection_for_n_matches_brute_force_on_a_monotone_step_function():
    rng = np.random.default_rng(0)
    errors = np.sort(rng.random(4001))[::-1]  # decreasing in n
    n, reached = sample_size_for_target(lambda n: errors[n], errors[1234], 10, 4000, steps=20)
    assert reached and n == 1234  # enough halvings of log n pin the integer n down


def test_bisection_reports_an_unreached_target():
    assert sample_size_for_target(lambda n: 0.3, 0.1, 20, 400, steps=4) == (400, False)
    assert sample_size_for_target(lambda n: 0.0, 0.1, 20, 400, steps=4) == (20, True)


def test_exponent_fit_recovers_a_planted_power_law():
    s = np.repeat([2, 5, 10], 3)
    d = np.tile([64, 512, 4096], 3)
    n = 3.0 * s ** 2 * np.log(d) ** 5
    fit = fit_exponents(s, d, n)
    assert fit["s"] == pytest.approx(2.0) and fit["log_d"] == pytest.approx(5.0)
    assert fit["intercept"] == pytest.approx(np.log(3.0))


def test_sparse_averaging_keeps_the_top_s_coordinates_of_the_average():
    rng = np.random.default_rng(12)
    x, y = rng.standard_normal((50, 30)), rng.choice([-1.0, 1.0], 50)
    w, full = sparse_averaging(x, y, 4), averaging(x, y)
    assert np.count_nonzero(w) == 4
    top = np.argsort(-np.abs(full))[:4]
    np.testing.assert_allclose(w[top], full[top])


def test_tuned_l1_svm_picks_the_c_of_best_held_out_accuracy():
    rng = np.random.default_rng(13)
    prob = SparseHalfspace.make(60, 3, 0.1, rng)
    x, y, _ = prob.sample(200, 0.1, DECOY, rng)
    cs = [0.003, 0.03, 0.3, 3.0]
    w, chosen, records = tuned_svm("l1", x, y, cs, 0.3, seed=4, extensions=0)
    order = np.random.default_rng([4, 200, 17]).permutation(200)
    val, fit = order[:60], order[60:]
    acc = [np.mean(np.sign(x[val] @ l1_svm(x[fit], y[fit], c, 4)) == y[val]) for c in cs]
    assert acc[cs.index(chosen)] == max(acc)
    assert records[0].grid == cs and records[0].scores == pytest.approx(acc)
    np.testing.assert_allclose(w, l1_svm(x, y, chosen, 4))


@pytest.mark.parametrize("kind", ["l1", "l2"])
def test_svm_c_grid_is_extended_when_the_best_c_is_on_its_edge(kind, monkeypatch):
    """Held-out accuracy that peaks past the grid's top edge: the grid grows (one step of its own
    log spacing per extension) and the record says so; past the cap it is recorded capped."""
    from neurips26.papers.sparse_halfspace import baselines as B

    rng = np.random.default_rng(13)
    prob = SparseHalfspace.make(20, 3, 0.1, rng)
    x, y, _ = prob.sample(100, 0.1, DECOY, rng)
    peak = {"at": 10.0}

    def fake(xf, yf, c, seed):  # no solver needed: the scores come from `score`
        return np.ones(xf.shape[1])

    score = lambda c: 1.0 - abs(np.log10(c / peak["at"]))
    monkeypatch.setattr(B.tuning, "search", _spy_search(B.tuning.search, score))
    monkeypatch.setitem(B.tuned_svm.__globals__, "l1_svm", fake)
    monkeypatch.setitem(B.tuned_svm.__globals__, "svm", fake)
    _, chosen, records = B.tuned_svm(kind, x, y, [0.01, 0.1, 1.0], 0.3, seed=0, extensions=3, method="m", setting="s")
    assert chosen == pytest.approx(10.0) and records[0].status == "tuned"
    assert records[0].grid[-2:] == pytest.approx([10.0, 100.0]) and records[0].extensions == 2
    peak["at"] = 1e6
    _, chosen, records = B.tuned_svm(kind, x, y, [0.01, 0.1, 1.0], 0.3, seed=0, extensions=3, method="m", setting="s")
    assert chosen == pytest.approx(1000.0) and records[0].status == "capped" and records[0].edge == "high"


def _spy_search(search, score):
    """tuning.search with the held-out accuracy replaced by `score` (a peak past the grid)."""
    def wrapped(evaluate, grids, **kw):
        return search(lambda C: score(C), grids, **kw)
    return wrapped


def test_ablation_without_soft_filter_is_the_constrained_hinge_on_the_hard_filtered_sample():
    rng = np.random.default_rng(14)
    prob = SparseHalfspace.make(80, 4, 0.1, rng)
    x, y, _ = prob.sample(300, 0.1, DECOY, rng)
    learned = learn_sparse_halfspace(x, y, 4, **ALGO, soft_filter=False)
    keep = hard_filter(x, ALGO["hard_slack"])
    ref = constrained_hinge(x[keep].astype(np.float32), y[keep], np.ones(keep.sum()), ALGO["tau"], 2.0,
                            ALGO["iterations"])
    np.testing.assert_allclose(learned.w, ref, atol=1e-6)
    assert learned.weight_mass == keep.sum()


def test_sample_complexity_bisects_the_dense_filter_on_the_same_pools(monkeypatch):
    """The negative control of the exponent rows: every (s, d) cell runs the same bisection for the
    filter without sparsity (sparsity None) on the same nested samples as ours."""
    from neurips26.papers.sparse_halfspace import steps

    seen = {}
    real = steps.learn_sparse_halfspace

    def spy(x, y, sparsity, **kw):
        seen.setdefault(len(y), {})[sparsity] = (x.copy(), y.copy())
        return real(x, y, sparsity, **kw)

    monkeypatch.setattr(steps, "learn_sparse_halfspace", spy)
    p = {"sparsity": 2, "margin": 0.1, "data_seed": 5}
    adv = {"kind": "decoy", "noise_rate": 0.1, "decoy_scale": 3.0, "flip_scale": 1.0}
    a = {"hinge_scale": 0.5, "hinge_iterations": 50, "hard_filter_slack": 1.5, "filter_slack": 2.0,
         "filter_rounds": 10, "min_weight_mass": 0.5}
    c = {"sparsities": [2], "dims": [16], "target_error": 0.25, "n_low": 20, "n_high": 400, "bisection_steps": 3}
    (cell,) = steps.sample_complexity(p, adv, a, c, seed=0)
    assert {"n_needed", "reached", "n_needed_dense", "reached_dense"} <= set(cell)
    assert None in seen[400] and 2 in seen[400]  # both learners at the largest n
    for n, by in seen.items():
        if len(by) == 2:  # where both evaluated the same n, they saw the same sample
            np.testing.assert_array_equal(by[None][0], by[2][0])
            np.testing.assert_array_equal(by[None][1], by[2][1])
    # the dense bisection's answer is the smallest n it evaluated at or under the target
    errs = {int(k): v for k, v in cell["errors_dense"].items()}
    if cell["reached_dense"]:
        assert errs[cell["n_needed_dense"]] <= 0.25


def test_dense_control_exponents_match_numpy_least_squares():
    """dense_complexity fits the dense filter's n per seed as fit_exponents does ours; n = 2 d (the
    scaling of a dense method) gives the exponent of log d that numpy's polyfit gives."""
    from neurips26.papers.sparse_halfspace.steps import dense_complexity

    dims, sps = [64, 512, 4096], [2, 5, 10]
    comp = [[{"s": s, "d": d, "n_needed": 10, "reached": True, "n_needed_dense": 2 * d * (1 + k / 10),
              "reached_dense": d < 4096 or k > 0} for s in sps for d in dims] for k in range(3)]
    out = dense_complexity(comp)
    want = np.polyfit(np.log(np.log(dims)), np.log(dims), 1)[0]
    assert out["exponent_log_d"] == pytest.approx([want] * 3)
    assert out["exponent_s"] == pytest.approx([0.0] * 3, abs=1e-9)
    assert want > 5  # n growing like d fails the (log d)^5 bound over d = 64 .. 4096
    assert out["unreached"] == 3 and out["unreached_dims"] == [4096] and out["cells"] == 27
