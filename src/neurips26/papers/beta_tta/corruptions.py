"""The 15 ImageNet-C corruptions (Hendrycks & Dietterich, 2019) at 5 severities, for small images.

Written from the definitions of the reference implementation (hendrycks/robustness,
`ImageNet-C/imagenet_c/imagenet_c/corruptions.py`): the same severity constants, with numpy,
scipy and OpenCV in place of scikit-image, Wand and PIL. Every corruption maps an image in
[0, 1] (H, W, 3) and a severity 1..5 to an image in [0, 1].

Small images: the reference constants are for 224 px. Every length in pixels (blur radii and
sigmas, the motion-blur length, the glass-blur displacement, the elastic displacement and its
smoothness, the affine jitter) is multiplied by s = size / 224; integer displacements are
rounded and kept at least 1 px. Relative quantities (noise levels, zoom factors, blend weights,
JPEG quality, pixelation ratio) are unchanged. Frost blends a texture of ice crystals that the
reference reads from photographs; here the texture is synthesised (`frost_texture`): bright
random crystal strokes on a 1/f noise base, tinted blue-white. Fog's plasma fractal is
synthesised spectrally with the same octave decay (amplitude x 1/wibbledecay per octave).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage

CORRUPTIONS = ("gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur",
               "motion_blur", "zoom_blur", "snow", "frost", "fog", "brightness", "contrast",
               "elastic_transform", "pixelate", "jpeg_compression")
REFERENCE_SIZE = 224


def _scale(size: int) -> float:
    return size / REFERENCE_SIZE


# ---------------------------------------------------------------- noise
def gaussian_noise(x, severity, rng):
    c = [.08, .12, 0.18, 0.26, 0.38][severity - 1]
    return np.clip(x + rng.normal(size=x.shape, scale=c), 0, 1)


def shot_noise(x, severity, rng):
    c = [60, 25, 12, 5, 3][severity - 1]
    return np.clip(rng.poisson(x * c) / c, 0, 1)


def impulse_noise(x, severity, rng):
    # salt and pepper on each value independently (skimage's random_noise, mode 's&p', amount c)
    c = [.03, .06, .09, 0.17, 0.27][severity - 1]
    out = x.copy()
    hit = rng.random(x.shape) < c
    salt = rng.random(x.shape) < 0.5
    out[hit & salt] = 1.0
    out[hit & ~salt] = 0.0
    return out


# ---------------------------------------------------------------- blur
def _blur(x, sigma):
    if sigma <= 0:
        return x
    return ndimage.gaussian_filter(x, sigma=(sigma, sigma, 0), mode="nearest")


def disk_kernel(radius: float, alias_blur: float, supersample: int = 8) -> np.ndarray:
    """Normalised disk of a (fractional) radius by area coverage, then the reference's small
    Gaussian anti-aliasing blur."""
    half = int(math.ceil(radius)) + 1
    fine = (np.arange((2 * half + 1) * supersample) + 0.5) / supersample - half - 0.5
    xx, yy = np.meshgrid(fine, fine)
    inside = (xx ** 2 + yy ** 2 <= max(radius, 0.5 / supersample) ** 2).astype(np.float64)
    k = inside.reshape(2 * half + 1, supersample, 2 * half + 1, supersample).mean(axis=(1, 3))
    if alias_blur > 0:
        k = ndimage.gaussian_filter(k, alias_blur, mode="constant")
    return k / k.sum()


def defocus_blur(x, severity, rng):
    r, alias = [(3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5)][severity - 1]
    s = _scale(x.shape[0])
    k = disk_kernel(r * s, alias * s)
    return np.clip(np.stack([ndimage.convolve(x[..., d], k, mode="reflect") for d in range(3)], -1), 0, 1)


def glass_blur(x, severity, rng):
    """Blur, locally shuffle pixels, blur again. The reference swaps every pixel with a random
    neighbour within max_delta, `iterations` times; below 1 px of scaled max_delta the
    displacement cannot shrink, so each pixel is swapped with a 1 px neighbour with probability
    iterations * (max_delta * s)^2 per pass instead (the same expected squared displacement)."""
    sigma, delta, iterations = [(0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2)][severity - 1]
    s = _scale(x.shape[0])
    sigma = sigma * s
    if delta * s >= 1:
        step, passes, p = int(round(delta * s)), iterations, 1.0
    else:
        step, total = 1, iterations * (delta * s) ** 2
        passes = int(math.ceil(total))
        p = total / passes
    h, w = x.shape[:2]
    flat = (np.round(_blur(x, sigma) * 255) / 255).reshape(h * w, -1)  # the reference quantises to uint8 here
    for _ in range(passes):  # bottom-right to top-left, as the reference
        visit = rng.random((h, w)) < p
        moves = rng.integers(-step, step, size=(h, w, 2))
        for i in range(h - step, step, -1):
            for j in range(w - step, step, -1):
                if visit[i, j]:
                    a, b = i * w + j, (i + moves[i, j, 1]) * w + j + moves[i, j, 0]
                    flat[[a, b]] = flat[[b, a]]
    return np.clip(_blur(flat.reshape(x.shape), sigma), 0, 1)


def _motion_blur(x, radius, sigma, angle):
    """One-sided Gaussian-weighted line blur of length 2 radius + 1 (ImageMagick's motion blur,
    as the reference calls it), at fractional offsets by bilinear sampling."""
    width = 2 * radius + 1
    steps = max(2, int(math.ceil(width)))
    t = np.linspace(0, width - 1, steps) if width > 1 else np.zeros(1)
    weights = np.exp(-t ** 2 / (2 * max(sigma, 1e-3) ** 2))
    weights /= weights.sum()
    dy, dx = math.sin(math.radians(angle)), math.cos(math.radians(angle))
    out = np.zeros_like(x)
    for ti, wi in zip(t, weights):
        shift = (ti * dy, ti * dx) + ((0,) if x.ndim == 3 else ())
        out += wi * ndimage.shift(x, shift, order=1, mode="nearest")
    return out


def motion_blur(x, severity, rng):
    radius, sigma = [(10, 3), (15, 5), (15, 8), (15, 12), (20, 15)][severity - 1]
    s = _scale(x.shape[0])
    return np.clip(_motion_blur(x, radius * s, sigma * s, rng.uniform(-45, 45)), 0, 1)


def clipped_zoom(x, factor):
    """Zoom into the centre by `factor` and crop back to the input size."""
    h, w = x.shape[:2]
    ch, cw = int(math.ceil(h / factor)), int(math.ceil(w / factor))
    top, left = (h - ch) // 2, (w - cw) // 2
    crop = x[top:top + ch, left:left + cw]
    zoomed = ndimage.zoom(crop, (factor, factor) + (1,) * (x.ndim - 2), order=1)
    th, tw = (zoomed.shape[0] - h) // 2, (zoomed.shape[1] - w) // 2
    out = zoomed[th:th + h, tw:tw + w]
    if out.shape[:2] != (h, w):  # rounding: pad by edge values
        out = np.pad(out, ((0, h - out.shape[0]), (0, w - out.shape[1])) + ((0, 0),) * (x.ndim - 2), mode="edge")
    return out


def zoom_blur(x, severity, rng):
    factors = [np.arange(1, 1.11, 0.01), np.arange(1, 1.16, 0.01), np.arange(1, 1.21, 0.02),
               np.arange(1, 1.26, 0.02), np.arange(1, 1.31, 0.03)][severity - 1]
    out = np.zeros_like(x)
    for f in factors:
        out += clipped_zoom(x, f)
    return np.clip((x + out) / (len(factors) + 1), 0, 1)


# ---------------------------------------------------------------- weather
def plasma_fractal(size: int, wibbledecay: float, rng) -> np.ndarray:
    """A fractal height map in [0, 1] whose amplitude falls by 1/wibbledecay per octave (the
    decay of the reference's diamond-square map), synthesised from random-phase Fourier modes."""
    n = 1 << max(3, (size - 1).bit_length())
    f = np.sqrt(np.fft.fftfreq(n)[:, None] ** 2 + np.fft.fftfreq(n)[None, :] ** 2) * n
    f[0, 0] = 1.0
    amplitude = f ** (-math.log2(wibbledecay)) / f  # 2-D density: per-octave energy decays as wibbledecay^-2
    amplitude[0, 0] = 0.0
    spectrum = amplitude * np.exp(2j * np.pi * rng.random((n, n)))
    field = np.real(np.fft.ifft2(spectrum))[:size, :size]
    field -= field.min()
    return field / max(field.max(), 1e-12)


def fog(x, severity, rng):
    c, decay = [(1.5, 2), (2., 2), (2.5, 1.7), (2.5, 1.5), (3., 1.4)][severity - 1]
    max_val = x.max()
    x = x + c * plasma_fractal(x.shape[0], decay, rng)[..., None]
    return np.clip(x * max_val / (max_val + c), 0, 1)


def frost_texture(size: int, rng) -> np.ndarray:
    """A synthetic frost layer in [0, 1] (H, W, 3): a fine 1/f noise base with bright, thin,
    randomly oriented crystal strokes, tinted blue-white like the reference photographs."""
    base = plasma_fractal(size, 1.6, rng)
    strokes = np.zeros((size, size))
    for _ in range(max(6, size // 2)):
        y0, x0 = rng.uniform(0, size, size=2)
        angle = rng.uniform(0, np.pi)
        length = rng.uniform(0.15, 0.5) * size
        t = np.linspace(0, length, int(length * 3) + 2)
        ys = np.clip((y0 + t * np.sin(angle)).astype(int), 0, size - 1)
        xs = np.clip((x0 + t * np.cos(angle)).astype(int), 0, size - 1)
        strokes[ys, xs] = rng.uniform(0.6, 1.0)
    strokes = ndimage.gaussian_filter(strokes, 0.5)
    layer = np.clip(0.55 * base + 1.2 * strokes / max(strokes.max(), 1e-12), 0, 1)
    tint = np.array([0.85, 0.93, 1.0])
    return layer[..., None] * tint


def frost(x, severity, rng):
    a, b = [(1, 0.4), (0.8, 0.6), (0.7, 0.7), (0.65, 0.7), (0.6, 0.75)][severity - 1]
    return np.clip(a * x + b * frost_texture(x.shape[0], rng), 0, 1)


def _gray(x):
    return x[..., 0] * 0.299 + x[..., 1] * 0.587 + x[..., 2] * 0.114  # OpenCV's RGB2GRAY weights


def snow(x, severity, rng):
    loc, scale, zoom, threshold, radius, sigma, blend = [
        (0.1, 0.3, 3, 0.5, 10, 4, 0.8), (0.2, 0.3, 2, 0.5, 12, 4, 0.7), (0.55, 0.3, 4, 0.9, 12, 8, 0.7),
        (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65), (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55)][severity - 1]
    s = _scale(x.shape[0])
    layer = rng.normal(size=x.shape[:2], loc=loc, scale=scale)
    layer = clipped_zoom(layer, zoom)
    layer[layer < threshold] = 0
    layer = np.clip(layer, 0, 1)
    layer = _motion_blur(layer, radius * s, sigma * s, rng.uniform(-135, -45))
    layer = np.round(layer * 255) / 255
    x = blend * x + (1 - blend) * np.maximum(x, _gray(x)[..., None] * 1.5 + 0.5)
    return np.clip(x + layer[..., None] + np.rot90(layer, 2)[..., None], 0, 1)


# ---------------------------------------------------------------- digital
def brightness(x, severity, rng):
    """V += c in HSV with hue and saturation kept: every channel scales by V'/V."""
    c = [.1, .2, .3, .4, .5][severity - 1]
    v = x.max(axis=-1, keepdims=True)
    v_new = np.clip(v + c, 0, 1)
    scaled = np.where(v > 0, x * v_new / np.maximum(v, 1e-12), v_new)
    return np.clip(scaled, 0, 1)


def contrast(x, severity, rng):
    c = [0.4, .3, .2, .1, .05][severity - 1]
    means = x.mean(axis=(0, 1), keepdims=True)
    return np.clip((x - means) * c + means, 0, 1)


def elastic_transform(x, severity, rng):
    import cv2

    alpha, sigma, jitter = [(244 * 2, 244 * 0.7, 244 * 0.1), (244 * 2, 244 * 0.08, 244 * 0.2),
                            (244 * 0.05, 244 * 0.01, 244 * 0.02), (244 * 0.07, 244 * 0.01, 244 * 0.02),
                            (244 * 0.12, 244 * 0.01, 244 * 0.02)][severity - 1]
    s = _scale(x.shape[0])
    alpha, sigma, jitter = alpha * s, sigma * s, jitter * s
    h, w = x.shape[:2]
    centre = np.float32([h, w]) // 2
    sq = min(h, w) // 3
    pts1 = np.float32([centre + sq, [centre[0] + sq, centre[1] - sq], centre - sq])
    pts2 = pts1 + rng.uniform(-jitter, jitter, size=pts1.shape).astype(np.float32)
    m = cv2.getAffineTransform(pts1, pts2)
    img = cv2.warpAffine(x.astype(np.float32), m, (w, h), borderMode=cv2.BORDER_REFLECT_101)
    dx = ndimage.gaussian_filter(rng.uniform(-1, 1, size=(h, w)), sigma, mode="reflect", truncate=3) * alpha
    dy = ndimage.gaussian_filter(rng.uniform(-1, 1, size=(h, w)), sigma, mode="reflect", truncate=3) * alpha
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    out = np.stack([ndimage.map_coordinates(img[..., d], [yy + dy, xx + dx], order=1, mode="reflect")
                    for d in range(3)], -1)
    return np.clip(out, 0, 1)


def _box_matrix(n_out: int, n_in: int) -> np.ndarray:
    """Box resampling weights (PIL's BOX filter): output pixel i averages the input pixels
    its footprint overlaps, weighted by the overlap."""
    edges_out = np.arange(n_out + 1) * n_in / n_out
    lo, hi = edges_out[:-1, None], edges_out[1:, None]
    j = np.arange(n_in)[None, :]
    overlap = np.clip(np.minimum(hi, j + 1) - np.maximum(lo, j), 0, None)
    return overlap / overlap.sum(1, keepdims=True)


def box_resize(x, h: int, w: int):
    rows = np.tensordot(_box_matrix(h, x.shape[0]), x, axes=(1, 0))  # (h, W, C)
    return np.tensordot(_box_matrix(w, x.shape[1]), rows, axes=(1, 1)).transpose(1, 0, 2)


def pixelate(x, severity, rng):
    c = [0.6, 0.5, 0.4, 0.3, 0.25][severity - 1]
    h, w = x.shape[:2]
    small = box_resize(x, max(1, int(h * c)), max(1, int(w * c)))
    return np.clip(box_resize(small, h, w), 0, 1)


def jpeg_compression(x, severity, rng):
    import cv2

    quality = [25, 18, 15, 10, 7][severity - 1]
    img = np.round(np.clip(x, 0, 1) * 255).astype(np.uint8)[..., ::-1]  # RGB -> BGR for OpenCV
    ok, buf = cv2.imencode(".jpg", np.ascontiguousarray(img), [int(cv2.IMWRITE_JPEG_QUALITY), quality])
    if not ok:
        raise RuntimeError("OpenCV could not encode a JPEG")
    return cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1].astype(np.float64) / 255


FUNCTIONS = {name: globals()[name] for name in CORRUPTIONS}


def corrupt(images: np.ndarray, name: str, severity: int, seed: int) -> np.ndarray:
    """Corrupt a batch (n, 3, H, W) in [0, 1]; severity 0 returns the images unchanged."""
    if name not in FUNCTIONS:
        raise KeyError(f"unknown corruption '{name}'; known: {', '.join(CORRUPTIONS)}")
    if severity == 0:
        return images.copy()
    if not 1 <= severity <= 5:
        raise ValueError(f"severity must be in 0..5, got {severity}")
    rng = np.random.default_rng(seed)
    fn = FUNCTIONS[name]
    out = np.empty_like(images)
    for i, img in enumerate(images):
        out[i] = fn(img.transpose(1, 2, 0).astype(np.float64), severity, rng).transpose(2, 0, 1)
    return out.astype(images.dtype)
