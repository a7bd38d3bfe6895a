"""crl_spectral against independent references: scipy's Gaussian densities for the PMI,
Gauss-Hermite quadrature for the closed-form spectrum, Eckart-Young for the truncated SVD,
the closed-form minimiser of the spectral contrastive loss, brute-force enumeration for the
retrieval error, and the KL identity for the excess InfoNCE risk."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from neurips26.papers.crl_spectral import check_config
from neurips26.papers.crl_spectral import pmi as P
from neurips26.papers.crl_spectral.method import fit_tables, spectral_closed_form
from neurips26.papers.crl_spectral.retrieval import (infonce_excess_risk, infonce_risk, retrieval_error,
                                                     retrieval_error_bruteforce)
from neurips26.papers.crl_spectral.steps import calibration_exponent


def joint(kind="gaussian", n=12, bandwidth=2.0, seed=0):
    return P.discrete_joint(kind, n, bandwidth, 0.1, 0.3, np.random.default_rng(seed))


def test_independent_pairs_have_zero_pmi_and_infonce_learns_a_constant():
    j = joint("independent")
    assert np.abs(j.pmi()).max() < 1e-12
    assert np.abs(P.spectrum(j)).max() < 1e-12
    fit = fit_tables(j, 2, "infonce", 100, seed=0)
    assert j.error_mod_constant(fit.scores) < 1e-5
    assert infonce_excess_risk(j, fit.scores, "sym") < 1e-9
    pair = P.GaussianPair(3, 0.0)
    x, y = pair.sample(50, np.random.default_rng(0))
    assert np.abs(pair.pmi(x, y)).max() < 1e-12


def test_gaussian_pmi_matches_scipy_densities():
    pair = P.GaussianPair(2, 0.7)
    rng = np.random.default_rng(1)
    x, y = pair.sample(20, rng)
    cov = np.block([[np.eye(2), 0.7 * np.eye(2)], [0.7 * np.eye(2), np.eye(2)]])
    joint_pdf = multivariate_normal(np.zeros(4), cov)
    marg = multivariate_normal(np.zeros(2), np.eye(2))
    ref = np.array([[joint_pdf.logpdf(np.concatenate([a, b])) - marg.logpdf(a) - marg.logpdf(b) for b in y] for a in x])
    assert pair.pmi(x, y) == pytest.approx(ref, abs=1e-10)
    grid_x, _ = pair.sample(4000, rng)
    _, grid_y = pair.sample(4000, rng)
    assert pair.pmi(grid_x, grid_y).mean() == pytest.approx(pair.mean_pmi(), abs=0.1)


@pytest.mark.parametrize("dim, rho", [(1, 0.5), (2, 0.8)])
def test_gaussian_spectrum_closed_form_matches_quadrature(dim, rho):
    nodes, weights = np.polynomial.hermite_e.hermegauss(20)
    weights = weights / weights.sum()
    grid = np.stack(np.meshgrid(*[nodes] * dim, indexing="ij"), -1).reshape(-1, dim)
    w = np.prod(np.stack(np.meshgrid(*[weights] * dim, indexing="ij"), -1).reshape(-1, dim), axis=1)
    pair = P.GaussianPair(dim, rho)
    k = pair.pmi(grid, grid)
    k = k - w @ k @ w
    sv = np.linalg.svd(np.sqrt(w)[:, None] * k * np.sqrt(w)[None, :], compute_uv=False)
    closed = pair.spectrum()
    assert len(closed) == pair.rank == dim + 2
    assert sv[:pair.rank] == pytest.approx(closed, rel=1e-8)
    assert sv[pair.rank] < 1e-8 * sv[0]


def test_truncated_svd_attains_the_tail_and_bounds_every_rank_d_fit():
    j = joint("laplace", n=14)
    target = j.centred(j.pmi())
    sv = P.spectrum(j)
    rng = np.random.default_rng(2)
    for dim in (1, 2, 4, 8):
        tail = P.spectral_tails(sv, [dim])[0]
        best = P.truncated_svd(j, target, dim)
        assert np.linalg.matrix_rank(best) == dim
        assert j.l2(best - target) == pytest.approx(tail, rel=1e-10)
        # up to a constant the best rank-D fit lies between tail_{D+1} and tail_D
        assert P.spectral_tails(sv, [dim + 1])[0] - 1e-12 <= j.error_mod_constant(best) <= tail + 1e-12
        for _ in range(20):
            other = best + 0.1 * rng.standard_normal((14, dim)) @ rng.standard_normal((dim, 14))
            other = P.truncated_svd(j, other, dim)  # any rank-D matrix
            assert j.l2(other - target) >= tail - 1e-12


def test_finite_rank_pmi_is_fitted_exactly_once_d_reaches_its_rank():
    j = P.discrete_joint("block", 16, 4, 0.1, 0.3, np.random.default_rng(3))  # 4 blocks of 4 states
    sv = P.spectrum(j)
    rank = P.numerical_rank(sv)
    assert rank <= 4
    exact = fit_tables(j, rank, "infonce", 400, seed=1)
    assert j.error_mod_constant(exact.scores) < 1e-3 * np.sqrt((sv ** 2).sum())
    short = fit_tables(j, rank - 2, "infonce", 400, seed=1)
    assert j.error_mod_constant(short.scores) >= P.spectral_tails(sv, [rank - 1])[0] - 1e-9 > 1e-3


def test_full_rank_infonce_recovers_pmi_and_its_excess_risk_is_the_kl_gap():
    j = joint("gaussian", n=10)
    fit = fit_tables(j, 10, "infonce", 500, seed=0)
    assert j.error_mod_constant(fit.scores) < 1e-4
    assert infonce_risk(j, j.pmi()) == pytest.approx(-(j.joint * j.pmi()).sum(), abs=1e-12)  # -I(X; Y)
    rng = np.random.default_rng(4)
    s = rng.standard_normal((10, 10))
    assert infonce_risk(j, s) - infonce_risk(j, j.pmi()) == pytest.approx(infonce_excess_risk(j, s, "sym"), abs=1e-12)
    assert fit.loss == pytest.approx(infonce_risk(j, fit.scores), abs=1e-10)  # torch loss == numpy loss


@pytest.mark.parametrize("dim", [1, 3])
def test_spectral_contrastive_fit_matches_its_closed_form_minimiser(dim):
    j = joint("gaussian", n=12)
    fit = fit_tables(j, dim, "spectral", 500, seed=0)
    closed = spectral_closed_form(j, dim)
    assert j.l2(fit.scores - closed) / j.l2(closed) < 1e-5


@pytest.mark.parametrize("kind, candidates", [("gaussian", 2), ("gaussian", 3), ("block", 3)])
def test_exact_retrieval_error_matches_enumeration(kind, candidates):
    j = P.discrete_joint(kind, 5, 1.0 if kind == "gaussian" else 2, 0.2, 0.3, np.random.default_rng(5))
    rng = np.random.default_rng(6)
    for scores in (j.pmi(), rng.standard_normal((5, 5)), np.round(rng.standard_normal((5, 5)))):
        assert retrieval_error(j, scores, candidates) == pytest.approx(
            retrieval_error_bruteforce(j, scores, candidates), abs=1e-12)


def test_pmi_ranking_is_bayes_optimal_for_retrieval():
    j = joint("laplace", n=10)
    bayes = retrieval_error(j, j.pmi(), 6)
    rng = np.random.default_rng(7)
    for _ in range(30):
        assert retrieval_error(j, j.pmi() + 0.5 * rng.standard_normal((10, 10)), 6) >= bayes - 1e-12


def test_calibration_exponent_recovers_a_power_law():
    risk = np.geomspace(1e-5, 0.3, 20)
    points = [{"excess_risk_xy": r, "retrieval_excess": 0.7 * r ** 1.5} for r in risk]
    assert calibration_exponent(points, 0.5) == pytest.approx(1.5, abs=1e-9)


def test_neural_encoders_fit_gaussian_pmi(tmp_path):
    import torch

    from neurips26.core.trainer import fit, make_trainer
    from neurips26.papers.crl_spectral.neural import ContrastivePair, clip_infonce

    f, g = torch.randn(6, 3), torch.randn(6, 3)
    s = (f @ g.T).double()
    manual = 0.5 * (-(s.diagonal() - s.logsumexp(1)).mean() - (s.diagonal() - s.logsumexp(0)).mean())
    assert clip_infonce(f, g).item() == pytest.approx(manual.item(), rel=1e-5)

    pair = P.GaussianPair(1, 0.8)
    rng = np.random.default_rng(8)
    x, y = pair.sample(4000, rng)
    xe, _ = pair.sample(300, rng)
    _, ye = pair.sample(300, rng)
    torch.manual_seed(0)
    model = ContrastivePair(1, 32, pair.rank, 2, 3e-3)
    data = torch.utils.data.TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32))
    loader = torch.utils.data.DataLoader(data, batch_size=200, shuffle=True, generator=torch.Generator().manual_seed(0))
    norm = np.sqrt((pair.spectrum() ** 2).sum())
    before = P.error_mod_constant_samples(model.scores(xe, ye), pair.pmi(xe, ye)) / norm
    trainer, resume = make_trainer(tmp_path, {"test": 1}, 150)
    fit(trainer, model, loader, resume)
    after = P.error_mod_constant_samples(model.scores(xe, ye), pair.pmi(xe, ye)) / norm
    assert after < 0.5 * before and after < 0.4


def test_check_config_names_the_key():
    assert any(p.startswith("discrete.dims") for p in check_config({"discrete": {"states": 8, "dims": [1, 16]}}))
    assert check_config({"discrete": {"states": 8, "dims": [1, 4]}, "continuous": {}}) == []


def test_ranking_margins_match_a_brute_force_loop():
    from neurips26.papers.crl_spectral.retrieval import ranking_margins

    j = joint("gaussian", n=7)
    gaps, weights = ranking_margins(j)
    pmi = j.pmi()
    for t in (0.01, 0.1, 0.5, 2.0):
        brute = sum(j.joint[x, a] * j.py[b] for x in range(7) for a in range(7) for b in range(7)
                    if a != b and abs(pmi[x, a] - pmi[x, b]) <= t)
        assert weights[gaps <= t].sum() == pytest.approx(brute, rel=1e-12, abs=1e-15)
    assert weights.sum() == pytest.approx(1 - sum(j.joint[x, a] * j.py[a] for x in range(7) for a in range(7)))


def _exponent_of_margins(monkeypatch, gaps):
    """The Tsybakov fit on the given margins (unit weights) in place of a joint's."""
    from neurips26.papers.crl_spectral import retrieval

    monkeypatch.setattr(retrieval, "ranking_margins", lambda joint: (gaps, np.ones_like(gaps)))
    return retrieval.tsybakov_exponent(None)


def test_tsybakov_exponent_of_a_uniform_margin_law_is_one(monkeypatch):
    # margins uniform on (0, 1): P(|margin| <= t) = t, alpha = 1
    rng = np.random.default_rng(3)
    gaps = rng.uniform(0, 1, 200000)
    result = _exponent_of_margins(monkeypatch, gaps)
    assert result["alpha"] == pytest.approx(1.0, abs=0.05) and result["tied_mass"] == 0.0


def test_perturbations_of_the_optimum_give_quadratic_excess_risk():
    # KL is quadratic at its minimum: excess risk of PMI + t Delta scales as t^2 for small t
    from neurips26.papers.crl_spectral.steps import _perturbations

    j = joint("laplace", n=10)
    d = {"data_seed": 1, "candidates": 4, "perturbations": {"directions": 1, "smallest": 1e-4, "largest": 1e-2, "steps": 5}}
    points = _perturbations(j, d, 0, 0, retrieval_error(j, j.pmi(), 4))
    t = np.array([p["t"] for p in points])
    risk = np.array([p["excess_risk_xy"] for p in points])
    assert np.polyfit(np.log(t), np.log(risk), 1)[0] == pytest.approx(2.0, abs=0.02)
    assert all(p["retrieval_excess"] >= -1e-12 for p in points)  # PMI is the Bayes ranking


def test_figures_write_every_fixed_knob_to_tuning_csv(tmp_path):
    """train, evaluate and figures end to end on a tiny joint: tuning.csv lists the knobs of both
    table losses, the truncated SVD and the neural encoders, all fixed, each with its reason."""
    from neurips26.core import io, tuning
    from neurips26.papers.crl_spectral import steps
    from neurips26.papers.crl_spectral.method import LBFGS_HISTORY

    discrete = {"states": 8, "kernels": [{"kind": "block", "bandwidth": 4}, {"kind": "gaussian", "bandwidth": 2.0}],
                "noise": 0.1, "marginal_spread": 0.3, "data_seed": 7, "dims": [1, 2, 4], "iterations": 8,
                "candidates": 4, "init_scale": 0.1, "spectral_floor": 0.01,
                "perturbations": {"directions": 1, "smallest": 0.01, "largest": 1.0, "steps": 4}}
    continuous = {"dim": 1, "rho": 0.8, "train_pairs": 128, "eval_points": 40, "widths": [4], "dims": [1],
                  "depth": 1, "steps": 2, "batch_size": 64, "lr": 0.003, "spectral_baseline": True, "candidates": 4,
                  "data_seed": 11, "spectral_floor": 0.01}
    calibration = {"max_excess_risk": 0.5, "slow_rate_exponent": 0.5, "min_tail": 0.01}
    steps.train({"seed": 0, "discrete": discrete, "continuous": continuous}, {}, tmp_path / "train" / "seed0")
    steps.evaluate({"seeds": [0], "calibration": calibration}, {"train": tmp_path / "train"}, tmp_path / "eval")
    steps.figures({"scale": "smoke", "discrete": discrete, "continuous": continuous, "calibration": calibration},
                  {"metrics": tmp_path / "eval" / "metrics.json"}, tmp_path)
    assert io.read_csv(tmp_path / "claims.csv")
    table = tuning.read_csv([tmp_path / "tuning.csv"])
    assert {r["status"] for r in table} == {"fixed"} and all(r["note"] for r in table)
    knobs = {(r["method"], r["knob"]): r["chosen"] for r in table}
    notes = {(r["method"], r["knob"]): r["note"] for r in table}
    for name in ("InfoNCE tables", "spectral contrastive tables"):
        assert knobs[(name, "iterations")] == "8" and "cap" in notes[(name, "iterations")] and knobs[(name, "history_size")] == str(LBFGS_HISTORY)
        assert knobs[(name, "step size")] == "line search"
    # one Adam lr for every encoder, the InfoNCE ones and the spectral network alike
    assert knobs[("neural InfoNCE (every width and D)", "lr")] == knobs[("neural spectral contrastive", "lr")] == "0.003"
    assert knobs[("neural InfoNCE (every width and D)", "temperature")] == "none"


def test_fits_stop_once_the_error_settles_and_the_stop_reads_the_last_chunk():
    # the stopping state is what the convergence check reads: rerunning the same fit for exactly the
    # iterations before the last chunk reproduces the recorded earlier error, and the change over
    # the last chunk is within the tolerance
    from neurips26.papers.crl_spectral.method import settled

    j = joint("gaussian", n=20, bandwidth=2.0)
    info = fit_tables(j, 6, "infonce", 4096, seed=3, monitor=j.error_mod_constant, tolerance=1e-3)
    assert info.converged and info.iterations < 4096
    again = fit_tables(j, 6, "infonce", info.iterations_earlier, seed=3)
    assert j.error_mod_constant(again.scores) == pytest.approx(info.monitor_earlier, rel=1e-9)
    assert j.error_mod_constant(info.scores) == pytest.approx(info.trace_monitor[-1], rel=1e-12)
    assert settled(info.monitor_earlier, info.trace_monitor[-1], 1e-3)
    assert abs(info.trace_monitor[-1] - info.monitor_earlier) <= 1e-3 * info.trace_monitor[-1]
    assert not settled(1.0, 0.98, 1e-3) and settled(1e-6, 2e-6, 1e-3, floor=1.0)


def test_a_fit_that_reaches_its_cap_says_it_did_not_converge():
    j = joint("laplace", n=20, bandwidth=2.0)
    info = fit_tables(j, 8, "infonce", 40, seed=0, monitor=j.error_mod_constant, tolerance=1e-12)
    assert not info.converged and info.iterations == 40
    assert abs(info.trace_monitor[-1] - info.monitor_earlier) > 1e-12 * info.trace_monitor[-1]


def test_tsybakov_exponent_is_untested_on_an_atomic_margin_law(monkeypatch):
    from neurips26.papers.crl_spectral import retrieval

    # the block joint: its nonzero margins take a handful of values, all far from 0
    result = retrieval.tsybakov_exponent(P.discrete_joint("block", 48, 8, 0.1, 0.3, np.random.default_rng(7)))
    assert result["alpha"] is None and "atomic margin law" in result["degenerate"]
    assert result["atoms"] < 12 and result["smallest_margin"] > 1.0
    # a smooth law is fitted
    smooth = retrieval.tsybakov_exponent(P.discrete_joint("laplace", 48, 3.0, 0.1, 0.3, np.random.default_rng(7)))
    assert smooth["alpha"] is not None and smooth["degenerate"] == "" and 0.3 < smooth["alpha"] < 3
    # three atoms, brute: no exponent
    gaps = np.repeat([0.5, 1.0, 2.0], 1000)
    atomic = _exponent_of_margins(monkeypatch, gaps)
    assert atomic["alpha"] is None and atomic["atoms"] <= 3


def test_the_calibration_null_reads_the_spectral_risk_of_the_same_points():
    # ||exp(s) - R||^2 by a brute double sum, quadratic in t near the optimum (slope 2), and the null
    # exponent is the slope of retrieval on that risk over the very points the InfoNCE fit uses
    from neurips26.papers.crl_spectral.steps import _perturbations

    j = joint("laplace", n=10)
    d = {"data_seed": 1, "candidates": 4, "perturbations": {"directions": 1, "smallest": 1e-3, "largest": 0.3, "steps": 6}}
    points = _perturbations(j, d, 0, 0, retrieval_error(j, j.pmi(), 4))
    ratio = j.density_ratio()
    rng = np.random.default_rng([1, 0, 0])
    delta = j.centred(rng.standard_normal(j.n))
    delta = delta / j.l2(delta)
    norm = j.l2(j.centred(j.pmi()))
    for p in points:
        s = j.pmi() + p["t"] * norm * delta
        brute = sum(j.px[a] * j.py[b] * (np.exp(s[a, b]) - ratio[a, b]) ** 2 for a in range(10) for b in range(10))
        assert p["excess_spectral_risk"] == pytest.approx(brute, rel=1e-10)
    small = [p for p in points if p["t"] < 0.02]
    slope = np.polyfit(np.log([p["t"] for p in small]), np.log([p["excess_spectral_risk"] for p in small]), 1)[0]
    assert slope == pytest.approx(2.0, abs=0.05)
    keep = [p for p in points if 1e-10 < p["excess_risk_xy"] <= 0.5 and p["retrieval_excess"] > 1e-10]
    assert len(keep) >= 3
    ref = np.polyfit(np.log([p["excess_spectral_risk"] for p in keep]), np.log([p["retrieval_excess"] for p in keep]), 1)[0]
    assert calibration_exponent(points, 0.5, risk="excess_spectral_risk") == pytest.approx(ref, rel=1e-12)
