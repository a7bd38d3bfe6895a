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


def _ubfc_fixture(folder, frames, wave, hr, times, fps=30.0):
    """A UBFC-rPPG DATASET_2 subject as published: vid.avi (uncompressed raw video) and
    ground_truth.txt with three whitespace-separated lines (PPG, heart rate, time in s)."""
    import cv2

    folder.mkdir(parents=True)
    writer = cv2.VideoWriter(str(folder / "vid.avi"), cv2.VideoWriter_fourcc(*"RGBA"), fps,
                             (frames.shape[2], frames.shape[1]))
    assert writer.isOpened()
    for f in frames:
        writer.write(np.ascontiguousarray(f[:, :, ::-1]))  # OpenCV takes BGR
    writer.release()
    with open(folder / "ground_truth.txt", "w") as fh:
        for row in (wave, hr, times):
            fh.write("  ".join(f"{v:.10e}" for v in row) + "\n")


def test_ubfc_loader_reads_a_fixture_in_the_published_layout(tmp_path):
    rng = np.random.default_rng(10)
    frames = rng.integers(0, 256, size=(10, 24, 32, 3), dtype=np.uint8)
    wave, hr, times = rng.standard_normal(25), rng.uniform(50, 150, 25), np.arange(25) / 60.0 + 3.5
    for k in (2, 10, 1):
        _ubfc_fixture(tmp_path / f"subject{k}", frames, wave, hr, times)
    (tmp_path / "notes").mkdir()  # a folder without a video is not a subject
    assert [p.name for p in formats.list_ubfc(tmp_path)] == ["subject1", "subject2", "subject10"]
    rec = formats.read_ubfc(tmp_path / "subject2")
    assert np.array_equal(rec.frames, frames)
    assert np.allclose(rec.wave, wave, rtol=1e-9) and np.allclose(rec.heart_rate, hr, rtol=1e-9)
    assert np.allclose(rec.wave_times, times - times[0]) and np.allclose(rec.frame_times, np.arange(10) / 30)


def test_pure_loader_reads_a_fixture_in_the_published_layout(tmp_path):
    """PURE as published: <ii-jj>/<ii-jj>/Image<ns>.png and <ii-jj>/<ii-jj>.json with
    /FullPackage (60 Hz: Timestamp, Value{waveform, pulseRate, o2saturation, signalStrength})
    and /Image (Timestamp per frame)."""
    import json

    import cv2

    rng = np.random.default_rng(11)
    frames = rng.integers(0, 256, size=(6, 16, 20, 3), dtype=np.uint8)
    t0 = 1_392_643_993_642_815_000
    frame_ns = t0 + 1_000_000 + np.arange(6) * 33_333_333
    wave_ns = t0 + np.arange(13) * 16_666_667
    wave, pulse = rng.integers(0, 200, 13), rng.integers(50, 150, 13)
    name = "03-02"
    (tmp_path / name / name).mkdir(parents=True)
    for f, ns in zip(frames, frame_ns):
        cv2.imwrite(str(tmp_path / name / name / f"Image{ns}.png"), f[:, :, ::-1])
    doc = {"/FullPackage": [{"Timestamp": int(ns), "Value": {"waveform": int(w), "pulseRate": int(r),
                                                               "o2saturation": 97, "signalStrength": 5}}
                            for ns, w, r in zip(wave_ns, wave, pulse)],
           "/Image": [{"Timestamp": int(ns)} for ns in frame_ns]}
    (tmp_path / name / f"{name}.json").write_text(json.dumps(doc))
    (tmp_path / "10-01").mkdir()
    assert [p.name for p in formats.list_pure(tmp_path)] == ["03-02", "10-01"]
    rec = formats.read_pure(tmp_path / name)
    assert np.array_equal(rec.frames, frames)
    assert np.array_equal(rec.wave, wave.astype(float)) and np.array_equal(rec.heart_rate, pulse.astype(float))
    assert np.allclose(rec.wave_times, (wave_ns - t0) / 1e9) and np.allclose(rec.frame_times, (frame_ns - t0) / 1e9)


def _mmpd_fixture(path, video, ppg, light):
    """An MMPD recording as published (the toolbox's mat_dataset): a MATLAB file with `video`
    (T, H, W, 3, floats in [0, 1]), `GT_ppg` (1 x T) and the condition labels as strings."""
    from scipy.io import savemat

    path.parent.mkdir(parents=True, exist_ok=True)
    savemat(str(path), {"video": video, "GT_ppg": ppg[None, :], "light": light, "motion": "Stationary",
                        "exercise": "False", "skin_color": np.array([[3]]), "gender": "male", "glasser": "False",
                        "hair_cover": "False", "makeup": "False"})


def test_mmpd_loader_reads_a_fixture_in_the_published_layout(tmp_path):
    rng = np.random.default_rng(12)
    video = rng.uniform(0, 1, size=(7, 12, 10, 3)).astype(np.float32)
    ppg = rng.standard_normal(7)
    _mmpd_fixture(tmp_path / "subject2" / "p2_0.mat", video, ppg, "LED-low")
    _mmpd_fixture(tmp_path / "subject2" / "p2_10.mat", video, ppg, "Nature")
    _mmpd_fixture(tmp_path / "subject11" / "p11_1.mat", video, ppg, "Incandescent")
    names = [f"{p.parent.name}/{p.name}" for p in formats.list_mmpd(tmp_path)]
    assert names == ["subject2/p2_0.mat", "subject2/p2_10.mat", "subject11/p11_1.mat"]
    assert [p.name for p in formats.list_mmpd(tmp_path, light=["LED-low", "Incandescent"])] == ["p2_0.mat", "p11_1.mat"]
    rec = formats.read_mmpd(tmp_path / "subject2" / "p2_0.mat")
    assert np.array_equal(rec.frames, np.round(video.astype(np.float64) * 255).astype(np.uint8))
    assert np.allclose(rec.wave, ppg) and np.allclose(rec.frame_times, np.arange(7) / 30)
    assert formats.subject_of("mmpd", tmp_path / "subject2" / "p2_10.mat") == "subject2"


def test_ibvp_loader_reads_a_fixture_in_the_published_layout(tmp_path):
    """iBVP as published: pNN_x/pNN_x_rgb/*.bmp and pNN_x/pNN_x_bvp.csv (a header, then BVP and
    signal-quality columns)."""
    import cv2

    rng = np.random.default_rng(13)
    frames = rng.integers(0, 256, size=(5, 14, 18, 3), dtype=np.uint8)
    bvp = rng.standard_normal(9)
    for name in ("p03_b", "p01_a"):
        (tmp_path / name / f"{name}_rgb").mkdir(parents=True)
        (tmp_path / name / f"{name}_t").mkdir()
        for i, f in enumerate(frames):
            cv2.imwrite(str(tmp_path / name / f"{name}_rgb" / f"{i:05d}.bmp"), f[:, :, ::-1])
        rows = ["BVP,SQ1,SQ2,SQ3"] + [f"{v:.12f},0.9,0.8,0.95" for v in bvp]
        (tmp_path / name / f"{name}_bvp.csv").write_text("\n".join(rows) + "\n")
    assert [p.name for p in formats.list_ibvp(tmp_path)] == ["p01_a", "p03_b"]
    rec = formats.read_ibvp(tmp_path / "p03_b")
    assert np.array_equal(rec.frames, frames) and np.allclose(rec.wave, bvp)
    assert formats.subject_of("ibvp", tmp_path / "p03_b") == "p03"


def test_subject_split_keeps_people_apart_and_varies_with_the_seed(tmp_path):
    from neurips26.papers.apexphys.steps import subject_split

    folders = [tmp_path / f"{s:02d}-{t:02d}" for s in range(1, 11) for t in (1, 2, 3)]
    splits = []
    for seed in (0, 1, 2):
        ordered, n_train = subject_split(folders, "pure", 0.3, seed)
        assert sorted(ordered) == sorted(folders) and n_train == 21  # 7 of 10 subjects, 3 takes each
        train = {p.name.split("-")[0] for p in ordered[:n_train]}
        test = {p.name.split("-")[0] for p in ordered[n_train:]}
        assert not train & test and len(test) == 3
        assert subject_split(folders, "pure", 0.3, seed) == (ordered, n_train)  # deterministic
        splits.append(frozenset(test))
    assert len(set(splits)) > 1


def test_our_ubfc_writer_round_trips_through_the_loader(tmp_path):
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


def test_our_pure_writer_round_trips_through_the_loader(tmp_path):
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


def test_snr_of_two_on_grid_sinusoids_is_their_power_ratio():
    fs, nfft = 30.0, 1024
    t = np.arange(nfft) / fs
    f0 = 50 * fs / nfft  # 1.46 Hz (88 bpm), on the FFT grid (no leakage); first harmonic 2.93 Hz
    x = 2.0 * np.sin(2 * np.pi * f0 * t) + 0.5 * np.cos(2 * np.pi * (70 * fs / nfft) * t)  # noise at 2.05 Hz
    expected = 10 * np.log10(2.0 ** 2 / 0.5 ** 2)
    assert signals.snr_db(x, fs, 60 * f0, 0.65, 2.6, nfft_min=nfft, filtered=False) == pytest.approx(expected, abs=1e-9)
    # power at the first harmonic counts as signal
    y = x + 1.0 * np.sin(2 * np.pi * 2 * f0 * t)
    assert signals.snr_db(y, fs, 60 * f0, 0.65, 3.0, nfft_min=nfft, filtered=False) == pytest.approx(
        10 * np.log10((4.0 + 1.0) / 0.25), abs=1e-9)
    # and a pulse at the wrong rate scores low
    assert signals.snr_db(x, fs, 60 * (70 * fs / nfft), 0.65, 2.6, nfft_min=nfft, filtered=False) == pytest.approx(
        -expected, abs=1e-9)


def test_waveform_correlation_matches_scipy_on_the_filtered_signals():
    rng = np.random.default_rng(5)
    fs = 30.0
    t = np.arange(256) / fs
    ref = np.sin(2 * np.pi * 1.3 * t)
    pred = ref + 0.8 * rng.standard_normal(len(t))
    a = signals.bandpass(signals.detrend(pred), fs, 0.65, 2.6)
    b = signals.bandpass(signals.detrend(ref), fs, 0.65, 2.6)
    assert signals.waveform_correlation(pred, ref, fs) == pytest.approx(stats.pearsonr(a, b)[0], abs=1e-12)
    assert signals.waveform_correlation(-ref, ref, fs) == pytest.approx(-1.0, abs=1e-12)


APEX = {"kind": "apexphys", "bcrp": True, "hes": True, "pgp": True, "bcrp_lambda": 50.0, "bcrp_top_fraction": 0.2,
        "hes_tau": 0.5, "hes_min_discrepancy": 0.0}


def _domains(n=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [{"name": f"d{k}", "train_x": torch.randn(4, 6, 32, 8, 8, generator=g) * (1 + k) + k,
             "train_y": torch.randn(4, 32, generator=g)} for k in range(n)]


def test_hes_and_pgp_measure_every_domain_with_the_same_frozen_probe():
    from neurips26.papers.apexphys.method import ApexPhys, discrepancies, layer_statistics

    domains = _domains()
    torch.manual_seed(0)
    model = PhysNet(widths=(4, 8, 8), spatial_pool=2)
    strategy = ApexPhys(APEX, seed=0)
    strategy.before_task(model, 0, domains)
    strategy.after_task(model, 0, domains)
    probe = copy_of(model)
    # the backbone moves (as training on domain 1 would); the probe and its statistics do not
    with torch.no_grad():
        for p in model.backbone_parameters():
            p.add_(torch.randn_like(p))
    strategy.before_task(model, 1, domains)
    expected = discrepancies(layer_statistics(probe, domains[1]["train_x"]), [layer_statistics(probe, domains[0]["train_x"])])[0]
    assert strategy.discrepancy_log[1] == pytest.approx(expected, rel=1e-9)
    strategy.after_task(model, 1, domains)
    assert len(strategy.signatures) == 2
    for name in LAYERS:  # domain 1's stored statistics come from the probe, not the moved backbone
        assert torch.allclose(strategy.signatures[1][name][0], layer_statistics(probe, domains[1]["train_x"])[name][0])


def copy_of(model):
    import copy

    probe = copy.deepcopy(model).eval()
    probe.branches = torch.nn.ModuleDict()
    return probe


def test_pgp_counts_the_branches_it_inherits():
    from neurips26.papers.apexphys.method import ApexPhys

    domains = _domains(4)
    torch.manual_seed(0)
    model = PhysNet(widths=(4, 8, 8), spatial_pool=2)
    strategy = ApexPhys(APEX | {"hes_tau": 0.0}, seed=0)  # every layer expands
    for task in range(3):
        strategy.before_task(model, task, domains)
        strategy.after_task(model, task, domains)
    # task 1 inherits from domain 0, which has no branches; task 2 from 0 or 1
    source = strategy.inherited_from[2]
    assert strategy.inherited_branches == (len(LAYERS) if source == 1 else 0)
    off = ApexPhys(APEX | {"hes_tau": 0.0, "pgp": False}, seed=0)
    torch.manual_seed(0)
    model = PhysNet(widths=(4, 8, 8), spatial_pool=2)
    for task in range(3):
        off.before_task(model, task, domains)
        off.after_task(model, task, domains)
    assert off.inherited_branches == 0


def test_replay_keeps_the_samples_per_step_and_joint_restarts_with_all_steps_spent():
    from neurips26.papers.apexphys.baselines import Joint, Replay, Strategy

    replay = Replay({"replay_per_domain": 2, "replay_batch": 1}, seed=0)
    domains = _domains(2)
    assert replay.new_per_batch(0, 4) == 4 and replay.extra_batch() is None
    replay.after_task(None, 0, domains)
    new = replay.new_per_batch(1, 4)
    assert new + len(replay.extra_batch()[0]) == 4
    joint, plain = Joint({}, 0), Strategy({}, 0)
    assert [joint.steps(t, 80) for t in range(3)] == [80, 160, 240] and joint.from_scratch(2)
    assert [plain.steps(t, 80) for t in range(3)] == [80, 80, 80] and not plain.from_scratch(2)
    x, _ = joint.train_chunks(1, domains)
    assert len(x) == 8


def test_tune_extends_the_lambda_grid_past_an_edge_and_records_it(tmp_path, monkeypatch):
    """Validation MAE falling below the grid's lower edge (best at 0.05): the tune step extends the
    shared grid downwards, one step of its own log spacing at a time, and records the extension."""
    import math

    from neurips26.core import io
    from neurips26.papers.apexphys import continual, steps

    monkeypatch.setattr(steps, "_load_domains", lambda folder, c, s: ([], {"fps": 30.0}))
    monkeypatch.setattr(steps, "_split_validation", lambda domains, clips, c, s: domains)

    def fake_protocol(domains, kind, settings, t, model, seed, out, params, fps, band, evaluate_each_task=True):
        lam = settings.get("ewc_lambda", 1.0)
        mae = 5.0 + abs(math.log10(lam / 0.05))
        return {"final": {"mae": mae, "snr_db": 0.0}, "bwt": 0.1, "plasticity_mae": mae}

    monkeypatch.setattr(continual, "run_protocol", fake_protocol)
    params = {"variant": "ewc", "variant_settings": {"kind": "ewc", "ewc_lambda": 50.0, "tune": "ewc_lambda"},
              "tune": {"grid": [5.0, 50.0, 500.0], "seed": 0, "validation_clips": 2}, "tuning": {"extensions": 3},
              "heart_rate": {"low_hz": 0.65, "high_hz": 2.6}, "train": {"train_stride": 8}, "preprocess": {"chunk_length": 8},
              "model": {}}
    steps.tune(params, {"data": tmp_path}, tmp_path / "out")
    c = io.read_json(tmp_path / "out" / "choice.json")
    assert c["chosen"] == pytest.approx(0.05) and c["grid"][:2] == pytest.approx([0.005, 0.05])
    rec = c["records"][0]
    assert rec["status"] == "tuned" and rec["extensions"] == 3 and rec["knob"] == "ewc_lambda"
    # an untuned continual model is scored once on the same clips
    params["variant"], params["variant_settings"] = "finetune", {"kind": "finetune"}
    steps.tune(params, {"data": tmp_path}, tmp_path / "ft")
    c = io.read_json(tmp_path / "ft" / "choice.json")
    assert c["key"] is None and c["records"] == [] and c["validation"]["val_mae"] == pytest.approx(5.0 + math.log10(20))


@pytest.mark.parametrize("switches, frozen, anchored", [
    ({}, True, True),                                       # the full method: both
    ({"bcrp": False, "bn_freeze": True}, True, False),      # ablation of the Fisher-masked anchor alone
    ({"bn_freeze": False}, False, True),                    # ablation of the batch-norm freezing alone
    ({"bcrp": False}, False, False),                        # the former apexphys_no_bcrp: both off
])
def test_the_fisher_anchor_and_the_batch_norm_freezing_switch_apart(switches, frozen, anchored):
    """BCRP's anchor and the batch-norm freezing are separate parts: after a training step on the
    second domain the backbone's running statistics stay exactly where the first domain left them
    if and only if the freezing is on, and the anchor's penalty is positive (a moved weight under
    the top-Fisher mask) if and only if BCRP is on."""
    from neurips26.papers.apexphys.continual import make_module
    from neurips26.papers.apexphys.method import ApexPhys

    domains = _domains(2)
    torch.manual_seed(0)
    model = PhysNet(widths=(4, 8, 8), spatial_pool=2)
    strategy = ApexPhys(APEX | {"hes": False} | switches, seed=0)
    strategy.before_task(model, 0, domains)
    strategy.after_task(model, 0, domains)
    bns = [m for m in model.layers.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    before = [m.running_mean.clone() for m in bns]
    strategy.before_task(model, 1, domains)
    module = make_module(model, strategy, 1, lr=0.01)
    model.train()
    module.on_train_epoch_start()
    x, y = domains[1]["train_x"], domains[1]["train_y"]
    loss = module.training_step((x, y), 0)
    loss.backward()
    moved = any(not torch.equal(b, m.running_mean) for b, m in zip(before, bns))
    assert moved == (not frozen)
    with torch.no_grad():
        for p in model.backbone_parameters():
            p.add_(0.1)
    penalty = float(torch.as_tensor(strategy.penalty(model)).detach())
    assert (penalty > 0) == anchored
    assert strategy.freeze_norm(1) == frozen and not strategy.freeze_norm(0)


def test_the_default_tuning_grid_reaches_below_the_former_lower_edge_on_more_validation_clips():
    """BCRP's lambda had been chosen at the starting grid's lower edge (5) on 2 held-out clips per
    domain: the default grid now starts a log step below it and holds out 3 of the 7 training clips."""
    from pathlib import Path

    import yaml

    cfg = yaml.safe_load((Path(__file__).parents[2] / "config" / "config.yaml").read_text())["apexphys"]
    assert min(cfg["tune"]["grid"]) < 5.0 and cfg["tune"]["validation_clips"] >= 3
    assert cfg["tune"]["validation_clips"] < cfg["data"]["train_clips"]
    assert {"apexphys_no_bcrp", "apexphys_no_bn_freeze"} <= set(cfg["run_variants"])
    no_anchor, no_freeze = cfg["variants"]["apexphys_no_bcrp"], cfg["variants"]["apexphys_no_bn_freeze"]
    assert (no_anchor["bcrp"], no_anchor["bn_freeze"]) == (False, True)
    assert (no_freeze["bcrp"], no_freeze["bn_freeze"], no_freeze["tune_from"]) == (True, False, "apexphys")
