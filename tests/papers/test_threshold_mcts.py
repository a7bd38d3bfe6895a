"""Thresholding MCTS against independent references: the scipy max-min LP over brute-force
flipping sets (T* and the GLR), the bandit formulas on depth-1 trees, a from-scratch pass for the
incremental statistics, D-tracking as the linear-scan reference of the ratio walk, and the error
rate of seeded runs."""

from __future__ import annotations

import numpy as np
import pytest

from neurips26.papers.threshold_mcts import baselines, check_config, method, reference
from neurips26.papers.threshold_mcts import tree as T


def _random_tree(rng):
    shape = [[0] * int(rng.integers(1, 4)) if rng.random() < 0.7 else 0 for _ in range(int(rng.integers(2, 4)))]
    if rng.random() < 0.5:  # some depth-3 branches
        shape[0] = [[0, 0], 0] if isinstance(shape[0], list) else shape[0]
    return T.from_nested(shape, bool(rng.random() < 0.5))


@pytest.mark.parametrize("family", ["gaussian", "bernoulli"])
def test_t_star_recursion_matches_scipy_lp(family):
    rng = np.random.default_rng(0)
    fam = T.FAMILIES[family]
    for _ in range(25):
        tree = _random_tree(rng)
        theta = 0.0 if family == "gaussian" else 0.5
        mu = rng.uniform(-1, 1, tree.n_leaves) if family == "gaussian" else rng.uniform(0.05, 0.95, tree.n_leaves)
        t_star, w = T.characteristic_time(tree, mu, theta, fam)
        t_lp, _ = reference.characteristic_time_lp(tree, mu, theta, fam)
        assert t_star == pytest.approx(t_lp, rel=1e-6)
        # the recursion's weights attain the max-min value (they are optimal, not just T*)
        d = T.divergence(mu, theta, fam)
        inner = min(float(d[list(S)] @ w[list(S)]) for S in reference.flipping_sets(tree, mu, theta))
        assert 1 / inner == pytest.approx(t_star, rel=1e-6)
        assert w.sum() == pytest.approx(1.0) and (w >= 0).all()


@pytest.mark.parametrize("root_is_max", [True, False])
def test_depth_one_matches_bandit_formula(root_is_max):
    """'Any arm above theta?' (MAX root): yes -> T* = 1 / max_i d_i over arms above; no -> sum_i 1/d_i.
    The MIN root is the mirror image."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        mu = rng.uniform(-1, 1, 6)
        tree = T.from_nested([0] * 6, root_is_max)
        t_star, w = T.characteristic_time(tree, mu, 0.0, T.GAUSSIAN)
        d = mu ** 2 / 2
        root = mu.max() if root_is_max else mu.min()
        easy = (root >= 0) == root_is_max  # one arm certifies the answer
        if easy:
            side = (mu >= 0) if root_is_max else (mu < 0)
            expect = 1.0 / d[side].max()
            assert w[np.flatnonzero(side)[np.argmax(d[side])]] == pytest.approx(1.0)
        else:
            expect = (1.0 / d).sum()
            np.testing.assert_allclose(w, (1 / d) / (1 / d).sum(), rtol=1e-9)
        assert t_star == pytest.approx(expect, rel=1e-12)


def test_bernoulli_divergence_matches_scipy_entropy():
    from scipy.stats import entropy

    for p, q in [(0.2, 0.5), (0.9, 0.3), (0.5, 0.51)]:
        assert T.divergence_scalar(p, q, T.BERNOULLI) == pytest.approx(entropy([p, 1 - p], [q, 1 - q]), rel=1e-10)


def test_incremental_statistics_and_glr_match_full_pass_and_brute_force():
    rng = np.random.default_rng(1)
    tree = T.from_nested([[0, 0, [0, 0]], [0, 0], 0], True)
    mu = rng.uniform(-0.5, 0.5, tree.n_leaves)
    src = method.RewardSource(mu, T.GAUSSIAN, np.random.default_rng(2))
    st = method.State(tree, 0.0, T.GAUSSIAN)
    st.initialise(src.draw_all())
    for _ in range(200):
        leaf = st.select_ratio()
        st.add(leaf, src.draw(leaf))
        sol = T.solve(tree, st.means(), 0.0, T.GAUSSIAN, counts=st.leaf_counts())
        np.testing.assert_allclose(st.glr, sol.glr, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(st.cost, sol.cost, rtol=1e-9)
    assert st.glr[0] == pytest.approx(reference.glr_bruteforce(tree, st.means(), st.leaf_counts(), 0.0, T.GAUSSIAN))


def test_ratio_walk_on_depth_one_is_the_linear_scan_d_tracking():
    """On a depth-1 tree the walk's rule is D-tracking over the leaves, computed by a full scan."""
    rng = np.random.default_rng(4)
    for trial in range(5):
        tree = T.from_nested([0] * 7, bool(trial % 2))
        mu = rng.uniform(-1, 1, 7)
        src = method.RewardSource(mu, T.GAUSSIAN, np.random.default_rng(trial))
        st = method.State(tree, 0.0, T.GAUSSIAN)
        st.initialise(src.draw_all())
        for _ in range(150):
            leaf = st.select_ratio()
            assert leaf == st.select_dtracking()
            st.add(leaf, src.draw(leaf))


def test_ratio_walk_picks_the_leaf_of_a_from_scratch_pass_on_deep_trees():
    from neurips26.papers.threshold_mcts.steps import _walk_matches_scan

    rng = np.random.default_rng(5)
    for depth in (2, 3):
        tree = T.regular(4, depth)
        assert _walk_matches_scan(tree, rng.uniform(-1, 1, tree.n_leaves), 40, depth) == 1.0


def test_error_rate_stays_below_delta_on_a_small_tree():
    tree = T.from_nested([[0, 0], [0, 0]], True)
    mu = np.array([0.35, -0.3, 0.5, 0.2])  # root = max(min(.35,-.3), min(.5,.2)) = 0.2 >= 0
    delta = 0.2
    for rule in ("ratio", "uniform"):
        res = [method.track_and_stop(tree, mu, T.GAUSSIAN, 0.0, delta, np.random.default_rng([s, 1]), rule)
               for s in range(150)]
        errors = sum(not r["answer"] for r in res)
        assert errors / len(res) <= delta
        assert not any(r["truncated"] for r in res)
    res = [baselines.lucb_mcts(tree, mu, T.GAUSSIAN, 0.0, delta, np.random.default_rng([s, 2])) for s in range(100)]
    assert sum(not r["answer"] for r in res) / len(res) <= delta


def test_bernoulli_runs_stop_and_answer():
    tree = T.from_nested([[0, 0], [0, 0]], False)
    mu = np.array([0.8, 0.7, 0.2, 0.9])  # root = min(max(.8,.7), max(.2,.9)) = 0.8 >= 0.5
    for rule in ("ratio", "dtracking"):
        res = [method.track_and_stop(tree, mu, T.BERNOULLI, 0.5, 0.05, np.random.default_rng([s, 3]), rule)
               for s in range(30)]
        assert sum(r["answer"] for r in res) >= 28


def test_check_config_names_the_key():
    problems = check_config({"run_variants": ["x"], "variants": {}, "algorithms": ["uniform"], "deltas": [2.0]})
    assert any(p.startswith("run_variants") for p in problems)
    assert any(p.startswith("algorithms") for p in problems)
    assert any(p.startswith("deltas") for p in problems)


def test_union_threshold_is_larger_and_still_correct():
    tree = T.from_nested([[0, 0], [0, 0]], True)
    mu = np.array([0.9, 0.8, -0.9, 0.4])  # root = max(min(.9,.8), min(-.9,.4)) = 0.8
    for t in (10, 1000):
        assert method.beta(t, 0.05, "union", tree.n_leaves) > method.beta(t, 0.05, "practical")
    practical = [method.track_and_stop(tree, mu, T.GAUSSIAN, 0.0, 0.05, np.random.default_rng([s, 5]), "ratio")
                 for s in range(15)]
    union = [method.track_and_stop(tree, mu, T.GAUSSIAN, 0.0, 0.05, np.random.default_rng([s, 5]), "ratio", "union")
             for s in range(15)]
    assert all(r["answer"] for r in union)
    assert np.mean([r["samples"] for r in union]) > np.mean([r["samples"] for r in practical])
    with pytest.raises(ValueError, match="stopping.beta"):
        method.beta(10, 0.1, "nonsense")
