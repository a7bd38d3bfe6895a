"""Pulse signals to heart rate, and the unsupervised rPPG methods GREEN, CHROM and POS.

Heart rate is the power-spectrum peak of the band-passed, detrended signal inside the cardiac
band (the rPPG-Toolbox's FFT evaluation): HR = 60 * argmax_{f in [f_lo, f_hi]} |FFT_nfft(s)|^2.

GREEN (Verkruysse 2008): the spatial mean of the green channel.
CHROM (de Haan & Jeanne 2013): on temporally normalised RGB, X = 3R - 2G, Y = 1.5R + G - 1.5B,
    both band-passed, S = X - (std X / std Y) Y, in Hann-windowed overlap-added windows.
POS (Wang et al. 2017): in windows of 1.6 s, C_n = C / mean(C),
    S = [[0, 1, -1], [-2, 1, 1]] C_n, h = S_1 + (std S_1 / std S_2) S_2, overlap-added.
"""

from __future__ import annotations

import numpy as np
from scipy import signal as sps
from scipy import sparse
from scipy.sparse.linalg import spsolve


def next_power_of_two(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def detrend(x: np.ndarray, smoothness: float = 100.0) -> np.ndarray:
    """Smoothness-priors detrending (Tarvainen et al. 2002): x - (I + l^2 D2'D2)^-1 x."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < 3:
        return x - x.mean()
    ones = np.ones(n)
    d2 = sparse.spdiags([ones, -2 * ones, ones], [0, 1, 2], n - 2, n)
    trend = spsolve((sparse.eye(n) + smoothness ** 2 * (d2.T @ d2)).tocsc(), x)
    return x - trend


def bandpass(x: np.ndarray, fs: float, low_hz: float, high_hz: float, order: int = 1) -> np.ndarray:
    """Zero-phase Butterworth band-pass (filtfilt), as the toolbox filters before the FFT."""
    b, a = sps.butter(order, [low_hz / fs * 2, high_hz / fs * 2], btype="bandpass")
    padlen = min(len(x) - 1, 3 * max(len(a), len(b)))
    return sps.filtfilt(b, a, np.asarray(x, dtype=float), padlen=padlen)


def spectrum_peak_hr(x: np.ndarray, fs: float, low_hz: float, high_hz: float, nfft_min: int = 0) -> float:
    """Heart rate (bpm) at the periodogram peak inside [low_hz, high_hz]; no filtering."""
    nfft = max(next_power_of_two(len(x)), nfft_min)
    freqs, power = sps.periodogram(np.asarray(x, dtype=float), fs=fs, nfft=nfft, detrend=False)
    band = (freqs >= low_hz) & (freqs <= high_hz)
    return float(freqs[band][np.argmax(power[band])] * 60.0)


def heart_rate(x: np.ndarray, fs: float, low_hz: float = 0.65, high_hz: float = 2.6,
               nfft_min: int = 2048, filtered: bool = True) -> float:
    """HR (bpm) of a pulse signal: detrend, band-pass, power-spectrum peak in the band."""
    x = np.asarray(x, dtype=float)
    if filtered:
        x = bandpass(detrend(x), fs, low_hz, high_hz)
    return spectrum_peak_hr(x, fs, low_hz, high_hz, nfft_min)


def green(rgb: np.ndarray, fs: float) -> np.ndarray:
    """GREEN: the mean green value per frame. `rgb` is (T, 3), spatial means of the face."""
    return np.asarray(rgb, dtype=float)[:, 1].copy()


def chrom(rgb: np.ndarray, fs: float, low_hz: float = 0.65, high_hz: float = 2.6, window_s: float = 1.6) -> np.ndarray:
    rgb = np.asarray(rgb, dtype=float)
    n = len(rgb)
    win = int(window_s * fs)
    win += win % 2
    half = win // 2
    hann = np.hanning(win)
    out = np.zeros(n)
    for start in range(0, n - win + 1, half):
        seg = rgb[start:start + win]
        norm = seg / seg.mean(axis=0)
        x = 3 * norm[:, 0] - 2 * norm[:, 1]
        y = 1.5 * norm[:, 0] + norm[:, 1] - 1.5 * norm[:, 2]
        xf, yf = bandpass(x, fs, low_hz, high_hz, order=3), bandpass(y, fs, low_hz, high_hz, order=3)
        s = xf - (np.std(xf) / max(np.std(yf), 1e-12)) * yf
        out[start:start + win] += s * hann
    return out


def pos(rgb: np.ndarray, fs: float, window_s: float = 1.6) -> np.ndarray:
    rgb = np.asarray(rgb, dtype=float)
    n = len(rgb)
    win = int(np.ceil(window_s * fs))
    projection = np.array([[0.0, 1.0, -1.0], [-2.0, 1.0, 1.0]])
    h = np.zeros(n)
    for end in range(win, n + 1):
        seg = rgb[end - win:end]
        cn = seg / seg.mean(axis=0)
        s = cn @ projection.T
        p = s[:, 0] + (np.std(s[:, 0]) / max(np.std(s[:, 1]), 1e-12)) * s[:, 1]
        h[end - win:end] += p - p.mean()
    return h


UNSUPERVISED = {"GREEN": green, "CHROM": chrom, "POS": pos}


def _filtered_spectrum(x: np.ndarray, fs: float, low_hz: float, high_hz: float, nfft_min: int):
    x = bandpass(detrend(np.asarray(x, dtype=float)), fs, low_hz, high_hz)
    nfft = max(next_power_of_two(len(x)), nfft_min)
    freqs, power = sps.periodogram(x, fs=fs, nfft=nfft, detrend=False)
    return freqs, power


def snr_db(pulse: np.ndarray, fs: float, hr_bpm: float, low_hz: float = 0.65, high_hz: float = 2.6,
           nfft_min: int = 2048, tolerance_hz: float = 0.1, filtered: bool = True) -> float:
    """Pulse SNR (de Haan & Jeanne 2013), in dB: inside the cardiac band, the power within
    `tolerance_hz` of the reference heart rate f0 and of its first harmonic 2 f0, over the power
    everywhere else in the band. The periodogram is of the detrended, band-passed pulse
    (`filtered`), as for the heart rate."""
    if filtered:
        freqs, power = _filtered_spectrum(pulse, fs, low_hz, high_hz, nfft_min)
    else:
        x = np.asarray(pulse, dtype=float)
        freqs, power = sps.periodogram(x, fs=fs, nfft=max(next_power_of_two(len(x)), nfft_min), detrend=False)
    f0 = hr_bpm / 60.0
    band = (freqs >= low_hz) & (freqs <= high_hz)
    near = (np.abs(freqs - f0) <= tolerance_hz) | (np.abs(freqs - 2 * f0) <= tolerance_hz)
    signal_power, noise_power = power[band & near].sum(), power[band & ~near].sum()
    return float(10 * np.log10(max(signal_power, 1e-30) / max(noise_power, 1e-30)))


def waveform_correlation(pulse: np.ndarray, reference: np.ndarray, fs: float, low_hz: float = 0.65,
                         high_hz: float = 2.6) -> float:
    """Pearson r between the detrended, band-passed predicted pulse and contact PPG."""
    a = bandpass(detrend(pulse), fs, low_hz, high_hz)
    b = bandpass(detrend(reference), fs, low_hz, high_hz)
    if a.std() == 0 or b.std() == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])
