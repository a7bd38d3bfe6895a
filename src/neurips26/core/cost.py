"""`neurips26 cost`: what a config would ask a SLURM cluster for, before anyone submits.

The jobs and their resources come from the workflow itself: a dry run through profiles/slurm
(`snakemake -n`), which lists every job with the resources its rule gives it. Data and weight
paths of the config (keys ending in _dir, _path, _file) are replaced by empty stand-ins in a
temporary folder, so the estimate needs nothing staged. Hours are the requested time limits
(`runtime`), an upper bound of what the jobs use: GPU-hours = gpu x runtime; CPU-hours = ranks
(tasks_per_node) x CPUs per rank (cpus_per_task, else threads) x runtime.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def stand_in_paths(value: Any, where: Path) -> Any:
    """The config with every path named under a key ending in _dir/_path/_file replaced by a
    created stand-in under `where` (folders for _dir, empty files otherwise); other keys dropped."""
    if isinstance(value, dict):
        out = {}
        for key, sub in value.items():
            if isinstance(sub, str) and key.endswith("_dir"):
                target = where / key / sub.strip("/").replace("/", "_")
                target.mkdir(parents=True, exist_ok=True)
                out[key] = str(target)
            elif isinstance(sub, str) and key.endswith(("_path", "_file")):
                target = where / key / sub.strip("/").replace("/", "_")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()
                out[key] = str(target)
            elif isinstance(sub, dict):
                out[key] = stand_in_paths(sub, where)
        return {k: v for k, v in out.items() if v != {}}
    return value


def parse_dry_run(text: str) -> list[dict[str, Any]]:
    """[{rule, threads, resources}] for each job a dry run lists."""
    jobs: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith(("rule ", "localrule ")) and line.rstrip().endswith(":"):
            current = {"rule": line.split()[1].rstrip(":"), "threads": 1, "resources": {}}
            jobs.append(current)
        elif current is not None and line.strip().startswith("threads:"):
            current["threads"] = int(line.split(":", 1)[1])
        elif current is not None and line.strip().startswith("resources:"):
            pairs = line.split("resources:", 1)[1].split(", ")
            current["resources"] = dict(p.strip().split("=", 1) for p in pairs if "=" in p)
            current = None
    return jobs


def dry_run(workflow_dir: Path, configfiles: list[str]) -> list[dict[str, Any]]:
    """The jobs of the workflow under `configfiles`, through profiles/slurm, data paths stood in."""
    import yaml

    workflow_dir = Path(workflow_dir).resolve()
    merged: dict = {}
    for name in configfiles:
        _merge(merged, yaml.safe_load((workflow_dir / name).read_text()) or {})
    with tempfile.TemporaryDirectory(prefix="neurips26-cost-") as tmp:
        overlay = Path(tmp) / "stand_in_paths.yaml"
        overlay.write_text(yaml.safe_dump(stand_in_paths(merged, Path(tmp) / "data")))
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        # --forceall: every job the config asks for, whatever results/ already holds
        proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--nolock", "--profile", "profiles/slurm",
                               "--configfile", *configfiles, str(overlay)],
                              cwd=workflow_dir, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the dry run failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return parse_dry_run(proc.stdout + proc.stderr)


def _merge(into: dict, extra: dict) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _number(value: Any, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def job_cost(job: dict[str, Any]) -> dict[str, float]:
    res = job["resources"]
    hours = _number(res.get("runtime")) / 60
    ranks = _number(res.get("tasks_per_node"), 1) or 1
    cpus = _number(res.get("cpus_per_task"), job["threads"]) or job["threads"]
    gpus = _number(res.get("gpu"))
    return {"gpus": gpus, "cpus": ranks * cpus, "mem_gb": _number(res.get("mem_mb")) / 1000, "hours": hours,
            "gpu_hours": gpus * hours, "cpu_hours": ranks * cpus * hours}


def paper_of(rule: str, papers: list[str]) -> str:
    """The paper a rule belongs to; rules of no paper (shared assets, the report) by their name."""
    return next((p for p in sorted(papers, key=len, reverse=True) if rule.startswith(f"{p}_")), rule)


def per_paper(jobs: list[dict[str, Any]], papers: list[str]) -> list[dict[str, Any]]:
    """One row per paper: jobs, GPU jobs with their per-job resources, GPU-hours, CPU-hours."""
    rows: dict[str, dict[str, Any]] = {}
    for job in jobs:
        if job["rule"] == "all":
            continue
        paper = paper_of(job["rule"], papers)
        row = rows.setdefault(paper, {"paper": paper, "jobs": 0, "gpu_hours": 0.0, "cpu_hours": 0.0, "gpu_rules": {}})
        cost = job_cost(job)
        row["jobs"] += 1
        row["gpu_hours"] += cost["gpu_hours"]
        row["cpu_hours"] += cost["cpu_hours"]
        if cost["gpus"]:
            spec = (f"{cost['gpus']:g} GPU, {cost['cpus']:g} CPU, {cost['mem_gb']:g} GB, {cost['hours']:g} h")
            entry = row["gpu_rules"].setdefault(job["rule"], {"count": 0, "spec": spec})
            entry["count"] += 1
    order = {p: i for i, p in enumerate(papers)}
    return sorted(rows.values(), key=lambda r: order.get(r["paper"], len(order)))


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| paper | jobs | GPU jobs: count x (per job) | GPU-hours | CPU-hours |", "|---|---:|---|---:|---:|"]
    for row in rows:
        # by rule name: Snakemake's dry run lists ready jobs in an order that moves when the DAG changes
        gpu = "; ".join(f"`{rule}`: {e['count']} x ({e['spec']})"
                        for rule, e in sorted(row["gpu_rules"].items())) or "none"
        lines.append(f"| `{row['paper']}` | {row['jobs']} | {gpu} | {row['gpu_hours']:,.0f} | {row['cpu_hours']:,.0f} |")
    total_gpu = sum(r["gpu_hours"] for r in rows)
    total_cpu = sum(r["cpu_hours"] for r in rows)
    lines.append(f"| total | {sum(r['jobs'] for r in rows)} | | {total_gpu:,.0f} | {total_cpu:,.0f} |")
    return "\n".join(lines) + "\n"
