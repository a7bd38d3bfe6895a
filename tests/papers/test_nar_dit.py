"""nar_dit: the DiT, token routing, noise-aware ratios, FLOP counts and FD_cls, each checked
against something that does not share its code."""

import numpy as np
import pytest
import torch

from neurips26.papers.nar_dit.model import (DiT, DiTConfig, RoutingPolicy, forward_flops, kept_tokens,
                                            noise_group)


def small_cfg(**kw):
    base = dict(image_size=8, in_channels=3, patch=2, depth=4, hidden=32, heads=4, num_classes=10)
    base.update(kw)
    return DiTConfig(**base)


def randomize_adaln(model):
    """adaLN-Zero makes every block the identity at init; give the modulations weights."""
    g = torch.Generator().manual_seed(0)
    for block in model.blocks:
        lin = block.adaLN_modulation[-1]
        lin.weight.data = torch.randn(lin.weight.shape, generator=g) * 0.1
        lin.bias.data = torch.randn(lin.bias.shape, generator=g) * 0.1
    return model


def test_shapes_and_dit_s2_parameter_count():
    cfg = small_cfg()
    model = DiT(cfg)
    x = torch.randn(5, 3, 8, 8)
    out = model(x, torch.rand(5), torch.randint(0, 10, (5,)))
    assert out.shape == x.shape
    # DiT paper, Table 1: DiT-S/2 on 32x32x4 latents has 33M parameters (ours has no sigma head)
    s2 = DiT(DiTConfig.from_preset("S", image_size=32, in_channels=4, num_classes=1000))
    n = sum(p.numel() for p in s2.parameters())
    assert 32e6 < n < 34e6


def test_adaln_zero_init_makes_blocks_identity_and_output_zero():
    model = DiT(small_cfg()).eval()
    h = torch.randn(3, 16, 32)
    c = torch.randn(3, 32)
    for block in model.blocks:
        assert torch.equal(block(h, c), h)
    out = model(torch.randn(3, 3, 8, 8), torch.rand(3), torch.randint(0, 10, (3,)))
    assert torch.count_nonzero(out) == 0


@pytest.mark.parametrize("ratio", [0.25, 0.5, 0.75])
def test_routed_tokens_bypass_blocks_and_return_to_their_positions(ratio):
    torch.manual_seed(1)
    cfg = small_cfg()
    model = randomize_adaln(DiT(cfg)).eval()
    b, n, d = 4, cfg.tokens, cfg.hidden
    h, c = torch.randn(b, n, d), torch.randn(b, d)
    start, end = 1, 2
    with torch.no_grad():
        out = model.routed_segment(h, c, torch.full((b,), ratio), start, end, torch.Generator().manual_seed(3))
    for i in range(b):
        unchanged = (out[i] == h[i]).all(dim=1)
        # exactly the routed share of tokens skipped blocks start..end, bit for bit
        assert int(unchanged.sum()) == n - kept_tokens(n, ratio)
        kept = (~unchanged).nonzero().squeeze(1)
        # the kept tokens equal a dense pass of those tokens alone, at their own positions
        ref = h[i:i + 1, kept]
        with torch.no_grad():
            for block in model.blocks[start:end + 1]:
                ref = block(ref, c[i:i + 1])
        torch.testing.assert_close(out[i, kept], ref[0], rtol=1e-5, atol=1e-5)


def test_zero_ratio_is_the_dense_model():
    model = randomize_adaln(DiT(small_cfg())).eval()
    x, t, y = torch.randn(3, 3, 8, 8), torch.rand(3), torch.randint(0, 10, (3,))
    with torch.no_grad():
        assert torch.equal(model(x, t, y, torch.zeros(3), 1, 2), model(x, t, y))


def test_nar_assigns_each_sample_the_ratio_of_its_noise_group():
    g = torch.Generator().manual_seed(0)
    t = torch.rand(30, generator=g)
    policy = RoutingPolicy("nar", ratios=(0.2, 0.5, 0.8), boundaries=(1 / 3, 2 / 3))
    ratios = policy.ratios_for(t)
    order = np.argsort(t.numpy())  # brute force: the lowest third of t gets r_low, and so on
    expected = np.empty(30)
    expected[order[:10]], expected[order[10:20]], expected[order[20:]] = 0.2, 0.5, 0.8
    np.testing.assert_allclose(ratios.numpy(), expected, rtol=1e-6)
    assert policy.mean_ratio() == pytest.approx(0.5)
    inverted = RoutingPolicy("nar", ratios=(0.8, 0.5, 0.2))
    assert torch.equal(inverted.ratios_for(t)[order[:10]], torch.full((10,), 0.8))
    assert torch.equal(RoutingPolicy("tread", ratio=0.5).ratios_for(t), torch.full((30,), 0.5))
    assert RoutingPolicy().ratios_for(t) is None


def test_noise_groups_split_a_batch_into_thirds():
    groups = noise_group(torch.tensor([0.9, 0.1, 0.5, 0.3, 0.7, 0.2]))
    assert groups.tolist() == [2, 0, 1, 1, 2, 0]


def test_forward_flops_match_torch_flop_counter():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    cfg = DiTConfig(image_size=16, patch=2, depth=3, hidden=64, heads=4)
    model = DiT(cfg).eval()
    x, t, y = torch.randn(1, 3, 16, 16), torch.rand(1), torch.randint(0, 10, (1,))
    # the math backend runs attention as matmuls, which the counter sees
    with FlopCounterMode(display=False) as counter, torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        model(x, t, y)
    counted = counter.get_total_flops()
    ours = forward_flops(cfg, [cfg.tokens] * cfg.depth)
    # ours leaves out the per-sample conditioning MLPs; they are a few percent here
    assert ours == pytest.approx(counted, rel=0.15)
    assert ours < counted


def test_fd_cls_is_zero_for_a_set_against_itself_and_grows_with_noise():
    from scipy import linalg

    from neurips26.core.metrics import frechet_and_kid

    torch.manual_seed(0)
    proj = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(48, 8))
    real = torch.rand(300, 3, 4, 4)
    same = frechet_and_kid(proj, 8, real, real.clone())
    assert abs(same["fd"]) < 1e-3 and abs(same["kid_mean"]) < 1e-3
    fds = [frechet_and_kid(proj, 8, real, (real + s * torch.randn_like(real)))["fd"] for s in (0.05, 0.2, 0.5)]
    assert fds[0] < fds[1] < fds[2]
    # independent reference: the Frechet distance from scipy's matrix square root
    fake = real + 0.2 * torch.randn_like(real)
    with torch.no_grad():
        a, b = proj(real).double().numpy(), proj(fake).double().numpy()
    ca, cb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    ref = ((a.mean(0) - b.mean(0)) ** 2).sum() + np.trace(ca + cb - 2 * linalg.sqrtm(ca @ cb).real)
    assert frechet_and_kid(proj, 8, real, fake)["fd"] == pytest.approx(ref, rel=1e-3)


def test_flow_sampler_is_exact_for_a_known_velocity():
    """With v = eps - x0 for a point mass at x0, Euler integration lands exactly on x0."""
    from neurips26.papers.nar_dit.diffusion import sample

    x0 = torch.randn(2, 3, 8, 8)

    class Oracle(torch.nn.Module):
        cfg = small_cfg()

        def forward(self, x, t, y):
            tt = t.view(-1, 1, 1, 1)
            eps = (x - (1 - tt) * x0) / tt  # invert x_t = (1 - t) x0 + t eps
            return eps - x0

    out = sample(Oracle(), torch.zeros(2, dtype=torch.long), torch.randn(2, 3, 8, 8), steps=4, method="euler")
    torch.testing.assert_close(out, x0, rtol=1e-5, atol=1e-5)


def test_shapes_dataset_is_balanced_bounded_and_seeded():
    from neurips26.data.images import shapes

    x, y = shapes(50, 16, seed=3)
    assert x.shape == (50, 3, 16, 16) and x.dtype == np.float32
    assert 0 <= x.min() and x.max() <= 1
    assert np.bincount(y).tolist() == [5] * 10
    x2, y2 = shapes(50, 16, seed=3)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)


def test_latent_folder_reads_the_extracted_feature_layout(tmp_path):
    from neurips26.papers.nar_dit.data import LatentFolder

    feats, labels = tmp_path / "imagenet256_features", tmp_path / "imagenet256_labels"
    feats.mkdir(), labels.mkdir()
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(1, 4, 32, 32)).astype(np.float32) for _ in range(3)]
    for i, a in enumerate(arrays):
        np.save(feats / f"{i}.npy", a)
        np.save(labels / f"{i}.npy", np.array([i * 7]))
    ds = LatentFolder(feats, labels)
    assert len(ds) == 3 and ds.shape() == (4, 32, 32)
    x, y = ds[2]
    assert torch.equal(x, torch.from_numpy(arrays[2][0])) and int(y) == 14
    with pytest.raises(FileNotFoundError, match="labels_dir"):
        LatentFolder(feats, tmp_path / "missing")
