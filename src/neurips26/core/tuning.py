"""One tuning protocol for every method and every baseline (DESIGN.md: "Baselines are tuned as the
method is").

- `search` tunes one or more knobs of one method on validation data: it scores every point of the
  (product) grid, and while the best point sits on the edge of a knob's grid it extends that grid
  by one step of the grid's own spacing (log or linear), up to the config's `tuning.extensions`
  steps per edge or a knob's stated bound. A best value still on an edge when the cap stops the
  extension is recorded as `capped`.
- `fixed` records a knob the paper fixes (it stays fixed for every method that has it).
- `strongest` names the strongest baseline from validation scores, before any test number is
  read; controls (ideal aggregation, oracles, zero-shot, the unadapted source) cannot be chosen.
- `write_csv` writes `results/<paper>/tuning.csv` (COLUMNS), `figure` draws validation score
  against each knob, one curve per method, and `capped_note` gives the text a claims row passes
  to `Sheet.comparison(method_capped=..., baseline_capped=...)`: a row cannot say `yes` for the
  method when its baseline was capped, nor `no` when the method was.

Records travel between steps as JSON (`Record.to_json` / `Record.from_json`), so a tune step
writes them into its own output and the figures step gathers them into `tuning.csv`.
"""

from __future__ import annotations

import csv
import itertools
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .io import atomic_path

COLUMNS = ["paper", "setting", "method", "knob", "status", "grid", "scores", "chosen", "score", "metric",
           "direction", "edge", "extensions", "seed", "split", "note"]
STATUSES = ("tuned", "capped", "fixed", "choice")
DEFAULT_EXTENSIONS = 3


class TuningError(ValueError):
    pass


@dataclass
class Record:
    """One knob of one method in one setting (a task, a problem, a heterogeneity level).
    status: tuned (the chosen value is interior, or the grid is one point by the paper's choice),
    capped (chosen on an edge the cap stopped extending), fixed (not tuned: the paper fixes it),
    choice (the strongest-baseline choice: `grid` holds the candidates, `chosen` the name)."""

    method: str
    knob: str
    status: str
    grid: list = field(default_factory=list)
    scores: list = field(default_factory=list)
    chosen: Any = None
    score: float = math.nan
    metric: str = ""
    direction: str = "higher"
    edge: str = ""
    extensions: int = 0
    setting: str = ""
    seed: Any = ""
    split: str = "validation"
    note: str = ""

    def to_json(self) -> dict:
        d = asdict(self)
        d["score"] = None if _bad(self.score) else float(self.score)
        d["scores"] = [None if _bad(s) else float(s) for s in self.scores]
        return d

    @classmethod
    def from_json(cls, d: Mapping) -> "Record":
        d = dict(d)
        d["score"] = math.nan if d.get("score") is None else float(d["score"])
        d["scores"] = [math.nan if s is None else float(s) for s in d.get("scores", [])]
        return cls(**d)

    @property
    def capped(self) -> bool:
        return self.status == "capped"


def _bad(x) -> bool:
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def settings(params: Mapping | None) -> dict:
    """The config's `tuning` block as a step receives it (`params["tuning"]`), with its defaults."""
    block = dict((params or {}).get("tuning") or {})
    ext = int(block.get("extensions", DEFAULT_EXTENSIONS))
    if ext < 0:
        raise TuningError(f"config key 'tuning.extensions' must be >= 0, got {ext}")
    return {"extensions": ext}


# ---------------------------------------------------------------- grids

def log_grid(centre: float, points: int, decades: float) -> list[float]:
    """`points` values log-spaced over `decades` decades, centred (geometrically) on `centre`
    (6 significant digits, so a grid reads the same in a config, a table and a file name)."""
    n, span, centre = int(points), float(decades), float(centre)
    if n == 1:
        return [float(f"{centre:.6g}")]
    return [float(f"{centre * 10 ** (span * (i / (n - 1) - 0.5)):.6g}") for i in range(n)]


def _step(values: Sequence[float], scale: str) -> float:
    if len(values) < 2:
        raise TuningError("a grid needs at least two points to be extended")
    if scale == "log":
        if values[0] <= 0:
            raise TuningError(f"a log-spaced grid needs positive values, got {values[0]}")
        return (values[-1] / values[0]) ** (1.0 / (len(values) - 1))
    return (values[-1] - values[0]) / (len(values) - 1)


def _next(values: Sequence[float], side: str, scale: str, integer: bool, bounds: tuple, s: float) -> float | None:
    """The next grid point past `side` ('low' or 'high'), one step `s` of the declared grid's spacing
    away, or None when a bound forbids it."""
    edge = values[0] if side == "low" else values[-1]
    if scale == "log":
        new = edge / s if side == "low" else edge * s
    else:
        new = edge - s if side == "low" else edge + s
    if integer:
        new = math.floor(new) if side == "low" else math.ceil(new)
        if new == edge:
            new = edge - 1 if side == "low" else edge + 1
        new = int(new)
    else:
        new = float(f"{new:.6g}")  # readable values in files and logs
    lo, hi = bounds
    if (lo is not None and new < lo) or (hi is not None and new > hi) or (scale == "log" and new <= 0):
        return None
    return new


def _best(points: Sequence[tuple], scores: Mapping[tuple, float], maximize: bool, grids: Sequence[Sequence]) -> tuple:
    """The best point; ties go to the point farthest from the grids' edges, then to grid order."""
    def key(p):
        s = scores[p]
        s = -math.inf if _bad(s) else (s if maximize else -s)
        inner = sum(min(g.index(v), len(g) - 1 - g.index(v)) for v, g in zip(p, grids))
        return (s, inner)
    best, best_key = None, None
    for p in points:  # first maximum in grid order
        k = key(p)
        if best_key is None or k > best_key:
            best, best_key = p, k
    return best


def search(evaluate: Callable[..., float], grids: Mapping[str, Sequence[float]], *, method: str,
           setting: str = "", metric: str = "", maximize: bool = True, extensions: int = DEFAULT_EXTENSIONS,
           scale: Mapping[str, str] | str = "log", integer: Sequence[str] = (),
           bounds: Mapping[str, tuple] | None = None, seed: Any = "", split: str = "validation",
           note: str = "", progress: Callable[[str], None] | None = None,
           natural_ends: Mapping[str, tuple[float, str]] | None = None) -> tuple[dict, list[Record]]:
    """Tune the knobs in `grids` jointly for one method: `evaluate(**point)` returns the validation
    score of one point. Returns (the chosen point, one Record per knob). A knob with a one-point
    grid is recorded `fixed` (the paper's value, never extended). Each knob's record holds its
    profile: the scores along that knob with the other knobs at their chosen values.
    `natural_ends`: knob -> (value, why) where the value is the end of the knob's domain that is the
    method itself (nothing lies beyond it: LAME on its own batch, pooled PCA); a best there is
    `tuned` with that note, not `capped` (a bound that is only a limit of the search stays a cap)."""
    names = list(grids)
    if not names:
        raise TuningError(f"{method}: no knob to tune")
    scales = {k: (scale if isinstance(scale, str) else scale.get(k, "log")) for k in names}
    bounds = dict(bounds or {})
    cur = {k: sorted({(int(v) if k in integer else float(v)) for v in grids[k]}) for k in names}
    for k in names:
        if not cur[k]:
            raise TuningError(f"{method}: the grid of '{k}' is empty")
    tunable = [k for k in names if len(cur[k]) > 1]
    steps = {k: _step(cur[k], scales[k]) for k in tunable}  # the declared grid's spacing, kept as it grows
    used = {(k, side): 0 for k in names for side in ("low", "high")}
    scores: dict[tuple, float] = {}
    while True:
        for p in itertools.product(*(cur[k] for k in names)):
            if p not in scores:
                s = float(evaluate(**dict(zip(names, p))))
                scores[p] = s
                if progress:
                    progress(f"{setting + ' ' if setting else ''}{method} "
                             + " ".join(f"{k}={v:g}" for k, v in zip(names, p)) + f": {metric or 'score'} {s:.4g}")
        points = list(itertools.product(*(cur[k] for k in names)))
        best = _best(points, scores, maximize, [cur[k] for k in names])
        grew = False
        for i, k in enumerate(names):
            if k not in tunable:
                continue
            side = "low" if best[i] == cur[k][0] else ("high" if best[i] == cur[k][-1] else "")
            if side and used[(k, side)] < extensions:
                new = _next(cur[k], side, scales[k], k in integer, bounds.get(k, (None, None)), steps[k])
                if new is not None and new not in cur[k]:
                    cur[k] = sorted(cur[k] + [new])
                    used[(k, side)] += 1
                    grew = True
        if not grew:
            break
    chosen = dict(zip(names, best))
    records = []
    for i, k in enumerate(names):
        profile = [scores[tuple(v if j == i else best[j] for j in range(len(names)))] for v in cur[k]]
        if k not in tunable:
            records.append(Record(method, k, "fixed", list(cur[k]), profile, best[i], scores[best], metric,
                                  "higher" if maximize else "lower", "", 0, setting, seed, split,
                                  note or "one-point grid: the paper's value"))
            continue
        side = "low" if best[i] == cur[k][0] else ("high" if best[i] == cur[k][-1] else "")
        ext = used[(k, "low")] + used[(k, "high")]
        why = ""
        end = (natural_ends or {}).get(k)
        if side and end is not None and best[i] == end[0]:
            records.append(Record(method, k, "tuned", list(cur[k]), profile, best[i], scores[best], metric,
                                  "higher" if maximize else "lower", side, ext, setting, seed, split,
                                  "; ".join(x for x in (note, end[1]) if x)))
            continue
        if side:
            why = (f"best on the {side} edge after {used[(k, side)]} extension(s)"
                   + (" (the knob's bound)" if used[(k, side)] < extensions else f" (cap {extensions})"))
        records.append(Record(method, k, "capped" if side else "tuned", list(cur[k]), profile, best[i],
                              scores[best], metric, "higher" if maximize else "lower", side, ext, setting,
                              seed, split, "; ".join(x for x in (note, why) if x)))
    return chosen, records


def chosen(tuned: Mapping, knob: str, names: Sequence[str]) -> dict[str, float]:
    """The value of `knob` a tune step chose for each of `names` (its tune.json's `{knob: {name: value}}`);
    a name it has no value for is an error naming it."""
    missing = [n for n in names if n not in tuned.get(knob, {})]
    if missing:
        raise TuningError(f"the tune step's output has no {knob} for {', '.join(missing)}; rerun the tune step")
    return {n: float(tuned[knob][n]) for n in names}


def fixed(method: str, knob: str, value: Any, reason: str, setting: str = "") -> Record:
    """A knob the paper fixes: not tuned for the method, and not for any baseline that has it."""
    if not reason:
        raise TuningError(f"{method}.{knob}: a fixed knob needs the reason it is fixed")
    return Record(method, knob, "fixed", [value], [], value, math.nan, "", "", "", 0, setting, "", "", reason)


def strongest(scores: Mapping[str, float], *, candidates: Sequence[str] | None = None,
              controls: Sequence[str] = (), maximize: bool = True, setting: str = "", metric: str = "",
              seed: Any = "", split: str = "validation") -> tuple[str, Record]:
    """The strongest baseline by validation score among `candidates` (default: every key of
    `scores` that is not a control). A control named as a candidate is an error: controls are
    never existing methods. Ties go to candidate order."""
    pool = list(candidates) if candidates is not None else [k for k in scores if k not in controls]
    bad = [c for c in pool if c in controls]
    if bad:
        raise TuningError(f"'{bad[0]}' is a control, not an existing method: it cannot be the strongest baseline")
    missing = [c for c in pool if c not in scores]
    if missing or not pool:
        raise TuningError(f"no validation score for the baseline(s) {', '.join(missing) or '(none given)'}")
    sign = 1.0 if maximize else -1.0
    best = max(pool, key=lambda c: (-math.inf if _bad(scores[c]) else sign * scores[c], -pool.index(c)))
    rec = Record("strongest baseline", "choice", "choice", list(pool), [float(scores[c]) for c in pool], best,
                 float(scores[best]), metric, "higher" if maximize else "lower", "", 0, setting, seed, split,
                 f"chosen on {split} data before any test number is read"
                 + (f"; controls left out: {', '.join(controls)}" if controls else ""))
    return best, rec


def capped_note(records: Sequence[Record], method: str, setting: str | None = None) -> str:
    """'' when none of `method`'s tuned knobs (in `setting`, if given) was capped, else the text
    naming them (for Sheet.comparison's method_capped / baseline_capped)."""
    hits = [r for r in records if r.method == method and r.status == "capped"
            and (setting is None or r.setting == setting)]
    return "; ".join(f"{r.method}'s {r.knob} = {r.chosen:g} on the {r.edge} edge of its capped grid"
                     + (f" ({r.setting})" if r.setting else "") for r in hits)


# ---------------------------------------------------------------- files

def _cell(v) -> str:
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.6g}"
    return "" if v is None else str(v)


def rows(paper: str, records: Sequence[Record]) -> list[dict]:
    out = []
    for r in records:
        if r.status not in STATUSES:
            raise TuningError(f"{paper}: {r.method}.{r.knob}: unknown status '{r.status}'")
        out.append({"paper": paper, "setting": r.setting, "method": r.method, "knob": r.knob, "status": r.status,
                    "grid": ";".join(_cell(v) for v in r.grid), "scores": ";".join(_cell(v) for v in r.scores),
                    "chosen": _cell(r.chosen), "score": _cell(r.score), "metric": r.metric,
                    "direction": r.direction, "edge": r.edge, "extensions": str(r.extensions),
                    "seed": _cell(r.seed), "split": r.split, "note": r.note})
    return out


def write_csv(path: str | Path, paper: str, records: Sequence[Record]) -> Path:
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows(paper, records))
    return path


def read_csv(paths: Sequence[str | Path]) -> list[dict]:
    out = []
    for p in paths:
        with open(p, newline="") as f:
            r = csv.DictReader(f)
            if r.fieldnames != COLUMNS:
                raise TuningError(f"{p}: columns {r.fieldnames} are not {COLUMNS}")
            out.extend(r)
    return out


def _floats(cell: str) -> list[float]:
    out = []
    for x in str(cell).split(";"):
        try:
            out.append(float(x))
        except ValueError:
            out.append(math.nan)
    return out


def figure(table: Sequence[dict], path: str | Path, title: str = "") -> Path:
    """Validation score against each tuned knob: a panel per (setting, knob), a curve per method,
    the chosen value ringed, a capped choice marked x. Fixed knobs and baseline choices are listed
    beneath."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plotting import save, style

    style()
    tuned = [r for r in table if r["status"] in ("tuned", "capped") and r["scores"]]
    panels: dict[tuple, list[dict]] = {}
    for r in tuned:
        panels.setdefault((r["setting"], r["knob"]), []).append(r)
    listed = [r for r in table if r["status"] in ("fixed", "choice")]
    n = max(len(panels), 1)
    cols = min(3, n)
    nrows = math.ceil(n / cols)
    text_lines = [f"{r['setting'] + ': ' if r['setting'] else ''}{r['method']} {r['knob']} = {r['chosen']}"
                  + (f" (of {r['grid'].replace(';', ', ')})" if r["status"] == "choice" else "")
                  + (f": {r['note']}" if r["note"] else "") for r in listed]
    shown = text_lines[:30] + ([f"... and {len(text_lines) - 30} more in tuning.csv"] if len(text_lines) > 30 else [])
    extra = 0.16 * len(shown) + 0.3 if shown else 0.0
    fig = plt.figure(figsize=(max(4.4 * cols, 8.0), 3.3 * nrows + extra))
    grid = fig.add_gridspec(nrows + (1 if shown else 0), cols,
                            height_ratios=[3.3] * nrows + ([extra] if shown else []))
    axes = [[fig.add_subplot(grid[i, j]) for j in range(cols)] for i in range(nrows)]
    flat = [a for row in axes for a in row]
    for ax in flat[len(panels):]:
        ax.axis("off")
    if not panels:
        flat[0].text(0.5, 0.5, "no knob is tuned in this paper:\nthe fixed knobs are listed below",
                     ha="center", va="center", transform=flat[0].transAxes)
    if shown:
        tax = fig.add_subplot(grid[nrows, :])
        tax.axis("off")
        tax.text(0.0, 1.0, "\n".join(s if len(s) < 150 else s[:147] + "..." for s in shown), fontsize=6,
                 va="top", ha="left", family="monospace", transform=tax.transAxes)
    for ax, ((setting, knob), group) in zip(flat, sorted(panels.items())):
        log = True
        for r in sorted(group, key=lambda r: r["method"]):
            x, y = _floats(r["grid"]), _floats(r["scores"])
            log = log and all(v > 0 for v in x)
            (line,) = ax.plot(x, y, marker="o", ms=3, label=r["method"])
            c = float(r["chosen"])
            ax.plot([c], [float(r["score"])], marker="x" if r["status"] == "capped" else "o", ms=10,
                    mfc="none", mec=line.get_color(), mew=1.5)
        if log:
            ax.set_xscale("log")
        ax.set_xlabel(knob)
        ax.set_ylabel(f"validation {group[0]['metric']}".strip())
        ax.set_title(setting or knob, fontsize=9)
        ax.legend(fontsize=6)
    fig.suptitle(title or "Validation score against each tuned knob\n(ringed: the chosen value; x: chosen on a grid edge the cap stopped)", fontsize=9)
    save(fig, path)
    return Path(path)


def summarize(tuning_files: Sequence[str | Path], out: str | Path) -> tuple[list[Path], str]:
    """results/tuning.csv (every paper's tuning.csv), each paper's figures/tuning.png, and a line
    for summary.md: how many knobs were tuned, capped and fixed (summary.md stays under 30 KB)."""
    out = Path(out)
    table = read_csv(tuning_files)
    written = []
    path = out / "tuning.csv"
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(table)
    written.append(path)
    for f in map(Path, tuning_files):
        paper = f.parent.name
        mine = [r for r in table if r["paper"] == paper]
        written.append(figure(mine, f.parent / "figures" / "tuning.png", title=f"{paper}: validation score against "
                              "each tuned knob\n(ringed: the chosen value; x: chosen on a grid edge the cap stopped)"))
    n = {s: sum(r["status"] == s for r in table) for s in STATUSES}
    text = (f"Tuning (`tuning.csv`, `<paper>/figures/tuning.png`; one protocol for methods and baselines): "
            f"{n['tuned']} knobs tuned on validation data, {n['capped']} capped at a grid edge, {n['fixed']} fixed, "
            f"{n['choice']} strongest-baseline choices made on validation.")
    return written, text


# ---------------------------------------------------------------- README section

README_BEGIN = "<!-- tuning table: generated by `neurips26 readme` from reference/tuning.csv, do not edit by hand -->"
README_END = "<!-- end of tuning table -->"
README_HEADING = "## Baselines as tuned"


def readme_block(rows: Sequence[dict], source: str) -> str:
    """The README section of one paper's tuning rows: what each method and baseline had tuned, on
    which grid, what was chosen, and what was fixed or chosen as the strongest baseline."""
    n = {s: sum(r["status"] == s for r in rows) for s in STATUSES}
    lines = [README_BEGIN, "",
             f"{n['tuned']} knobs tuned on validation data, {n['capped']} capped at a grid edge, {n['fixed']} fixed "
             f"for every method that has them, {n['choice']} strongest-baseline choices made on validation "
             f"(from `{source}`; protocol: `neurips26.core.tuning`, picture: `results/<paper>/figures/tuning.png`).", "",
             "| setting | method | knob | status | grid tried | chosen | validation score | note |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        grid = r["grid"].replace(";", ", ")
        score = f"{r['score']} ({r['metric']})" if r["score"] and r["metric"] else r["score"]
        cells = [r["setting"], r["method"], r["knob"], r["status"], grid, r["chosen"], score, r["note"]]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines + ["", README_END])


def readme_with_block(text: str, rows: Sequence[dict], source: str) -> str:
    """`text` with its tuning section replaced, or inserted before '## What reproduced' (else at the end)."""
    block = readme_block(rows, source)
    if README_BEGIN in text and README_END in text:
        head, rest = text.split(README_BEGIN, 1)
        return head + block + rest.split(README_END, 1)[1]
    section = f"{README_HEADING}\n\n{block}\n\n"
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("## What reproduced"):
            return "\n".join(lines[:i]) + "\n" + section + "\n".join(lines[i:])
    return text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
