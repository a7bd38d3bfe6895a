"""Thresholding MCTS against independent references: the scipy max-min LP over brute-force
flipping sets (T* and the GLR), the bandit formulas on depth-1 trees, a from-scratch pass for the
incremental statistics, the linear scan as the reference of the tournament-tree walk, the forced-exploration
schedules, the LUCB calibrations against their formula, and the error rate of seeded runs."""

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


def _initialised_state(tree, mu, seed):
    """A Gaussian sampling state at theta = 0 after one draw of every leaf, and its reward source."""
    src = method.RewardSource(mu, T.GAUSSIAN, np.random.default_rng(seed))
    st = method.State(tree, 0.0, T.GAUSSIAN)
    st.initialise(src.draw_all())
    return st, src


def test_incremental_statistics_and_glr_match_full_pass_and_brute_force():
    rng = np.random.default_rng(1)
    tree = T.from_nested([[0, 0, [0, 0]], [0, 0], 0], True)
    mu = rng.uniform(-0.5, 0.5, tree.n_leaves)
    st, src = _initialised_state(tree, mu, seed=2)
    for _ in range(200):
        leaf = st.select_ratio()
        st.add(leaf, src.draw(leaf))
        sol = T.solve(tree, st.means(), 0.0, T.GAUSSIAN, counts=st.leaf_counts())
        np.testing.assert_allclose(st.glr, sol.glr, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(st.cost, sol.cost, rtol=1e-9)
    assert st.glr[0] == pytest.approx(reference.glr_bruteforce(tree, st.means(), st.leaf_counts(), 0.0, T.GAUSSIAN))


def _random_shape(rng, max_depth=3, max_children=6):
    def node(d):
        if d >= max_depth or (d > 0 and rng.random() < 0.3):
            return 0
        return [node(d + 1) for _ in range(int(rng.integers(1, max_children + 1)))]
    return node(0)


def _disagree_root(shares, counts):
    """A depth-1 MAX tree whose leaves all lie below theta = 0 (the root disagrees, r_c = c_c / C) with
    costs proportional to `shares` and the given counts."""
    shares = np.asarray(shares, dtype=float)
    tree = T.from_nested([0] * len(shares), True)
    cost = 10.0 * shares
    mu = -np.sqrt(2.0 / cost)            # Gaussian: c = 1 / d = 2 / mu^2
    st = method.State(tree, 0.0, T.GAUSSIAN)
    glr = [n * m * m / 2 for n, m in zip(counts, mu)]
    st.load([sum(counts), *counts], [mu.max(), *mu], [min(glr), *glr], [cost.sum(), *cost])
    st.S = [m * n for m, n in zip(mu, counts)]
    return st


def test_gap_key_differs_from_the_quotient_key_on_the_counterexample():
    """r = (.6, .3, .1), N = (114, 48, 15): the gap N_n r_c - N_c = (-7.8, 5.1, 2.7) picks the second
    child, the quotient N_c / r_c = (190, 160, 150) the third. The method follows the gap form."""
    st = _disagree_root([0.6, 0.3, 0.1], [114, 48, 15])
    np.testing.assert_allclose(st.ratios(0), [0.6, 0.3, 0.1], rtol=1e-12)
    for forcing in ("node", "none"):
        assert st.select_ratio(forcing) == st.select_ratio_scan(forcing) == 1
        assert st.select_ratio(forcing, "quotient") == st.select_ratio_scan(forcing, "quotient") == 2
    assert method.selector(st, "ratio")() == 1 and method.selector(st, "ratio_quotient")() == 2


def _float_gap_argmax(c, n, Nn, C):
    best, arg = None, -1
    for j, (cj, nj) in enumerate(zip(c, n)):
        if cj == method.INF:
            continue
        k = Nn * (cj / C) - nj
        if arg < 0 or k > best:
            best, arg = k, j
    return arg


@pytest.mark.parametrize("ties", [False, True])
def test_kinetic_gap_tournament_matches_a_brute_force_argmax(ties):
    """The kinetic tournament's winner equals the brute-force argmax of the float gap keys (first slot
    on ties) after every one of many random line updates and queries at s = N_n / C moving both ways,
    with costs from a small set and small counts (ties = True: exact ties and parallel lines)."""
    rng = np.random.default_rng(21 + ties)
    checked = 0
    for trial in range(60):
        b = int(rng.integers(1, 70))
        kt = method._Children(b, True)

        def draw():
            if ties:
                return float(rng.choice([0.5, 1.0, 2.0, 3.0, method.INF], p=[.3, .3, .2, .15, .05])), int(rng.integers(1, 6))
            return (float(rng.exponential(3.0)) if rng.random() > 0.03 else method.INF), int(rng.integers(1, 400))

        lines = [draw() for _ in range(b)]
        for j, (c, n) in enumerate(lines):
            kt.set(j, -1.0, 0.0, c, n, 0.0)
        kt.build()
        for _ in range(150):
            if rng.random() < 0.6:
                j = int(rng.integers(b))
                lines[j] = draw()
                kt.update(j, -1.0, 0.0, lines[j][0], lines[j][1], 0.0)
            C = float(rng.uniform(0.5, 50.0)) if rng.random() < 0.5 else float(rng.choice([1.0, 2.0, 4.0]))
            Nn = int(rng.integers(1, 3000))
            c, n = zip(*lines)
            assert kt.gap_winner(Nn, C) == _float_gap_argmax(c, n, Nn, C), (trial, b)
            # a second query at the same point reads the certificates without repair
            assert kt.gap_winner(Nn, C) == _float_gap_argmax(c, n, Nn, C)
            checked += 1
    assert checked == 60 * 150


def test_kinetic_gap_tournament_repairs_a_logarithmic_number_of_positions(monkeypatch):
    """Tracking on a 1024-child disagree root: after the warm-up a round repairs about the updated
    child's log2(1024) = 10 ancestors, not the 1023 positions of a rebuild."""
    tree = T.regular(1024, 1, root_is_max=True)
    mu = np.random.default_rng(4).uniform(-4.0, -3.0, 1024)  # the timing's leaf means: the root disagrees
    st, src = _initialised_state(tree, mu, seed=5)
    for _ in range(3000):
        leaf = st.select_ratio()
        st.add(leaf, src.draw(leaf))
    calls = [0]
    repair = method._Children._repair

    def counted(self, *args):
        positions = repair(self, *args)
        calls[0] += positions
        return positions

    monkeypatch.setattr(method._Children, "_repair", counted)
    disagree = 0
    for _ in range(2000):
        disagree += st.val[0] < 0.0
        leaf = st.select_ratio()
        st.add(leaf, src.draw(leaf))
    assert disagree == 2000 and calls[0] >= 2000 * 10  # the updated child's path is repaired every round
    assert calls[0] / 2000 < 3 * 10


@pytest.mark.parametrize("key", ["gap", "quotient"])
@pytest.mark.parametrize("family", ["gaussian", "bernoulli"])
def test_tournament_selection_equals_the_linear_scan_on_random_trees(family, key):
    """The walk over (kinetic) tournament trees picks the same leaf as the linear scan of the ratio
    rule, for both keys and the three forcing modes, on many random irregular trees (Bernoulli leaves
    make exact ties of cost and count frequent, so the tie-breaking is exercised too)."""
    rng = np.random.default_rng(11)
    fam = T.FAMILIES[family]
    theta = 0.0 if family == "gaussian" else 0.5
    checked = 0
    for trial in range(120):
        tree = T.from_nested(_random_shape(rng), bool(rng.random() < 0.5))
        if tree.n_leaves < 2:
            continue
        mu = rng.uniform(-1, 1, tree.n_leaves) if family == "gaussian" else rng.uniform(0.05, 0.95, tree.n_leaves)
        src = method.RewardSource(mu, fam, np.random.default_rng(trial))
        st = method.State(tree, theta, fam)
        st.initialise(src.draw_all())
        for r in range(120):
            forcing = ("node", "global", "none")[r % 3]
            leaf = st.select_ratio(forcing, key)
            assert leaf == st.select_ratio_scan(forcing, key), (trial, r, forcing)
            checked += 1
            st.add(leaf, src.draw(leaf))
    assert checked > 10000


def test_tournament_selection_on_a_wide_tree_with_ties():
    """1000 Bernoulli children, all pulled once with the same reward: every key ties at the start."""
    tree = T.regular(1000, 1, root_is_max=False)
    st = method.State(tree, 0.5, T.BERNOULLI)
    st.initialise(np.ones(1000))
    src = method.RewardSource(np.full(1000, 0.7), T.BERNOULLI, np.random.default_rng(0))
    for _ in range(400):
        leaf = st.select_ratio()
        assert leaf == st.select_ratio_scan()
        st.add(leaf, src.draw(leaf))
        sol = T.solve(tree, st.means(), 0.5, T.BERNOULLI, counts=st.leaf_counts())
        assert st.glr[0] == pytest.approx(sol.glr[0], rel=1e-9)
        assert st.cost[0] == pytest.approx(sol.cost[0], rel=1e-9)


def test_global_forced_exploration_follows_the_sqrt_schedule():
    """ratio_global forces the least-sampled leaf exactly in the rounds where some N_i < sqrt(t) - K/2
    (replayed from the counts), and then every N_i >= sqrt(t) - K/2 - 1 (Garivier & Kaufmann 2016, Lemma 7)."""
    tree = T.from_nested([[0, 0, 0], [0, 0, 0], [0, 0]], True)
    mu = np.array([0.9, 0.8, 0.7, -0.5, 0.1, 0.2, -0.9, -0.8])  # one cheap certificate: the rest starve
    K = tree.n_leaves
    src = method.RewardSource(mu, T.GAUSSIAN, np.random.default_rng(3))
    st = method.State(tree, 0.0, T.GAUSSIAN)
    st.initialise(src.draw_all())
    expected = 0
    for _ in range(4000):
        counts = st.leaf_counts()
        forced = counts.min() < np.sqrt(st.t) - K / 2
        before = st.forced
        leaf = st.select_ratio("global")
        assert (st.forced - before) == int(forced)
        if forced:
            assert leaf == int(np.argmin(counts))
        expected += int(forced)
        st.add(leaf, src.draw(leaf))
        assert st.leaf_counts().min() >= np.sqrt(st.t) - K / 2 - 1
    assert st.forced == expected and expected > 50  # the schedule is active on this instance


def test_per_node_forced_exploration_keeps_every_child_above_its_schedule():
    """Per-node forcing: each child of every node n keeps N_c >= sqrt(N_n) - b_n/2 - 1 at every round."""
    tree = T.from_nested([[0, 0, 0, 0], [0, 0], [0, 0, 0]], True)
    mu = np.array([0.9, 0.8, 0.7, 0.6, -0.5, 0.1, -0.2, -0.9, -0.8])
    src = method.RewardSource(mu, T.GAUSSIAN, np.random.default_rng(4))
    st = method.State(tree, 0.0, T.GAUSSIAN)
    st.initialise(src.draw_all())
    for _ in range(3000):
        leaf = st.select_ratio()
        st.add(leaf, src.draw(leaf))
        for n, ch in enumerate(st.children):
            for c in ch:
                assert st.N[c] >= np.sqrt(st.N[n]) - len(ch) / 2 - 1
    assert st.forced > 0


def test_lucb_threshold_with_and_without_the_k_factor():
    tree = T.regular(7, 2)
    K = tree.n_leaves
    for calibration, factor in (("k", K), ("matched", 1)):
        st = baselines.LucbState(tree, T.GAUSSIAN, 0.0, 0.01, calibration=calibration)
        for n in (1, 10, 1000):
            assert st.level(n) == pytest.approx(np.log(factor * (1 + np.log(n)) / 0.01), rel=1e-12)
        # the Gaussian interval is mu_hat +- sqrt(2 b(n) / n)
        lo, hi = baselines._kl_bounds(0.3, 50, st.level(50), T.GAUSSIAN, 1.0)
        assert hi - 0.3 == pytest.approx(np.sqrt(2 * st.level(50) / 50), rel=1e-12)
    k = baselines.LucbState(tree, T.GAUSSIAN, 0.0, 0.01, calibration="k")
    m = baselines.LucbState(tree, T.GAUSSIAN, 0.0, 0.01, calibration="matched")
    assert k.level(5) - m.level(5) == pytest.approx(np.log(K), rel=1e-12)
    with pytest.raises(ValueError, match="calibration"):
        baselines.LucbState(tree, T.GAUSSIAN, 0.0, 0.01, calibration="nonsense")
    # Bernoulli KL interval: the bound sits where n kl(mu_hat, bound) = b(n)
    lo, hi = baselines._kl_bounds(0.3, 40, m.level(40), T.BERNOULLI, 1.0)
    assert 40 * T.divergence_scalar(0.3, hi, T.BERNOULLI) == pytest.approx(m.level(40), rel=1e-6)
    assert 40 * T.divergence_scalar(0.3, lo, T.BERNOULLI) == pytest.approx(m.level(40), rel=1e-6)


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
    for rule in ("ratio", "ratio_global", "uniform"):
        res = [method.track_and_stop(tree, mu, T.GAUSSIAN, 0.0, delta, np.random.default_rng([s, 1]), rule)
               for s in range(150)]
        errors = sum(not r["answer"] for r in res)
        assert errors / len(res) <= delta
        assert not any(r["truncated"] for r in res)
    for calibration in baselines.CALIBRATIONS:
        res = [baselines.lucb_mcts(tree, mu, T.GAUSSIAN, 0.0, delta, np.random.default_rng([s, 2]),
                                   calibration=calibration) for s in range(100)]
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


def test_figures_write_every_rules_fixed_knobs_to_tuning_csv(tmp_path):
    """simulate, timing and figures end to end on a tiny tree: tuning.csv lists every rule's knobs
    as the simulate jobs ran them, all fixed (nothing is tuned), each with its reason."""
    from neurips26.core import io, tuning
    from neurips26.papers.threshold_mcts import steps

    settings = {"family": "gaussian", "branching": 2, "depth": 2, "theta": 0.0, "mean_range": [-1.0, 1.0],
                "t_star_range": [1, 1000]}
    rules = ["ratio", "ratio_global", "dtracking", "uniform", "lucb", "lucb_matched"]
    stopping = {"beta": "practical", "max_samples": 5000}
    steps.simulate({"variant": "gaussian", "variant_settings": settings, "seeds": [0], "deltas": [0.1], "runs": 2,
                    "algorithms": rules, "stopping": stopping, "lp_check_trees": 1,
                    "asymptotics": {"deltas": [0.1, 0.01, 0.001], "runs": [2, 2, 2], "union_runs": 0,
                                    "slope_max_delta": 0.1}}, {}, tmp_path / "sims" / "gaussian")
    steps.timing({"timing": {"algorithms": ["ratio", "ratio_scan", "dtracking"], "wide": [4, 8, 16],
                             "deep": {"branching": 2, "depths": [1, 2, 3]}, "rounds": 8, "linear_rounds": 4,
                             "blocks": 2, "repeats": 2, "check_rounds": 3, "seed": 0}}, {}, tmp_path / "timing")
    steps.figures({"run_variants": ["gaussian"], "scale": "smoke"},
                  {"sims": tmp_path / "sims", "timing": tmp_path / "timing"}, tmp_path)
    assert io.read_csv(tmp_path / "claims.csv")
    table = tuning.read_csv([tmp_path / "tuning.csv"])
    assert {r["status"] for r in table} == {"fixed"} and all(r["note"] for r in table)
    knobs = {(r["method"], r["knob"]): r["chosen"] for r in table}
    names = steps.NAMES
    assert {r["method"] for r in table} == {names[r] for r in rules}
    assert all(knobs[(names[r], "max_samples")] == "5000" for r in rules)
    for r in ("ratio", "ratio_global", "dtracking", "uniform"):
        assert knobs[(names[r], "stopping threshold beta(t, delta)")].startswith("practical")
    assert knobs[(names["lucb"], "exploration level b(n)")] == "log(K (1 + log n) / delta)"
    assert knobs[(names["lucb_matched"], "exploration level b(n)")] == "log((1 + log n) / delta)"
    assert "sqrt(N_n)" in knobs[(names["ratio"], "forced exploration")]
    assert "sqrt(t)" in knobs[(names["dtracking"], "forced exploration")]


def test_timed_walk_reads_the_gap_key_at_every_round(monkeypatch):
    """The timing instances put every leaf far below theta, so the timed walk splits weight by the gap
    key at the MAX root every round (with means on both sides of theta a depth-1 MAX root agrees and
    the timing would measure one argmin, not the method's key)."""
    from neurips26.papers.threshold_mcts import steps

    calls = [0]
    gap_winner = method._Children.gap_winner

    def counted(self, *args):
        calls[0] += 1
        return gap_winner(self, *args)

    monkeypatch.setattr(method._Children, "gap_winner", counted)
    cfg = {"algorithms": ["ratio"], "wide": [64, 128, 256], "deep": {"branching": 2, "depths": []}, "rounds": 40,
           "linear_rounds": 4, "blocks": 2, "repeats": 1, "check_rounds": 1, "seed": 0}
    steps.measure_round_times(cfg)
    walked = 3 * (40 + 40 // 4 + 1)  # timed + warm-up rounds per tree, and one checked round
    assert calls[0] >= 0.95 * walked
