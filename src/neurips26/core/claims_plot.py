"""Verdict pictures drawn from claims rows (`neurips26.core.claims.COLUMNS`, as text, the way
`claims.csv` and `summary.csv` hold them):

- `paper_figure`: a forest plot of one paper's comparison and target rows (claims and their
  controls), one strip per row with its own axis, since rows measure different quantities: the
  effect and its 95% interval in the colour of the verdict, 0 (1 for a ratio) as a solid line,
  the margin of a comparison dashed, the band of a target shaded. Rows without a number, and
  every `untested` row, are listed below with their reason.
- `summary_figure`: verdict counts per paper as stacked bars, the checks in a panel apart.
"""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path
from typing import Sequence

from .io import atomic_path

VERDICT_COLOURS = {"yes": "#1a9850", "inconclusive": "#e69f00", "no": "#d73027", "untested": "#8c8c8c",
                   "pass": "#1a9850", "fail": "#d73027"}
CLAIM_ORDER = ("yes", "inconclusive", "no", "untested")
CHECK_ORDER = ("pass", "fail", "untested")
BAND_COLOUR = "#4575b4"
LABEL_CHARS = 38


def _float(text) -> float:
    try:
        return float(str(text).strip())
    except ValueError:
        return math.nan


def parse_interval(text: str) -> tuple[float, float] | None:
    m = re.fullmatch(r"\s*\[\s*([^,\]]+?)\s*,\s*([^\]]+?)\s*\]\s*", str(text or ""))
    if not m:
        return None
    lo, hi = _float(m.group(1)), _float(m.group(2))
    return None if math.isnan(lo) or math.isnan(hi) else (lo, hi)


def parse_margin(text: str) -> dict:
    """A claims row's `margin` cell: {"band": (low, high)} for a target ('>= 1', '<= 0.05',
    'in [1.7, 2.3]'); {"margin": value, "ratio": bool} for a comparison ('ratio 1.05 (5%)',
    '4.55 (5% of the baseline)', '2'); {} when empty or unreadable."""
    text = str(text or "").strip()
    if not text:
        return {}
    m = re.fullmatch(r"(>=|<=)\s*(\S+)", text)
    if m:
        v = _float(m.group(2))
        return {} if math.isnan(v) else {"band": (v, math.inf) if m.group(1) == ">=" else (-math.inf, v)}
    m = re.fullmatch(r"in\s*\[\s*([^,]+),\s*([^\]]+)\]", text)
    if m:
        lo, hi = _float(m.group(1)), _float(m.group(2))
        return {} if math.isnan(lo) or math.isnan(hi) else {"band": (lo, hi)}
    m = re.match(r"ratio\s+(\S+)", text)
    if m:
        v = _float(m.group(1))
        return {} if math.isnan(v) else {"margin": v, "ratio": True}
    m = re.match(r"(-?[\d.]+(?:e[-+]?\d+)?)", text)
    if m:
        return {"margin": float(m.group(1)), "ratio": False}
    return {}


def untested_reason(row: dict) -> str:
    """The reason an untested row gives first in its criterion ('untested: <reason>; ...')."""
    crit = str(row.get("criterion") or "")
    if crit.startswith("untested:"):
        return crit[len("untested:"):].split(";", 1)[0].strip()
    return crit.split(";", 1)[0].strip() or "no reason given"


def role(row: dict) -> str:
    return row.get("role") or ("check" if row.get("kind") == "check" else "claim")


def label(row: dict, chars: int = LABEL_CHARS) -> str:
    """The row's id, or its claim shortened (rows written before ids existed); controls say so."""
    name = str(row.get("id") or "").strip() or str(row.get("claim") or "").strip()
    if len(name) > chars:  # the middle left out: claims of one paper often differ at their ends
        head = (chars - 1) * 3 // 5
        name = name[:head].rstrip() + "…" + name[len(name) - (chars - 1 - head):].lstrip()
    r = role(row)
    return f"{name} ({r})" if r in ("regime", "null") else name


def plotted(row: dict) -> dict | None:
    """What the forest plot draws of a comparison or target row, or None when it has no number."""
    if row.get("kind") not in ("comparison", "target"):
        return None
    effect = _float(row.get("effect"))
    if math.isnan(effect):
        return None
    margin = parse_margin(row.get("margin", ""))
    ratio = bool(margin.get("ratio"))
    return {"effect": effect, "interval": parse_interval(row.get("interval", "")), "ratio": ratio,
            "margin": margin.get("margin"), "band": margin.get("band"), "null": 1.0 if ratio else 0.0,
            "target": row.get("kind") == "target"}


def _limits(p: dict) -> tuple[float, float, bool]:
    """x-limits of one strip and whether it is drawn on a log axis."""
    values = [p["effect"], *(p["interval"] or ())]
    if p["margin"] is not None:
        values.append(p["margin"])
    if p["band"]:
        values += [v for v in p["band"] if math.isfinite(v)]
    if not p["target"]:
        values.append(p["null"])
    values = [v for v in values if math.isfinite(v)]
    lo, hi = min(values), max(values)
    log = (p["ratio"] or lo > 0) and lo > 0 and hi / lo > (1.5 if p["ratio"] else 100)
    if log:
        pad = (hi / lo) ** 0.08
        return lo / pad, hi * pad, True
    span = hi - lo
    pad = 0.08 * span if span > 0 else max(abs(hi) * 0.1, 1e-3)
    return lo - pad, hi + pad, False


def _num(x: float) -> str:
    return f"{x:.3g}"


def _strip(ax, row: dict, p: dict) -> None:
    colour = VERDICT_COLOURS.get(row.get("reproduced", ""), "black")
    x0, x1, log = _limits(p)
    if log:
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.set_xscale("log")
        plain = FuncFormatter(lambda v, _: f"{v:g}")
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(plain if math.log10(x1 / x0) < 1.2 else NullFormatter())
    ax.set_xlim(x0, x1)
    ax.set_ylim(-1, 1)
    if p["band"]:
        lo, hi = p["band"]
        ax.axvspan(max(lo, x0), min(hi, x1), color=BAND_COLOUR, alpha=0.15, lw=0)
        for edge in p["band"]:
            if x0 <= edge <= x1:
                ax.axvline(edge, color=BAND_COLOUR, lw=0.8)
    if x0 <= p["null"] <= x1:
        ax.axvline(p["null"], color="0.25", lw=0.9)
    if p["margin"] is not None and x0 <= p["margin"] <= x1:
        ax.axvline(p["margin"], color="black", lw=0.9, ls="--")
    if p["interval"]:
        ax.hlines(0, *p["interval"], color=colour, lw=3)
    ax.plot([p["effect"]], [0], marker="o", ms=6, color=colour,
            mfc=colour if p["interval"] else "white", mew=1.5, ls="none")
    ax.text(1.01, 0.5, _strip_text(row, p), transform=ax.transAxes, ha="left", va="center", fontsize=7,
            color=colour)
    ax.set_yticks([0])
    ax.set_yticklabels([label(row)], fontsize=8)
    ax.tick_params(axis="x", which="both", labelsize=7, pad=1, length=2)
    ax.tick_params(axis="y", length=0)
    ax.grid(False, axis="y")
    ax.spines["left"].set_visible(False)


def _save(fig, path: Path) -> Path:
    """Without bbox_inches="tight", which draws the figure twice (most of the time of a picture):
    the layouts here leave room for their labels themselves."""
    import matplotlib.pyplot as plt

    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)
    return path


def _strip_text(row: dict, p: dict) -> str:
    iv = f" [{_num(p['interval'][0])}, {_num(p['interval'][1])}]" if p["interval"] else " (no interval)"
    return f"{row.get('reproduced', '')}: {_num(p['effect'])}{iv}"


def paper_figure(rows: Sequence[dict], path: str | Path, paper: str | None = None) -> Path:
    """The forest plot of one paper's comparison and target rows (see the module docstring)."""
    from .plotting import style

    plt = style()
    paper = paper or (rows[0]["paper"] if rows else "")
    candidates = [r for r in rows if r.get("kind") in ("comparison", "target")]
    drawn = [(r, p) for r in candidates if (p := plotted(r)) is not None]
    listed = [r for r in candidates if r.get("reproduced") == "untested" or plotted(r) is None]
    by_reason: dict[str, list[str]] = {}  # rows that give the same reason share one line
    for r in listed:
        reason = untested_reason(r) if r.get("reproduced") == "untested" else "no number"
        shown = " (drawn above)" if plotted(r) is not None else ""
        by_reason.setdefault(reason, []).append(label(r, 60) + shown)
    notes = []
    for reason, names in by_reason.items():
        notes += textwrap.wrap(f"{', '.join(names)}: {reason}", 130, subsequent_indent="    ")
    if not candidates:
        notes = ["no comparison or target rows (checks only)" if rows else "no claims rows"]
    heading = ["Untested or without a number:"] if candidates and notes else []
    strip_h, line_h, head_h = 0.5, 0.14, 0.7  # inches: one strip with its gap, one line of notes, title
    notes_h = line_h * len(heading + notes) + 0.15
    height = max(head_h + strip_h * len(drawn) + notes_h + 0.1, 1.6)
    # room for the longest label (8 pt) on the left and the longest verdict text (7 pt) on the right
    left_in = 0.3 + 0.07 * max([len(label(r)) for r, _ in drawn] or [0])
    right_in = 0.25 + 0.06 * max([len(_strip_text(r, p)) for r, p in drawn] or [0])
    width = max(10.0, left_in + right_in + 4.0)
    fig = plt.figure(figsize=(width, height))
    if drawn:
        grid = fig.add_gridspec(len(drawn), 1, hspace=1.1, top=1 - head_h / height,
                                bottom=(notes_h + 0.3) / height, left=left_in / width, right=1 - right_in / width)
        for i, (r, p) in enumerate(drawn):
            _strip(fig.add_subplot(grid[i, 0]), r, p)
    if notes:
        fig.text(0.2 / width, (notes_h - 0.05) / height, "\n".join(heading + notes), ha="left", va="top",
                 fontsize=7.5, color="0.2", linespacing=1.25)
    counts = {v: sum(r.get("reproduced") == v for r in candidates if role(r) == "claim") for v in CLAIM_ORDER}
    title = f"{paper}: " + ", ".join(f"{n} {v}" for v, n in counts.items())
    fig.suptitle(title, x=0.02, ha="left", fontsize=11, y=1 - 0.2 / height)
    if drawn:
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        handles = [Line2D([], [], color=VERDICT_COLOURS[v], marker="o", lw=3, label=v) for v in CLAIM_ORDER]
        handles += [Line2D([], [], color="0.25", lw=0.9, label="0 (1 for a ratio)"),
                    Line2D([], [], color="black", lw=0.9, ls="--", label="margin"),
                    Patch(color=BAND_COLOUR, alpha=0.15, label="target band")]
        fig.legend(handles=handles, loc="upper left", ncol=7, fontsize=7, frameon=False,
                   bbox_to_anchor=(0.02, 1 - 0.35 / height), handlelength=1.6, columnspacing=1.0)
    return _save(fig, Path(path))


def summary_figure(rows: Sequence[dict], path: str | Path, papers: Sequence[str] | None = None) -> Path:
    """Stacked bars of the claim verdicts per paper, and the checks in a panel apart."""
    import numpy as np

    from .plotting import style

    plt = style()
    papers = list(papers or dict.fromkeys(r["paper"] for r in rows))
    claim_counts = {v: np.zeros(len(papers)) for v in CLAIM_ORDER}
    check_counts = {v: np.zeros(len(papers)) for v in CHECK_ORDER}
    for i, p in enumerate(papers):
        for r in rows:
            if r["paper"] != p:
                continue
            if role(r) == "claim" and r.get("reproduced") in claim_counts:
                claim_counts[r["reproduced"]][i] += 1
            elif role(r) == "check" and r.get("reproduced") in check_counts:
                check_counts[r["reproduced"]][i] += 1
    fig, axes = plt.subplots(1, 2, figsize=(10, 1.2 + 0.32 * max(len(papers), 1)), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 1]}, sharey=True)
    y = np.arange(len(papers))
    for ax, table, title in ((axes[0, 0], claim_counts, "claims"), (axes[0, 1], check_counts, "checks")):
        left = np.zeros(len(papers))
        for verdict, values in table.items():
            ax.barh(y, values, left=left, color=VERDICT_COLOURS[verdict], label=verdict, height=0.7)
            for yi, (l0, v) in enumerate(zip(left, values)):
                if v:
                    ax.text(l0 + v / 2, yi, str(int(v)), ha="center", va="center", fontsize=7, color="white")
            left += values
        total = int(sum(v.sum() for v in table.values()))
        ax.set_title(f"{title} ({total})", pad=22)
        ax.set_xlabel("rows")
        ax.grid(False, axis="y")
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(table), fontsize=7, frameon=False,
                  handlelength=1.2, columnspacing=0.8)
    axes[0, 0].set_yticks(y)
    axes[0, 0].set_yticklabels(papers)
    axes[0, 0].invert_yaxis()
    fig.suptitle("Verdicts per paper (controls not counted)", x=0.02, ha="left")
    fig.tight_layout()
    return _save(fig, Path(path))


def draw(rows: Sequence[dict], out: str | Path, papers: Sequence[str] | None = None) -> list[Path]:
    """`out/summary.png` and `out/<paper>/figures/claims.png` for every paper (those of `papers`
    without rows get a picture that says so)."""
    out = Path(out)
    papers = list(dict.fromkeys([*(papers or []), *(r["paper"] for r in rows)]))
    written = [summary_figure(rows, out / "summary.png", papers)]
    for p in papers:
        written.append(paper_figure([r for r in rows if r["paper"] == p], out / p / "figures" / "claims.png", p))
    return written
