"""fedlora_align: ALIGN's aggregation and drift constraint, and the baselines it registers, against
closed forms and scipy."""

import inspect

import numpy as np
import pytest
import scipy.linalg
import torch

from neurips26.papers import fedlora_align
from neurips26.papers.fed_harness import aggregators as agg
from neurips26.papers.fed_harness import subspace
from neurips26.papers.fedlora_align import baselines, method  # noqa: F401  (registration)

ALL = ("fedit", "zero_padding", "flora", "ideal", "ffa_lora", "fedex_lora", "fedsa_lora", "align")


def _factors(n, m=14, k=11, r=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return ([torch.randn(m, r, generator=g, dtype=torch.float64) for _ in range(n)],
            [torch.randn(r, k, generator=g, dtype=torch.float64) for _ in range(n)])


def _state():
    return {"generator": torch.Generator().manual_seed(0), "round": 0, "layer": "query"}


@pytest.mark.parametrize("name", ALL)
def test_every_aggregator_returns_identical_clients_to_themselves(name):
    (b,), (a,) = _factors(1)
    d = agg.make(name)([b] * 3, [a] * 3, [2, 5, 1], [3] * 3, _state())
    for eff in agg.effective_updates(d):
        torch.testing.assert_close(eff, b @ a)


def test_fedex_is_exact_and_ffa_fedsa_share_what_they_should():
    B, A = _factors(3, seed=1)
    sizes = [1, 2, 3]
    M = sum(s * x @ y for s, x, y in zip(sizes, B, A)) / 6
    d = agg.make("fedex_lora")(B, A, sizes, [3] * 3, _state())
    torch.testing.assert_close(agg.effective_updates(d)[0], M)
    torch.testing.assert_close(d.B[0], sum(s * x for s, x in zip(sizes, B)) / 6)
    assert agg.make("ffa_lora").client_options == {"freeze_A": True}
    f = agg.make("ffa_lora")(B, [A[0]] * 3, sizes, [3] * 3, _state())  # frozen, common A: exact
    torch.testing.assert_close(agg.effective_updates(f)[1], sum(s * x @ A[0] for s, x in zip(sizes, B)) / 6)
    s = agg.make("fedsa_lora")(B, A, sizes, [3] * 3, _state())
    for i in range(3):
        torch.testing.assert_close(s.B[i], B[i])
        torch.testing.assert_close(s.A[i], sum(w * y for w, y in zip(sizes, A)) / 6)


def test_procrustes_matches_scipy():
    g = torch.Generator().manual_seed(2)
    X, Y = torch.randn(9, 4, generator=g, dtype=torch.float64), torch.randn(9, 4, generator=g, dtype=torch.float64)
    R, _ = scipy.linalg.orthogonal_procrustes(X.numpy(), Y.numpy())  # argmin ||X R - Y||
    np.testing.assert_allclose(method.procrustes(X.T @ Y).numpy(), R, atol=1e-10)


def test_thin_svd_of_factors_equals_dense_svd():
    B, A = _factors(1, seed=3)
    U, S, V = method.thin_svd(B[0], A[0])
    torch.testing.assert_close((U * S) @ V.T, B[0] @ A[0])
    torch.testing.assert_close(S, torch.linalg.svdvals(B[0] @ A[0])[:3])


def test_align_is_gauge_invariant_and_lands_in_the_reference_space():
    B, A = _factors(4, seed=4)
    sizes = [3, 1, 2, 2]
    st1, st2 = _state(), _state()
    d1 = agg.make("align")(B, A, sizes, [3] * 4, st1)
    g = torch.Generator().manual_seed(9)
    R = torch.randn(3, 3, generator=g, dtype=torch.float64) + 3 * torch.eye(3, dtype=torch.float64)
    d2 = agg.make("align")([b @ R for b in B], [torch.linalg.solve(R, a) for a in A], sizes, [3] * 4, st2)
    torch.testing.assert_close(d1.B[0] @ d1.A[0], d2.B[0] @ d2.A[0])
    U = st1["reference_basis"]
    # the reference is the top-r column space of the stacked weighted updates
    stacked = torch.cat([(w / 8) ** 0.5 * (b @ a) for w, b, a in zip(sizes, B, A)], 1)
    assert subspace.projection_distance(U, subspace.orth(stacked, 3)) == pytest.approx(0, abs=1e-10)
    M = d1.B[0] @ d1.A[0]
    torch.testing.assert_close(U @ (U.T @ M), M)  # the aggregate lives in span(U_ref)


def test_align_rotates_each_column_space_onto_the_reference():
    # two clients with orthogonal column spaces and equal weights: every aligned update has the
    # reference column space, so the conflict of the aligned updates is 0
    m, n, r = 10, 8, 2
    Q, _ = torch.linalg.qr(torch.randn(m, 2 * r, dtype=torch.float64, generator=torch.Generator().manual_seed(5)))
    V, _ = torch.linalg.qr(torch.randn(n, r, dtype=torch.float64, generator=torch.Generator().manual_seed(6)))
    B = [Q[:, :r] * torch.tensor([3.0, 1.0], dtype=torch.float64), Q[:, r:] * torch.tensor([2.0, 0.5], dtype=torch.float64)]
    A = [V.T.clone(), V.T.clone()]
    st = _state()
    d = agg.make("align")(B, A, [1, 1], [r, r], st)
    U = st["reference_basis"]
    # the reference takes the two strongest directions: Q[:, 0] (3) and Q[:, 2] (2)
    ref = torch.stack([Q[:, 0], Q[:, 2]], 1)
    assert subspace.projection_distance(U, ref) == pytest.approx(0, abs=1e-10)
    # the ideal average would have rank 4 > r; ALIGN's is rank r and keeps each client's spectrum energy
    M = d.B[0] @ d.A[0]
    assert torch.linalg.matrix_rank(M) == r
    # beta = 0 leaves the updates: ALIGN equals the rank-r truncation of the ideal average
    d0 = agg.make("align", beta=0.0)(B, A, [1, 1], [r, r], _state())
    ideal = agg.make("ideal", residual=False)(B, A, [1, 1], [r, r], _state())
    torch.testing.assert_close(d0.B[0] @ d0.A[0], ideal.B[0] @ ideal.A[0])


def test_drift_penalty_is_the_closed_form():
    from neurips26.papers.fed_harness import simulation

    class Stub:
        pass

    e = simulation.Engine.__new__(simulation.Engine)
    e.opts, e.layers = {"drift_mu": 2.0}, ["query"]
    net = Stub()
    q = Stub()
    Bw = torch.randn(6, 2, dtype=torch.float64)
    q.lora_B, q.lora_A = {"default": Stub()}, {"default": Stub()}
    q.lora_B["default"].weight, q.lora_A["default"].weight = Bw, torch.zeros(2, 5, dtype=torch.float64)
    net.query = q
    e.nets = [net]
    U, _ = torch.linalg.qr(torch.randn(6, 3, dtype=torch.float64))
    e.states = {"query": {"reference_basis": U}}
    expected = 0.5 * 2.0 * torch.linalg.matrix_norm((torch.eye(6, dtype=torch.float64) - U @ U.T) @ Bw) ** 2
    torch.testing.assert_close(e.penalty(0), expected)
    e.states = {"query": {}}
    assert e.penalty(0) == 0.0


def test_check_config_names_the_bad_keys():
    bad = {"run_variants": ["nope"], "variants": {"x": {"task": "poetry"}}, "methods": ["fedavg"],
           "federation": {"clients": 10, "min_client_size": 100, "alphas": [0.1], "report_alphas": [0.5]},
           "data": {"n_train": 50}}
    problems = " ".join(fedlora_align.check_config(bad))
    for key in ("run_variants", "variants.x.task", "methods", "federation.clients", "federation.report_alphas"):
        assert key in problems
    assert fedlora_align.check_config({"run_variants": ["a"], "variants": {"a": {"task": "topic"}}, "methods": ["align"]}) == []


def test_client_split_is_seeded_by_alpha_value_not_its_position():
    from neurips26.papers.fed_harness import split
    from neurips26.papers.fedlora_align import steps

    labels = np.repeat(np.arange(4), 30)
    f = {"clients": 5, "min_client_size": 2}
    # the train step walks the config's alphas in order; a reordered list must give each alpha the same split
    first = {a: steps._client_split(labels, f, a, seed=3) for a in (0.1, 1.0, 10.0)}
    second = {a: steps._client_split(labels, f, a, seed=3) for a in (10.0, 0.1, 1.0)}
    for a in first:
        assert all(np.array_equal(x, y) for x, y in zip(first[a], second[a]))
    # the split is the harness's Dirichlet split under the generator of (seed, alpha's value)
    ref = split.dirichlet_split(labels, 5, 1.0, np.random.default_rng([3, 1_000_000, 11]), min_size=2)
    assert all(np.array_equal(x, y) for x, y in zip(first[1.0], ref))
    assert steps.alpha_key(0.1) != steps.alpha_key(1.0) and steps.alpha_key("10.0") == steps.alpha_key(10)
    assert "index" not in inspect.signature(steps._client_split).parameters


def test_untrained_scores_match_a_brute_force_count():
    from types import SimpleNamespace

    from neurips26.data.data_to_text import LMData
    from neurips26.papers.fed_harness.generative import LMSet
    from neurips26.papers.fedlora_align import steps

    class NextPlusOne(torch.nn.Module):  # predicts token t + 1 after token t
        def forward(self, input_ids, attention_mask):
            return SimpleNamespace(logits=torch.nn.functional.one_hot((input_ids + 1) % 10, 10).float())

    ids = torch.tensor([[1, 2, 3, 4, 0], [5, 6, 8, 9, 0], [2, 3, 5, 7, 8], [1, 2, 3, 5, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])
    labels = torch.full_like(ids, -100)
    labels[:, 2:4] = ids[:, 2:4]  # two target tokens per row
    labels[2, 4] = 8
    test = LMSet(LMData(ids, labels, mask), torch.tensor([0, 0, 1, 1]))
    # brute force: a target token is hit when it is the previous token + 1
    tok, exact = [], []
    for r in range(4):
        hits = [int(ids[r, j] == (ids[r, j - 1] + 1) % 10) for j in range(5) if labels[r, j] != -100]
        tok.append(sum(hits) / len(hits))
        exact.append(float(all(hits)))
    per_class = lambda v: np.mean([np.mean(v[:2]), np.mean(v[2:])])  # noqa: E731
    got = steps.untrained_scores(NextPlusOne(), test, 2)
    assert got["acc_global"] == pytest.approx(per_class(tok), rel=1e-3)
    assert got["exact_global"] == pytest.approx(per_class(exact), rel=1e-3)
