"""A physiologically grounded synthetic face-video generator for rPPG domains.

The pulse is a neurokit2 PPG waveform whose rate drifts inside 50-150 bpm (time-warped
phase), with heart-rate variability (inter-beat randomness, respiratory frequency
modulation) and a neurokit2 respiration signal that modulates the pulse amplitude and the
illumination. Skin pixels follow a multiplicative reflectance model: blood volume absorbs,
so the pixel value of channel c is

    P_c(x, t) = L_c(t) * rho_c(x) * (1 - a * k_c * m(x) * b(t)) + specular + noise,

with L_c the illumination (level, colour, slow drift, LED flicker), rho_c the skin
reflectance (skin tone), k = (0.33, 0.77, 0.53) the relative pulsatile strength per channel
(de Haan & Jeanne 2013; green strongest), m(x) a perfusion map (none on eyes, mouth,
background) and b(t) the standardised blood-volume pulse. Head motion moves and scales the
face; the camera adds sensor noise, 8-bit quantisation and optionally JPEG compression.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PULSATILE_RGB = np.array([0.33, 0.77, 0.53])
SKIN_TONES = {  # reflectance (RGB) and how much melanin damps the pulsatile signal
    "light": (np.array([0.82, 0.60, 0.50]), 1.0),
    "medium": (np.array([0.64, 0.44, 0.33]), 0.8),
    "dark": (np.array([0.38, 0.25, 0.18]), 0.55),
}


DOMAIN_DEFAULTS = {"light_level": 0.8, "light_rgb": [1.0, 1.0, 1.0], "light_variation": 0.01,
                   "flicker_amplitude": 0.0, "flicker_hz": [1.0, 2.0], "motion_px": 0.5, "skin_tone": "light",
                   "noise_std": 1.0, "jpeg_quality": 0, "background_rgb": [0.35, 0.40, 0.45]}


@dataclass
class Clip:
    frames: np.ndarray        # (T, H, W, 3) uint8 RGB
    frame_times: np.ndarray   # s
    wave: np.ndarray          # contact PPG at wave_fs
    wave_times: np.ndarray    # s
    heart_rate: np.ndarray    # instantaneous HR at wave_times (bpm)


def _smooth_noise(rng, size: int, scale: float) -> np.ndarray:
    import cv2

    coarse = rng.standard_normal((max(2, int(size / scale)),) * 2).astype(np.float32)
    fine = cv2.resize(coarse, (size, size), interpolation=cv2.INTER_CUBIC)
    return (fine - fine.mean()) / (fine.std() + 1e-8)


def pulse_and_respiration(rng, seed: int, duration: float, wave_fs: float, hr_range, hr_drift: float):
    """Blood-volume pulse and respiration at wave_fs, and the instantaneous heart rate."""
    import neurokit2 as nk

    hr0 = rng.uniform(*hr_range)
    drift = rng.uniform(-hr_drift, hr_drift)
    t = np.arange(int(round(duration * wave_fs))) / wave_fs
    hr = hr0 + drift * t / duration + 1.5 * np.sin(2 * np.pi * rng.uniform(0.03, 0.08) * t + rng.uniform(0, 2 * np.pi))
    hr = np.clip(hr, 50.0, 150.0)
    # a base PPG at hr0, then warped so that its local rate follows hr(t)
    phase = np.concatenate([[0.0], np.cumsum(hr[1:] / hr0) / wave_fs])
    base_duration = int(np.ceil(phase[-1])) + 3
    base = nk.ppg_simulate(duration=base_duration, sampling_rate=int(wave_fs), heart_rate=float(hr0),
                           frequency_modulation=0.1, ibi_randomness=0.05, drift=0.0, motion_amplitude=0.0,
                           powerline_amplitude=0.0, burst_number=0, random_state=int(seed))
    base_t = np.arange(len(base)) / wave_fs
    wave = np.interp(phase + 1.0, base_t, base)
    wave = (wave - wave.mean()) / (wave.std() + 1e-12)
    rr = rng.uniform(10, 20)
    # breathmetrics returns short series for short durations: simulate 30 s or more, then cut
    resp = nk.rsp_simulate(duration=max(30, int(np.ceil(duration)) + 1), sampling_rate=int(wave_fs),
                           respiratory_rate=rr, method="breathmetrics", random_state=int(seed))
    if len(resp) < len(t) or not np.all(np.isfinite(resp[:len(t)])):
        resp = nk.rsp_simulate(duration=int(np.ceil(duration)) + 1, sampling_rate=int(wave_fs),
                               respiratory_rate=rr, method="sinusoidal", random_state=int(seed))
    resp = resp[:len(t)]
    resp = (resp - resp.mean()) / (resp.std() + 1e-12)
    return t, wave, resp, hr


def render_clip(domain: dict, frames: int, fps: float, size: int, seed: int, hr_range=(50.0, 150.0),
                hr_drift: float = 8.0, wave_fs: float = 60.0) -> Clip:
    import cv2

    domain = {**DOMAIN_DEFAULTS, **domain}
    rng = np.random.default_rng(seed)
    duration = frames / fps
    wave_t, wave, resp, hr = pulse_and_respiration(rng, seed, duration + 0.5, wave_fs, hr_range, hr_drift)
    ft = np.arange(frames) / fps
    bvp = np.interp(ft, wave_t, wave)
    resp_f = np.interp(ft, wave_t, resp)

    # face layers on a canvas: reflectance (3), perfusion, skin mask, specular
    skin, damping = SKIN_TONES[domain["skin_tone"]]
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    cx, cy = 0.5 + rng.uniform(-0.03, 0.03), 0.52 + rng.uniform(-0.03, 0.03)
    rx, ry = 0.25 * rng.uniform(0.92, 1.08), 0.32 * rng.uniform(0.92, 1.08)
    r2 = ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2
    mask = np.clip((1.0 - r2) * 8.0, 0.0, 1.0)
    feature = np.zeros_like(mask)  # eyes and mouth: no perfusion, darker
    for ex in (cx - 0.4 * rx, cx + 0.4 * rx):
        feature = np.maximum(feature, np.clip((1 - (((xx - ex) / (0.18 * rx)) ** 2 + ((yy - cy + 0.25 * ry) / (0.08 * ry)) ** 2)) * 4, 0, 1))
    feature = np.maximum(feature, np.clip((1 - (((xx - cx) / (0.35 * rx)) ** 2 + ((yy - cy - 0.5 * ry) / (0.07 * ry)) ** 2)) * 4, 0, 1))
    shading = 0.8 + 0.2 * np.clip(1.0 - r2, 0, 1)
    texture = 1.0 + 0.04 * _smooth_noise(rng, size, 6.0)
    refl = skin[None, None, :] * (shading * texture)[..., None] * (1.0 - 0.6 * feature)[..., None]
    perfusion = np.clip(0.75 + 0.25 * _smooth_noise(rng, size, 8.0), 0.2, 1.2) * (1.0 - feature)
    spec = np.exp(-(((xx - cx) / (0.15 * rx)) ** 2 + ((yy - cy + 0.05 * ry) / (0.5 * ry)) ** 2)) * 0.06
    layers_a = refl.astype(np.float32)
    layers_b = np.stack([perfusion, mask, spec], -1).astype(np.float32)
    background = (np.array(domain["background_rgb"])[None, None, :]
                  * (1.0 + 0.1 * _smooth_noise(rng, size, 4.0))[..., None]).astype(np.float32)

    # head motion: smooth translation (pixels) and scale
    amp = float(domain["motion_px"])
    dx = np.zeros(frames)
    dy = np.zeros(frames)
    for _ in range(3):
        f = rng.uniform(0.15, 1.0)
        dx += amp / 3 * np.sin(2 * np.pi * f * ft + rng.uniform(0, 2 * np.pi))
        dy += amp / 3 * np.sin(2 * np.pi * rng.uniform(0.15, 1.0) * ft + rng.uniform(0, 2 * np.pi))
    dy += 0.15 * resp_f  # breathing moves the head a little
    scale = 1.0 + 0.02 * amp / 4 * np.sin(2 * np.pi * rng.uniform(0.1, 0.4) * ft)
    speed = np.hypot(np.gradient(dx), np.gradient(dy))

    # illumination: level, colour, slow drift, LED flicker (aliased by the frame rate), breathing
    level = float(domain["light_level"]) * rng.uniform(0.9, 1.1)
    colour = np.array(domain["light_rgb"], dtype=float)
    slow = np.sin(2 * np.pi * rng.uniform(0.02, 0.1) * ft + rng.uniform(0, 2 * np.pi))
    illum = 1.0 + float(domain["light_variation"]) * slow + 0.004 * resp_f
    if domain["flicker_amplitude"] > 0:
        fl = rng.uniform(*domain["flicker_hz"])
        illum = illum + float(domain["flicker_amplitude"]) * np.sin(2 * np.pi * fl * ft + rng.uniform(0, 2 * np.pi))
    pulse_amp = rng.uniform(0.006, 0.012) * damping
    pulse = pulse_amp * bvp * (1.0 + 0.1 * resp_f)

    out = np.empty((frames, size, size, 3), dtype=np.uint8)
    noise_rng = np.random.default_rng(seed + 7919)
    centre = (size / 2, size / 2)
    for i in range(frames):
        m = cv2.getRotationMatrix2D(centre, 0.0, float(scale[i]))
        m[0, 2] += dx[i]
        m[1, 2] += dy[i]
        a = cv2.warpAffine(layers_a, m, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
        b = cv2.warpAffine(layers_b, m, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        perf, msk, sp = b[..., 0], b[..., 1], b[..., 2]
        face = a * (1.0 - pulse[i] * PULSATILE_RGB[None, None, :] * perf[..., None])
        motion_shade = 1.0 + 0.02 * speed[i]  # moving faces catch the light differently
        scene = msk[..., None] * face * motion_shade + (1.0 - msk[..., None]) * background
        scene = scene + sp[..., None] * (1.0 + 0.5 * speed[i])
        img = 255.0 * level * illum[i] * colour[None, None, :] * scene
        img = img + noise_rng.normal(0.0, float(domain["noise_std"]), img.shape)
        out[i] = np.clip(np.round(img), 0, 255).astype(np.uint8)
        if domain["jpeg_quality"]:
            ok, enc = cv2.imencode(".jpg", out[i][:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, int(domain["jpeg_quality"])])
            out[i] = cv2.imdecode(enc, cv2.IMREAD_COLOR)[:, :, ::-1]
    keep = wave_t < duration
    return Clip(out, ft, wave[keep], wave_t[keep], hr[keep])
