"""Claims rows: one per claim of an abstract, in the format every paper writes (DESIGN.md).

`reproduced` is computed from the numbers by `judge`, never typed in.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from .io import write_csv

COLUMNS = ["paper", "claim", "metric", "paper_value", "method", "method_value",
           "baseline", "baseline_value", "reproduced", "scale", "figure"]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not vals:
        return float("nan"), float("nan")
    m = sum(vals) / len(vals)
    var = sum((v - m) ** 2 for v in vals) / (len(vals) - 1) if len(vals) > 1 else 0.0
    return m, math.sqrt(var)


def fmt(values: Sequence[float], digits: int = 3) -> str:
    """'mean ± std (n=K)' as text."""
    m, s = mean_std(values)
    if math.isnan(m):
        return "n/a"
    return f"{m:.{digits}g} ± {s:.{digits}g} (n={len(values)})"


def judge(method: Sequence[float], baseline: Sequence[float], higher_is_better: bool) -> str:
    """'yes' when the method beats the baseline by more than the pooled spread,
    'partly' when its mean is better but within the spread, 'no' otherwise."""
    mm, ms = mean_std(method)
    bm, bs = mean_std(baseline)
    if math.isnan(mm) or math.isnan(bm):
        return "no"
    gain = (mm - bm) if higher_is_better else (bm - mm)
    spread = math.sqrt((ms ** 2 + bs ** 2) / 2)
    if gain > spread and gain > 0:
        return "yes"
    if gain > 0:
        return "partly"
    return "no"


def row(paper: str, claim: str, metric: str, method: str, method_values: Sequence[float],
        baseline: str, baseline_values: Sequence[float], higher_is_better: bool, scale: str,
        figure: str, paper_value: str = "", digits: int = 3, reproduced: str | None = None) -> dict:
    """A claims row; `reproduced` defaults to `judge` of the two value lists."""
    return {
        "paper": paper, "claim": claim, "metric": metric, "paper_value": paper_value,
        "method": method, "method_value": fmt(method_values, digits),
        "baseline": baseline, "baseline_value": fmt(baseline_values, digits),
        "reproduced": reproduced or judge(method_values, baseline_values, higher_is_better),
        "scale": scale, "figure": figure,
    }


def write_claims(path: str | Path, rows: Sequence[dict]) -> None:
    write_csv(path, rows, COLUMNS)
