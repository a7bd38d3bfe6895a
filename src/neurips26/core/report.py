"""Cross-paper summary: every paper's claims.csv into results/summary.csv and summary.md."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .claims import COLUMNS
from .io import read_csv, write_csv, write_text


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def summarize(claims_files: Sequence[Path], out: Path) -> list[Path]:
    rows = []
    for path in claims_files:
        for row in read_csv(path):
            missing = [c for c in COLUMNS if c not in row]
            if missing:
                raise ValueError(f"{path}: claims file lacks columns {missing}")
            rows.append({c: row[c] for c in COLUMNS})
    csv_path, md_path = out / "summary.csv", out / "summary.md"
    write_csv(csv_path, rows, COLUMNS)
    counts = {k: sum(r["reproduced"] == k for r in rows) for k in ("yes", "partly", "no")}
    lines = [
        "# neurips26: claims checked",
        "",
        f"{len(rows)} claims from {len({r['paper'] for r in rows})} papers: "
        f"{counts['yes']} reproduced, {counts['partly']} partly, {counts['no']} not. "
        "`reproduced` is computed from the numbers: `yes` when the method beats the baseline "
        "by more than the pooled spread over seeds, `partly` when better within the spread.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(_md_cell(r[c]) for c in COLUMNS) + " |" for r in rows]
    write_text(md_path, "\n".join(lines) + "\n")
    return [csv_path, md_path]
