"""Corrupt inputs stop the step through the real CLI with a message naming the file, and the
step leaves no partial output: a truncated safetensors file, a truncated checkpoint, a
truncated video, an empty CSV."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SMOKE_TRAIN = {"paper": "nar_dit", "scale": "smoke", "seed": 0, "variant": "dit", "variant_settings": {"kind": "none"},
               "model": {"depth": 2, "hidden": 16, "heads": 2, "patch": 4, "mlp_ratio": 2.0, "num_classes": 10,
                         "class_dropout": 0.1},
               "train": {"steps": 4, "batch_size": 4, "lr": 0.003, "weight_decay": 0.0, "warmup_steps": 1,
                         "ema_decay": 0.9, "route_start": 1, "route_end": -1, "eval_every": 2,
                         "checkpoint_every": 2, "num_workers": 0}}
PREPARE = {"paper": "nar_dit", "scale": "smoke", "data": {"source": "shapes", "image_size": 16, "train_per_class": 1,
                                                          "heldout_per_class": 1, "reference_size": 10, "seed": 1}}


def cli(*args, env_extra=None):
    env = {**os.environ, "NEURIPS26_PROGRESS": "0", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "neurips26", *args], capture_output=True, text=True,
                          timeout=300, env=env)


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def assert_fails_naming(proc, path: Path):
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, text[-2000:]
    assert str(path) in text, text[-2000:]


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("data")
    proc = cli("nar_dit", "prepare", "--params", json.dumps(PREPARE), "--out", str(data), "--no-tracking")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return data


def test_truncated_safetensors_input(tmp_path, images):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("images.safetensors", "manifest.json"):
        (data / name).write_bytes((images / name).read_bytes())
    truncate(data / "images.safetensors")
    out = tmp_path / "train"
    proc = cli("nar_dit", "train", "--params", json.dumps(SMOKE_TRAIN), "--input", f"data={data}",
               "--out", str(out), "--no-tracking")
    assert_fails_naming(proc, data / "images.safetensors")
    assert files(out) == []


def test_truncated_checkpoint(tmp_path, images):
    out = tmp_path / "train"
    args = ["nar_dit", "train", "--params", json.dumps(SMOKE_TRAIN), "--input", f"data={images}",
            "--out", str(out), "--no-tracking"]
    assert cli(*args, env_extra={"NEURIPS26_KEEP_CHECKPOINTS": "1"}).returncode == 0
    (last,) = out.glob("checkpoints/*/last.ckpt")
    for name in ("snapshots.safetensors", "train.json", "timing.json"):
        (out / name).unlink()
    truncate(last)
    proc = cli(*args)
    assert_fails_naming(proc, last)
    assert [f for f in files(out) if not f.startswith("checkpoints")] == []


def test_truncated_video(tmp_path):
    from neurips26.papers.apexphys.formats import read_ubfc, write_ubfc

    frames = np.random.default_rng(0).integers(0, 255, (30, 24, 24, 3), dtype=np.uint8)
    t = np.arange(60) / 60.0
    write_ubfc(tmp_path / "subject1", frames, np.sin(t), np.full(60, 70.0), t, fps=30.0)
    video = tmp_path / "subject1" / "vid.avi"
    assert len(read_ubfc(tmp_path / "subject1").frame_times) == 30
    truncate(video, 0.6)
    with pytest.raises((ValueError, OSError)) as err:
        read_ubfc(tmp_path / "subject1")
    assert str(video) in str(err.value)


def test_empty_csv(tmp_path):
    claims = tmp_path / "claims.csv"
    claims.write_text("")
    out = tmp_path / "summary"
    proc = cli("report", "--claims", str(claims), "--out", str(out), "--no-tracking")
    assert_fails_naming(proc, claims)
    assert files(out) == []
