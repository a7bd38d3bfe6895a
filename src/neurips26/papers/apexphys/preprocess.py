"""Preprocessing as the rPPG-Toolbox does it: face crop, resize, normalised frames, labels.

Per recording: a face box from the first frame, enlarged 1.5x and made square (the toolbox's
large-box crop), every frame cropped and resized (area interpolation) to size x size; the
contact PPG resampled to the frame times. Frames become
    difference-normalised  d_t = (x_{t+1} - x_t) / (x_{t+1} + x_t + 1e-7),  d /= std(d)
and standardised (x - mean) / std, stacked as 6 channels; labels are standardised. Clips are
cut into fixed-length chunks at training time.
"""

from __future__ import annotations

import numpy as np

from .formats import Recording

LARGE_BOX_COEF = 1.5


def _square_box(x, y, w, h, coef, height, width):
    cx, cy = x + w / 2, y + h / 2
    side = int(round(max(w, h) * coef))
    side = min(side, height, width)
    x0 = int(round(min(max(cx - side / 2, 0), width - side)))
    y0 = int(round(min(max(cy - side / 2, 0), height - side)))
    return x0, y0, side


def face_box(frame: np.ndarray, detector: str, coef: float = LARGE_BOX_COEF) -> tuple[int, int, int]:
    """(x0, y0, side) of the square face crop in `frame` (H, W, 3 RGB uint8).

    haar: OpenCV's frontal-face Haar cascade (the toolbox's default detector), for real
    videos. foreground: the largest region that differs from the border colour (Otsu on the
    distance to it), for scenes with one face in front of a plain background."""
    import cv2

    height, width = frame.shape[:2]
    if detector == "haar":
        cascade = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
        faces = cascade.detectMultiScale(cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY), 1.1, 5)
        if len(faces) == 0:
            return _square_box(0, 0, width, height, 1.0, height, width)
        x, y, w, h = max(faces, key=lambda f: f[2] * f[3])
        return _square_box(x, y, w, h, coef, height, width)
    if detector != "foreground":
        raise ValueError(f"config key 'apexphys.preprocess.face_detector': unknown detector '{detector}'")
    f = frame.astype(np.float32)
    ring = np.concatenate([f[:2].reshape(-1, 3), f[-2:].reshape(-1, 3), f[:, :2].reshape(-1, 3), f[:, -2:].reshape(-1, 3)])
    dist = np.abs(f - np.median(ring, axis=0)).sum(-1)
    dist8 = np.clip(dist / max(dist.max(), 1e-6) * 255, 0, 255).astype(np.uint8)
    _, fg = cv2.threshold(dist8, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    count, _, stats, _ = cv2.connectedComponentsWithStats(fg)
    if count < 2:
        return _square_box(0, 0, width, height, 1.0, height, width)
    best = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    x, y, w, h = stats[best, :4]
    return _square_box(x, y, w, h, coef, height, width)


def crop_resize(frames: np.ndarray, box, size: int) -> np.ndarray:
    import cv2

    x0, y0, side = box
    return np.stack([cv2.resize(f[y0:y0 + side, x0:x0 + side], (size, size), interpolation=cv2.INTER_AREA)
                     for f in frames])


def diff_normalize(frames: np.ndarray) -> np.ndarray:
    x = frames.astype(np.float64)
    d = (x[1:] - x[:-1]) / (x[1:] + x[:-1] + 1e-7)
    d = d / (d.std() + 1e-12)
    d = np.concatenate([d, np.zeros_like(d[:1])])
    return np.nan_to_num(d)


def standardize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return np.nan_to_num((x - x.mean()) / (x.std() + 1e-12))


def label_at_frames(rec: Recording) -> np.ndarray:
    """The contact PPG stretched linearly to one sample per frame, as the toolbox resamples it
    (by index, so it does not depend on the units of a dataset's time stamps)."""
    n = len(rec.frames)
    return np.interp(np.linspace(0, 1, n), np.linspace(0, 1, len(rec.wave)), rec.wave)


def process_recording(rec: Recording, size: int, detector: str, max_frames: int | None = None) -> dict:
    frames = rec.frames[:max_frames] if max_frames else rec.frames
    box = face_box(frames[0], detector)
    face = crop_resize(frames, box, size)
    label = label_at_frames(rec)[:len(frames)]
    x = np.concatenate([diff_normalize(face), standardize(face)], axis=-1)  # (T, H, W, 6)
    return {
        "x": np.ascontiguousarray(x.transpose(3, 0, 1, 2)).astype(np.float32),  # (6, T, H, W)
        "y": standardize(label).astype(np.float32),
        "rgb": face.reshape(len(face), -1, 3).mean(1),  # spatial means, for GREEN / CHROM / POS
        "box": box,
    }
