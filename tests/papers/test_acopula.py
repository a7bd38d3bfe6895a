"""acopula: densities against closed forms, copulae, brute-force autograd and the nacLL port;
gradients against finite differences; sampler against the generators' Kendall's tau."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
import torch

from neurips26.papers.acopula import baselines as B
from neurips26.papers.acopula import check_config
from neurips26.papers.acopula import data as D
from neurips26.papers.acopula import generators as G
from neurips26.papers.acopula import method as M
from neurips26.papers.acopula.sampling import sample
from neurips26.papers.acopula.series import LogSeries

FAMILY_THETAS = {"clayton": 2.0, "gumbel": 1.8, "frank": 4.0, "joe": 1.7, "amh": 0.6, "nelsen12": 1.4,
                 "nelsen13": 1.6, "nelsen14": 1.3, "nelsen19": 0.8, "nelsen20": 0.7}


def _u(n, d, seed=0):
    return torch.as_tensor(np.random.default_rng(seed).uniform(0.05, 0.95, size=(n, d)))


@pytest.mark.parametrize("d", [2, 5, 40])
def test_clayton_closed_form_density(d):
    theta, u = 1.3, _u(6, d)
    root = M.flat("clayton", d, theta)
    ours = M.log_density(root, M.generators_from_thetas(root), u)
    t = (u ** -theta - 1).sum(1)
    ref = sum(math.log1p(k * theta) for k in range(d)) - (theta + 1) * torch.log(u).sum(1) \
        - (1 / theta + d) * torch.log1p(t)
    torch.testing.assert_close(ours, ref, rtol=1e-11, atol=1e-10)


@pytest.mark.parametrize("family,cls", [("clayton", "ClaytonCopula"), ("gumbel", "GumbelCopula"),
                                        ("frank", "FrankCopula")])
def test_equal_parameter_tree_equals_flat_copulae(family, cls):
    import copulae

    theta = {"clayton": 1.5, "gumbel": 1.6, "frank": 3.0}[family]
    u = _u(8, 6, seed=1)
    tree = M.Node(family, theta, [0, M.Node(family, theta, [1, 2]), M.Node(family, theta, [3, M.Node(family, theta, [4, 5])])])
    ours = M.log_density(tree, M.generators_from_thetas(tree), u).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cop = getattr(copulae, cls)(theta=theta, dim=6)
        ref = cop.pdf(u.numpy(), log=True)
        cdf_ref = cop.cdf(u.numpy())
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9)
    # all coordinates censored: the likelihood is C(u) itself
    all_cens = M.log_density(tree, M.generators_from_thetas(tree), u, torch.zeros(8, 6, dtype=torch.bool))
    np.testing.assert_allclose(np.exp(all_cens.numpy()), cdf_ref, rtol=1e-9)


def test_all_censored_is_log_cdf_nested():
    tree = M.Node("gumbel", 1.2, [M.Node("gumbel", 2.0, [0, 1, 2]), M.Node("gumbel", 3.0, [3, 4])])
    gens, u = M.generators_from_thetas(tree), _u(5, 5, seed=2)
    ll = M.log_density(tree, gens, u, torch.zeros(5, 5, dtype=torch.bool))
    torch.testing.assert_close(ll, torch.log(M.cdf(tree, gens, u)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("family", list(FAMILY_THETAS))
def test_flat_against_brute_force_autograd_random_masks(family):
    d, u = 5, _u(8, 5, seed=3)
    root = M.flat(family, d, FAMILY_THETAS[family])
    gens = M.generators_from_thetas(root)
    observed = torch.as_tensor(np.random.default_rng(4).uniform(size=(8, d)) < 0.6)
    torch.testing.assert_close(M.log_density(root, gens, u, observed), B.naive_log_density(root, gens, u, observed),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("family,thetas", [("clayton", (0.7, 2.0, 3.0)), ("gumbel", (1.3, 2.0, 2.5)),
                                           ("frank", (2.0, 5.0, 7.0)), ("joe", (1.2, 2.0, 3.0)),
                                           ("amh", (0.3, 0.6, 0.8)), ("nelsen13", (1.2, 1.5, 2.5)),
                                           ("nelsen19", (0.5, 1.0, 2.0)), ("nelsen12", (1.1, 1.5, 2.0))])
def test_nested_against_brute_force_autograd(family, thetas):
    t0, t1, t2 = thetas
    tree = M.Node(family, t0, [0, M.Node(family, t1, [1, 2]), M.Node(family, t2, [3, M.Node(family, t2 * 1.2, [4, 5])])])
    gens, u = M.generators_from_thetas(tree), _u(6, 6, seed=5)
    observed = torch.as_tensor(np.random.default_rng(6).uniform(size=(6, 6)) < 0.7)
    torch.testing.assert_close(M.log_density(tree, gens, u, observed), B.naive_log_density(tree, gens, u, observed),
                               rtol=1e-9, atol=1e-9)


def test_sibling_batching_matches_brute_force():
    """Several leaf-only siblings of one family (the batched path) with censoring."""
    tree = M.two_level("clayton", [2, 2, 2], 0.9, [1.5, 2.5, 4.0])
    gens, u = M.generators_from_thetas(tree), _u(6, 6, seed=7)
    observed = torch.as_tensor(np.random.default_rng(8).uniform(size=(6, 6)) < 0.7)
    torch.testing.assert_close(M.log_density(tree, gens, u, observed), B.naive_log_density(tree, gens, u, observed),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("family,theta0", [("clayton", 0.8), ("gumbel", 1.3)])
def test_against_nacll_port(family, theta0):
    sizes, thetas = [3, 4, 2], [theta0 + 1.0, theta0 + 2.0, theta0 + 0.5]
    tree = M.two_level(family, sizes, theta0, thetas)
    u = _u(7, 9, seed=9)
    ours = M.log_density(tree, M.generators_from_thetas(tree), u).numpy()
    np.testing.assert_allclose(ours, B.nacll_log_density(family, theta0, thetas, sizes, u.numpy()), rtol=1e-9, atol=1e-9)
    r_structured = B.nacll_log_density(family, theta0, thetas, sizes, u.numpy(), per_element_prod=True)
    np.testing.assert_allclose(ours, r_structured, rtol=1e-9, atol=1e-9)


def test_blockparts_enumerates_every_index_vector_once():
    """Q_k of nacLL against a brute-force enumeration: every j with 1 <= j_s <= d_s, by its sum."""
    sizes = (3, 1, 4)
    parts = B._blockparts(sizes)
    for k in range(len(sizes), sum(sizes) + 1):
        brute = sorted(j for j in itertools.product(*[range(1, s + 1) for s in sizes]) if sum(j) == k)
        assert sorted(map(tuple, parts[k].T.tolist())) == brute


def test_high_dimension_stays_finite_and_matches_nacll():
    sizes, thetas = [7] * 10, [1.5 + 0.25 * (s % 4) for s in range(10)]
    tree = M.two_level("clayton", sizes, 1.0, thetas)
    u = _u(2, 70, seed=10)
    ours = M.log_density(tree, M.generators_from_thetas(tree), u)
    assert torch.isfinite(ours).all()
    big = M.two_level("clayton", [7] * 60, 1.0, [1.5] * 60)
    assert torch.isfinite(M.log_density(big, M.generators_from_thetas(big), _u(1, 420, seed=11))).all()


def test_gradients_against_finite_differences():
    tree = M.Node("frank", None, [M.Node("frank", None, [0, 1, 2]), M.Node("frank", None, [3, 4])], name="root")
    model = M.NestedModel(tree)
    u = _u(10, 5, seed=12)
    observed = torch.as_tensor(np.random.default_rng(13).uniform(size=(10, 5)) < 0.7)
    loss = model.log_likelihood(u, observed).sum()
    (grad,) = torch.autograd.grad(loss, model.free)
    eps = 1e-6
    for i in range(model.free.numel()):
        with torch.no_grad():
            model.free[i] += eps
            up = model.log_likelihood(u, observed).sum()
            model.free[i] -= 2 * eps
            down = model.log_likelihood(u, observed).sum()
            model.free[i] += eps
        assert abs(float(grad[i]) - float(up - down) / (2 * eps)) < 1e-5 * max(1.0, abs(float(grad[i])))


def test_series_against_autograd_derivatives():
    t0 = torch.tensor([0.7], dtype=torch.float64)
    g = G.Joe(torch.tensor(2.3, dtype=torch.float64))
    coeffs = g.psi_series(t0, 5).values()[0]
    x = t0.clone().requires_grad_(True)
    f = g.psi(x).sum()
    for n in range(6):
        fv = float(f.detach())
        assert abs(float(coeffs[n]) - fv / math.factorial(n)) < 1e-10 * max(1, abs(fv))
        if n < 5:
            (f,) = torch.autograd.grad(f, x, create_graph=True)
            f = f.sum()
    s = LogSeries.variable(torch.tensor([1.5], dtype=torch.float64), 6)
    torch.testing.assert_close((s.log_() * 0.5).exp().values(), s.pow(0.5).values(), rtol=1e-12, atol=1e-14)


def test_taus_closed_forms():
    assert abs(G.make("clayton", 2.0).tau() - 0.5) < 1e-8
    assert abs(G.make("gumbel", 2.5).tau() - 0.6) < 1e-8
    th = 0.7
    amh = 1 - 2 * (th + (1 - th) ** 2 * math.log(1 - th)) / (3 * th ** 2)
    assert abs(G.make("amh", th).tau() - amh) < 1e-6


@pytest.mark.parametrize("family,theta", [("clayton", 2.0), ("gumbel", 2.0), ("frank", 6.0), ("joe", 2.5),
                                          ("amh", 0.8), ("nelsen12", 1.5), ("nelsen13", 3.0), ("nelsen14", 1.5)])
def test_flat_sampler_tau(family, theta):
    root = M.flat(family, 2, theta)
    gens = M.generators_from_thetas(root)
    u = sample(root, gens, 3000, np.random.default_rng(14))
    from scipy.stats import kendalltau
    assert abs(kendalltau(u[:, 0], u[:, 1]).statistic - gens[id(root)].tau()) < 0.04


@pytest.mark.parametrize("family,thetas", [("clayton", (0.8, 2.0, 6.0)), ("gumbel", (1.3, 2.0, 4.0)),
                                           ("nelsen13", (1.5, 2.5, 5.0))])
def test_nested_sampler_tau_within_and_between(family, thetas):
    from scipy.stats import kendalltau

    tree = M.Node(family, thetas[0], [M.Node(family, thetas[1], [0, 1]), M.Node(family, thetas[2], [2, 3])])
    gens = M.generators_from_thetas(tree)
    u = sample(tree, gens, 3000, np.random.default_rng(15))
    taus = [G.make(family, t).tau() for t in thetas]
    assert abs(kendalltau(u[:, 0], u[:, 1]).statistic - taus[1]) < 0.04
    assert abs(kendalltau(u[:, 2], u[:, 3]).statistic - taus[2]) < 0.04
    assert abs(kendalltau(u[:, 0], u[:, 3]).statistic - taus[0]) < 0.04


def test_nesting_violation_is_a_clear_error():
    tree = M.Node("clayton", 3.0, [0, M.Node("clayton", 1.0, [1, 2])])
    with pytest.raises(ValueError, match="nesting condition violated"):
        M.log_density(tree, M.generators_from_thetas(tree), _u(2, 3))
    mixed = M.Node("clayton", 1.0, [0, M.Node("gumbel", 2.0, [1, 2])])
    with pytest.raises(ValueError, match="no known sufficient nesting condition"):
        M.log_density(mixed, M.generators_from_thetas(mixed), _u(2, 3))
    with pytest.raises(ValueError, match="outside its range"):
        G.make("gumbel", 0.5)


def test_neural_generator_density_and_inverse():
    torch.manual_seed(0)
    gen = G.NeuralGenerator(torch.randn(4, dtype=torch.float64), torch.randn(4, dtype=torch.float64))
    u = _u(5, 3, seed=16)
    t = gen.psi_inv(u)
    torch.testing.assert_close(gen.psi(t), u, rtol=1e-10, atol=1e-12)
    root = M.flat("clayton", 3)
    gens = {id(root): gen}
    torch.testing.assert_close(M.log_density(root, gens, u, check=False), B.naive_log_density(root, gens, u),
                               rtol=1e-7, atol=1e-7)


def test_fit_recovers_parameters():
    tree = M.Node("clayton", 0.8, [M.Node("clayton", 2.0, [0, 1, 2], name="a"), M.Node("clayton", 4.0, [3, 4], name="b")],
                  name="root")
    u = sample(tree, M.generators_from_thetas(tree), 600, np.random.default_rng(17))
    fresh = M.Node("clayton", None, [M.Node("clayton", None, [0, 1, 2], name="a"), M.Node("clayton", None, [3, 4], name="b")],
                   name="root")
    thetas, _ = M.fit(fresh, torch.as_tensor(u), max_iter=40)
    assert abs(thetas["root"] - 0.8) < 0.25 and abs(thetas["a"] - 2.0) < 0.5 and abs(thetas["b"] - 4.0) < 1.0


def test_real_format_loaders(tmp_path):
    (tmp_path / "prices.csv").write_text("date,AAA,BBB,CCC\n2020-01-01,10,20,30\n2020-01-02,11,19,31\n"
                                         "2020-01-03,12,21,29\n2020-01-06,11.5,22,30\n")
    (tmp_path / "sectors.csv").write_text("ticker,sector\nAAA,tech\nBBB,tech\nCCC,energy\n")
    returns, tickers, sectors = D.load_prices(tmp_path / "prices.csv", tmp_path / "sectors.csv")
    assert returns.shape == (3, 3) and sectors["CCC"] == "energy"
    spec = D.sector_tree_spec(tickers, sectors, "clayton")
    assert sorted(M.Node.from_spec(spec).leaves()) == [0, 1, 2]
    (tmp_path / "surv.csv").write_text("a_time,a_event,b_time,b_event\n1,1,2,0\n3,0,1,1\n2,1,5,1\n4,1,3,0\n")
    times, events, names = D.load_survival_table(tmp_path / "surv.csv")
    assert names == ["a", "b"] and times.shape == (4, 2)
    u, observed = D.survival_to_copula_scale(times, events)
    assert ((u > 0) & (u < 1)).all() and observed.sum() == 5
    with pytest.raises(FileNotFoundError, match="does not exist"):
        D.load_survival_table(tmp_path / "missing.csv")


def test_check_config_names_keys():
    problems = check_config({"simulate": {"root_theta": 2.0, "group_sizes": [2, 2], "group_thetas": [1.0]},
                             "speed": {"speedup_dim": 35, "nacll_dims": [4], "nacll_r_dims": [35], "ours_dims": [35]},
                             "survival": {"families": ["nope"]}})
    text = "\n".join(problems)
    assert "simulate.group_thetas" in text and "speed.speedup_dim" in text and "survival.families" in text


def test_smi_data_has_sectors_and_recur_clusters_use_only_recorded_gaps():
    returns, tickers, sectors = D.smi_returns()
    assert returns.shape[1] == 20 and all(t in sectors for t in tickers)
    from lifelines.datasets import load_recur

    raw = load_recur()
    counts = raw.groupby("ID").size()
    for gaps in (3, 4):
        times, events, names = D.recur_clusters(gaps)
        assert times.shape == (int((counts >= gaps).sum()), gaps) and names[-1] == f"gap{gaps}"
        assert (times > 0).all() and set(np.unique(events)) <= {0, 1}
        # every gap is a recorded one: the first subject's gaps are its own TIME1 - TIME0
        first = raw[raw.ID == counts[counts >= gaps].index[0]].sort_values("EVENT")
        np.testing.assert_allclose(times[0], np.maximum((first.TIME1 - first.TIME0).to_numpy()[:gaps], 0.5))
        np.testing.assert_array_equal(events[0], first.CENSOR.to_numpy()[:gaps])
    with pytest.raises(ValueError, match="recur_gaps"):
        D.recur_clusters(1)


@pytest.mark.parametrize("d", [98, 105])
def test_high_dimension_unequal_parameters_against_mpmath(d):
    """d ~ 100, every sector its own theta: ours in float64 against the closed-form Faa di Bruno sum
    in 80-digit arithmetic (which itself agrees with 120 digits and, at small d, with the nacLL port)."""
    sizes = [7] * (d // 7) + ([d % 7] if d % 7 else [])
    thetas = [1.4 + 0.3 * s for s in range(len(sizes))]
    tree = M.two_level("clayton", sizes, 1.0, thetas)
    u = _u(3, d, seed=20).numpy()
    ours = M.log_density(tree, M.generators_from_thetas(tree), torch.as_tensor(u)).numpy()
    ref = B.mpmath_clayton_log_density(1.0, thetas, sizes, u, dps=80)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-8)
    assert B.mpmath_clayton_log_density(1.0, thetas, sizes, u[:1], dps=120)[0] == pytest.approx(ref[0], abs=1e-12)
    small = _u(3, 10, seed=21).numpy()
    np.testing.assert_allclose(B.mpmath_clayton_log_density(1.0, [1.5, 2.5], [6, 4], small),
                               B.nacll_log_density("clayton", 1.0, [1.5, 2.5], [6, 4], small), atol=1e-10)


@pytest.mark.parametrize("family, thetas", [("clayton", (1.0, 1.5, 2.5)), ("gumbel", (1.2, 1.6, 2.2))])
def test_gradient_against_autograd_through_the_naive_formula(family, thetas):
    """Parameter gradients of the summed log-likelihood, ours against autograd through the naive
    nested mixed partial, with and without censoring."""
    root = M.Node(family, thetas[0], [M.Node(family, thetas[1], [0, 1, 2], name="a"),
                                      M.Node(family, thetas[2], [3, 4], name="b")], name="root")
    params = {id(n): torch.tensor(float(n.theta), dtype=torch.float64, requires_grad=True) for n in root.nodes()}
    u = _u(12, 5, seed=22)
    for observed in (None, torch.as_tensor(np.random.default_rng(23).uniform(size=(12, 5)) < 0.7)):
        gens = M.generators_from_thetas(root, params)
        ours = torch.autograd.grad(M.log_density(root, gens, u, observed, check=False).sum(), list(params.values()))
        gens = M.generators_from_thetas(root, params)
        naive = torch.autograd.grad(B.naive_log_density(root, gens, u, observed, differentiable=True).sum(),
                                    list(params.values()))
        for a, b in zip(ours, naive):
            assert float(a) == pytest.approx(float(b), rel=1e-9, abs=1e-9)


def test_fit_neural_improves_likelihood():
    tree = M.flat("clayton", 2, 2.0)
    u = torch.as_tensor(sample(tree, M.generators_from_thetas(tree), 150, np.random.default_rng(18)))
    params, ll = M.fit_neural(u, None, components=2, max_iter=15)
    gen0 = G.NeuralGenerator(torch.zeros(2, dtype=torch.float64), torch.linspace(-2.0, 2.0, 2, dtype=torch.float64))
    root = M.flat("clayton", 2)
    ll0 = float(M.log_density(root, {id(root): gen0}, u, check=False).mean())
    assert math.isfinite(ll) and ll > ll0 and abs(sum(params["weights"]) - 1) < 1e-9


def test_figures_write_every_fixed_knob_and_the_cross_fitted_family_to_tuning_csv(tmp_path):
    """speed, simulate, stocks, survival and figures end to end on tiny inputs: tuning.csv lists every
    fit's L-BFGS budget as configured (nothing is tuned) and, per survival part, the family chosen
    on the other parts."""
    from neurips26.core import io, tuning
    from neurips26.papers.acopula import steps

    rng = np.random.default_rng(0)
    prices = np.exp(np.cumsum(0.01 * rng.standard_normal((41, 4)), axis=0)) * 10
    (tmp_path / "prices.csv").write_text("date,AAA,BBB,CCC,DDD\n" + "".join(
        f"d{i}," + ",".join(f"{p:.4f}" for p in row) + "\n" for i, row in enumerate(prices)))
    (tmp_path / "sectors.csv").write_text("ticker,sector\nAAA,tech\nBBB,tech\nCCC,energy\nDDD,energy\n")
    speed = {"seed": 0, "theta0": 1.0, "sector_size": 3, "naive_dims": [4], "nacll_dims": [4, 6],
             "nacll_r_dims": [4, 6], "ours_dims": [4, 6], "rows_small": 4, "rows_nacll_r": 2, "rows_large": 2,
             "rows_naive": 2, "repeats": 2, "speedup_dim": 6, "scaling_dims": [4, 6, 8], "scaling_rows": 2,
             "slope_range": [4, 8], "precision_dim": 6, "precision_rows": 1, "precision_digits": 30,
             "grad_dims": [4], "grad_rows": 2}
    sim = {"family": "clayton", "root_theta": 0.8, "group_sizes": [2, 2], "group_thetas": [2.0, 3.0], "n": 30,
           "censor_rate": 0.3, "max_iter": 2}
    stk = {"source": "csv", "prices_path": str(tmp_path / "prices.csv"), "sectors_path": str(tmp_path / "sectors.csv"),
           "families": ["clayton"], "max_iter": 3, "parts": 2}
    times = rng.exponential(5.0, size=(16, 2)) + 0.1
    (tmp_path / "surv.csv").write_text("a_time,a_event,b_time,b_event\n" + "".join(
        f"{a:.3f},{int(i % 4 != 0)},{b:.3f},{int(i % 3 != 0)}\n" for i, (a, b) in enumerate(times)))
    srv = {"source": "csv", "recur_gaps": 3, "survival_path": str(tmp_path / "surv.csv"),
           "families": ["clayton", "gumbel", "frank"], "neural_components": 0, "max_iter": 4, "parts": 2,
           "split_seed": 0}
    steps.speed({"speed": speed}, {}, tmp_path / "speed")
    steps.stocks({"stocks": stk}, {}, tmp_path / "stocks")
    steps.survival({"survival": srv}, {}, tmp_path / "survival")
    steps.simulate({"simulate": sim, "seed": 0}, {}, tmp_path / "simulate" / "seed0")
    steps.figures({"scale": "smoke", "seeds": [0], "speed": speed, "simulate": sim, "stocks": stk, "survival": srv},
                  {k: tmp_path / k for k in ("speed", "simulate", "stocks", "survival")}, tmp_path)
    assert io.read_csv(tmp_path / "claims.csv")
    table = tuning.read_csv([tmp_path / "tuning.csv"])
    assert {r["status"] for r in table} == {"fixed", "choice"} and all(r["note"] for r in table)
    budget = {(r["setting"], r["method"]): r["chosen"] for r in table if r["knob"] == "max_iter"}
    assert budget[("simulate", "nested, censored MLE (ours)")] == budget[("simulate", "flat, censored MLE")] == "2"
    assert budget[("stocks", "nested (sector) copula")] == budget[("stocks", "flat copula")] == "3"
    assert budget[("survival", "every family, censored MLE")] == "4"
    choices = [r for r in table if r["status"] == "choice"]
    assert [r["setting"] for r in choices] == ["survival part 0", "survival part 1"]
    assert all(r["chosen"] in ("gumbel", "frank") and "clayton" not in r["grid"] for r in choices)
