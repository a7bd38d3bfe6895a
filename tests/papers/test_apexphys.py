"""apexphys: signal processing, loaders, Fisher information and branches against independent references."""

import numpy as np
import pytest
import torch
from scipy import stats

from neurips26.papers.apexphys import formats, signals
from neurips26.papers.apexphys.baselines import diagonal_fisher
from neurips26.papers.apexphys.continual import backward_transfer, chunks_of
from neurips26.papers.apexphys.method import symmetric_kl
from neurips26.papers.apexphys.model import LAYERS, PhysNet, neg_pearson
from neurips26.papers.apexphys.preprocess import crop_resize, diff_normalize, face_box
from neurips26.papers.apexphys.synthetic import render_clip

CLEAN = {"name": "clean", "format": "ubfc", "light_level": 0.85, "light_rgb": [1.0, 1.0, 1.0], "light_variation": 0.0,
         "flicker_amplitude": 0.0, "flicker_hz": [1.0, 2.0], "motion_px": 0.0, "skin_tone": "light",
         "noise_std": 0.5, "jpeg_quality": 0}


@pytest.mark.parametrize("seed", [3, 11])
def test_pos_recovers_the_generator_heart_rate_on_a_clean_clip(seed):
    fps = 30.0
    clip = render_clip(CLEAN, 300, fps, 64, seed=seed, hr_drift=0.0)
    face = crop_resize(clip.frames, face_box(clip.frames[0], "foreground"), 32)
    rgb = face.reshape(len(face), -1, 3).mean(1)
    estimate = signals.heart_rate(signals.pos(rgb, fps), fps)
    truth = float(np.mean(clip.heart_rate))  # the generator's instantaneous rate, averaged over the clip
    assert 50 <= truth <= 150
    assert abs(estimate - truth) < 3.0, (estimate, truth)


@pytest.mark.parametrize("k", [60, 101, 157])
def test_heart_rate_of_a_pure_sinusoid_is_exact(k):
    fs, nfft = 30.0, 2048
    f0 = k * fs / nfft  # on the FFT grid
    t = np.arange(600) / fs
    x = np.sin(2 * np.pi * f0 * t + 0.3)
    assert signals.spectrum_peak_hr(x, fs, 0.65, 2.6, nfft) == pytest.approx(60 * f0, abs=1e-9)
    assert signals.heart_rate(x, fs, nfft_min=nfft) == pytest.approx(60 * f0, abs=1e-9)


def test_ubfc_loader_reads_back_identical_frames_and_labels(tmp_path):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, size=(12, 24, 32, 3), dtype=np.uint8)
    wave = rng.standard_normal(40)
    hr = rng.uniform(50, 150, 40)
    times = np.arange(40) / 60.0
    formats.write_ubfc(tmp_path / "subject1", frames, wave, hr, times, fps=30)
    rec = formats.read_ubfc(tmp_path / "subject1")
    assert rec.frames.dtype == np.uint8 and np.array_equal(rec.frames, frames)
    assert np.array_equal(rec.wave, wave) and np.array_equal(rec.heart_rate, hr) and np.array_equal(rec.wave_times, times)
    assert np.allclose(rec.frame_times, np.arange(12) / 30)
    assert [p.name for p in formats.list_ubfc(tmp_path)] == ["subject1"]


def test_pure_loader_reads_back_identical_frames_and_labels(tmp_path):
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, size=(9, 20, 28, 3), dtype=np.uint8)
    t0 = 1_392_643_993_642_815_000
    frame_ns = t0 + np.arange(9) * 33_333_333
    wave = rng.integers(0, 120, 18).astype(float)  # PURE stores integer waveform samples
    pulse = rng.integers(50, 150, 18)
    wave_ns = t0 + np.arange(18) * 16_666_667
    formats.write_pure(tmp_path / "01-02", frames, frame_ns, wave, pulse, wave_ns)
    rec = formats.read_pure(tmp_path / "01-02")
    assert np.array_equal(rec.frames, frames)
    assert np.array_equal(rec.wave, wave) and np.array_equal(rec.heart_rate, pulse.astype(float))
    assert np.allclose(rec.frame_times, (frame_ns - t0) / 1e9) and np.allclose(rec.wave_times, (wave_ns - t0) / 1e9)
    assert [p.name for p in formats.list_pure(tmp_path)] == ["01-02"]


def test_fisher_diagonal_matches_the_linear_gaussian_closed_form():
    # y = w.x + b + sigma * eps: the Fisher of (w, b) is E[x_i^2] / sigma^2 and 1 / sigma^2.
    # With eps = +-1 (antithetic pairs) the per-sample squared score is exactly x_i^2 / sigma^2.
    g = torch.Generator().manual_seed(0)
    sigma = 0.7
    w = torch.randn(5, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn((), generator=g, dtype=torch.float64, requires_grad=True)
    x = torch.randn(64, 5, generator=g, dtype=torch.float64)
    eps = torch.tensor([1.0, -1.0], dtype=torch.float64).repeat(32)
    y = (x @ w + b).detach() + sigma * eps

    def nll(i):
        return 0.5 * ((y[i] - x[i] @ w - b) / sigma) ** 2

    fisher_w, fisher_b = diagonal_fisher(nll, [w, b], range(len(x)))
    assert torch.allclose(fisher_w, (x ** 2).mean(0) / sigma ** 2, rtol=1e-12)
    assert torch.allclose(fisher_b, torch.tensor(1 / sigma ** 2, dtype=torch.float64), rtol=1e-12)


def test_a_zero_initialised_branch_leaves_the_output_unchanged():
    torch.manual_seed(0)
    net = PhysNet().eval()
    x = torch.randn(2, 6, 64, 16, 16)
    before = net(x)
    for layer in LAYERS:
        net.add_branch(1, layer)
    assert net.branch_layers(1) == list(LAYERS)
    assert torch.equal(net(x, path=1), before)
    # a trained branch does change it, and inheriting copies it exactly (prior-guided init)
    with torch.no_grad():
        net.branches[net.key(1, "conv3")].up.weight.normal_()
    assert not torch.allclose(net(x, path=1), before)
    net.add_branch(2, "conv3", init_from=1)
    for a, b in zip(net.branches[net.key(2, "conv3")].parameters(), net.branches[net.key(1, "conv3")].parameters()):
        assert torch.equal(a, b)


def test_negative_pearson_matches_scipy():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 50)), rng.standard_normal((3, 50))
    expected = np.mean([1 - stats.pearsonr(a[i], b[i])[0] for i in range(3)])
    assert neg_pearson(torch.tensor(a), torch.tensor(b)).item() == pytest.approx(expected, abs=1e-7)


def test_symmetric_kl_matches_torch_distributions():
    from torch.distributions import Normal, kl_divergence

    ma, mb = torch.tensor([0.1, -0.3], dtype=torch.float64), torch.tensor([0.4, 0.2], dtype=torch.float64)
    va, vb = torch.tensor([0.5, 2.0], dtype=torch.float64), torch.tensor([1.5, 0.3], dtype=torch.float64)
    pa, pb = Normal(ma, va.sqrt()), Normal(mb, vb.sqrt())
    expected = (kl_divergence(pa, pb) + kl_divergence(pb, pa)).mean().item()
    assert symmetric_kl((ma, va), (mb, vb)) == pytest.approx(expected, rel=1e-12)


def test_difference_normalisation_and_chunks():
    rng = np.random.default_rng(3)
    frames = rng.uniform(10, 200, size=(6, 2, 2, 3))
    d = diff_normalize(frames)
    raw = (frames[1:] - frames[:-1]) / (frames[1:] + frames[:-1] + 1e-7)
    assert np.allclose(d[:-1], raw / raw.std()) and np.all(d[-1] == 0)
    x = torch.arange(2 * 1 * 10).float().reshape(2, 1, 10, 1, 1)
    y = torch.arange(20).float().reshape(2, 10)
    cx, cy = chunks_of(x, y, 4, 3)
    assert cx.shape == (6, 1, 4, 1, 1) and torch.equal(cy[1], torch.tensor([3.0, 4, 5, 6]))
    assert torch.equal(cx[:, 0, :, 0, 0], cy)


def test_backward_transfer_by_hand():
    R = [[1.0, 9.0, 9.0], [3.0, 2.0, 9.0], [4.0, 5.0, 1.0]]
    assert backward_transfer(R) == pytest.approx(((4 - 1) + (5 - 2)) / 2)
