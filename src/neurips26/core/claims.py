"""Claims rows: one per claim of an abstract, in the format every paper writes (DESIGN.md).

Three kinds of row, each carrying its criterion in the row:

- `comparison`: the method against a baseline in a claimed direction. The improvement
  d = (method - baseline) when higher is better, (baseline - method) otherwise, with a 95%
  interval: a paired t interval over seeds when the seeds pair the two sides, a Welch interval
  when they do not; when per-item scores exist, the wider of a paired bootstrap over seeds and
  evaluation items and the paired t over seeds (evaluation noise and seed noise both count). `yes` when the interval lies above 0 and d reaches the row's minimum effect; `no` when
  d < 0; `inconclusive` otherwise. `untested` when a side has fewer than 3 replicates.
- `target`: a measured quantity against the paper's number or a band. With an interval: `yes`
  when the interval lies inside the band, `no` when it lies outside, `inconclusive` when it
  straddles an edge. Without one (an exact quantity, or a bound such as Clopper-Pearson's that
  already carries the uncertainty): `yes` inside the band, `no` outside.
- `check`: an identity, or agreement with a reference to a stated tolerance: `pass` / `fail`.
  Reported apart from the claims: a check is not a reproduction.

`untested` also marks a row whose experiment cannot reach the claim (the reason is in the
criterion). Every verdict is computed by the pure functions below, never typed in.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from .io import write_csv

COLUMNS = ["paper", "claim", "kind", "metric", "paper_value", "method", "method_value",
           "baseline", "baseline_value", "n", "effect", "interval", "criterion", "reproduced",
           "scale", "figure"]
KINDS = ("comparison", "target", "check")
CLAIM_VERDICTS = ("yes", "inconclusive", "no", "untested")
CHECK_VERDICTS = ("pass", "fail", "untested")
MIN_REPLICATES = 3
# A comparison's default minimum effect: 1% of the baseline's magnitude.
DEFAULT_RELATIVE_EFFECT = 0.01
BOOTSTRAP_DRAWS = 4000
CONFIDENCE = 0.95


def _clean(values: Sequence[float] | None) -> list[float]:
    out = []
    for v in values or []:
        if v is None:
            continue
        v = float(v)
        if not math.isnan(v):
            out.append(v)
    return out


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    vals = _clean(values)
    if not vals:
        return float("nan"), float("nan")
    m = sum(vals) / len(vals)
    var = sum((v - m) ** 2 for v in vals) / (len(vals) - 1) if len(vals) > 1 else 0.0
    return m, math.sqrt(var)


def fmt(values: Sequence[float], digits: int = 3) -> str:
    """'mean ± std (n=K)' as text."""
    vals = _clean(values)
    m, s = mean_std(vals)
    if math.isnan(m):
        return "n/a"
    return f"{m:.{digits}g} ± {s:.{digits}g} (n={len(vals)})"


def num(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


# ---------------------------------------------------------------- intervals

def _t_quantile(df: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + CONFIDENCE / 2, df))


def paired_t_interval(diffs: Sequence[float]) -> tuple[float, float, float]:
    """Mean of paired differences and its 95% t interval."""
    d = _clean(diffs)
    m, s = mean_std(d)
    half = _t_quantile(len(d) - 1) * s / math.sqrt(len(d))
    return m, m - half, m + half


def welch_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """mean(a) - mean(b) and its 95% Welch interval (Welch-Satterthwaite degrees of freedom)."""
    a, b = _clean(a), _clean(b)
    ma, sa = mean_std(a)
    mb, sb = mean_std(b)
    va, vb = sa ** 2 / len(a), sb ** 2 / len(b)
    se = math.sqrt(va + vb)
    d = ma - mb
    if se == 0:
        return d, d, d
    df = (va + vb) ** 2 / ((va ** 2) / (len(a) - 1) + (vb ** 2) / (len(b) - 1))
    half = _t_quantile(df) * se
    return d, d - half, d + half


def paired_bootstrap_interval(method_items: Sequence[Sequence[float]],
                              baseline_items: Sequence[Sequence[float]],
                              draws: int = BOOTSTRAP_DRAWS, seed: int = 0) -> tuple[float, float, float]:
    """Mean over seeds of the mean per-item difference (method - baseline), with a 95% percentile
    interval from a two-level paired bootstrap: seeds resampled, then items within each seed, the
    same items for both sides. Deterministic (fixed generator seed)."""
    import numpy as np

    diffs = []
    for m, b in zip(method_items, baseline_items):
        m, b = np.asarray(m, dtype=float), np.asarray(b, dtype=float)
        if m.shape != b.shape or m.size == 0:
            raise ValueError("paired bootstrap: each seed needs the same evaluation items on both sides")
        diffs.append(m - b)
    rng = np.random.default_rng(seed)
    point = float(np.mean([d.mean() for d in diffs]))
    k = len(diffs)
    stats = np.empty(draws)
    for i in range(draws):
        picked = rng.integers(0, k, size=k)
        stats[i] = np.mean([diffs[j][rng.integers(0, diffs[j].size, size=diffs[j].size)].mean() for j in picked])
    lo, hi = np.quantile(stats, [(1 - CONFIDENCE) / 2, 0.5 + CONFIDENCE / 2])
    return point, float(lo), float(hi)


def clopper_pearson(successes: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Exact two-sided binomial interval."""
    from scipy import stats

    if trials <= 0:
        return float("nan"), float("nan")
    alpha = 1 - confidence
    lo = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes, trials - successes + 1))
    hi = 1.0 if successes == trials else float(stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    return lo, hi


def linear_fit(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares slope of y on x and its 95% t interval (n - 2 degrees of freedom)."""
    import numpy as np

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 3:
        raise ValueError("a slope interval needs at least 3 points")
    xc = x - x.mean()
    slope = float((xc * (y - y.mean())).sum() / (xc ** 2).sum())
    resid = y - y.mean() - slope * xc
    se = math.sqrt(float((resid ** 2).sum()) / (x.size - 2) / float((xc ** 2).sum()))
    half = _t_quantile(x.size - 2) * se
    return slope, slope - half, slope + half


# ---------------------------------------------------------------- verdicts

def comparison_verdict(effect: float, lo: float, min_effect: float) -> str:
    """`yes` when the interval excludes 0 on the claimed side and the effect reaches the minimum;
    `no` when the effect goes the other way; `inconclusive` otherwise. Effects are signed so that
    positive means "as claimed"."""
    if any(math.isnan(v) for v in (effect, lo)):
        return "untested"
    if effect < 0:
        return "no"
    if lo > 0 and effect >= min_effect:
        return "yes"
    return "inconclusive"


def band_verdict(value: float, band: tuple[float | None, float | None],
                 interval: tuple[float, float] | None = None) -> str:
    low, high = band
    low = -math.inf if low is None else low
    high = math.inf if high is None else high
    if value is None or math.isnan(value):
        return "untested"
    if interval is None:
        return "yes" if low <= value <= high else "no"
    lo, hi = interval
    if low <= lo and hi <= high:
        return "yes"
    if hi < low or lo > high:
        return "no"
    return "inconclusive"


def _band_text(band: tuple[float | None, float | None], digits: int) -> str:
    low, high = band
    if low is None:
        return f"<= {num(high, digits)}"
    if high is None:
        return f">= {num(low, digits)}"
    return f"in [{num(low, digits)}, {num(high, digits)}]"


# ---------------------------------------------------------------- rows

def _row(paper, claim, kind, metric, method, method_value, baseline, baseline_value, n, effect,
         interval, criterion, reproduced, scale, figure, paper_value) -> dict:
    assert kind in KINDS
    assert reproduced in (CHECK_VERDICTS if kind == "check" else CLAIM_VERDICTS), reproduced
    return {"paper": paper, "claim": claim, "kind": kind, "metric": metric,
            "paper_value": paper_value, "method": method, "method_value": method_value,
            "baseline": baseline, "baseline_value": baseline_value, "n": n, "effect": effect,
            "interval": interval, "criterion": criterion, "reproduced": reproduced,
            "scale": scale, "figure": figure}


def comparison(paper: str, claim: str, metric: str, method: str, method_values: Sequence[float],
               baseline: str, baseline_values: Sequence[float], higher_is_better: bool,
               scale: str, figure: str, *, paper_value: str = "", paired: bool = True,
               min_effect: float | None = None, method_items: Sequence[Sequence[float]] | None = None,
               baseline_items: Sequence[Sequence[float]] | None = None, replicate: str = "seeds",
               holds_fixed: str = "", untested_reason: str = "", digits: int = 3) -> dict:
    """A comparison row. `method_values`/`baseline_values` are one number per replicate (per
    seed), in the same replicate order when `paired`. With `method_items`/`baseline_items` (per
    replicate, per evaluation item, the same items on both sides) the interval is a two-level
    paired bootstrap. `min_effect` is in the metric's units (default: 1% of the baseline mean's
    magnitude). `holds_fixed` names what the replicates keep fixed, if anything."""
    m, b = _clean(method_values), _clean(baseline_values)
    sign = 1.0 if higher_is_better else -1.0
    direction = "higher" if higher_is_better else "lower"
    bm = mean_std(b)[0]
    if min_effect is None:
        min_effect = DEFAULT_RELATIVE_EFFECT * abs(bm) if not math.isnan(bm) else 0.0
    n = f"{len(m)}/{len(b)}"
    effect, lo, hi, how = float("nan"), float("nan"), float("nan"), ""
    reason = untested_reason
    if not reason and any(math.isinf(v) for v in m + b):
        reason = "a replicate's value is not finite"
    if not reason and min(len(m), len(b)) < MIN_REPLICATES:
        reason = f"fewer than {MIN_REPLICATES} {replicate} on a side"
    if not reason:
        if method_items is not None and baseline_items is not None:
            # With few seeds a bootstrap over seeds understates their spread: take the wider of
            # it and the paired t interval over the seed means.
            d, lo_, hi_ = paired_bootstrap_interval(method_items, baseline_items)
            if paired and len(m) == len(b):
                _, t_lo, t_hi = paired_t_interval([x - y for x, y in zip(m, b)])
                lo_, hi_ = min(lo_, t_lo), max(hi_, t_hi)
            items = sum(len(x) for x in method_items) // max(len(method_items), 1)
            how = (f"the wider of a paired bootstrap over {len(method_items)} {replicate} x {items} items "
                   f"and a paired t over the {replicate}")
        elif paired:
            if len(m) != len(b):
                raise ValueError(f"{paper}: '{claim}': paired comparison needs as many method as baseline values")
            d, lo_, hi_ = paired_t_interval([x - y for x, y in zip(m, b)])
            how = f"paired t over {len(m)} {replicate}"
        else:
            d, lo_, hi_ = welch_interval(m, b)
            how = f"Welch t over {len(m)}+{len(b)} {replicate}"
        effect = sign * d
        lo, hi = sorted((sign * lo_, sign * hi_))
    verdict = "untested" if reason else comparison_verdict(effect, lo, min_effect)
    criterion = (f"improvement = {'method - baseline' if higher_is_better else 'baseline - method'} "
                 f"({direction} is better); yes if its 95% CI ({how or 'n/a'}) > 0 and "
                 f"improvement >= {num(min_effect, digits)}; no if improvement < 0")
    if holds_fixed:
        criterion += f"; replicates hold fixed: {holds_fixed}"
    if reason:
        criterion = f"untested: {reason}; " + criterion
    return _row(paper, claim, "comparison", metric, method, fmt(m, digits), baseline, fmt(b, digits), n,
                num(effect, digits), "" if math.isnan(lo) else f"[{num(lo, digits)}, {num(hi, digits)}]",
                criterion, verdict, scale, figure, paper_value)


def target(paper: str, claim: str, metric: str, method: str, value: float,
           band: tuple[float | None, float | None], scale: str, figure: str, *,
           interval: tuple[float, float] | None = None, paper_value: str = "", n: int | str = "",
           baseline: str = "", baseline_value: str = "", how: str = "", untested_reason: str = "",
           digits: int = 3) -> dict:
    """A measured quantity against a band (low, high); None leaves a side open. `interval` (95%)
    when the quantity is an estimate; `how` says how value and interval were obtained."""
    value = float("nan") if value is None else float(value)
    verdict = "untested" if untested_reason else band_verdict(value, band, interval)
    rule = (f"yes if the 95% interval lies {_band_text(band, digits)}, no if it lies outside, "
            "inconclusive if it straddles an edge" if interval is not None
            else f"yes if the value is {_band_text(band, digits)}, no otherwise")
    criterion = (f"{how}; " if how else "") + rule
    if untested_reason:
        criterion = f"untested: {untested_reason}; " + criterion
    return _row(paper, claim, "target", metric, method, num(value, digits), baseline, baseline_value, n,
                num(value, digits), "" if interval is None else f"[{num(interval[0], digits)}, {num(interval[1], digits)}]",
                criterion, verdict, scale, figure, paper_value)


def error_rate(paper: str, claim: str, metric: str, method: str, errors: int, runs: int, delta: float,
               scale: str, figure: str, *, paper_value: str = "", digits: int = 3) -> dict:
    """Delta-correctness: `yes` when the Clopper-Pearson 95% upper bound of the error rate is at
    most delta, `no` when even the lower bound exceeds delta, `inconclusive` otherwise (too few
    runs to tell)."""
    lo, hi = clopper_pearson(errors, runs)
    verdict = "yes" if hi <= delta else ("no" if lo > delta else "inconclusive")
    criterion = (f"{errors} errors in {runs} runs; yes if the Clopper-Pearson 95% upper bound <= "
                 f"delta = {num(delta, digits)}, no if the lower bound > delta, else inconclusive")
    return _row(paper, claim, "target", metric, method, num(errors / runs if runs else float("nan"), digits),
                "", "", runs, num(errors / runs if runs else float("nan"), digits),
                f"[{num(lo, digits)}, {num(hi, digits)}]", criterion, verdict, scale, figure,
                paper_value or f"<= {num(delta, digits)}")


def check(paper: str, claim: str, metric: str, method: str, value: float, tolerance: float,
          scale: str, figure: str, *, reference: str = "", n: int | str = "", how: str = "",
          at_least: bool = False, untested_reason: str = "", digits: int = 3) -> dict:
    """An identity or agreement with a reference: `pass` when value <= tolerance (value >= tolerance
    with `at_least`), e.g. the largest deviation from a closed form."""
    value = float("nan") if value is None else float(value)
    if untested_reason or math.isnan(value):
        verdict = "untested"
    else:
        verdict = "pass" if (value >= tolerance if at_least else value <= tolerance) else "fail"
    criterion = (f"{how}; " if how else "") + f"pass if value {'>=' if at_least else '<='} {num(tolerance, digits)}"
    if untested_reason:
        criterion = f"untested: {untested_reason}; " + criterion
    return _row(paper, claim, "check", metric, method, num(value, digits), reference, "", n,
                num(value, digits), "", criterion, verdict, scale, figure, "")


def untested(paper: str, claim: str, metric: str, method: str, reason: str, scale: str,
             figure: str = "", *, kind: str = "comparison", paper_value: str = "") -> dict:
    """A claim the experiment cannot reach, with the reason."""
    return _row(paper, claim, kind, metric, method, "", "", "", "", "", "", f"untested: {reason}",
                "untested", scale, figure, paper_value)


def write_claims(path: str | Path, rows: Sequence[dict]) -> None:
    for r in rows:
        if list(r) != COLUMNS:
            raise ValueError(f"claims row '{r.get('claim')}' lacks the columns {COLUMNS}")
    write_csv(path, rows, COLUMNS)


def write_tables(out: str | Path, summary_rows: Sequence[dict], claim_rows: Sequence[dict],
                 figdir: str | Path | None = None) -> list[Path]:
    """The end of a paper's figures step: `out/summary.csv` (columns: every key of the rows, in
    order of first appearance), `out/claims.csv`, and the list of files to log as artifacts
    (the figures under `figdir`, default `out/figures`, and the two tables)."""
    out = Path(out)
    columns = list(dict.fromkeys(key for row in summary_rows for key in row))
    write_csv(out / "summary.csv", summary_rows, columns)
    write_claims(out / "claims.csv", claim_rows)
    figures = sorted(Path(figdir or out / "figures").glob("*.png"))
    return [*figures, out / "summary.csv", out / "claims.csv"]


def counts(rows: Sequence[dict]) -> dict[str, int]:
    """yes / inconclusive / no / untested over claims, and checks passed / failed / untested."""
    out = {k: 0 for k in ("yes", "inconclusive", "no", "untested", "checks_pass", "checks_fail", "checks_untested")}
    for r in rows:
        if r["kind"] == "check":
            out[f"checks_{r['reproduced']}"] += 1
        else:
            out[r["reproduced"]] += 1
    return out
