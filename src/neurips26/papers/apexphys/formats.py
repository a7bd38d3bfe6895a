"""Readers for the on-disk formats of UBFC-rPPG, PURE, MMPD and iBVP; writers for the first two.

UBFC-rPPG (DATASET_2): `<root>/subject<N>/vid.avi` (the real set is uncompressed 8-bit RGB,
30 fps) and `ground_truth.txt`, three whitespace-separated lines: the PPG waveform, the
oximeter's heart rate, and the time stamps in seconds, one value per oximeter sample.
PURE: `<root>/<ii-jj>/<ii-jj>/Image<timestamp_ns>.png` (lossless PNG, 30 fps) and
`<root>/<ii-jj>/<ii-jj>.json` with "/FullPackage" (60 Hz oximeter samples: Timestamp in ns
and Value {pulseRate, o2saturation, signalStrength, waveform}) and "/Image" (one Timestamp
per frame).

MMPD (the rPPG-Toolbox's `mat_dataset` layout): `<root>/subject<N>/p<N>_<k>.mat`, MATLAB files
with `video` (T, H, W, 3 RGB, floats in [0, 1]), `GT_ppg` (the contact PPG, one sample per
frame) and the recording's conditions as strings (`light`: LED-low, LED-high, Incandescent or
Nature; `motion`, `exercise`, ...); 30 fps.
iBVP: `<root>/p<NN>_<x>/p<NN>_<x>_rgb/*.bmp` (RGB frames, 30 fps, sorted by name) and
`<root>/p<NN>_<x>/p<NN>_<x>_bvp.csv` (a header line, then one row per PPG sample: the BVP in the
first column, the signal-quality index in the fourth), sampled over the same span as the frames.

The generator writes UBFC videos with FFV1, a lossless codec, so frames read back byte for
byte; the reader uses OpenCV, which also reads the real set's raw RGB AVIs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Recording:
    name: str
    frames: np.ndarray          # (T, H, W, 3) uint8, RGB
    wave: np.ndarray            # the contact PPG waveform, oximeter samples
    wave_times: np.ndarray      # seconds, one per waveform sample
    frame_times: np.ndarray     # seconds, one per frame
    heart_rate: np.ndarray      # oximeter heart rate per waveform sample (bpm)


# ---------------------------------------------------------------- UBFC-rPPG
def write_ubfc(folder: Path, frames: np.ndarray, wave, heart_rate, wave_times, fps: float) -> None:
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    t, h, w, _ = frames.shape
    path = folder / "vid.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"FFV1"), float(fps), (w, h))
    if not writer.isOpened():
        raise RuntimeError(f"{path}: OpenCV cannot write FFV1 video")
    for frame in frames:
        writer.write(np.ascontiguousarray(frame[:, :, ::-1]))
    writer.release()
    lines = [" ".join(repr(float(v)) for v in row) for row in (wave, heart_rate, wave_times)]
    (folder / "ground_truth.txt").write_text("\n".join(lines) + "\n")


def read_ubfc_video(path: Path) -> tuple[np.ndarray, float]:
    import cv2

    capture = cv2.VideoCapture(str(path))
    if not capture.isOpened():
        raise FileNotFoundError(f"{path}: cannot open the video")
    fps = capture.get(cv2.CAP_PROP_FPS)
    expected = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))  # from the container's header
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame[:, :, ::-1])
    capture.release()
    if not frames:
        raise ValueError(f"{path}: no frames")
    if expected > 0 and len(frames) < expected:
        raise ValueError(f"{path}: truncated video, {len(frames)} of the {expected} frames its header announces")
    return np.ascontiguousarray(np.stack(frames)), float(fps)


def read_ubfc(folder: Path) -> Recording:
    folder = Path(folder)
    frames, fps = read_ubfc_video(folder / "vid.avi")
    gt = folder / "ground_truth.txt"
    if not gt.exists():
        raise FileNotFoundError(f"{gt}: missing UBFC ground truth")
    rows = [np.array([float(v) for v in line.split()]) for line in gt.read_text().splitlines() if line.strip()]
    if len(rows) < 3:
        raise ValueError(f"{gt}: expected 3 lines (PPG, HR, time), found {len(rows)}")
    wave, hr, times = rows[:3]
    return Recording(folder.name, frames, wave, times - times[0], np.arange(len(frames)) / fps, hr)


def list_ubfc(root: Path) -> list[Path]:
    root = Path(root)
    found = [p for p in root.iterdir() if p.is_dir() and (p / "vid.avi").exists()] if root.is_dir() else []
    return sorted(found, key=lambda p: (int(re.sub(r"\D", "", p.name) or 0), p.name))


# ---------------------------------------------------------------- PURE
def write_pure(folder: Path, frames: np.ndarray, frame_times_ns, wave, pulse_rate, wave_times_ns) -> None:
    import cv2

    name = folder.name
    images = folder / name
    images.mkdir(parents=True, exist_ok=True)
    for frame, ts in zip(frames, frame_times_ns):
        cv2.imwrite(str(images / f"Image{int(ts)}.png"), np.ascontiguousarray(frame[:, :, ::-1]))
    package = [{"Timestamp": int(ts), "Value": {"pulseRate": int(round(float(pr))), "o2saturation": 98,
                                                  "signalStrength": 4, "waveform": float(wv)}}
               for ts, pr, wv in zip(wave_times_ns, pulse_rate, wave)]
    doc = {"/FullPackage": package, "/Image": [{"Timestamp": int(ts)} for ts in frame_times_ns]}
    (folder / f"{name}.json").write_text(json.dumps(doc))


def _rgb_images(paths, kind: str) -> list:
    """Frames read from image files (OpenCV), as RGB arrays; an unreadable file is named."""
    import cv2

    frames = []
    for p in paths:
        img = cv2.imread(str(p), cv2.IMREAD_COLOR)
        if img is None:
            raise ValueError(f"{p}: unreadable {kind}")
        frames.append(img[:, :, ::-1])
    return frames


def read_pure(folder: Path) -> Recording:
    folder = Path(folder)
    name = folder.name
    pngs = sorted((folder / name).glob("Image*.png"), key=lambda p: int(re.sub(r"\D", "", p.stem)))
    if not pngs:
        raise FileNotFoundError(f"{folder / name}: no Image*.png frames")
    frames = _rgb_images(pngs, "PNG")
    doc_path = folder / f"{name}.json"
    if not doc_path.exists():
        raise FileNotFoundError(f"{doc_path}: missing PURE label file")
    doc = json.loads(doc_path.read_text())
    package = doc["/FullPackage"]
    wave = np.array([float(p["Value"]["waveform"]) for p in package])
    rate = np.array([float(p["Value"]["pulseRate"]) for p in package])
    wave_ns = np.array([int(p["Timestamp"]) for p in package], dtype=np.int64)
    frame_ns = np.array([int(re.sub(r"\D", "", p.stem)) for p in pngs], dtype=np.int64)
    t0 = min(wave_ns[0], frame_ns[0])
    return Recording(name, np.ascontiguousarray(np.stack(frames)), wave, (wave_ns - t0) / 1e9,
                     (frame_ns - t0) / 1e9, rate)


def list_pure(root: Path) -> list[Path]:
    root = Path(root)
    found = [p for p in root.iterdir() if p.is_dir() and re.fullmatch(r"\d+-\d+", p.name)] if root.is_dir() else []
    return sorted(found, key=lambda p: tuple(int(x) for x in p.name.split("-")))


# ---------------------------------------------------------------- MMPD
MMPD_FPS = 30.0


def _mat_string(value) -> str:
    return str(np.asarray(value).squeeze())


def read_mmpd(path: Path) -> Recording:
    """One MMPD recording (a .mat file)."""
    from scipy.io import loadmat

    path = Path(path)
    mat = loadmat(str(path))
    for key in ("video", "GT_ppg"):
        if key not in mat:
            raise ValueError(f"{path}: no '{key}' in the MMPD file")
    video = np.asarray(mat["video"], dtype=np.float64)
    if video.ndim != 4 or video.shape[-1] != 3:
        raise ValueError(f"{path}: 'video' has shape {video.shape}, expected (T, H, W, 3)")
    frames = np.round(np.clip(video, 0, 1) * 255).astype(np.uint8)  # the toolbox's conversion
    wave = np.asarray(mat["GT_ppg"], dtype=np.float64).T.reshape(-1)
    n = len(frames)
    return Recording(path.stem, frames, wave, np.arange(len(wave)) * (n / len(wave)) / MMPD_FPS,
                     np.arange(n) / MMPD_FPS, np.full(len(wave), np.nan))


def mmpd_light(path: Path) -> str:
    from scipy.io import loadmat

    return _mat_string(loadmat(str(path), variable_names=["light"])["light"])


def list_mmpd(root: Path, light: list[str] | None = None) -> list[Path]:
    """The .mat files under subject folders, by subject and take; with `light`, only recordings
    under those lighting conditions."""
    root = Path(root)
    found = []
    if root.is_dir():
        for subject in root.iterdir():
            if subject.is_dir() and re.fullmatch(r"subject\d+", subject.name):
                found += [p for p in subject.glob("*.mat") if re.fullmatch(r"p\d+_\d+", p.stem)]
    found = sorted(found, key=lambda p: (int(p.parent.name[7:]), int(p.stem.split("_")[1])))
    if light is not None:
        found = [p for p in found if mmpd_light(p) in light]
    return found


# ---------------------------------------------------------------- iBVP
IBVP_FPS = 30.0


def read_ibvp(folder: Path) -> Recording:
    folder = Path(folder)
    name = folder.name
    bmps = sorted((folder / f"{name}_rgb").glob("*.bmp"))
    if not bmps:
        raise FileNotFoundError(f"{folder / (name + '_rgb')}: no .bmp frames")
    frames = _rgb_images(bmps, "BMP")
    csv = folder / f"{name}_bvp.csv"
    if not csv.exists():
        raise FileNotFoundError(f"{csv}: missing iBVP label file")
    table = np.atleast_2d(np.genfromtxt(csv, delimiter=",", skip_header=1, dtype=np.float64))
    if table.shape[1] < 1 or not len(table):
        raise ValueError(f"{csv}: no BVP rows")
    wave = table[:, 0]
    n = len(frames)
    return Recording(name, np.ascontiguousarray(np.stack(frames)), wave,
                     np.arange(len(wave)) * (n / len(wave)) / IBVP_FPS, np.arange(n) / IBVP_FPS,
                     np.full(len(wave), np.nan))


def list_ibvp(root: Path) -> list[Path]:
    root = Path(root)
    found = [p for p in root.iterdir() if p.is_dir() and re.fullmatch(r"p\d+_[A-Za-z0-9]+", p.name)
             and (p / f"{p.name}_bvp.csv").exists()] if root.is_dir() else []
    return sorted(found, key=lambda p: (int(p.name[1:].split("_")[0]), p.name))


# ---------------------------------------------------------------- subjects (for splits)
def subject_of(fmt: str, path: Path) -> str:
    """The subject a recording belongs to, so that train/test splits never share a person."""
    path = Path(path)
    if fmt == "ubfc":
        return path.name
    if fmt == "pure":
        return path.name.split("-")[0]
    if fmt == "mmpd":
        return path.parent.name
    if fmt == "ibvp":
        return path.name.split("_")[0]
    raise ValueError(f"unknown dataset format '{fmt}'; known: {', '.join(READERS)}")


READERS = {"ubfc": (list_ubfc, read_ubfc), "pure": (list_pure, read_pure), "mmpd": (list_mmpd, read_mmpd),
           "ibvp": (list_ibvp, read_ibvp)}


def read_dataset(root: Path, fmt: str) -> list[Recording]:
    if fmt not in READERS:
        raise ValueError(f"unknown dataset format '{fmt}'; known: {', '.join(READERS)}")
    lister, reader = READERS[fmt]
    folders = lister(Path(root))
    if not folders:
        raise FileNotFoundError(f"{root}: no {fmt.upper()} recordings found")
    return [reader(f) for f in folders]
