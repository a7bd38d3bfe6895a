"""Anchor PCA against independent references: scikit-learn PCA, scipy's principal angles and
matrix functions, brute force over the simplex for the maximin baseline, and the gas loader
on small files in the real format."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from sklearn.decomposition import PCA

from neurips26.core import io
from neurips26.papers.anchor_pca import baselines, check_config, data, method, steps


def _domains(seed=0, E=4, n=150, p=8):
    rng = np.random.default_rng(seed)
    out = []
    for e in range(E):
        A = rng.standard_normal((p, p)) * (1 + e * 0.3)
        out.append(rng.standard_normal((n + 10 * e, p)) @ A + rng.standard_normal(p) * 3)
    return out


def _angle(A, B):
    return float(np.degrees(scipy.linalg.subspace_angles(A, B).max()))


def test_gamma_zero_is_pooled_pca_of_domain_centred_data():
    domains = _domains()
    covs, w = method.domain_covariances(domains)
    V = method.anchor_pca(covs, w, 3, 0.0)
    centred = np.concatenate([X - X.mean(0) for X in domains])
    ref = PCA(n_components=3).fit(centred).components_.T
    assert _angle(V, ref) < 1e-6
    np.testing.assert_allclose(np.abs(V.T @ ref), np.eye(3), atol=1e-8)
    assert _angle(baselines.pooled_pca(covs, w, 3), ref) < 1e-6


@pytest.mark.parametrize("gamma", [0.0, 0.7, 25.0])
def test_one_domain_is_plain_pca_for_every_gamma(gamma):
    X = _domains(seed=3, E=1)[0]
    covs, w = method.domain_covariances([X])
    np.testing.assert_allclose(method.heterogeneity(covs, w), 0.0, atol=1e-12)
    ref = PCA(n_components=2).fit(X).components_.T
    assert _angle(method.anchor_pca(covs, w, 2, gamma), ref) < 1e-6
    assert _angle(baselines.maximin_pca(covs, 2, iterations=50)[0], ref) < 1e-6


def test_matrix_abs_matches_scipy_sqrtm():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((6, 6))
    A = A + A.T
    np.testing.assert_allclose(method.matrix_abs(A), scipy.linalg.sqrtm(A @ A).real, atol=1e-8)


def test_anchor_objective_is_ky_fan_optimum_and_bounds_domain_disagreement():
    domains = _domains(seed=2)
    covs, w = method.domain_covariances(domains)
    gamma, k = 0.8, 3
    V = method.anchor_pca(covs, w, k, gamma)
    target = method.anchor_target(covs, w, gamma)
    best = method.anchor_objective(V, covs, w, gamma)
    assert best == pytest.approx(np.sort(np.linalg.eigvalsh(target))[::-1][:k].sum(), rel=1e-10)
    rng = np.random.default_rng(0)
    for _ in range(200):  # no random orthonormal frame does better
        Q, _ = np.linalg.qr(rng.standard_normal((target.shape[0], k)))
        assert method.anchor_objective(Q, covs, w, gamma) <= best + 1e-9
    # the penalty bounds the mean absolute disagreement of the embedding's variance across domains
    pooled = method.pooled_covariance(covs, w)
    disagreement = sum(we * abs(np.trace(V.T @ (S - pooled) @ V)) for we, S in zip(w, covs))
    assert disagreement <= np.trace(V.T @ method.heterogeneity(covs, w) @ V) + 1e-9


def test_maximin_pca_matches_brute_force_game_value():
    domains = _domains(seed=5, E=2, p=6)
    covs, _ = method.domain_covariances(domains)
    k = 2
    normalised = [S / np.trace(S) for S in covs]
    grid = np.linspace(0, 1, 4001)
    value = min(np.sort(np.linalg.eigvalsh(t * normalised[0] + (1 - t) * normalised[1]))[::-1][:k].sum() for t in grid)
    V, info = baselines.maximin_pca(covs, k, iterations=3000)
    # weak duality: relaxed primal <= game value <= dual bound (the grid minimum is within 1e-6 of it)
    assert info["relaxed_value"] <= value + 1e-9 and info["relaxed_value"] <= info["dual_bound"] + 1e-12
    assert info["dual_bound"] == pytest.approx(value, abs=1e-6)
    assert info["relaxed_value"] == pytest.approx(value, abs=5e-3)
    # the rounded solution's worst share cannot beat the game value
    assert min(method.explained_fraction(V, S) for S in covs) <= value + 1e-9


def test_planted_invariant_subspace_is_recovered_and_pooled_pca_is_not():
    rng = np.random.default_rng(11)
    sim = data.simulate(p=12, k=2, invariant_variances=[6.0, 5.0], spurious_pool=3, inflated_per_domain=1,
                        inflation=(40.0, 60.0), train_domains=5, test_domains=5, samples_per_domain=2000, rng=rng)
    covs, w = method.domain_covariances(sim.train)
    anchor = method.anchor_pca(covs, w, 2, 1.0)
    assert _angle(anchor, sim.planted) < 10.0
    assert method.largest_principal_angle(anchor, sim.planted) == pytest.approx(_angle(anchor, sim.planted), abs=1e-6)
    assert _angle(baselines.pooled_pca(covs, w, 2), sim.planted) > 45.0
    # the planted directions are (nearly) in the null space of H, the inflated ones are not
    H = method.heterogeneity(covs, w)
    assert np.trace(sim.planted.T @ H @ sim.planted) < 0.1 * np.trace(H) / H.shape[0] * 2


def _write_batch(path, rows):
    lines = []
    for label, conc, feats in rows:
        lines.append(f"{label};{conc:.6f} " + " ".join(f"{i + 1}:{v:.6f}" for i, v in enumerate(feats) if v != 0))
    path.write_text("\n".join(lines) + "\n")


def test_gas_sensor_loader_reads_the_uci_format(tmp_path):
    rng = np.random.default_rng(0)
    truth = {}
    for b in (1, 2, 3):
        feats = rng.standard_normal((5 + b, 128)) * 100
        feats[0, 7] = 0.0  # sparse entries are absent from the line
        rows = [(int(rng.integers(1, 7)), float(rng.uniform(5, 500)), f) for f in feats]
        _write_batch(tmp_path / f"batch{b}.dat", rows)
        truth[b] = rows
    X, labels, conc = data.read_gas_batch(tmp_path / "batch2.dat")
    assert X.shape == (7, 128)
    np.testing.assert_allclose(X, np.array([r[2] for r in truth[2]]), atol=1e-5)
    assert labels.tolist() == [r[0] for r in truth[2]]
    np.testing.assert_allclose(conc, [r[1] for r in truth[2]], atol=1e-5)
    split = data.gas_sensor_domains(tmp_path, [1, 2], [3])
    assert [len(X) for X in split.train] == [6, 7] and len(split.test[0]) == 8
    centred = np.concatenate([X - X.mean(0) for X in split.train])
    np.testing.assert_allclose(centred.std(0), 1.0, atol=1e-9)
    (tmp_path / "batch9.dat").write_text("1 1:2.0\n")
    with pytest.raises(ValueError, match="batch9.dat:1"):
        data.read_gas_batch(tmp_path / "batch9.dat")
    with pytest.raises(FileNotFoundError, match="batch4.dat"):
        data.gas_sensor_domains(tmp_path, [4], [1])


def test_check_config_names_bad_keys():
    block = {"gammas": [0.5, 1.0], "run_variants": ["wine"], "variants": {"wine": {"kind": "wine", "k": 2},
             "dig": {"kind": "digits", "k": 3, "train_classes": 10, "subsample": 0.5}}}
    problems = " ".join(check_config(block))
    assert "gammas: must include 0" in problems and "simulated" in problems
    assert "variants.dig.train_classes" in problems
    assert "variants.wine: kind wine needs subsample" in problems


def test_steps_end_to_end_are_deterministic(tmp_path):
    settings = {"simulated": {"kind": "simulated", "k": 2, "p": 8, "invariant_variances": [9.0, 8.0], "spurious_pool": 3,
                              "inflated_per_domain": 1, "inflation": [20.0, 60.0], "train_domains": 4,
                              "test_domains": 4, "samples_per_domain": 80, "sample_sweep": [40, 160]},
                "wine": {"kind": "wine", "k": 2, "subsample": 0.8},
                "digits": {"kind": "digits", "k": 3, "train_classes": 6, "subsample": 0.5}}
    gammas = [0.0, 1.0, 8.0]
    for name, s in settings.items():
        params = {"variant": name, "variant_settings": s, "seeds": [0, 1], "gammas": gammas, "validation": "worst",
                  "maximin_iterations": 100, "data": {"gas_dir": None}, "threads": 1}
        steps.evaluate(params, {}, tmp_path / "eval" / name)
        first = (tmp_path / "eval" / name / "metrics.json").read_bytes()
        steps.evaluate(params, {}, tmp_path / "again" / name)
        assert (tmp_path / "again" / name / "metrics.json").read_bytes() == first
    steps.figures({"run_variants": list(settings), "scale": "smoke", "gammas": gammas},
                  {"evals": tmp_path / "eval"}, tmp_path)
    rows = io.read_csv(tmp_path / "claims.csv")
    by_id = {r["id"]: r for r in rows}
    assert by_id["recovers_planted"]["kind"] == "target" and by_id["unseen_mean_digits"]["kind"] == "comparison"
    assert by_id["gamma_identifiable_wine"]["reproduced"] == "no"  # two training cultivars per split
    assert by_id["unseen_mean_wine"]["reproduced"] == "untested"
    assert by_id["unseen_mean_gas_sensor"]["reproduced"] == "untested"
    assert all(r["reproduced"] in ("yes", "inconclusive", "no", "untested") for r in rows)
    assert (tmp_path / "figures" / "unseen_variance.png").stat().st_size > 1000
    assert (tmp_path / "figures" / "principal_angles.png").exists()
    assert (tmp_path / "figures" / "recovery_vs_n.png").exists()


def test_heterogeneity_of_two_domains_is_2_w1_w2_times_the_absolute_difference():
    rng = np.random.default_rng(3)
    A, B = (np.cov(rng.standard_normal((5, 40))) for _ in range(2))
    w = np.array([0.3, 0.7])
    expected = 2 * w[0] * w[1] * method.matrix_abs(A - B)
    np.testing.assert_allclose(method.heterogeneity([A, B], w), expected, atol=1e-12)


def _brute_force_validation(domains, k, gammas, reduce):
    covs = [np.cov(X.T, bias=True) for X in domains]
    scores = []
    for g in gammas:
        shares = []
        for e in range(len(domains)):
            rest = [c for i, c in enumerate(covs) if i != e]
            n = np.array([len(X) for i, X in enumerate(domains) if i != e], float)
            w = n / n.sum()
            S = sum(wi * c for wi, c in zip(w, rest))
            H = sum(wi * method.matrix_abs(c - S) for wi, c in zip(w, rest))
            lam, U = np.linalg.eigh(S - g * H)
            V = U[:, np.argsort(lam)[::-1][:k]]
            shares.append(np.trace(V.T @ covs[e] @ V) / np.trace(covs[e]))
        scores.append(reduce(shares))
    return gammas[int(np.argmax(scores))], scores


@pytest.mark.parametrize("criterion, reduce", [("worst", np.min), ("mean", np.mean)])
def test_validation_choice_of_gamma_matches_a_brute_force_leave_one_domain_out(criterion, reduce):
    rng = np.random.default_rng(4)
    split = data.simulate(12, 2, [9.0, 8.0], 4, 1, (20.0, 60.0), 5, 1, 150, rng)
    gammas = [0.0, 0.5, 2.0, 8.0]
    chosen, scores = method.validate_gamma(split.train, 2, gammas, criterion)
    ref_chosen, ref_scores = _brute_force_validation(split.train, 2, gammas, reduce)
    np.testing.assert_allclose(scores, ref_scores, atol=1e-12)
    assert chosen == ref_chosen
    if criterion == "worst":
        assert chosen > 0  # the worst left-out domain is the one whose inflation pooling misses
    with pytest.raises(ValueError, match="anchor_pca.validation"):
        method.validate_gamma(split.train, 2, gammas, "median")


def test_validation_with_two_domains_cannot_tell_gammas_apart_and_picks_the_smallest():
    rng = np.random.default_rng(5)
    domains = [rng.standard_normal((50, 6)) * np.arange(1, 7), rng.standard_normal((60, 6))]
    chosen, scores = method.validate_gamma(domains, 2, [4.0, 0.0, 1.0])
    assert chosen == 0.0 and np.ptp(scores) < 1e-12


def test_digits_domains_split_classes_into_training_and_unseen():
    split = data.digits_domains(6, 0.5, np.random.default_rng(0))
    assert len(split.train) == 6 and len(split.test) == 4
    assert not set(split.train_names) & set(split.test_names)
    assert all(X.shape[1] == 64 for X in split.train + split.test)


def test_gamma_grid_is_extended_when_validation_peaks_past_its_top_edge(monkeypatch):
    from neurips26.papers.anchor_pca import method as M
    from neurips26.papers.anchor_pca import steps

    def fake(domains, k, gammas, criterion="worst"):  # scores peak at gamma = 128
        scores = [-abs(np.log2(g / 128.0)) if g > 0 else -99.0 for g in gammas]
        return float(gammas[int(np.argmax(scores))]), scores

    monkeypatch.setattr(M, "validate_gamma", fake)
    chosen, grid, scores, used = M.tune_gamma([], 2, [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0], "worst", 3)
    assert chosen == 128.0 and grid[-3:] == [64.0, 128.0, 256.0] and used == 3
    rec = steps.gamma_record("simulated", 0, 0, 1, {"criterion": "worst", "grid": grid, "scores": scores,
                                                     "chosen": chosen, "extensions": used})
    assert rec.status == "tuned" and rec.grid[-1] == 256.0
    monkeypatch.setattr(M, "validate_gamma", lambda d, k, g, c="worst": (float(max(g)), [float(x) for x in g]))
    chosen, grid, scores, used = M.tune_gamma([], 2, [0.0, 1.0, 2.0], "worst", 3)
    rec = steps.gamma_record("simulated", 0, 0, 1, {"criterion": "worst", "grid": grid, "scores": scores,
                                                     "chosen": chosen, "extensions": used})
    assert chosen == 16.0 and rec.status == "capped" and rec.edge == "high"
