"""ADAP against independent references: Monte Carlo against the closed-form cost of threshold
policies, value iteration and brute force over threshold sets for the DP optimum, exact enumeration
of best-of-n on a tiny instance, and the LM pool's empirical instance."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from neurips26.papers.adap import baselines, check_config, method
from neurips26.papers.adap.steps import synthetic_prompt


def _instance(seed=0, atoms=6):
    rng = np.random.default_rng(seed)
    s = np.sort(rng.normal(size=atoms))
    return method.Instance(s, rng.uniform(0.2, 1, atoms), np.sort(rng.uniform(0, 0.6, atoms)))


@pytest.mark.parametrize("c_v", [1.0, 10.0])
def test_monte_carlo_cost_of_threshold_policy_matches_closed_form(c_v):
    inst = _instance(1)
    rng = np.random.default_rng(0)
    for tau in inst.scores[[0, 2, 4]]:
        closed = method.threshold_cost(inst, tau, 1.0, c_v)
        mc = method.threshold_cost_mc(inst, inst.scores >= tau, 1.0, c_v, 20000, rng)
        assert mc.mean() == pytest.approx(closed, abs=4 * mc.std() / np.sqrt(len(mc)))


def test_dp_optimum_equals_value_iteration_and_brute_force_over_verify_sets():
    for seed in range(5):
        inst = _instance(seed)
        for c_v in (1.0, 5.0, 50.0):
            opt, verify = method.optimal_policy(inst, 1.0, c_v)
            assert opt == pytest.approx(method.bellman_value(inst, 1.0, c_v), rel=1e-6)
            brute = min(method.set_cost(inst, np.array(mask, bool), 1.0, c_v)
                        for mask in itertools.product([0, 1], repeat=len(inst.scores)) if any(mask))
            assert opt == pytest.approx(brute, rel=1e-12)
            assert method.set_cost(inst, verify, 1.0, c_v) == pytest.approx(opt)


def _best_of_n_exact(inst, n, c_g, c_v):
    """Exact expected cost of best-of-n (rank-order verification, fresh batch on failure) by enumerating
    every ordered batch of atoms."""
    k = len(inst.scores)
    exp_cost, p_success = 0.0, 0.0
    for combo in itertools.product(range(k), repeat=n):
        prob = float(np.prod(inst.probs[list(combo)]))
        order = sorted(combo, key=lambda j: -inst.scores[j])
        fail, cost = 1.0, n * c_g
        for j in order:
            cost += c_v * fail  # a verification happens only while everything so far failed
            fail *= 1 - inst.success[j]
        exp_cost += prob * cost
        p_success += prob * (1 - fail)
    return exp_cost / p_success


def test_dp_optimum_no_worse_than_any_fixed_policy():
    inst = _instance(2, atoms=4)
    for c_v in (1.0, 10.0, 100.0):
        opt, _ = method.optimal_policy(inst, 1.0, c_v)
        for n in (1, 2, 3, 4):
            exact = _best_of_n_exact(inst, n, 1.0, c_v)
            assert opt <= exact + 1e-12
        rng = np.random.default_rng(1)
        mc = baselines.best_of_n_cost(inst, 3, 1.0, c_v, 20000, rng)
        assert mc.mean() == pytest.approx(_best_of_n_exact(inst, 3, 1.0, c_v), abs=4 * mc.std() / np.sqrt(len(mc)))
        for tau in inst.scores:
            assert opt <= method.threshold_cost(inst, tau, 1.0, c_v) + 1e-12
        assert opt <= method.adap_cost(inst, 1.0, c_v, 4000, rng).mean() + 1e-9


def test_optimum_uses_a_score_threshold_when_success_is_monotone():
    settings = {"success": "monotone", "grid": 81, "score_shift": 1.0, "slope": 2.0, "offset": 0.0, "spread": 2.0}
    inst = synthetic_prompt(settings, 0.5)
    for c_v in (1.0, 30.0):
        opt, verify = method.optimal_policy(inst, 1.0, c_v)
        first = np.argmax(verify)
        assert verify[first:].all() and not verify[:first].any()
        assert opt == pytest.approx(min(method.threshold_cost(inst, t, 1.0, c_v) for t in inst.scores))


def test_nonmonotone_success_makes_top_ranked_verification_costly():
    settings = {"success": "nonmonotone", "grid": 81, "score_shift": 1.0, "peak": 0.5, "bump_width": 0.5, "floor": 0.05}
    inst = synthetic_prompt(settings, 0.2)
    opt, verify = method.optimal_policy(inst, 1.0, 30.0)
    assert not verify[-1]  # the top scores are not worth verifying
    best_threshold = min(method.threshold_cost(inst, t, 1.0, 30.0) for t in inst.scores)
    assert best_threshold > 1.4 * opt


def test_shell_sizes_double_and_split_the_budget():
    sizes = [method.shell_sizes(k, 1.0, 10.0) for k in range(6)]
    assert all(n2 >= 2 * n1 - 1 for (n1, _), (n2, _) in zip(sizes, sizes[1:]))
    assert all(1 <= m <= n for n, m in sizes)


def test_pool_instance_counts_distinct_answers():
    from neurips26.papers.adap.lm import encode, pool_instance, split_problems

    inst = pool_instance(np.array([5, 5, 7, 9]), np.array([-1.0, -1.0, -2.0, -0.5]), np.array([True, True, False, False]))
    np.testing.assert_allclose(inst.probs, [0.5, 0.25, 0.25])
    np.testing.assert_allclose(inst.success, [1, 0, 0])
    assert inst.base_rate == pytest.approx(0.5)
    train, test = split_problems(10, 5, 0)
    assert len(train) + len(test) == 100 and not set(map(tuple, test)) & set(map(tuple, train))
    assert len(encode(3, 45)) == 9


def test_check_config_names_the_key():
    problems = check_config({"run_variants": ["x"], "variants": {}, "evaluation": {"cost_ratios": [0.5]},
                             "lm": {"dim": 10, "heads": 4}})
    assert any(p.startswith("run_variants") for p in problems)
    assert any(p.startswith("evaluation.cost_ratios") for p in problems)
    assert any(p.startswith("lm.dim") for p in problems)


def test_cached_best_of_one_on_a_deterministic_instance_matches_exact_recursion():
    """Distinct answers under an exact verifier: a rejected answer is never paid for again. Exact
    expected cost by recursion over the set V of rejected answers:
    E(V) = (c_g + c_v sum_{j not in V} f_j + sum_{j wrong, not in V} f_j E(V + j)) / (1 - f(V))."""
    from functools import lru_cache

    inst = method.Instance([0.0, 1.0, 2.0, 3.0], [0.4, 0.3, 0.2, 0.1], [1, 0, 0, 1])
    assert inst.deterministic
    f, ok, c_g, c_v = inst.probs, inst.success > 0, 1.0, 10.0

    @lru_cache(None)
    def E(V: frozenset) -> float:
        free = [j for j in range(4) if j not in V]
        num = c_g + c_v * sum(f[j] for j in free) + sum(f[j] * E(V | {j}) for j in free if not ok[j])
        return num / (1 - sum(f[j] for j in V))

    mc = baselines.best_of_n_cost(inst, 1, c_g, c_v, 40000, np.random.default_rng(0))
    assert mc.mean() == pytest.approx(E(frozenset()), abs=4 * mc.std() / np.sqrt(len(mc)))
    assert method.optimal_policy(inst, c_g, c_v)[0] <= E(frozenset())


def test_shell_zero_at_high_verifier_cost_follows_the_equal_split():
    """B_k = (c_g + c_v) 2^k, n_k = floor(B_k / 2 c_g), m_k = max(1, floor(B_k / 2 c_v)): at c_v / c_g = 100
    shell 0 generates 50 candidates and verifies the top one."""
    assert method.shell_sizes(0, 1.0, 100.0) == (50, 1)
    assert method.shell_sizes(1, 1.0, 100.0) == (101, 1)
    assert method.shell_sizes(2, 1.0, 100.0) == (202, 2)
    assert method.shell_sizes(0, 1.0, 1.0) == (1, 1)


@pytest.mark.parametrize("n_best, n_probe", [(8, 4), (2, 4), (4, 4)])
def test_difficulty_baseline_generates_only_what_it_uses(n_best, n_probe):
    """Every candidate passes: the first batch (the probe plus max(0, n - n_probe) fresh candidates)
    finds a positive, so each run generates max(n, n_probe) candidates and verifies one."""
    inst = method.Instance([0.0, 1.0], [0.5, 0.5], [1.0, 1.0])
    c_v = 7.0
    for reuse, generated in ((True, max(n_best, n_probe)), (False, n_probe + n_best)):
        cost = baselines.difficulty_adaptive_cost(inst, [], [n_best], n_probe, 1.0, c_v, 50,
                                                  np.random.default_rng(0), reuse_probe=reuse)
        np.testing.assert_allclose(cost, generated + c_v)


def test_difficulty_baseline_ranks_the_probe_candidates():
    """n = 1 after a probe of 4 on atoms {wrong (score 0), right (score 1)}, each with probability 1/2,
    verdicts cached: the first batch is the 4 probe candidates, the top one is right unless all 4 are
    wrong (1/16), then the wrong atom is already rejected and fresh batches of one cost c_g + c_v/2
    per draw on average until the right one: E = 4 + c_v + (1/16)(2 c_g + c_v)."""
    inst = method.Instance([0.0, 1.0], [0.5, 0.5], [0.0, 1.0])
    c_g, c_v = 1.0, 10.0
    cost = baselines.difficulty_adaptive_cost(inst, [], [1], 4, c_g, c_v, 40000, np.random.default_rng(1))
    exact = 4 * c_g + c_v + (2 * c_g + c_v) / 16
    assert cost.mean() == pytest.approx(exact, abs=4 * cost.std() / np.sqrt(len(cost)))


def test_constant_factor_bound_and_its_per_shell_failure_step():
    """The closed-form bound at its minimiser, and step (ii) of its derivation: a shell of n candidates
    verifying the top m fails with probability at most (1 - q r)^n + (1 - r)^m, q r and r from the
    optimal verify set."""
    from scipy.optimize import minimize_scalar

    c, lam = method.constant_factor_bound()
    f = lambda x: 8 * x * (1 + 1 / (1 - 4 * np.exp(-x / 2)))  # noqa: E731
    ref = minimize_scalar(f, bounds=(2.8, 20), method="bounded")
    assert c == pytest.approx(ref.fun, rel=1e-6) and lam == pytest.approx(ref.x, abs=2e-3)
    rng = np.random.default_rng(3)
    settings = {"grid": 161, "score_shift": 1.0, "success": "monotone", "slope": 2.0, "offset": 0.0, "spread": 2.0}
    for d, c_v in ((0.2, 10.0), (0.9, 100.0)):
        inst = synthetic_prompt(settings, d)
        _, verify = method.optimal_policy(inst, 1.0, c_v)
        q = inst.probs[verify].sum()
        r = inst.probs[verify] @ inst.success[verify] / q
        for n, m in ((20, 2), (200, 3), (50, 50)):
            _, found = method.rank_verify(inst, np.arange(20000), n, m, 1.0, c_v, rng)
            assert 1 - found.mean() <= (1 - q * r) ** n + (1 - r) ** m + 0.01


def test_adap_stays_below_the_derived_constant_on_monotone_prompts():
    settings = {"grid": 161, "score_shift": 1.0, "success": "monotone", "slope": 2.0, "offset": 0.0, "spread": 2.0}
    bound, _ = method.constant_factor_bound()
    rng = np.random.default_rng(5)
    for d in (0.0, 1.0):
        inst = synthetic_prompt(settings, d)
        for c_v in (1.0, 100.0, 1000.0):
            opt, _ = method.optimal_policy(inst, 1.0, c_v)
            assert method.adap_cost(inst, 1.0, c_v, 400, rng).mean() / opt < bound


def test_reward_model_features_are_one_hot_digits():
    from neurips26.papers.adap.lm import rm_features

    x = rm_features(np.array([[7, 15], [99, 0]]), np.array([22, 99]), 100)
    assert x.shape == (2, 70) and (x.sum(1) == 7).all()
    on = np.flatnonzero(x[0])
    np.testing.assert_array_equal(on, [0, 17, 21, 35, 40, 52, 62])


# ---------------------------------------------------------------- tuning protocol
def _peaked_cost(best):
    """A stand-in for the Monte Carlo costs: mean cost lowest at n = best (log2 distance)."""
    def cost(inst, n, *args, **kwargs):
        runs = args[2] if len(args) > 2 else 4
        return np.full(runs, 10.0 + abs(np.log2(n) - np.log2(best)))
    return cost


def test_baselines_n_is_extended_past_the_grid_edge(monkeypatch):
    from neurips26.papers.adap import steps

    monkeypatch.setattr(steps.baselines, "best_of_n_cost", _peaked_cost(512))
    monkeypatch.setattr(steps.baselines, "probe_best_of_n_cost",
                        lambda inst, n, n_probe, c_g, c_v, runs, rng, reuse=True: np.full(runs, 5.0 + abs(np.log2(n) - 9)))
    monkeypatch.setattr(steps.baselines, "difficulty_adaptive_cost", lambda *a, **k: np.full(a[6], 3.0))
    monkeypatch.setattr(steps.method, "adap_cost", lambda inst, c_g, c_v, runs, rng: np.full(runs, 2.0))
    insts = [_instance(i) for i in range(6)]
    cfg = {"cost_ratios": [10], "n_grid": [1, 2, 4, 8, 16, 32, 64, 128], "train_runs": 4, "runs": 4, "n_probe": 2,
           "bins": 2}
    res = steps.evaluate_prompts(insts[:4], insts[4:], cfg, np.random.default_rng(0), setting="monotone", seed=0,
                                 extensions=3)
    row = res["per_ratio"][0]
    assert row["fixed_n"] == 512 and row["bin_n"] == [512, 512]
    recs = [steps.tuning.Record.from_json(d) for d in row["tuning"]]
    fixed = [r for r in recs if r.method == "fixed best-of-n (n tuned)"][0]
    assert fixed.grid[-3:] == [256, 512, 1024] and fixed.extensions == 3 and fixed.status == "tuned"
    assert fixed.setting == "monotone, c_v/c_g = 10"
    # past the cap (n <= 1024 by the knob's bound) the best stays on the edge and is recorded capped
    monkeypatch.setattr(steps.baselines, "best_of_n_cost", _peaked_cost(1 << 14))
    res = steps.evaluate_prompts(insts[:4], insts[4:], cfg, np.random.default_rng(0), setting="monotone", seed=0,
                                 extensions=3)
    recs = [steps.tuning.Record.from_json(d) for d in res["per_ratio"][0]["tuning"]]
    fixed = [r for r in recs if r.method == "fixed best-of-n (n tuned)"][0]
    assert fixed.status == "capped" and fixed.chosen == 1024 and fixed.edge == "high"
    notes = steps.capped_notes(recs, "monotone", [10])
    assert "1024" in notes["fixed_n"][0] and notes["difficulty"] == [""]


def test_n_one_is_not_a_capped_edge(monkeypatch):
    from neurips26.papers.adap import steps

    monkeypatch.setattr(steps.baselines, "best_of_n_cost", _peaked_cost(1))
    cost = lambda n: float(steps.baselines.best_of_n_cost(None, n, 1.0, 1.0, 4, None).mean())
    n, recs = steps.tune_n(cost, [1, 2, 4], method="m", setting="s", seed=0, extensions=3, cap=1024, split="train")
    assert n == 1 and recs[0].status == "tuned" and recs[0].grid == [1, 2, 4]
