"""Claims rows: declared in each paper's `claims.yaml`, measured by its `claims.py`, decided here.

A paper's `claims.yaml` lists one entry per claim of its abstract that the experiment tests, and
the controls those claims lean on (DESIGN.md, "Claims"). Its `claims.py` computes the numbers of
each entry from the run's metrics through a `Sheet`, and `Sheet.rows()` applies the one rule:

- `comparison` (effects signed so that positive means "as claimed"; 95% intervals): `yes` when
  the interval lies above 0, the estimate reaches the declared `margin` and the Holm-adjusted p
  over the paper's comparison claim rows is below 0.05; `no` when the interval lies below the
  margin (it rules the claim out; "reversed" when it lies below 0); `inconclusive` otherwise, with
  `n_to_decide`, the replicates per side at which the observed spread would decide it with 90%
  power. Intervals: paired t over replicates, Welch when replicates do not pair, the ratio on the
  log scale for `transform: log` (perplexities, speedups), and where per-item scores are the row's
  metric the wider of a two-level paired bootstrap and the paired t.
- `target`: a quantity against a band. `yes` when its 95% interval lies inside the band, `no`
  when it lies outside, `inconclusive` when it straddles an edge; without a replicated interval
  the row is at most `inconclusive`. Shares use Clopper-Pearson; slopes a per-replicate fit with
  a t interval over replicates.
- `check`: agreement to a stated tolerance, `pass` / `fail`; reported apart, not a reproduction.

`untested`, the reason first: a side with fewer than 3 replicates, a declared `scale` that does
not include the run's, the row's `regime` control not holding (its verdict is not `yes`), or its
`null` control passing the same criterion (the row would not separate the paper's idea from a
method without it). Controls are rows of their own (`role: regime` / `role: null`), in
`claims.csv` beside the claims they guard, decided by the same rule but outside the Holm family.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from .io import write_csv

COLUMNS = ["paper", "id", "claim", "role", "kind", "metric", "paper_value", "method", "method_value",
           "baseline", "baseline_value", "n", "effect", "interval", "margin", "margin_source", "p_holm",
           "n_to_decide", "criterion", "reproduced", "scale", "figure"]
KINDS = ("comparison", "target", "check")
ROLES = ("claim", "regime", "null", "check")
CLAIM_VERDICTS = ("yes", "inconclusive", "no", "untested")
CHECK_VERDICTS = ("pass", "fail", "untested")
MIN_REPLICATES = 3
BOOTSTRAP_DRAWS = 4000
CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE
# the power at which n_to_decide would decide an inconclusive row at its observed effect and spread
DECIDE_POWER = 0.9
N_TO_DECIDE_MAX = 10_000
SPEC_FILE = "claims.yaml"
SCHEMA_FILE = Path(__file__).with_name("claims.schema.yaml")
PAPERS_DIR = Path(__file__).resolve().parents[1] / "papers"


def _clean(values: Sequence[float] | None) -> list[float]:
    out = []
    for v in ([] if values is None else values):
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


# ---------------------------------------------------------------- intervals and tests (statsmodels)

def paired_t_interval(diffs: Sequence[float]) -> tuple[float, float, float]:
    """Mean of paired differences and its 95% t interval."""
    return paired_t(diffs)[:3]


def paired_t(diffs: Sequence[float]) -> tuple[float, float, float, float]:
    """Mean of paired differences, its 95% t interval and the two-sided p of mean = 0."""
    from statsmodels.stats.weightstats import DescrStatsW

    d = _clean(diffs)
    m = sum(d) / len(d)
    if len(d) < 2 or all(x == d[0] for x in d):
        return m, m, m, (0.0 if m != 0 else 1.0)
    ds = DescrStatsW(d)
    lo, hi = ds.tconfint_mean(alpha=ALPHA)
    _, p, _ = ds.ttest_mean(0.0)
    return m, float(lo), float(hi), float(p)


def welch_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """mean(a) - mean(b) and its 95% Welch interval (Welch-Satterthwaite degrees of freedom)."""
    return welch(a, b)[:3]


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float, float]:
    """mean(a) - mean(b), its 95% Welch interval and the two-sided p of no difference."""
    from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

    a, b = _clean(a), _clean(b)
    d = sum(a) / len(a) - sum(b) / len(b)
    if mean_std(a)[1] == 0 and mean_std(b)[1] == 0:
        return d, d, d, (0.0 if d != 0 else 1.0)
    cm = CompareMeans(DescrStatsW(a), DescrStatsW(b))
    lo, hi = cm.tconfint_diff(alpha=ALPHA, usevar="unequal")
    _, p, _ = cm.ttest_ind(usevar="unequal")
    return d, float(lo), float(hi), float(p)


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
    from statsmodels.stats.proportion import proportion_confint

    if trials <= 0:
        return float("nan"), float("nan")
    lo, hi = proportion_confint(successes, trials, alpha=1 - confidence, method="beta")
    return (0.0 if successes == 0 else float(lo)), (1.0 if successes == trials else float(hi))


def slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of y on x (one replicate's fit)."""
    xs, ys = [float(v) for v in x], [float(v) for v in y]
    if len(xs) < 2:
        raise ValueError("a slope needs at least two points")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((v - mx) ** 2 for v in xs)
    if sxx == 0:
        raise ValueError("a slope needs at least two distinct x")
    return sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sxx


def slopes_per_replicate(x: Sequence[float], ys: Sequence[Sequence[float]]) -> list[float]:
    """One least-squares slope per replicate (each `ys[i]` measured at every x): the replicates of
    a slope whose interval is a t interval over them (`Sheet.target(values=...)`)."""
    return [slope(x, y) for y in ys]


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values: the step-down max((m - rank) * p) capped at 1. Written out rather
    than statsmodels' multipletests, which runs a full gc.collect() on each call (0.2 s in a
    process holding torch); tests check the two agree."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    out, running = [0.0] * len(pvalues), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * float(pvalues[i])))
        out[i] = running
    return out


def replicates_to_decide(gap: float, spread: float, paired: bool = True) -> int:
    """Replicates per side at which a true effect `gap` away from the nearer decision boundary,
    with the observed `spread` (sd of the paired differences, or of each side), would be decided by
    a two-sided 95% t test with DECIDE_POWER: the smallest n whose power (statsmodels' power of the
    one-sample or two-sample t test) reaches it. Searched directly, as statsmodels' solve_power
    fails to converge for large effect sizes (a few replicates), where the power itself can come
    back NaN and a normal approximation takes its place."""
    from statsmodels.stats.power import TTestIndPower, TTestPower

    if not (gap > 0) or math.isnan(spread):
        return N_TO_DECIDE_MAX
    if spread == 0:
        return MIN_REPLICATES
    size = gap / spread

    def enough(n: int) -> bool:
        if paired:
            power = TTestPower().power(effect_size=size, nobs=n, alpha=ALPHA, alternative="two-sided")
            df, shift = n - 1, size * math.sqrt(n)
        else:
            power = TTestIndPower().power(effect_size=size, nobs1=n, alpha=ALPHA, ratio=1.0, alternative="two-sided")
            df, shift = 2 * n - 2, size * math.sqrt(n / 2)
        if math.isnan(float(power)):
            # scipy's noncentral t gives NaN far in its tail, where the power is all but 1
            from scipy import stats

            power = float(stats.norm.sf(float(stats.t.ppf(1 - ALPHA / 2, df)) - shift))
        return float(power) >= DECIDE_POWER

    lo, hi = MIN_REPLICATES, MIN_REPLICATES
    while not enough(hi):
        if hi >= N_TO_DECIDE_MAX:
            return N_TO_DECIDE_MAX
        lo, hi = hi + 1, min(N_TO_DECIDE_MAX, 2 * hi)
    while lo < hi:  # the smallest n in [lo, hi] with enough power
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid + 1, hi)
    return hi


# ---------------------------------------------------------------- verdicts (pure)

def comparison_verdict(lo: float, hi: float, effect: float, margin: float, p_holm: float) -> str:
    """The rule for a comparison whose effect is signed so that positive means "as claimed"."""
    if any(math.isnan(v) for v in (effect, lo, hi)):
        return "untested"
    if lo > 0 and effect >= margin and p_holm < ALPHA:
        return "yes"
    if hi < margin:
        return "no"
    return "inconclusive"


def band_verdict(value: float, band: tuple[float | None, float | None],
                 interval: tuple[float, float] | None = None) -> str:
    """A target: inside / outside / straddling its band; without an interval at most inconclusive."""
    low, high = band
    low = -math.inf if low is None else low
    high = math.inf if high is None else high
    if value is None or math.isnan(value):
        return "untested"
    if interval is None:
        return "inconclusive"
    lo, hi = interval
    if low <= lo and hi <= high:
        return "yes"
    if hi < low or lo > high:
        return "no"
    return "inconclusive"


def band_text(band: Sequence[float | None], digits: int = 3) -> str:
    low, high = band
    if low is None:
        return f"<= {num(high, digits)}"
    if high is None:
        return f">= {num(low, digits)}"
    return f"in [{num(low, digits)}, {num(high, digits)}]"


# ---------------------------------------------------------------- claims.yaml

class SpecError(ValueError):
    """A claims.yaml that does not follow the schema, naming the file and the key."""


def spec_path(paper: str) -> Path:
    return PAPERS_DIR / paper / SPEC_FILE


@lru_cache(maxsize=None)
def _schema() -> dict:
    import yaml

    return yaml.safe_load(SCHEMA_FILE.read_text())


def _number(value: Any) -> Any:
    # YAML 1.1 reads 1e-6 (no dot) as text
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _normalise(entry: dict) -> dict:
    """YAML's readings of an entry that the schema should not trip on: an unquoted `null` (as a key,
    or as the role) is None, `1e-6` is text."""
    out = {("null" if k is None else k): v for k, v in entry.items()}
    if "role" in out and out["role"] is None:  # `role: null` unquoted
        out["role"] = "null"
    if "tolerance" in out:
        out["tolerance"] = _number(out["tolerance"])
    if isinstance(out.get("band"), list):
        out["band"] = [_number(v) for v in out["band"]]
    return out


def validate_spec(data: Any, source: str | Path) -> list[dict]:
    """The entries of a claims.yaml, checked against the schema and for consistency (unique ids,
    controls that exist and have the right role, margins a transform can read)."""
    import jsonschema

    if isinstance(data, dict) and isinstance(data.get("claims"), list):
        data = {**data, "claims": [_normalise(e) if isinstance(e, dict) else e for e in data["claims"]]}
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        entry = ""
        if len(e.absolute_path) >= 2 and e.absolute_path[0] == "claims":
            try:
                entry = f" (entry '{data['claims'][e.absolute_path[1]].get('id', '?')}')"
            except (KeyError, IndexError, TypeError, AttributeError):
                entry = ""
        raise SpecError(f"{source}: {where}{entry}: {e.message}")
    entries = [{"role": "claim", **e} for e in data["claims"]]
    ids = [e["id"] for e in entries]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SpecError(f"{source}: claims: ids used twice: {', '.join(dup)}")
    by_id = {e["id"]: e for e in entries}
    for e in entries:
        for key, role in (("regime", "regime"), ("null", "null")):
            ref = e.get(key, "")
            if not ref or ref.startswith("none"):
                continue
            if ref not in by_id:
                raise SpecError(f"{source}: claims.{e['id']}.{key}: '{ref}' is no entry of this file "
                                "(an id, or text starting 'none' that says why there is no control)")
            if by_id[ref].get("role") != role:
                raise SpecError(f"{source}: claims.{e['id']}.{key}: '{ref}' has role "
                                f"'{by_id[ref].get('role', 'claim')}', not '{role}'")
        if e.get("transform") == "log" and e["kind"] == "comparison" and not str(e["margin"]).endswith("%"):
            raise SpecError(f"{source}: claims.{e['id']}.margin: a log-scale comparison takes its margin as a "
                            "percentage (e.g. '5%': the ratio 1.05)")
    return entries


@lru_cache(maxsize=None)
def _load_spec_cached(path: str) -> tuple:
    import yaml

    p = Path(path)
    if not p.exists():
        raise SpecError(f"{p}: no claims declared (every paper lists its claims in {SPEC_FILE})")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"{p}: not valid YAML: {exc}") from None
    return tuple(validate_spec(data, p))


def load_spec(paper: str, path: str | Path | None = None) -> list[dict]:
    """The validated entries of `papers/<paper>/claims.yaml` (or `path`)."""
    return [dict(e) for e in _load_spec_cached(str(path or spec_path(paper)))]


def _margin(entry: dict, baseline_mean: float) -> tuple[float, str]:
    """The margin in the units the rule compares (log units for log rows) and its display."""
    raw = entry["margin"]
    if isinstance(raw, str) and raw.endswith("%"):
        share = float(raw[:-1]) / 100
        if entry.get("transform") == "log":
            return math.log1p(share), f"ratio {num(1 + share)} ({raw})"
        value = share * abs(baseline_mean) if not math.isnan(baseline_mean) else math.nan
        return value, f"{num(value)} ({raw} of the baseline)"
    return float(raw), num(float(raw))


# ---------------------------------------------------------------- the sheet a paper fills

class Sheet:
    """The claims rows of one paper's run: each `claims.yaml` entry gets its numbers through one
    call (`comparison`, `target`, `check` or `untested`), and `rows()` decides every verdict."""

    def __init__(self, paper: str, scale: str, spec: Sequence[dict] | None = None, digits: int = 3):
        self.paper, self.scale, self.digits = paper, scale, digits
        entries = list(spec) if spec is not None else load_spec(paper)
        self.spec = {e["id"]: e for e in entries}
        self.order = [e["id"] for e in entries]
        self.measured: dict[str, dict] = {}

    # -- measurements

    def _entry(self, id: str, kinds: Sequence[str]) -> dict:
        if id not in self.spec:
            raise SpecError(f"{spec_path(self.paper)}: no entry '{id}' (the paper's claims.py measures it)")
        if id in self.measured:
            raise ValueError(f"{self.paper}: '{id}' measured twice")
        e = self.spec[id]
        if e["kind"] not in kinds:
            raise ValueError(f"{self.paper}: '{id}' is declared kind '{e['kind']}', measured as {'/'.join(kinds)}")
        return e

    def comparison(self, id: str, method_values: Sequence[float] | None = None,
                   baseline_values: Sequence[float] | None = None, *, paired: bool = True,
                   method_items: Sequence[Sequence[float]] | None = None,
                   baseline_items: Sequence[Sequence[float]] | None = None,
                   method: str | None = None, baseline: str | None = None, how: str = "",
                   untested: str = "", method_capped: str = "", baseline_capped: str = "") -> None:
        """Method and baseline, one value per replicate (paired: the same replicate order). With
        per-item scores (the same items both sides, per replicate) the interval is the wider of a
        two-level paired bootstrap and the paired t. `method_capped` / `baseline_capped`: the
        tuning protocol's note (core.tuning.capped_note) when a side's tuned knob stayed on a grid
        edge the cap stopped; the row then cannot say `no` (method capped) or `yes` (baseline)."""
        e = self._entry(id, ("comparison",))
        m, b = _clean(method_values), _clean(baseline_values)
        sign = 1.0 if e["direction"] == "higher" else -1.0
        log = e.get("transform") == "log"
        rec = {"method": method or e["method"], "baseline": baseline or e.get("baseline", ""),
               "method_value": fmt(m, self.digits), "baseline_value": fmt(b, self.digits),
               "n": f"{len(m)}/{len(b)}", "how": how, "reason": untested,
               "method_capped": method_capped, "baseline_capped": baseline_capped}
        margin, margin_text = _margin(e, mean_std(b)[0])
        rec.update(margin=margin, margin_text=margin_text)
        if not untested and any(math.isinf(v) for v in m + b):
            rec["reason"] = "a replicate's value is not finite"
        if not rec["reason"] and log and any(v <= 0 for v in m + b):
            rec["reason"] = "a log-scale row needs positive values"
        if not rec["reason"] and min(len(m), len(b)) < MIN_REPLICATES:
            rec["reason"] = f"fewer than {MIN_REPLICATES} replicates ({e.get('replicate', 'seeds')}) on a side"
        if not rec["reason"]:
            tm = [math.log(v) for v in m] if log else m
            tb = [math.log(v) for v in b] if log else b
            if paired and len(m) != len(b):
                raise ValueError(f"{self.paper}: '{id}': a paired comparison needs as many method as baseline values")
            if paired:
                diffs = [x - y for x, y in zip(tm, tb)]
                d, lo, hi, p = paired_t(diffs)
                spread = mean_std(diffs)[1]
                test = f"paired t over {len(m)} replicates"
            else:
                d, lo, hi, p = welch(tm, tb)
                spread = math.sqrt((mean_std(tm)[1] ** 2 + mean_std(tb)[1] ** 2) / 2)
                test = f"Welch t over {len(m)}+{len(b)} replicates"
            if method_items is not None and baseline_items is not None:
                if log:
                    raise ValueError(f"{self.paper}: '{id}': per-item bootstrap on a log-scale row")
                _, b_lo, b_hi = paired_bootstrap_interval(method_items, baseline_items)
                lo, hi = min(lo, b_lo), max(hi, b_hi)
                items = sum(len(x) for x in method_items) // max(len(method_items), 1)
                test = f"the wider of a paired bootstrap over replicates x {items} items and the {test}"
            effect = sign * d
            lo, hi = sorted((sign * lo, sign * hi))
            rec.update(effect=effect, lo=lo, hi=hi, p=p, spread=spread, paired=paired, test=test)
        self.measured[id] = rec

    def target(self, id: str, value: float | None = None, *, values: Sequence[float] | None = None,
               interval: tuple[float, float] | None = None, successes: int | None = None,
               trials: int | None = None, n: int | str = "", method: str | None = None,
               baseline: str | None = None, baseline_value: str = "", how: str = "", untested: str = "") -> None:
        """A quantity against the entry's band, with its 95% interval from one of: `values` (one per
        replicate: t interval over them, geometric for `transform: log`), `successes`/`trials`
        (a share, Clopper-Pearson), or an explicit `value` and `interval` (`how` says whence)."""
        e = self._entry(id, ("target",))
        rec = {"method": method or e["method"], "baseline": baseline or e.get("baseline", ""),
               "baseline_value": baseline_value, "how": how, "reason": untested, "n": n}
        if values is not None:
            vals = _clean(values)
            rec["n"] = len(vals)
            rec["method_value"] = fmt(vals, self.digits)
            if not untested and len(vals) < MIN_REPLICATES:
                rec["reason"] = f"fewer than {MIN_REPLICATES} replicates ({e.get('replicate', 'seeds')})"
            elif not untested:
                if e.get("transform") == "log":
                    if any(v <= 0 for v in vals):
                        rec["reason"] = "a log-scale row needs positive values"
                    else:
                        m, lo, hi, _ = paired_t([math.log(v) for v in vals])
                        value, interval = math.exp(m), (math.exp(lo), math.exp(hi))
                        rec["test"] = f"geometric mean, t interval of the log over {len(vals)} replicates"
                else:
                    value, lo, hi, _ = paired_t(vals)
                    interval = (lo, hi)
                    rec["test"] = f"mean, t interval over {len(vals)} replicates"
        elif successes is not None:
            trials = int(trials or 0)
            rec["n"] = trials
            value = successes / trials if trials else math.nan
            interval = clopper_pearson(int(successes), trials) if trials else None
            rec["method_value"] = f"{successes}/{trials}"
            rec["test"] = f"share {successes}/{trials}, Clopper-Pearson interval"
        else:
            rec["method_value"] = num(math.nan if value is None else float(value), self.digits)
            rec["test"] = "given interval" if interval is not None else "no replicated interval"
        rec.update(value=math.nan if value is None else float(value), interval=interval)
        self.measured[id] = rec

    def check(self, id: str, value: float | None, *, n: int | str = "", reference: str | None = None,
              how: str = "", untested: str = "") -> None:
        e = self._entry(id, ("check",))
        v = math.nan if value is None else float(value)
        self.measured[id] = {"method": e["method"], "baseline": reference or e.get("baseline", ""),
                             "method_value": num(v, self.digits), "baseline_value": "", "n": n,
                             "value": v, "how": how, "reason": untested}

    def untested(self, id: str, reason: str, **labels: str) -> None:
        """An entry this run cannot measure, with the reason (e.g. a variant the config leaves out)."""
        e = self.spec.get(id)
        if e is None:
            raise SpecError(f"{spec_path(self.paper)}: no entry '{id}'")
        if id in self.measured:
            raise ValueError(f"{self.paper}: '{id}' measured twice")
        self.measured[id] = {"method": labels.get("method", e["method"]),
                             "baseline": labels.get("baseline", e.get("baseline", "")),
                             "method_value": "", "baseline_value": "", "n": "", "how": "", "reason": reason}

    def untested_group(self, prefix: str, reason: str) -> None:
        """Every entry whose id starts with `prefix` untested (a variant or problem the run leaves out)."""
        for id in self.order:
            if id.startswith(prefix) and id not in self.measured:
                self.untested(id, reason)

    # -- the rule

    def rows(self) -> list[dict]:
        missing = [i for i in self.order if i not in self.measured]
        if missing:
            raise SpecError(f"{spec_path(self.paper)}: entries not measured by the paper's claims.py: "
                            f"{', '.join(missing)} (measure each, or mark it untested with the reason)")
        decided: dict[str, dict] = {}
        # controls first: their verdicts gate the claims
        for id in self.order:
            if self.spec[id].get("role", "claim") in ("regime", "null"):
                decided[id] = self._decide(id, p_holm=None, gate="")
        gates = {id: self._gate(id, decided) for id in self.order if id not in decided}
        family = [id for id in self.order if id not in decided and self.spec[id]["kind"] == "comparison"
                  and not gates[id] and "p" in self.measured[id]]
        adjusted = dict(zip(family, holm([self.measured[i]["p"] for i in family])))
        for id in self.order:
            if id not in decided:
                decided[id] = self._decide(id, p_holm=adjusted.get(id), gate=gates[id], family=len(family))
        return [decided[id] for id in self.order]

    def _gate(self, id: str, decided: dict[str, dict]) -> str:
        """Why a claim row is untested before its numbers are read: scale, regime, null."""
        e, rec = self.spec[id], self.measured[id]
        if rec["reason"]:
            return rec["reason"]
        reach = e.get("scale", [])
        if reach and self.scale not in reach and self.scale != "smoke":
            return f"the {self.scale} scale cannot reach this claim (it needs: {', '.join(reach)})"
        regime = e.get("regime", "")
        if regime and not regime.startswith("none") and decided[regime]["reproduced"] != "yes":
            return (f"its regime control '{regime}' does not hold in this run "
                    f"({decided[regime]['reproduced']}): {self.spec[regime]['claim']}")
        null = e.get("null", "")
        if null and not null.startswith("none") and decided[null]["reproduced"] == "yes":
            return (f"its null control '{null}' passes the same criterion ({self.spec[null]['claim']}): "
                    "the row does not separate the paper's idea")
        return ""

    def _decide(self, id: str, p_holm: float | None, gate: str, family: int = 0) -> dict:
        e, rec = self.spec[id], self.measured[id]
        kind, role = e["kind"], ("check" if e["kind"] == "check" else e.get("role", "claim"))
        d = self.digits
        gate = gate or rec["reason"]
        row = {"paper": self.paper, "id": id, "claim": e["claim"], "role": role, "kind": kind,
               "metric": e["metric"], "paper_value": e.get("paper_value", ""), "method": rec["method"],
               "method_value": rec["method_value"], "baseline": rec["baseline"],
               "baseline_value": rec["baseline_value"], "n": rec["n"], "effect": "", "interval": "",
               "margin": "", "margin_source": e.get("margin_source", ""), "p_holm": "", "n_to_decide": "",
               "criterion": "", "reproduced": "untested", "scale": self.scale, "figure": e.get("figure", "")}
        notes = [f"replicates: {e['replicate']}"] if e.get("replicate") else []
        if rec.get("how"):
            notes.append(rec["how"])
        for key in ("regime", "null"):
            if e.get(key):
                notes.append(f"{key} control: {e[key]}")
        if kind == "comparison":
            log = e.get("transform") == "log"
            better = "higher" if e["direction"] == "higher" else "lower"
            what = (f"{'method / baseline' if better == 'higher' else 'baseline / method'} on the log scale"
                    if log else f"{'method - baseline' if better == 'higher' else 'baseline - method'}")
            # an entry left untested still shows the margin it declares
            row["margin"] = rec.get("margin_text") or _margin(e, math.nan)[1].replace("n/a (", "(")
            # controls stand outside the Holm family: each is one gate
            p_text = f"the Holm p (over {family} comparison rows)" if role == "claim" else "its p"
            rule = (f"effect = {what} ({better} is better); yes if its 95% interval ({rec.get('test', 'n/a')}) "
                    f"lies above {'1' if log else '0'}, the effect reaches the margin and {p_text} < 0.05; "
                    "no if the interval lies below the margin")
            if "effect" in rec:
                show = math.exp if log else (lambda v: v)
                row["effect"] = num(show(rec["effect"]), d)
                row["interval"] = f"[{num(show(rec['lo']), d)}, {num(show(rec['hi']), d)}]"
            if not gate and "effect" in rec:
                p = rec["p"] if p_holm is None else p_holm
                row["p_holm"] = num(p, d)
                verdict = comparison_verdict(rec["lo"], rec["hi"], rec["effect"], rec["margin"], p)
                capped = {"yes": rec.get("baseline_capped"), "no": rec.get("method_capped")}.get(verdict)
                if capped:
                    rule += (f"; would read {verdict}, but {capped}: the side tuned to a capped grid edge may be "
                             "under-tuned, so the row is inconclusive")
                    verdict = "inconclusive"
                row["reproduced"] = verdict
                if verdict == "no" and rec["hi"] < 0:
                    rule += "; reversed: the interval lies below 0"
                if verdict == "inconclusive" and not capped:
                    gap = rec["effect"] if rec["effect"] >= rec["margin"] else rec["margin"] - rec["effect"]
                    row["n_to_decide"] = replicates_to_decide(gap, rec["spread"], rec["paired"])
        elif kind == "target":
            band = tuple(e["band"])
            row["margin"] = band_text(band, d)
            row["effect"] = num(rec.get("value", math.nan), d)
            if rec.get("interval") is not None:
                row["interval"] = f"[{num(rec['interval'][0], d)}, {num(rec['interval'][1], d)}]"
            rule = (f"{rec.get('test', 'n/a')}; yes if the 95% interval lies {band_text(band, d)}, no if it lies "
                    "outside, else inconclusive (at most inconclusive without a replicated interval)")
            if not gate:
                row["reproduced"] = band_verdict(rec["value"], band, rec["interval"])
        else:
            tol, at_least = float(e["tolerance"]), bool(e.get("at_least", False))
            row["margin"] = f"{'>=' if at_least else '<='} {num(tol, d)}"
            row["effect"] = num(rec.get("value", math.nan), d)
            rule = f"pass if the value is {'>=' if at_least else '<='} {num(tol, d)}"
            if not gate and not math.isnan(rec.get("value", math.nan)):
                row["reproduced"] = "pass" if (rec["value"] >= tol if at_least else rec["value"] <= tol) else "fail"
        criterion = "; ".join([rule, *notes])
        row["criterion"] = f"untested: {gate}; {criterion}" if gate else criterion
        return row


def write_claims(path: str | Path, rows: Sequence[dict]) -> None:
    for r in rows:
        if list(r) != COLUMNS:
            raise ValueError(f"claims row '{r.get('claim')}' lacks the columns {COLUMNS}")
        allowed = CHECK_VERDICTS if r["kind"] == "check" else CLAIM_VERDICTS
        if r["reproduced"] not in allowed or r["kind"] not in KINDS or r["role"] not in ROLES:
            raise ValueError(f"claims row '{r.get('claim')}': kind {r['kind']}, role {r['role']}, "
                             f"verdict {r['reproduced']} are not a valid combination")
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
    """yes / inconclusive / no / untested over the claim rows; checks passed / failed / untested;
    controls that hold (`yes`) and that do not."""
    out = {k: 0 for k in ("yes", "inconclusive", "no", "untested", "checks_pass", "checks_fail",
                          "checks_untested", "regime_hold", "regime_fail", "null_pass", "null_fail")}
    for r in rows:
        role = r.get("role") or ("check" if r["kind"] == "check" else "claim")
        if role == "check":
            out[f"checks_{r['reproduced']}"] += 1
        elif role == "regime":
            out["regime_hold" if r["reproduced"] == "yes" else "regime_fail"] += 1
        elif role == "null":
            out["null_pass" if r["reproduced"] == "yes" else "null_fail"] += 1
        else:
            out[r["reproduced"]] += 1
    return out
