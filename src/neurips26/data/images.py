"""Offline class-conditional image sets: procedurally drawn shapes and textures, and
scikit-learn's handwritten digits upscaled.

`shapes(n, size, seed)` draws 10 classes (filled circle, ring, filled square, hollow square,
triangle, plus, diagonal cross, horizontal stripes, vertical stripes, checkerboard) with a
random foreground and background colour, position, size, stripe frequency and pixel noise;
shapes are rendered at 4x resolution and box-filtered, so edges are anti-aliased. Images are
float32 in [0, 1], shape (n, 3, size, size); labels int64, balanced by class.
"""

from __future__ import annotations

import numpy as np

SHAPE_CLASSES = ("circle", "ring", "square", "hollow_square", "triangle", "plus", "cross",
                 "h_stripes", "v_stripes", "checker")
SUPERSAMPLE = 4


def _mask(kind: str, xx: np.ndarray, yy: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Foreground mask of one shape on a [-1, 1]^2 grid (xx, yy), with random geometry."""
    cx, cy = rng.uniform(-0.25, 0.25, size=2)
    r = rng.uniform(0.45, 0.75)
    x, y = xx - cx, yy - cy
    thick = rng.uniform(0.14, 0.24)
    if kind == "circle":
        return x ** 2 + y ** 2 <= r ** 2
    if kind == "ring":
        d = np.sqrt(x ** 2 + y ** 2)
        return (d <= r) & (d >= r - thick * 1.3)
    if kind == "square":
        return (np.abs(x) <= r * 0.85) & (np.abs(y) <= r * 0.85)
    if kind == "hollow_square":
        m = np.maximum(np.abs(x), np.abs(y))
        return (m <= r * 0.85) & (m >= r * 0.85 - thick * 1.3)
    if kind == "triangle":
        # upward triangle: below the two slanted edges and above the base
        return (y <= r * 0.8) & (y >= -r * 0.9 + 1.8 * np.abs(x))
    if kind == "plus":
        return ((np.abs(x) <= thick) & (np.abs(y) <= r)) | ((np.abs(y) <= thick) & (np.abs(x) <= r))
    if kind == "cross":
        u, v = (x + y) / np.sqrt(2), (x - y) / np.sqrt(2)
        return ((np.abs(u) <= thick) & (np.abs(v) <= r)) | ((np.abs(v) <= thick) & (np.abs(u) <= r))
    freq = rng.uniform(2.0, 3.5)
    phase = rng.uniform(0, 2 * np.pi)
    if kind == "h_stripes":
        return np.sin(np.pi * freq * yy + phase) > 0
    if kind == "v_stripes":
        return np.sin(np.pi * freq * xx + phase) > 0
    if kind == "checker":
        return (np.sin(np.pi * freq * 0.8 * xx + phase) * np.sin(np.pi * freq * 0.8 * yy + phase)) > 0
    raise KeyError(kind)


def _colours(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A saturated foreground and a contrasting background colour."""
    fg = rng.uniform(0.0, 1.0, size=3)
    fg[rng.integers(3)] = rng.uniform(0.75, 1.0)
    bg = rng.uniform(0.0, 0.35, size=3)
    if rng.random() < 0.3:  # light background, dark shape
        fg, bg = bg, 1.0 - bg * 0.5
    return fg, bg


def shapes(n: int, size: int = 16, seed: int = 0, noise: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
    """`n` images (balanced over the 10 classes, shuffled) and their labels."""
    if size < 8:
        raise ValueError(f"shapes: size must be at least 8, got {size}")
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % len(SHAPE_CLASSES)
    rng.shuffle(labels)
    hi = size * SUPERSAMPLE
    coords = (np.arange(hi) + 0.5) / hi * 2 - 1
    xx, yy = np.meshgrid(coords, coords)
    images = np.empty((n, 3, size, size), dtype=np.float32)
    for i, label in enumerate(labels):
        mask = _mask(SHAPE_CLASSES[label], xx, yy, rng).astype(np.float32)
        mask = mask.reshape(size, SUPERSAMPLE, size, SUPERSAMPLE).mean(axis=(1, 3))
        fg, bg = _colours(rng)
        img = mask[None] * fg[:, None, None] + (1 - mask[None]) * bg[:, None, None]
        img = img + rng.normal(0, noise, size=img.shape)
        images[i] = np.clip(img, 0, 1)
    return images, labels.astype(np.int64)


def digits(size: int = 16, channels: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1797 handwritten 8x8 digits, bilinearly upscaled to `size`, in [0, 1]."""
    import torch
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.images, dtype=torch.float32)[:, None] / 16.0
    x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = x.clamp(0, 1).repeat(1, channels, 1, 1)
    return x.numpy(), data.target.astype(np.int64)
