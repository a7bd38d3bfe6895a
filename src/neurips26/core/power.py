"""`neurips26 power`: what it would take to decide the inconclusive comparison rows.

For every `inconclusive` comparison claim of a summary, `n_to_decide` (computed by the rule in
`core.claims`) is the replicates per side at which the observed spread would decide the row with
90% power. What that costs comes from the run's Snakemake benchmark files: a paper's job-seconds
of the jobs that belong to one seed (the `seed<k>` in the benchmark's name), averaged over its
seeds, times the seeds to add. Rows of one paper share seeds, so the paper's cost is that of its
largest `n_to_decide`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from .io import read_csv

SEED = re.compile(r"seed(\d+)")


def seed_seconds(results: Path, paper: str) -> tuple[float, int]:
    """Mean job-seconds one seed of `paper` costs in the run under `results`, and its seed count
    (0 when the run left no benchmark files for the paper)."""
    per_seed: dict[str, float] = {}
    for tsv in sorted((results / paper / "benchmarks").rglob("*.tsv")):
        m = SEED.search(tsv.stem)
        if not m:
            continue
        rows = read_csv(tsv, delimiter="\t")
        if rows:
            per_seed[m.group(1)] = per_seed.get(m.group(1), 0.0) + sum(float(r["s"]) for r in rows) / len(rows)
    if not per_seed:
        return float("nan"), 0
    return sum(per_seed.values()) / len(per_seed), len(per_seed)


def _replicate_is_seed(paper: str, row_id: str) -> bool:
    """Whether the row's declared replicate is a seed; True where the paper declares no such row."""
    from .claims import SpecError, load_spec

    try:
        declared = {e["id"]: e for e in load_spec(paper)}
    except SpecError:
        return True
    return "seed" in str(declared.get(row_id, {}).get("replicate", "seeds")).lower()


def _replicates(n: str) -> int:
    sides = [int(x) for x in re.findall(r"\d+", str(n))]
    return min(sides) if sides else 0


def table(rows: Sequence[dict], results: Path) -> list[dict]:
    """One entry per inconclusive comparison claim: its n now, n_to_decide, the seeds to add and
    their job-seconds."""
    out, costs = [], {}
    for r in rows:
        if r.get("kind") != "comparison" or r.get("reproduced") != "inconclusive" or not r.get("n_to_decide"):
            continue
        if (r.get("role") or "claim") != "claim":
            continue
        paper = r["paper"]
        if paper not in costs:
            costs[paper] = seed_seconds(results, paper)
        per_seed, _ = costs[paper]
        now, need = _replicates(r["n"]), int(float(r["n_to_decide"]))
        add = max(0, need - now)
        # a seed's cost only prices rows whose replicates are seeds (not blocks of days, instances, ...)
        seeds = _replicate_is_seed(paper, r.get("id", ""))
        out.append({"paper": paper, "id": r.get("id", ""), "claim": r["claim"], "n": now, "n_to_decide": need,
                    "add_seeds": add, "job_seconds": per_seed * add if seeds else float("nan"),
                    "replicates_are_seeds": seeds})
    return out


def markdown(entries: Sequence[dict]) -> str:
    if not entries:
        return "No inconclusive comparison rows.\n"
    lines = ["| paper | id | n now | n_to_decide | seeds to add | job-seconds |", "|---|---|---|---|---|---|"]
    for e in entries:
        if not e.get("replicates_are_seeds", True):
            cost = "n/a (replicates are not seeds)"
        elif e["job_seconds"] != e["job_seconds"]:
            cost = "n/a (no benchmarks)"
        else:
            cost = f"{e['job_seconds']:,.0f}"
        lines.append(f"| {e['paper']} | {e['id'] or e['claim'][:50]} | {e['n']} | {e['n_to_decide']} | "
                     f"{e['add_seeds']} | {cost} |")
    lines += ["", "Per paper, the seeds its largest n_to_decide needs (rows of a paper share seeds):", "",
              "| paper | rows | seeds to add | job-seconds | within reach (<= 10 seeds) |", "|---|---|---|---|---|"]
    for paper in dict.fromkeys(e["paper"] for e in entries):
        mine = [e for e in entries if e["paper"] == paper]
        worst = max((e for e in mine if e.get("replicates_are_seeds", True)), key=lambda e: e["add_seeds"],
                    default=None)
        if worst is None:
            lines.append(f"| {paper} | {len(mine)} | n/a (replicates are not seeds) | n/a | - |")
            continue
        reach = [e for e in mine if e["n_to_decide"] <= 10]
        cost = "n/a" if worst["job_seconds"] != worst["job_seconds"] else f"{worst['job_seconds']:,.0f}"
        lines.append(f"| {paper} | {len(mine)} | {worst['add_seeds']} | {cost} | {len(reach)} of {len(mine)} |")
    return "\n".join(lines) + "\n"
