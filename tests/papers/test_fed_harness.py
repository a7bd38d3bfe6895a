"""The federated LoRA harness: aggregators, subspace metric, Dirichlet split, the [CLS]-only
last layer and the in-process federation."""

import numpy as np
import pytest
import scipy.linalg
import torch

from neurips26.papers.fed_harness import aggregators as agg
from neurips26.papers.fed_harness import split, subspace, tasks

SHARED = ("fedit", "zero_padding", "flora", "ideal")


def _factors(n, m=12, k=10, r=3, seed=0, ranks=None):
    g = torch.Generator().manual_seed(seed)
    ranks = ranks or [r] * n
    return ([torch.randn(m, q, generator=g, dtype=torch.float64) for q in ranks],
            [torch.randn(q, k, generator=g, dtype=torch.float64) for q in ranks], ranks)


def _state(seed=0):
    return {"generator": torch.Generator().manual_seed(seed), "round": 0, "layer": "query"}


@pytest.mark.parametrize("name", SHARED)
def test_identical_clients_aggregate_to_themselves(name):
    B, A, ranks = _factors(1)
    B, A = B * 3, A * 3
    d = agg.make(name)(B, A, [5, 1, 7], ranks, _state())
    for eff in agg.effective_updates(d):
        torch.testing.assert_close(eff, B[0] @ A[0])
    if name in ("fedit", "zero_padding"):
        for b, a in zip(d.B, d.A):
            torch.testing.assert_close(b, B[0])
            torch.testing.assert_close(a, A[0])


def test_fedit_is_weighted_factor_average():
    B, A, ranks = _factors(3)
    d = agg.make("fedit")(B, A, [1, 2, 5], ranks, _state())
    torch.testing.assert_close(d.B[1], (B[0] + 2 * B[1] + 5 * B[2]) / 8)
    torch.testing.assert_close(d.A[0], (A[0] + 2 * A[1] + 5 * A[2]) / 8)
    with pytest.raises(ValueError):
        agg.make("fedit")(*_factors(2, ranks=[2, 4])[:2], [1, 1], [2, 4], _state())


def test_zero_padding_equal_ranks_is_fedit_and_prefix_for_mixed_ranks():
    B, A, ranks = _factors(3, seed=1)
    a, b = agg.make("fedit")(B, A, [3, 1, 2], ranks, _state()), agg.make("zero_padding")(B, A, [3, 1, 2], ranks, _state())
    for x, y in zip(a.B + a.A, b.B + b.A):
        torch.testing.assert_close(x, y)
    B, A, ranks = _factors(3, ranks=[1, 2, 4])
    d = agg.make("zero_padding")(B, A, [1, 1, 2], ranks, _state())
    assert [tuple(x.shape) for x in d.B] == [(12, 1), (12, 2), (12, 4)]
    # column 3 (index 2) exists only at client 2: its padded average is 2/4 of it
    torch.testing.assert_close(d.B[2][:, 2], B[2][:, 2] / 2)


def test_flora_and_ideal_are_exact():
    B, A, ranks = _factors(4, ranks=[2, 2, 3, 3])
    sizes = [4, 1, 2, 3]
    M = sum(s * b @ a for s, b, a in zip(sizes, B, A)) / sum(sizes)
    f = agg.make("flora")(B, A, sizes, ranks, _state())
    torch.testing.assert_close(f.base_delta, M)
    assert all(float(b.abs().max()) == 0 for b in f.B)
    torch.testing.assert_close(f.A[0], f.A[3][:2])  # one shared fresh A, rank prefixes
    d = agg.make("ideal")(B, A, sizes, ranks, _state())
    torch.testing.assert_close(agg.effective_updates(d)[2], M)  # exact for clients at r_max
    U, S, Vh = torch.linalg.svd(M)
    torch.testing.assert_close(d.B[0] @ d.A[0], (U[:, :2] * S[:2]) @ Vh[:2])  # rank-2 truncation for the others


def test_register_refuses_a_second_name_owner():
    with pytest.raises(ValueError):
        agg.register("fedit")(type("Other", (), {}))
    with pytest.raises(KeyError):
        agg.make("no_such_aggregator")


# ---------------------------------------------------------------- subspaces
def test_subspace_distance_zero_for_equal_and_one_for_orthogonal():
    g = torch.Generator().manual_seed(0)
    Q, _ = torch.linalg.qr(torch.randn(20, 6, generator=g, dtype=torch.float64))
    U, V = Q[:, :3], Q[:, 3:]
    R, _ = torch.linalg.qr(torch.randn(3, 3, generator=g, dtype=torch.float64))
    assert subspace.projection_distance(U, U @ R) == pytest.approx(0, abs=1e-12)
    assert subspace.projection_distance(U, V) == pytest.approx(1, abs=1e-12)
    torch.testing.assert_close(torch.rad2deg(subspace.principal_angles(U, V)), torch.full((3,), 90.0, dtype=torch.float64))


def test_principal_angles_match_scipy():
    g = torch.Generator().manual_seed(3)
    X, Y = torch.randn(15, 4, generator=g, dtype=torch.float64), torch.randn(15, 3, generator=g, dtype=torch.float64)
    ours = np.sort(subspace.principal_angles(subspace.orth(X), subspace.orth(Y)).numpy())
    ref = np.sort(scipy.linalg.subspace_angles(X.numpy(), Y.numpy()))
    np.testing.assert_allclose(ours, ref, atol=1e-7)


def test_lowrank_bases_span_the_dense_ones():
    B, A, _ = _factors(2, m=30, k=25, r=3, seed=4)
    L, R = torch.cat([B[0], -B[1]], 1), torch.cat([A[0], A[1]], 0)
    for (u, v), (U, V) in [(subspace.lowrank_bases(L, R, 4), subspace.update_bases(L @ R, 4))]:
        torch.testing.assert_close(u @ u.T, U @ U.T)
        torch.testing.assert_close(v @ v.T, V @ V.T)
    c = subspace.pairwise_conflict([B[0] @ A[0], B[0] @ A[0]], 3)
    assert c["column"] == pytest.approx(0, abs=1e-10) and c["row"] == pytest.approx(0, abs=1e-10)


# ---------------------------------------------------------------- splits
def test_dirichlet_split_partitions_and_skews():
    labels = np.repeat(np.arange(5), 200)
    for alpha in (0.1, 10.0):
        parts = split.dirichlet_split(labels, 8, alpha, np.random.default_rng(0), min_size=5)
        allidx = np.concatenate(parts)
        assert sorted(allidx.tolist()) == list(range(len(labels)))
        assert min(len(p) for p in parts) >= 5
    skew = lambda a: split.label_shares(labels, split.dirichlet_split(labels, 8, a, np.random.default_rng(1)), 5).max(1).mean()  # noqa: E731
    assert skew(0.1) > 0.7 > 0.35 > skew(10.0)


def test_tasks_are_seeded_and_balanced():
    for task, classes in tasks.TASKS.items():
        s1, y1 = tasks.generate(task, 400, 3)
        s2, y2 = tasks.generate(task, 400, 3)
        assert s1 == s2 and (y1 == y2).all()
        assert set(y1.tolist()) == set(range(classes))


# ---------------------------------------------------------------- model and federation
@pytest.fixture(scope="module")
def minilm():
    from neurips26.core import lm

    return lm.load_minilm()


def test_cls_layer_equals_the_full_layer_at_position_0(minilm):
    tok, model = minilm
    s, y = tasks.generate("topic_sentiment", 8, 0)
    enc = tasks.encode(tok, model, s, y, 1, 20)
    base = tasks.CLSLayerClassifier(model.encoder.layer[-1], 8)
    with torch.no_grad():
        full = model.encoder.layer[-1](enc.hidden, attention_mask=tasks._extended(enc.mask))
        full = full[0] if isinstance(full, tuple) else full
        torch.testing.assert_close(base.features(enc.hidden, enc.mask), full[:, 0], atol=2e-5, rtol=1e-4)


def _federation(minilm, tmp_path, name, out="run", clients=3, rounds=2, alpha=1.0, **options):
    from neurips26.papers.fed_harness import simulation

    tok, model = minilm
    s, y = tasks.generate("topic", 90, 1)
    enc = tasks.encode(tok, model, s, y, 1, 16)
    train = tasks.Encoded(enc.hidden[:60], enc.mask[:60], enc.labels[:60])
    test = tasks.Encoded(enc.hidden[60:], enc.mask[60:], enc.labels[60:])
    parts = split.dirichlet_split(train.labels.numpy(), clients, alpha, np.random.default_rng(0), min_size=4)
    base = tasks.CLSLayerClassifier(model.encoder.layer[-1], 6)
    settings = simulation.FedSettings(rounds=rounds, local_steps=2, batch_size=4, lr=1e-2, seed=0)
    return simulation.run_federation(base, train, test, parts, [2] * clients, agg.make(name, **options), settings,
                                     tmp_path / out, {"test": name}, 6)


def test_federation_is_deterministic_and_resumes_finished_runs(minilm, tmp_path):
    a = _federation(minilm, tmp_path, "fedit", out="a")
    b = _federation(minilm, tmp_path, "fedit", out="b")
    c = _federation(minilm, tmp_path, "fedit", out="a")  # the finished checkpoint is reused
    for other in (b, c):
        assert other.rounds == a.rounds
        np.testing.assert_array_equal(other.per_class_acc, a.per_class_acc)
        for t in a.B:
            for x, y in zip(a.B[t] + a.A[t], other.B[t] + other.A[t]):
                assert torch.equal(x, y)
    assert len(a.rounds) == 2 * 2  # rounds x modules (query, value)
    # FedIT dispatches one global pair to every client
    for t in a.B:
        assert all(torch.equal(a.B[t][0], x) for x in a.B[t])
    assert float(a.B["query"][0].abs().max()) > 0  # B moved away from its zero start
