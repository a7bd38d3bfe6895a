"""nar_dit: the DiT, token routing, noise-aware ratios, FLOP counts and FD_cls, each checked
against something that does not share its code."""

import math

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


# ---------------------------------------------------------------- classifier-free guidance
class _TwoHeads(torch.nn.Module):
    """A velocity that depends on the label: v = x * (1 + y) + t, the null class included."""

    cfg = small_cfg()

    def forward(self, x, t, y, *args, **kwargs):
        return x * (1 + y.view(-1, 1, 1, 1).to(x.dtype)) + t.view(-1, 1, 1, 1)


def test_guidance_at_scale_one_is_the_conditional_prediction():
    from neurips26.papers.nar_dit.diffusion import guided_velocity

    model = randomize_adaln(DiT(small_cfg())).eval()
    x, t, y = torch.randn(3, 3, 8, 8), torch.rand(3), torch.tensor([0, 4, 9])
    torch.testing.assert_close(guided_velocity(model, x, t, y, 1.0), model(x, t, y))


@pytest.mark.parametrize("scale", [0.0, 1.5, 4.0])
def test_guidance_mixes_conditional_and_null_predictions_in_closed_form(scale):
    """v_u + s (v_c - v_u) with v_c = x (1 + y) + t and v_u = x (1 + 10) + t (null class 10):
    x (11 + s (y - 10)) + t."""
    from neurips26.papers.nar_dit.diffusion import guided_velocity

    x, t, y = torch.randn(3, 3, 8, 8), torch.rand(3), torch.tensor([0, 4, 9])
    expected = x * (11 + scale * (y - 10.0)).view(-1, 1, 1, 1) + t.view(-1, 1, 1, 1)
    torch.testing.assert_close(guided_velocity(_TwoHeads(), x, t, y, scale), expected)


def test_guided_sampler_integrates_the_mixed_velocity():
    """Euler with the guided velocity of a linear model matches the same Euler steps written out."""
    from neurips26.papers.nar_dit.diffusion import sample

    y, noise = torch.tensor([2, 7]), torch.randn(2, 3, 8, 8)
    out = sample(_TwoHeads(), y, noise, steps=3, method="euler", cfg_scale=2.0)
    x = noise.clone()
    ts = [1.0, 2 / 3, 1 / 3, 0.0]
    for a, b in zip(ts[:-1], ts[1:]):
        x = x + (b - a) * (x * (11 + 2.0 * (y - 10.0)).view(-1, 1, 1, 1) + a)
    torch.testing.assert_close(out, x)


# ---------------------------------------------------------------- size study plumbing
def test_size_params_override_only_the_size_not_the_training_length():
    from neurips26.papers.nar_dit.steps import size_params

    params = {"size": "s", "model": {"depth": 6, "hidden": 96, "heads": 4, "patch": 4},
              "train": {"steps": 800, "eval_every": 100, "checkpoint_every": 500, "warmup_steps": 50,
                        "route_start": 1, "route_end": -2},
              "evaluate": {"samples": 300, "guided_scale": 1.5},
              "size_study": {"sizes": [{"name": "xs", "depth": 3, "hidden": 32, "heads": 2},
                                       {"name": "s", "depth": 4, "hidden": 64, "heads": 4}]}}
    p = size_params(params)
    assert p["model"] == {"depth": 4, "hidden": 64, "heads": 4, "patch": 4}
    # every size trains the main runs' 800 steps (one snapshot, at the end), the same routed span
    assert p["train"] == {"steps": 800, "eval_every": 800, "checkpoint_every": 800, "warmup_steps": 50,
                          "route_start": 1, "route_end": -2}
    assert p["evaluate"]["guided_scale"] is None and p["evaluate"]["samples"] == 300
    with pytest.raises(ValueError, match="size_study.sizes"):
        size_params({**params, "size": "xl"})


def test_size_study_configs_expand_to_one_job_per_size_with_the_main_regimes():
    """The default config: two extra sizes, each a job running dit, tread and nar x 3 seeds,
    smaller than the main model and each with a routed span under route_start/route_end."""
    import yaml

    from neurips26.papers.nar_dit import check_config, size_study_variants
    from neurips26.papers.nar_dit.model import DiT, DiTConfig

    block = yaml.safe_load(open("config/config.yaml"))["nar_dit"]
    study = block["size_study"]
    assert check_config(block) == []
    assert size_study_variants(study, block["run_variants"]) == ["dit", "tread", "nar"]
    # a main run without a routed regime has no study; an unknown regime is named
    assert size_study_variants(study, ["dit"]) == []
    assert any("size_study.variants" in p for p in check_config({**block, "size_study": {**study, "variants": ["dit", "x"]}}))
    counts = []
    for spec in [*study["sizes"], {"name": "default", **block["model"]}]:
        assert "steps" not in spec  # every size trains train.steps: size alone varies
        cfg = DiTConfig(image_size=16, in_channels=3, patch=4, depth=spec["depth"], hidden=spec["hidden"],
                        heads=spec["heads"])
        counts.append(sum(p.numel() for p in DiT(cfg).parameters()))
    assert counts == sorted(counts) and len(set(counts)) == len(counts) >= 3


@pytest.mark.parametrize("depth,hidden,heads", [(3, 32, 2), (6, 96, 4)])
def test_an_untrained_dit_of_any_size_samples_the_starting_noise(depth, hidden, heads):
    """The reference of size_learns: adaLN-Zero's zeroed output layer predicts zero velocity, so
    an untrained model's samples are the sampler's noise, the same at every size."""
    from neurips26.papers.nar_dit.diffusion import sample
    from neurips26.papers.nar_dit.model import DiT, DiTConfig

    torch.manual_seed(depth)
    model = DiT(DiTConfig(image_size=16, in_channels=3, patch=4, depth=depth, hidden=hidden, heads=heads)).eval()
    noise = torch.randn(6, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    y = torch.arange(6) % 10
    torch.testing.assert_close(sample(model, y, noise, steps=4, method="heun"), noise, rtol=0, atol=0)
    torch.testing.assert_close(sample(model, y, noise, steps=4, method="heun", cfg_scale=1.5), noise, rtol=0, atol=0)


def test_size_trend_matches_numpy_polyfit():
    from neurips26.papers.nar_dit.claims import size_prediction, size_trend

    rng = np.random.default_rng(0)
    params = [2e4, 1.5e5, 1.1e6]
    dit = rng.uniform(30, 90, size=(3, 3)).tolist()
    routed = rng.uniform(30, 90, size=(3, 3)).tolist()
    fits = size_trend(params, routed, dit)
    for (slope, intercept), r, d in zip(fits, routed, dit):
        ref = np.polyfit(np.log10(params), np.asarray(r) / np.asarray(d) - 1, 1)
        assert slope == pytest.approx(ref[0]) and intercept == pytest.approx(ref[1])
    pred = size_prediction(fits, 675e6)
    mean = np.mean([np.polyval(np.polyfit(np.log10(params), np.asarray(r) / np.asarray(d) - 1, 1), np.log10(675e6))
                    for r, d in zip(routed, dit)])
    assert pred["deficit_at_params"] == pytest.approx(mean)
    # a deficit falling by 0.1 per decade from 0.3 at 1e4 params reaches 0 at 1e7
    line = size_prediction(size_trend([1e4, 1e5, 1e6], [[1.3, 1.2, 1.1]] * 3, [[1.0] * 3] * 3), 1e9)
    assert line["slope"] == pytest.approx(-0.1) and line["breakeven_params"] == pytest.approx(1e7)
    rising = size_prediction(size_trend([1e4, 1e5, 1e6], [[1.1, 1.2, 1.3]] * 3, [[1.0] * 3] * 3), 1e9)
    assert math.isnan(rising["breakeven_params"])


def test_the_shared_training_knobs_are_recorded_fixed_for_every_regime(tmp_path):
    from neurips26.core import tuning
    from neurips26.papers.nar_dit import steps

    params = {"train": {"lr": 0.003, "steps": 600, "batch_size": 24, "warmup_steps": 50, "weight_decay": 0.0,
                        "ema_decay": 0.99}, "evaluate": {"guided_scale": 1.5}}
    regimes = ["dit", "tread", "nar", "nar_inverted"]
    records = steps.tuning_records(params, regimes)
    assert {r.status for r in records} == {"fixed"} and all(r.note for r in records)
    for knob, value in [("lr", 0.003), ("steps", 600), ("ema_decay", 0.99), ("guided_scale", 1.5)]:
        assert {r.method: r.chosen for r in records if r.knob == knob} == {v: value for v in regimes}
    path = tuning.write_csv(tmp_path / "tuning.csv", "nar_dit", records)
    assert len(tuning.read_csv([path])) == len(records)


def test_size_study_gathers_the_untrained_reference_and_one_training_length(tmp_path):
    from neurips26.core import io
    from neurips26.papers.nar_dit.steps import _size_study

    def size_metrics(name, count, fds, untrained, steps=600):
        runs = {v: {str(s): {"final_fd": fds[v][i], "params": count, "steps": steps} for i, s in enumerate((0, 1, 2))}
                for v in fds}
        io.write_json(tmp_path / name / "metrics.json", {"size": name, "runs": runs, "untrained_fd": untrained})

    untrained = {"0": 300.0, "1": 310.0, "2": 305.0}
    size_metrics("xs", 7e4, {"dit": [150, 151, 152], "nar": [160, 161, 162]}, untrained)
    size_metrics("s", 3e5, {"dit": [120, 121, 122], "nar": [125, 126, 127]}, untrained)
    params = {"seeds": [0, 1, 2], "size_study": {"variants": ["dit", "nar"], "sizes": [{"name": "xs"}, {"name": "s"}]}}
    runs = {"dit": [{"final_fd": f} for f in (90, 91, 92)], "nar": [{"final_fd": f} for f in (100, 101, 102)]}
    info = {"dit": [{"params": 1e6, "steps": 600}] * 3, "nar": [{"params": 1e6, "steps": 600}] * 3}
    study = _size_study(params, {"sizes": tmp_path}, runs, info, ["dit", "nar"])
    assert study["sizes"] == ["xs", "s", "default"] and study["steps"] == [600, 600, 600]
    assert study["untrained_fd"] == [300.0, 310.0, 305.0]
    assert study["fd"]["dit"][1] == [151, 121, 91]
    # an untrained reference that differs between sizes means the model no longer starts at noise
    size_metrics("s", 3e5, {"dit": [120, 121, 122], "nar": [125, 126, 127]}, {**untrained, "1": 200.0})
    with pytest.raises(ValueError, match="untrained FD of seed 1 differs"):
        _size_study(params, {"sizes": tmp_path}, runs, info, ["dit", "nar"])
