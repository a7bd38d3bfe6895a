"""One plotting style for every figure: titles, axes with units, legends, seeds as mean and spread."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .io import atomic_path


def style():
    """pyplot with the house style set (Agg backend, fonts, grid, resolution)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 8,
        "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
        "savefig.dpi": 130, "figure.dpi": 100, "svg.hashsalt": "neurips26",
    })
    return plt


def figure(ncols: int = 1, nrows: int = 1, width: float = 5.2, height: float = 3.8):
    plt = style()
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    return fig, axes


def mean_band(ax, x: Sequence[float], runs: Sequence[Sequence[float]], label: str, color=None,
              marker: str | None = "o") -> None:
    """Mean over seeds as a line, min-max over seeds as a band; label says how many seeds."""
    import numpy as np

    arr = np.asarray(runs, dtype=float)
    mean = np.nanmean(arr, axis=0)
    line, = ax.plot(x, mean, label=f"{label} (n={arr.shape[0]})", color=color, marker=marker, markersize=3)
    if arr.shape[0] > 1:
        ax.fill_between(x, np.nanmin(arr, axis=0), np.nanmax(arr, axis=0), color=line.get_color(), alpha=0.2)


def save(fig, path: str | Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", metadata={"Software": None})
    plt.close(fig)
