"""FedAbA's aggregation math against independent references (dense SVD, closed forms, brute force)."""

import pytest
import torch

from neurips26.papers.fed_harness.aggregators import AGGREGATORS
from neurips26.papers.fedaba import linalg
from neurips26.papers.fedaba.baselines import FlexLoRA, HetLoRA, ZeroPadFedIT
from neurips26.papers.fedaba.method import CAFD, FedAbA, FedAbAProjection, FedAbASVDGauge

M, N = 24, 18


def _clients(ranks, seed=0, scale=None):
    g = torch.Generator().manual_seed(seed)
    B = [torch.randn(M, r, generator=g, dtype=torch.float64) for r in ranks]
    A = [torch.randn(r, N, generator=g, dtype=torch.float64) for r in ranks]
    return B, A


def _products(d):
    return [b @ a for b, a in zip(d.B, d.A)]


def _random_orthogonal(r, seed):
    q, _ = torch.linalg.qr(torch.randn(r, r, generator=torch.Generator().manual_seed(seed), dtype=torch.float64))
    return q


ALL = [FedAbA, CAFD, FlexLoRA, HetLoRA, ZeroPadFedIT]


def test_registered_in_the_harness():
    for name in ("fedaba", "fedaba_svd", "fedaba_proj", "cafd", "hetlora", "flexlora"):
        assert AGGREGATORS[name]().name == name


@pytest.mark.parametrize("cls", ALL)
def test_identical_clients_aggregate_to_themselves(cls):
    B, A = _clients([4])
    B, A = B * 3, A * 3
    agg = cls()
    d = agg(B, A, [10, 20, 30], [4, 4, 4], {})
    for p in _products(d):
        torch.testing.assert_close(p, B[0] @ A[0], rtol=1e-9, atol=1e-9)
    if cls in (HetLoRA, ZeroPadFedIT):  # factor averaging returns the factors themselves
        torch.testing.assert_close(d.B[0], B[0])
        torch.testing.assert_close(d.A[0], A[0])


def test_fedaba_invariant_to_a_clients_gauge():
    ranks = [2, 4, 8, 8]
    B, A = _clients(ranks, seed=1)
    sizes = [5, 7, 11, 13]
    st1, st2 = {}, {}
    a1, a2 = FedAbA(), FedAbA()
    for rnd in range(3):  # several rounds, so the reference basis, alignment and scores are in play
        B, A = _clients(ranks, seed=10 + rnd)
        R = _random_orthogonal(8, 3) @ torch.diag(torch.tensor([3.0, 0.5, 1, 2, 1, 1, 4, 0.25], dtype=torch.float64))
        B2, A2 = list(B), list(A)
        B2[2], A2[2] = B[2] @ R, torch.linalg.inv(R) @ A[2]
        d1, d2 = a1(B, A, sizes, ranks, st1), a2(B2, A2, sizes, ranks, st2)
        for x, y in zip(d1.B + d1.A, d2.B + d2.A):
            torch.testing.assert_close(x, y, rtol=1e-7, atol=1e-8)
    assert st1["history"][-1]["scores"] == pytest.approx(st2["history"][-1]["scores"], abs=1e-9)


def test_cafd_is_not_gauge_fixed_but_fedaba_is():
    """The raw-SVD loop is blind to gauge only up to signs; FedAbA's dispatched factors are fixed."""
    ranks = [4, 4]
    B, A = _clients(ranks, seed=2)
    d = FedAbA()(B, A, [1, 1], ranks, {})
    D = torch.diag(torch.tensor([-1.0, 1, -1, 1], dtype=torch.float64))
    d2 = FedAbA()([b @ D for b in B], [D @ a for a in A], [1, 1], ranks, {})
    torch.testing.assert_close(d.B[0], d2.B[0])


def test_coefficient_space_svd_equals_dense_svd():
    ranks = [2, 4, 8, 16]
    B, A = _clients(ranks, seed=3)
    w = [0.1, 0.2, 0.3, 0.4]
    U, s, V = linalg.thin_svd_of_sum(B, A, w)
    W = sum(wi * b @ a for wi, b, a in zip(w, B, A))
    Ud, sd, Vdh = torch.linalg.svd(W, full_matrices=False)
    k = s.numel()
    assert k == min(sum(ranks), M, N)
    torch.testing.assert_close(s, sd[:k], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(U @ torch.diag(s) @ V.T, W, rtol=1e-10, atol=1e-10)
    # same singular vectors up to sign
    signs = torch.sign((U * Ud[:, :k]).sum(0))
    torch.testing.assert_close(U * signs, Ud[:, :k], rtol=1e-7, atol=1e-7)


def test_fedaba_global_update_is_the_rank_R_truncation_of_the_weighted_sum():
    """First round (no reference, scores 1): the rank-R dispatch equals the Eckart-Young truncation of sum w_i B_i A_i."""
    ranks = [2, 4, 8]
    B, A = _clients(ranks, seed=4)
    sizes = [1, 2, 3]
    d = FedAbA()(B, A, sizes, ranks, {})
    W = sum((n / 6) * b @ a for n, b, a in zip(sizes, B, A))
    U, S, Vh = torch.linalg.svd(W)
    for r, p in zip(ranks, _products(d)):
        torch.testing.assert_close(p, U[:, :r] @ torch.diag(S[:r]) @ Vh[:r], rtol=1e-8, atol=1e-8)


def test_flexlora_matches_its_recipe_and_cafd_the_same_update():
    ranks = [2, 8]
    B, A = _clients(ranks, seed=5)
    d1, d2 = FlexLoRA()(B, A, [3, 1], ranks, {}), CAFD()(B, A, [3, 1], ranks, {})
    for p, q in zip(_products(d1), _products(d2)):
        torch.testing.assert_close(p, q, rtol=1e-8, atol=1e-8)


def test_zero_padding_hetlora_with_equal_ranks_equals_fedit():
    ranks = [4, 4, 4]
    B, A = _clients(ranks, seed=6)
    sizes = [2, 3, 5]
    fedit_B = sum(n / 10 * b for n, b in zip(sizes, B))  # FedIT: FedAvg of each factor
    fedit_A = sum(n / 10 * a for n, a in zip(sizes, A))
    d = HetLoRA(weighting="size")(B, A, sizes, ranks, {})
    ref = AGGREGATORS["fedit"]()(B, A, sizes, ranks, {})  # the harness's FedIT
    for b, a, rb, ra in zip(d.B, d.A, ref.B, ref.A):
        torch.testing.assert_close(b, fedit_B)
        torch.testing.assert_close(a, fedit_A)
        torch.testing.assert_close(b, rb)
        torch.testing.assert_close(a, ra)
    # the paper's norm weights reduce to uniform FedIT when the updates have equal norms
    Bn = [b / torch.linalg.matrix_norm(b @ a) for b, a in zip(B, A)]
    d = HetLoRA()(Bn, A, sizes, ranks, {})
    torch.testing.assert_close(d.B[0], sum(Bn) / 3)
    torch.testing.assert_close(d.B[0], ZeroPadFedIT()(Bn, A, [1, 1, 1], ranks, {}).B[0])


def test_hetlora_pads_and_truncates():
    ranks = [2, 4]
    B, A = _clients(ranks, seed=7)
    d = HetLoRA(weighting="size")(B, A, [1, 1], ranks, {})
    torch.testing.assert_close(d.B[1][:, 2:], B[1][:, 2:] / 2)  # only client 2 fills columns 3-4
    torch.testing.assert_close(d.B[0], (B[0] + B[1][:, :2]) / 2)


def test_gauge_fixing_is_deterministic():
    g = torch.Generator().manual_seed(8)
    U, _ = torch.linalg.qr(torch.randn(M, 5, generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(N, 5, generator=g, dtype=torch.float64))
    s = torch.tensor([5.0, 3.0, 3.0, 3.0, 1.0], dtype=torch.float64)  # a degenerate group of three
    ref, _ = torch.linalg.qr(torch.randn(M, 5, generator=g, dtype=torch.float64))
    out = linalg.gauge_fix(U, s, V, ref)
    for seed in range(4):
        O = torch.eye(5, dtype=torch.float64)
        O[1:4, 1:4] = _random_orthogonal(3, seed)  # the gauge freedom: rotation inside the group ...
        D = torch.diag(torch.tensor([1.0, -1, 1, -1, -1], dtype=torch.float64) * (-1) ** seed)  # ... and signs
        o2 = linalg.gauge_fix(U @ O @ D, s, V @ O @ D, ref)
        for x, y in zip(out, o2):
            torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-9)
    Uf, K, Vf = out
    torch.testing.assert_close(Uf @ K @ Vf.T, U @ torch.diag(s) @ V.T)  # same matrix
    assert torch.all((Uf * ref).sum(0) >= 0)  # signs agree with the reference
    # without a reference: largest-magnitude entry positive, and sign flips do not matter
    o3 = linalg.gauge_fix(U @ D, s, V @ D, None)
    o4 = linalg.gauge_fix(U, s, V, None)
    torch.testing.assert_close(o3[0], o4[0])
    idx = o4[0].abs().argmax(0)
    assert torch.all(o4[0][idx, torch.arange(5)] > 0)


def test_balanced_factors_are_exact():
    g = torch.Generator().manual_seed(9)
    U, _ = torch.linalg.qr(torch.randn(M, 4, generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(N, 4, generator=g, dtype=torch.float64))
    K = torch.diag(torch.tensor([4.0, 2, 1, 0.5], dtype=torch.float64)) + 0.01 * torch.randn(4, 4, generator=g, dtype=torch.float64)
    Bf, Af = linalg.balanced_factors(U, K, V)
    torch.testing.assert_close(Bf @ Af, U @ K @ V.T)


def test_subspace_distance_extremes():
    eye = torch.eye(M, dtype=torch.float64)
    assert linalg.subspace_distance(eye[:, :3], eye[:, :3] @ _random_orthogonal(3, 1) * 2) == pytest.approx(0, abs=1e-7)
    assert linalg.subspace_distance(eye[:, :3], eye[:, 3:6]) == pytest.approx(1.0)
    # one principal angle of 90 degrees of three: sqrt(1/3)
    assert linalg.subspace_distance(eye[:, :3], eye[:, [0, 1, 5]]) == pytest.approx((1 / 3) ** 0.5)


def test_consistency_score_and_weights():
    """A client whose update lies outside its reference prefix gets score 0 (floored) and less weight."""
    eye = torch.eye(M, dtype=torch.float64)
    state = {"U_ref": eye[:, :4]}
    g = torch.Generator().manual_seed(10)
    B = [eye[:, :2] @ torch.randn(2, 2, generator=g, dtype=torch.float64), eye[:, 10:12]]
    A = [torch.randn(2, N, generator=g, dtype=torch.float64) for _ in range(2)]
    agg = FedAbA(score_floor=0.05)
    agg(B, A, [1, 1], [2, 2], state)
    h = state["history"][-1]
    assert h["scores"] == pytest.approx([1.0, 0.0], abs=1e-9)
    assert h["weights"] == pytest.approx([1 / 1.05, 0.05 / 1.05])
    # CAFD ignores consistency: size weights
    st = {"U_ref": eye[:, :4]}
    CAFD()(B, A, [1, 1], [2, 2], st)
    assert st["history"][-1]["weights"] == pytest.approx([0.5, 0.5])


def test_reference_rotation_convention_is_deterministic_and_exact():
    g = torch.Generator().manual_seed(11)
    U, _ = torch.linalg.qr(torch.randn(M, 4, generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(N, 4, generator=g, dtype=torch.float64))
    s = torch.tensor([4.0, 3.0, 2.0, 1.0], dtype=torch.float64)
    ref, _ = torch.linalg.qr(U @ _random_orthogonal(4, 2) + 0.1 * torch.randn(M, 4, generator=g, dtype=torch.float64))
    Uf, K, Vf = linalg.gauge_fix(U, s, V, ref, rotate_to_reference=True)
    # any SVD gauge of the same matrix (signs) gives the same representative
    D = torch.diag(torch.tensor([-1.0, 1, 1, -1], dtype=torch.float64))
    U2, K2, V2 = linalg.gauge_fix(U @ D, s, V @ D, ref, rotate_to_reference=True)
    torch.testing.assert_close(Uf, U2)
    torch.testing.assert_close(K, K2)
    torch.testing.assert_close(Uf @ K @ Vf.T, U @ torch.diag(s) @ V.T)
    # the rotated basis is the Procrustes solution: closest orthonormal basis of span(U) to ref
    best = float(torch.linalg.matrix_norm(Uf - ref))
    for seed in range(20):
        other = U @ _random_orthogonal(4, 100 + seed)
        assert float(torch.linalg.matrix_norm(other - ref)) >= best - 1e-12


def test_rotation_convention_stabilises_the_prefix_when_the_spectrum_reorders():
    """Two directions swap their singular-value order between rounds: the SVD prefix of rank 1
    jumps to the orthogonal direction, FedAbA's rotation convention keeps it."""
    eye = torch.eye(M, dtype=torch.float64)
    a = torch.eye(N, dtype=torch.float64)
    st_ref, st_svd = {}, {}
    agg_ref, agg_svd = FedAbA(), CAFD()
    for s1, s2 in ((2.0, 1.0), (1.0, 2.0)):
        B = [eye[:, :2] * torch.tensor([s1, s2], dtype=torch.float64)]
        A = [a[:2]]
        d_ref = agg_ref(B * 2, A * 2, [1, 1], [1, 2], st_ref)
        d_svd = agg_svd(B * 2, A * 2, [1, 1], [1, 2], st_svd)
    assert linalg.subspace_distance(d_ref.B[0], eye[:, :1]) == pytest.approx(0, abs=1e-9)
    assert linalg.subspace_distance(d_svd.B[0], eye[:, :1]) == pytest.approx(1.0)
    assert st_ref["history"][-1]["prefix_distance"][1] == pytest.approx(0, abs=1e-9)
    assert st_svd["history"][-1]["prefix_distance"][1] == pytest.approx(1.0)
    for p, q in zip(_products(d_ref)[1:], _products(d_svd)[1:]):  # the rank-2 client gets the same update
        torch.testing.assert_close(p, q)


def test_recorder_measures_the_dispatched_prefix_and_config_checks():
    from neurips26.papers.fedaba import check_config
    from neurips26.papers.fedaba.diagnostics import Recorder

    eye = torch.eye(M, dtype=torch.float64)
    a = torch.eye(N, dtype=torch.float64)
    rec_ref, rec_svd = Recorder(FedAbA()), Recorder(CAFD())
    st_ref, st_svd = {"layer": "q"}, {"layer": "q"}
    for s1, s2 in ((2.0, 1.0), (1.0, 2.0), (1.0, 2.0)):
        B = [eye[:, :2] * torch.tensor([s1, s2], dtype=torch.float64)] * 2
        rec_ref(B, [a[:2]] * 2, [1, 1], [1, 2], st_ref)
        rec_svd(B, [a[:2]] * 2, [1, 1], [1, 2], st_svd)
    assert rec_svd.per_round([0]) == pytest.approx([1.0, 0.0])
    assert rec_ref.per_round([0]) == pytest.approx([0.0, 0.0], abs=1e-9)
    assert rec_svd.mean_distance([0]) == pytest.approx(0.5)
    block = {"run_variants": ["s"], "variants": {"s": {"ranks": [2, 8], "alphas": [1.0]}}, "claims": {"alpha": 0.1},
             "aggregators": ["cafd", "nonesuch"]}
    problems = check_config(block)
    assert any(p.startswith("claims.alpha") for p in problems)
    assert any(p.startswith("aggregators") for p in problems)
    assert any("unknown 'nonesuch'" in p for p in problems)


def _dense_weights(B, A, sizes, ranks, ref, floor=0.05):
    """Consistency weights from the dense updates: c_i = ||P_i^T dW_i||^2 / ||dW_i||^2, w_i ~ n_i max(c_i, floor)."""
    raw = []
    for b, a, r, n in zip(B, A, ranks, sizes):
        W, P = b @ a, ref[:, :r]
        raw.append(n * max(float((P.T @ W).pow(2).sum() / W.pow(2).sum()), floor))
    return [x / sum(raw) for x in raw]


def test_the_three_gauge_readings_against_dense_references():
    """Second round, with a reference basis from the first. Full rotation: the rank-R product is the
    truncation of sum_i w_i dW_i (the reconstruction is an identity) and the rank-r client gets the part
    of it inside the rotated basis' prefix, which is not its top-r singular part. Order-preserving gauge:
    the rank-r client gets the top-r singular part (dense SVD). Lossy prefix projection: the aggregate
    is the truncation of sum_i w_i P_i P_i^T dW_i, and the rank-r client gets its top-r part."""
    ranks, sizes = [2, 4, 8], [3, 2, 1]
    B0, A0 = _clients(ranks, seed=20)
    B, A = _clients(ranks, seed=21)
    out = {}
    for cls in (FedAbA, FedAbASVDGauge, FedAbAProjection):
        st = {}
        cls()(B0, A0, sizes, ranks, st)
        ref = st["U_ref"].clone()
        out[cls.name] = (cls()(B, A, sizes, ranks, st), ref)
    ref = out["fedaba_svd"][1]
    torch.testing.assert_close(ref, out["fedaba_proj"][1])
    w = _dense_weights(B, A, sizes, ranks, ref)
    W = sum(wi * b @ a for wi, b, a in zip(w, B, A))
    U, S, Vh = torch.linalg.svd(W)
    top = lambda r: U[:, :r] @ torch.diag(S[:r]) @ Vh[:r]  # noqa: E731
    for name in ("fedaba", "fedaba_svd"):
        torch.testing.assert_close(_products(out[name][0])[-1], top(8), rtol=1e-8, atol=1e-8)
    for r, p in zip(ranks, _products(out["fedaba_svd"][0])):
        torch.testing.assert_close(p, top(r), rtol=1e-8, atol=1e-8)
    rot_low = _products(out["fedaba"][0])[0]
    assert float(torch.linalg.matrix_norm(rot_low - top(2))) > 1e-3 * float(torch.linalg.matrix_norm(top(2)))
    assert float(torch.linalg.matrix_norm(rot_low)) < float(torch.linalg.matrix_norm(top(2)))  # less energy than top-2
    Wp = sum(wi * ref[:, :r] @ ref[:, :r].T @ b @ a for wi, r, b, a in zip(w, ranks, B, A))
    Up, Sp, Vph = torch.linalg.svd(Wp)
    for r, p in zip(ranks, _products(out["fedaba_proj"][0])):
        torch.testing.assert_close(p, Up[:, :r] @ torch.diag(Sp[:r]) @ Vph[:r], rtol=1e-8, atol=1e-8)
    assert float(torch.linalg.matrix_norm(Wp - W)) > 1e-3 * float(torch.linalg.matrix_norm(W))  # lossy


def test_projection_reading_is_exact_without_a_reference_and_drops_what_leaves_the_prefix():
    ranks = [2, 4]
    B, A = _clients(ranks, seed=22)
    first = FedAbAProjection()(B, A, [1, 1], ranks, {})
    for p, q in zip(_products(first), _products(FedAbASVDGauge()(B, A, [1, 1], ranks, {}))):
        torch.testing.assert_close(p, q)
    eye = torch.eye(M, dtype=torch.float64)
    st = {"U_ref": eye[:, :4]}
    b = [eye[:, 6:8], eye[:, :4]]  # client 0's update lies outside its prefix, client 1's inside
    a = [torch.eye(N, dtype=torch.float64)[:2], torch.eye(N, dtype=torch.float64)[:4]]
    d = FedAbAProjection()(b, a, [1, 1], [2, 4], st)
    assert float(torch.linalg.matrix_norm(eye[:, 6:8].T @ _products(d)[1])) == pytest.approx(0, abs=1e-12)
    assert st["history"][-1]["scores"] == pytest.approx([0.0, 1.0], abs=1e-12)
