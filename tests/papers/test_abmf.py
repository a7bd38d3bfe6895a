"""aBMF / sBMF against independent references: finite differences, scipy's general-purpose
minimiser for the convex half-steps, the closed-form eigen-truncation optimum, and the explicit
asymmetric critical point that exists below the threshold."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from neurips26.core import io, tuning
from neurips26.papers.abmf import check_config, method, steps


def _problems(seed=0):
    rng = np.random.default_rng(seed)
    sensing = method.matrix_sensing(6, 2, 40, 0.5, 0.0, rng)
    sensing.rank = 5
    return [method.psd_approximation(8, 2, 1.0, rng), sensing, method.maxcut(8, 4, 0.5, 5.0, rng)]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_gradient_matches_finite_differences(index):
    problem = _problems()[index]
    rng = np.random.default_rng(1)
    W = rng.standard_normal((problem.n, problem.n))
    W = W + W.T
    E = rng.standard_normal(W.shape)
    E = E + E.T
    eps = 1e-6
    fd = (problem.value(W + eps * E) - problem.value(W - eps * E)) / (2 * eps)
    assert fd == pytest.approx(np.sum(problem.gradient(W) * E), rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_half_step_is_the_exact_minimiser(index):
    problem = _problems()[index]
    rng = np.random.default_rng(2)
    Y = rng.standard_normal((problem.n, problem.rank))
    gamma = 0.3
    X = method.half_step(problem, Y, gamma)

    def fun(x):
        Xv = x.reshape(Y.shape)
        return method.abmf_objective(problem, Xv, Y, gamma)

    ref = scipy.optimize.minimize(fun, np.zeros(Y.size), method="BFGS", options={"gtol": 1e-10, "maxiter": 5000}).x
    np.testing.assert_allclose(X.reshape(-1), ref, atol=1e-5)
    gx, _ = method.abmf_gradients(problem, X, Y, gamma)
    assert np.linalg.norm(gx) < 1e-8
    # the Y half-step is the same problem with the roles swapped
    Y2 = method.half_step(problem, X, gamma)
    _, gy = method.abmf_gradients(problem, X, Y2, gamma)
    assert np.linalg.norm(gy) < 1e-8


def test_convex_reference_and_threshold_match_closed_forms_for_psd_approximation():
    problem = _problems()[0]
    M = problem.target.reshape(problem.n, problem.n)
    closed = method.psd_truncation(M, problem.rank)
    np.testing.assert_allclose(method.convex_optimum(problem), closed, atol=1e-7)
    assert method.exactness_threshold(problem, closed) == pytest.approx(-np.linalg.eigvalsh(M)[0] / 2, rel=1e-10)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_above_threshold_abmf_is_symmetric_and_reaches_the_optimum(index):
    problem = _problems()[index]
    W_ref = method.convex_optimum(problem, iters=4000)
    gamma_star = method.exactness_threshold(problem, W_ref)
    assert gamma_star > 0
    rng = np.random.default_rng(3)
    X0, Y0 = rng.standard_normal((2, problem.n, problem.rank)) * 0.5
    res = method.solve_abmf(problem, X0, Y0, 2.0 * gamma_star, max_iters=3000, tol=1e-11)
    assert not res.diverged
    assert np.linalg.norm(res.X - res.Y) / np.linalg.norm(res.X) < 1e-6
    f_ref = problem.value(W_ref)
    assert problem.value(method.sym(res.X @ res.Y.T)) == pytest.approx(f_ref, rel=1e-6, abs=1e-8)
    # the objective decreases monotonically along the alternating sweeps
    assert np.all(np.diff(res.objective_trace) <= 1e-10 * (1 + np.abs(res.objective_trace[:-1])))
    # sBMF from the same start reaches the same optimum
    Xs = method.solve_sbmf(problem, X0)
    assert problem.value(Xs @ Xs.T) == pytest.approx(f_ref, rel=1e-6, abs=1e-8)
    if index == 0:
        np.testing.assert_allclose(method.sym(res.X @ res.Y.T), W_ref, atol=1e-5)


def test_below_threshold_an_asymmetric_critical_point_exists_and_the_solver_finds_one():
    problem = _problems()[0]
    M = problem.target.reshape(problem.n, problem.n)
    lam, U = np.linalg.eigh(M)
    mu, u = -lam[0], U[:, :1]
    gamma = 0.5 * mu / 2  # half the threshold
    # explicit critical point: X = a u, Y = -a u with a^2 = mu - 2 gamma (derived in the README)
    a = np.sqrt(mu - 2 * gamma)
    X, Y = np.zeros((problem.n, problem.rank)), np.zeros((problem.n, problem.rank))
    X[:, :1], Y[:, :1] = a * u, -a * u
    gx, gy = method.abmf_gradients(problem, X, Y, gamma)
    assert np.linalg.norm(gx) + np.linalg.norm(gy) < 1e-10
    # the solver ends asymmetric, below the PSD optimum, with X - Y an eigenvector of G for 2 gamma
    rng = np.random.default_rng(4)
    X0, Y0 = rng.standard_normal((2, problem.n, problem.rank)) * 0.5
    res = method.solve_abmf(problem, X0, Y0, gamma, max_iters=5000, tol=1e-12)
    D = res.X - res.Y
    assert np.linalg.norm(D) / np.linalg.norm(res.X) > 0.1
    assert problem.value(method.sym(res.X @ res.Y.T)) < problem.value(method.psd_truncation(M, problem.rank)) - 1e-3
    G = problem.gradient(method.sym(res.X @ res.Y.T))
    np.testing.assert_allclose(G @ D, 2 * gamma * D, atol=1e-6)
    np.testing.assert_allclose(G @ (res.X + res.Y), 0.0, atol=1e-6)
    np.testing.assert_allclose(res.X.T @ res.X, res.Y.T @ res.Y, atol=1e-6)  # balanced factors


def test_maxcut_penalised_objective_is_unbounded_below_under_the_threshold():
    problem = _problems()[2]
    W_ref = method.convex_optimum(problem, iters=4000)
    gamma_star = method.exactness_threshold(problem, W_ref)
    rng = np.random.default_rng(5)
    X0, Y0 = rng.standard_normal((2, problem.n, problem.rank)) * 0.5
    res = method.solve_abmf(problem, X0, Y0, 0.3 * gamma_star, max_iters=2000, blowup=1e3)
    assert res.diverged and res.objective_trace[-1] < problem.value(W_ref) - 100


def test_check_config_names_bad_keys():
    block = {"gamma_ratios": [1.5, 2.0], "run_variants": ["x"],
             "variants": {"psd": {"kind": "psd_approximation", "n": 4, "rank": 3}}}
    problems = " ".join(check_config(block))
    assert "gamma_ratios" in problems and "'x'" in problems and "variants.psd: kind psd_approximation needs negative" in problems
    block["variants"]["psd"]["negative"] = 1.0
    assert "variants.psd.rank" in " ".join(check_config(block))


def test_steps_end_to_end_are_deterministic(tmp_path):
    variants = {"psd_approximation": {"kind": "psd_approximation", "n": 6, "rank": 2, "negative": 1.0},
                "maxcut": {"kind": "maxcut", "n": 6, "rank": 3, "edge_prob": 0.5, "penalty": 5.0}}
    solver = {"max_iters": 400, "tol": 1e-9, "blowup": 1000.0, "init_scale": 0.5, "reference_iters": 1000}
    ratios = [0.5, 1.5]
    for name, s in variants.items():
        params = {"variant": name, "variant_settings": s, "seeds": [0, 1], "gamma_ratios": ratios,
                  "solver": solver, "threads": 1, "objective_tol": 1e-6,
                  "search": {"starts": 1, "start_scales": [1.0], "max_evals": 30, "min_ratio": 1.0, "margin": 1.1,
                             "second_order": {"starts_per_family": 1, "start_scale": 1.0, "max_iters": 2000,
                                              "polish_evals": 10, "blowup": 1000.0}}}
        steps.evaluate(params, {}, tmp_path / "eval" / name)
        first = (tmp_path / "eval" / name / "metrics.json").read_bytes()
        steps.evaluate(params, {}, tmp_path / "again" / name)
        # the measured wall times (the cost comparison) are in timing.json; metrics.json repeats bit for bit
        assert (tmp_path / "again" / name / "metrics.json").read_bytes() == first
        assert b"seconds_to_tol" not in first
    steps.figures({"run_variants": list(variants), "scale": "smoke", "gamma_ratios": ratios,
                   "symmetric_tol": 1e-4, "objective_tol": 1e-6, "cost_ratio": 1.5, "solver": solver},
                  {"evals": tmp_path / "eval"}, tmp_path)
    # tuning.csv: every knob of aBMF and sBMF, all fixed (nothing is tuned), each with its reason
    table = tuning.read_csv([tmp_path / "tuning.csv"])
    knobs = {(r["method"], r["knob"]): r for r in table}
    assert {r["status"] for r in table} == {"fixed"} and all(r["note"] for r in table)
    assert knobs[("aBMF", "gamma / gamma* (cost figure)")]["chosen"] == "1.5"
    assert knobs[("aBMF", "max_iters")]["chosen"] == "400"
    assert knobs[("sBMF (L-BFGS)", "maxcor")]["chosen"] == str(method.SBMF_MAXCOR)
    assert knobs[("aBMF", "init_scale")]["chosen"] == knobs[("sBMF (L-BFGS)", "init_scale")]["chosen"] == "0.5"
    rows = io.read_csv(tmp_path / "claims.csv")
    # every declared row is present: the left-out problem (matrix_sensing) reads untested
    assert len(rows) == 27 and {r["kind"] for r in rows} == {"check", "target"}
    # the second-order search ran on both problems: 3 families x 1 start x 2 seeds per side
    psd = {r["id"]: r for r in rows if r["id"].startswith("psd_socp")}
    certified = psd["psd_socp_above"]["method_value"].split("/")
    assert 1 <= int(certified[1]) <= 6 and int(certified[0]) <= int(certified[1])
    assert "6 starts (random, (u, -u), S != 0)" in psd["psd_socp_above"]["criterion"]
    assert {r["reproduced"] for r in rows if r["id"].startswith("sensing_")} == {"untested"}
    assert all(r["reproduced"] in ("pass", "fail", "yes", "inconclusive", "no", "untested") for r in rows)
    assert (tmp_path / "figures" / "critical_points.png").stat().st_size > 1000
    assert (tmp_path / "figures" / "asymmetry.png").stat().st_size > 1000


# ---------------------------------------------------------------- critical-point search
@pytest.mark.parametrize("index", [0, 1, 2])
def test_hessian_matches_finite_differences_of_the_gradient(index):
    problem = _problems()[index]
    rng = np.random.default_rng(6)
    X, Y, U, V = rng.standard_normal((4, problem.n, problem.rank))
    H = method.abmf_hessian(problem, X, Y, 0.4)
    eps = 1e-6
    plus = method.abmf_gradients(problem, X + eps * U, Y + eps * V, 0.4)
    minus = method.abmf_gradients(problem, X - eps * U, Y - eps * V, 0.4)
    fd = np.concatenate([((plus[k] - minus[k]) / (2 * eps)).reshape(-1) for k in range(2)])
    np.testing.assert_allclose(H @ np.concatenate([U.reshape(-1), V.reshape(-1)]), fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(H, H.T, atol=1e-10)


def test_family_critical_points_exist_exactly_below_gamma_zero():
    problem = _problems()[1]  # matrix sensing
    gamma_zero = method.zero_threshold(problem)
    rng = np.random.default_rng(7)
    below = method.family_critical_point(problem, 0.5 * gamma_zero, rng)
    assert below is not None and below.asymmetry > 1.0 and below.gradient_norm < 1e-6
    # G u = 2 gamma u at the point: u is an eigenvector of grad h(-u u^T)
    u = below.X[:, 0]
    G = problem.gradient(-np.outer(u, u))
    np.testing.assert_allclose(G @ u, 2 * 0.5 * gamma_zero * u, atol=1e-6)
    assert method.family_critical_point(problem, 1.2 * gamma_zero, rng) is None


def test_stationary_search_finds_the_closed_form_asymmetric_point_of_psd_approximation():
    problem = _problems()[0]
    M = problem.target.reshape(problem.n, problem.n)
    lam = np.linalg.eigvalsh(M)
    gamma_star = -lam[0] / 2
    assert method.zero_threshold(problem) == pytest.approx(gamma_star)
    rng = np.random.default_rng(8)
    found = [method.stationary_search(problem, 0.5 * gamma_star, *rng.standard_normal((2, problem.n, problem.rank)),
                                      max_evals=200) for _ in range(6)]
    points = [c for c in found if c is not None and c.gradient_norm < 1e-10]
    assert points
    for c in points:
        # critical: G (X + Y) = 0 and G (X - Y) = 2 gamma (X - Y), checked independently of the search
        G = problem.gradient(method.sym(c.X @ c.Y.T))
        np.testing.assert_allclose(G @ (c.X + c.Y), 0.0, atol=1e-8)
        np.testing.assert_allclose(G @ (c.X - c.Y), gamma_star * (c.X - c.Y), atol=1e-8)
    assert any(c.asymmetry > 0.1 for c in points)
    # above the threshold the same search ends symmetric every time (the proof in the README)
    above = [method.stationary_search(problem, 1.2 * gamma_star, *rng.standard_normal((2, problem.n, problem.rank)),
                                      max_evals=200) for _ in range(4)]
    assert all(c.asymmetry < 1e-8 for c in above if c is not None and c.gradient_norm < 1e-10)


def test_apriori_bound_holds_at_every_critical_point_found():
    problem = _problems()[1]
    bound = method.apriori_threshold(problem)
    r = problem.target
    assert bound == pytest.approx(0.5 * np.linalg.norm(problem.design, 2) * np.linalg.norm(r))
    rng = np.random.default_rng(9)
    for gamma in (0.2 * method.zero_threshold(problem), 0.8 * method.zero_threshold(problem)):
        for _ in range(3):
            c = method.stationary_search(problem, gamma, *rng.standard_normal((2, problem.n, problem.rank)), max_evals=200)
            if c is None or c.gradient_norm > 1e-10:
                continue
            W = method.sym(c.X @ c.Y.T)
            # ||A W - b|| <= ||b|| at every critical point, hence lambda_max(G) <= 2 * bound
            assert np.linalg.norm(problem.residual(W.reshape(-1))) <= np.linalg.norm(r) + 1e-9
            assert np.linalg.eigvalsh(problem.gradient(W))[-1] <= 2 * bound + 1e-9
    assert method.apriori_threshold(_problems()[2]) == float("inf")  # MaxCut: h has a linear term


def test_kkt_residuals_are_small_at_the_optimum_and_not_elsewhere():
    for problem in _problems()[1:]:
        W = method.convex_optimum(problem, iters=4000)
        assert max(method.kkt_residuals(problem, W).values()) < 1e-6
        assert max(method.kkt_residuals(problem, W + 0.1 * np.eye(problem.n)).values()) > 1e-4


# ---------------------------------------------------------------- second-order search
def test_hessian_matches_torch_autograd_on_a_maxcut_graph_of_twelve_nodes():
    torch = pytest.importorskip("torch")
    problem = method.maxcut(12, 4, 0.4, 10.0, np.random.default_rng(11))
    rng = np.random.default_rng(12)
    X, Y = rng.standard_normal((2, problem.n, problem.rank))
    gamma, n, r = 0.7, problem.n, problem.rank
    A = torch.tensor(problem.design)
    b, C = torch.tensor(problem.target), torch.tensor(problem.linear)

    def F(z):
        Xt, Yt = z[:n * r].reshape(n, r), z[n * r:].reshape(n, r)
        W = 0.5 * (Xt @ Yt.T + Yt @ Xt.T)
        res = A @ W.reshape(-1) - b
        return 0.5 * res @ res + (C * W).sum() + 0.5 * gamma * ((Xt - Yt) ** 2).sum()

    z = torch.tensor(np.concatenate([X.reshape(-1), Y.reshape(-1)]))
    reference = torch.autograd.functional.hessian(F, z).numpy()
    np.testing.assert_allclose(method.abmf_hessian(problem, X, Y, gamma), reference, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_certificate_at_the_origin_matches_its_closed_form_curvature(index):
    # at (0, 0), F = h(0) + <G0, U V^T> + gamma/2 ||U - V||^2 + O(4): per eigenvalue mu of G0 = grad h(0) the
    # Hessian has eigenvalues mu and 2 gamma - mu, so lambda_min = min(lambda_min(G0), 2 gamma - lambda_max(G0))
    problem = _problems()[index]
    mu = np.linalg.eigvalsh(problem.gradient(np.zeros((problem.n, problem.n))))
    zero = np.zeros((problem.n, problem.rank))
    for gamma in (0.25 * max(mu[-1], 0.1), 2.0 * max(mu[-1], 0.1)):
        point = method.certify_point(problem, zero, zero, gamma)
        assert point.gradient_norm == 0.0
        assert point.min_eigenvalue == pytest.approx(min(mu[0], 2 * gamma - mu[-1]), abs=1e-10)
        assert method.is_second_order(point, 1e-8, 1e-6) == (min(mu[0], 2 * gamma - mu[-1]) >= -1e-6 * max(1.0, point.hessian_norm))


def test_the_symmetric_optimum_is_certified_exactly_above_gamma_star():
    # PSD approximation: (X*, X*) is critical for every gamma; the direction (u e1^T, -u e1^T) with u the top
    # eigenvector of Lambda* has curvature 2 gamma - lambda_max(Lambda*), so it is a saddle below gamma*
    problem = method.psd_approximation(10, 3, 1.0, np.random.default_rng(13))
    W = method.psd_truncation(problem.target.reshape(10, 10), 3)
    gamma_star = method.exactness_threshold(problem, W)
    X = method.optimum_factor(W, 3)
    below = method.certify_point(problem, X, X, 0.8 * gamma_star)
    above = method.certify_point(problem, X, X, 1.2 * gamma_star)
    assert below.gradient_norm < 1e-10 and above.gradient_norm < 1e-10
    assert below.min_eigenvalue <= 2 * 0.8 * gamma_star - 2 * gamma_star + 1e-10
    assert not method.is_second_order(below, 1e-8, 1e-6) and method.is_second_order(above, 1e-8, 1e-6)
    assert below.asymmetry == above.asymmetry == 0.0


@pytest.mark.parametrize("family", method.SOCP_FAMILIES)
def test_local_minimum_below_gamma_star_is_the_closed_form_asymmetric_minimiser(family):
    # PSD approximation below gamma* = -mu/2 (mu = lambda_min(M)): X = S + D/2, Y = S - D/2 with S the factor
    # of W*, D = d u e1^T (u the bottom eigenvector of M, d^2 / 4 = -mu - 2 gamma) has F = h* - (2 gamma + mu)^2 / 2,
    # and ||X - Y|| = d; every start family must reach a certified second-order point of that value
    problem = method.psd_approximation(8, 2, 1.0, np.random.default_rng(14))
    M = problem.target.reshape(8, 8)
    mu = np.linalg.eigvalsh(M)[0]
    W = method.psd_truncation(M, 2)
    gamma = 0.5 * (-mu / 2)
    rng = np.random.default_rng(15)
    fam = method.family_critical_point(problem, gamma, rng)
    X0, Y0 = method.socp_start(problem, family, W, 1.0, rng, None if fam is None else fam.X[:, 0])
    X, Y = method.local_minimum(problem, gamma, X0, Y0)
    point = method.certify_point(problem, X, Y, gamma)
    assert method.is_second_order(point, 1e-8, 1e-6)
    assert method.abmf_objective(problem, X, Y, gamma) == pytest.approx(problem.value(W) - (2 * gamma + mu) ** 2 / 2,
                                                                          abs=1e-9)
    assert np.linalg.norm(X - Y) == pytest.approx(2 * np.sqrt(-mu - 2 * gamma), rel=1e-6)


def test_family_point_above_gamma_star_is_a_strict_saddle_on_matrix_sensing():
    # the asymmetric first-order points of the sensing check (above gamma*, below gamma_0) are not
    # second-order: the certificate rejects them, and a local minimiser started next to one leaves it
    problem = _problems()[1]
    W = method.convex_optimum(problem, iters=3000)
    gamma_star, gamma_zero = method.exactness_threshold(problem, W), method.zero_threshold(problem)
    assert gamma_zero > 1.2 * gamma_star
    gamma = 0.5 * (gamma_star + gamma_zero)
    rng = np.random.default_rng(16)
    fam = method.family_critical_point(problem, gamma, rng)
    assert fam is not None and fam.asymmetry > 1e-2
    point = method.certify_point(problem, fam.X, fam.Y, gamma)
    assert point.gradient_norm < 1e-6 and point.min_eigenvalue < -1e-3
    X0, Y0 = method.socp_start(problem, "(u, -u)", W, 1.0, rng, fam.X[:, 0])
    X, Y = method.local_minimum(problem, gamma, X0, Y0)
    end = method.certify_point(problem, X, Y, gamma)
    assert method.is_second_order(end, 1e-8, 1e-6) and end.asymmetry < 1e-4


def test_local_minimum_reports_divergence_where_maxcut_is_unbounded_below():
    problem = method.maxcut(12, 4, 0.4, 10.0, np.random.default_rng(17))
    W = method.convex_optimum(problem, iters=3000)
    gamma = 0.3 * method.exactness_threshold(problem, W)
    X0, Y0 = method.socp_start(problem, "random", W, 1.0, np.random.default_rng(18))
    assert method.local_minimum(problem, gamma, X0, Y0, blowup=1e3) is None


def test_second_order_search_defaults_are_the_config_schemas():
    """Callers without a config get the budget a default run gets from the schema."""
    from pathlib import Path

    from neurips26.core.config import load_schema

    schema = load_schema(Path(__file__).resolve().parents[2])["properties"]["abmf"]
    props = schema["properties"]["search"]["properties"]["second_order"]["properties"]
    assert {k: v["default"] for k, v in props.items()} == steps.SECOND_ORDER_SEARCH
