"""The reference run in the repository (`reference/`): its summary.csv with the commit, config
hash and machine that made it; each paper README's claims table generated from it; and the
comparison of a run against it (`neurips26 compare`)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from pathlib import Path
from typing import Sequence

from .claims import COLUMNS
from .io import read_csv, read_json, write_csv, write_json, write_text
from .report import compare, compare_markdown, read_claims, readme_with_table

PAPERS_DIR = Path(__file__).resolve().parents[1] / "papers"


def machine() -> dict:
    """The machine a run or reference was made on. The CPU's model and widest vector unit are part
    of it: the same float32 program can round differently under another CPU's kernels (the blocking
    of a matmul), so byte-identical metrics hold on one machine only."""
    from importlib.metadata import PackageNotFoundError, version

    model, flags = platform.processor(), set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    vector = next((name for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("neon", "NEON"), ("asimd", "NEON"))
                   if flag in flags), "unknown")
    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = None
    return {"system": platform.system(), "arch": platform.machine(), "cpus": os.cpu_count(),
            "cpu": model or "unknown", "vector": vector, "python": platform.python_version(), "torch": torch_version}


def _cpu(m: dict) -> str:
    return f"{m.get('cpu', '?')}, {m.get('vector', '?')}"


def machine_note(meta: dict | None, current: dict | None) -> str:
    """A line for compare.md naming the papers whose reference rows were recorded on another CPU
    than this run's, or on one the reference does not record (`meta` is reference/run.json)."""
    if not meta or not current:
        return ""
    here = _cpu(current)
    # a reference without per-paper entries was made on its one machine
    runs = meta.get("paper_runs") or {"all papers": {"cpu": _cpu(meta["machine"])} if "vector" in meta.get("machine", {}) else {}}
    other = sorted(p for p, v in runs.items() if v.get("cpu") != here)
    if not other:
        return ""
    unknown = sorted(p for p in other if not runs[p].get("cpu"))
    known = [f"{p} ({runs[p]['cpu']})" for p in other if runs[p].get("cpu")]
    parts = ([f"on another CPU: {', '.join(known)}"] if known else []) + (
        [f"on a CPU the reference does not record: {', '.join(unknown)}"] if unknown else [])
    return (f"This run's CPU is {here}. Reference rows recorded {'; '.join(parts)}. Float rounding differs "
            "between CPUs' kernels, so trained models can differ at rounding level and a verdict near its "
            "threshold can move: reruns are byte-identical on the same machine only.\n")


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def _summary_file(path: Path) -> Path:
    path = Path(path)
    return path / "summary.csv" if path.is_dir() else path


def make_reference(results: Path, out: Path, configfiles: Sequence[str] = (), workflow_dir: Path = Path("."),
                   papers: Sequence[str] = ()) -> list[Path]:
    """reference/summary.csv (every column) and reference/run.json (commit, config hash, machine).

    With `papers`, only those papers' rows are taken from the run (which may have run only them,
    e.g. `--config papers='[p]'`); every other paper keeps its rows from the existing reference,
    and run.json records for each paper the commit and config hash its rows came from."""
    from .tracking import git_state

    git = git_state(workflow_dir)  # before writing: the new summary itself must not count as a change
    rows = read_claims([_summary_file(results)])
    run_hash = _run_config_hash(Path(results), workflow_dir, configfiles)
    here = machine()
    origin = {p: {"commit": git["commit"], "config_hash": run_hash, "cpu": _cpu(here)}
              for p in sorted({r["paper"] for r in rows})}
    if papers:
        missing = sorted(set(papers) - set(origin))
        if missing:
            raise ValueError(f"{_summary_file(results)} has no rows of {', '.join(missing)}: run those papers first")
        old_meta = read_json(out / "run.json") if (out / "run.json").exists() else {}
        old_rows = read_claims([out / "summary.csv"]) if (out / "summary.csv").exists() else []
        kept = [r for r in old_rows if r["paper"] not in papers]
        old_origin = old_meta.get("paper_runs") or {
            p: {"commit": old_meta.get("commit", "?"), "config_hash": old_meta.get("config_hash", "?")}
            for p in old_meta.get("papers", [])}
        origin = {**{p: v for p, v in old_origin.items() if p not in papers},
                  **{p: origin[p] for p in papers}}
        new = [r for r in rows if r["paper"] in papers]
        order = {p: i for i, p in enumerate(dict.fromkeys([r["paper"] for r in old_rows] + list(papers)))}
        rows = sorted(kept + new, key=lambda r: order[r["paper"]])  # stable: each paper's rows keep their order
        from .config import load_config
        run_hash = config_hash(load_config(workflow_dir, list(configfiles)))
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "summary.csv", rows, COLUMNS)
    _reference_tuning(Path(results), out, papers)
    meta = {"commit": git["commit"], "dirty": git["dirty"],
            "configfiles": ["config/config.yaml", *configfiles],
            "config_hash": run_hash,
            "machine": here,
            "rows": len(rows), "papers": sorted({r["paper"] for r in rows}),
            "paper_runs": {p: origin[p] for p in sorted(origin) if p in {r["paper"] for r in rows}}}
    write_json(out / "run.json", meta)
    return [out / "summary.csv", out / "run.json"]


def _reference_tuning(results: Path, out: Path, papers: Sequence[str] = ()) -> None:
    """reference/tuning.csv from the run's tuning.csv (with `papers`: only their rows replaced)."""
    from . import tuning

    src = _summary_file(results).parent / "tuning.csv"
    if not src.exists():
        return
    rows = tuning.read_csv([src])
    if papers:
        old = tuning.read_csv([out / "tuning.csv"]) if (out / "tuning.csv").exists() else []
        order = {p: i for i, p in enumerate(dict.fromkeys([r["paper"] for r in old] + list(papers)))}
        rows = sorted([r for r in old if r["paper"] not in papers] + [r for r in rows if r["paper"] in papers],
                      key=lambda r: order[r["paper"]])
    write_csv(out / "tuning.csv", rows, tuning.COLUMNS)


def _run_config_hash(results: Path, workflow_dir: Path, configfiles: Sequence[str]) -> str:
    """The hash the run's report step recorded (the config exactly as Snakemake read it); the
    hash of the named configs when the run left none."""
    info = results / "run_info.json"
    if info.exists() and read_json(info).get("config_hash"):
        return read_json(info)["config_hash"]
    from .config import load_config

    return config_hash(load_config(workflow_dir, list(configfiles)))


def compare_folders(a: Path, b: Path, md_out: Path, tolerance: float = 0.05,
                    config_hash: str = "", current_machine: dict | None = None) -> tuple[dict, Path]:
    """Compare summary B against reference A (folders holding summary.csv, or the files); the
    machine of B is `current_machine`, else the one B's run_info.json records."""
    ref_rows, cur_rows = read_claims([_summary_file(a)]), read_claims([_summary_file(b)])
    result = compare(ref_rows, cur_rows, tolerance)
    text = compare_markdown(result, str(_summary_file(a)), str(_summary_file(b)))
    meta = _summary_file(a).parent / "run.json"
    if meta.exists():
        m = read_json(meta)
        text += (f"\nReference made at commit `{m.get('commit', '?')[:12]}` with "
                 f"{', '.join(m.get('configfiles', []))} (config hash {m.get('config_hash', '?')}).\n")
        if config_hash and config_hash != m.get("config_hash"):
            text += (f"This run's config hash is {config_hash}: another config than the reference's, "
                     "so differences are expected.\n")
        if current_machine is None and (_summary_file(b).parent / "run_info.json").exists():
            current_machine = read_json(_summary_file(b).parent / "run_info.json").get("machine")
        text += machine_note(m, current_machine)
    write_text(md_out, text)
    return result, md_out


def terminal_table(result: dict) -> str:
    from .report import compare_outcome

    lines = [compare_outcome(result)]
    for a, b in result["changed"]:
        lines.append(f"  verdict  {a['paper']:<16} {a['claim'][:60]:<60} {a['reproduced']:>12} -> {b['reproduced']}")
    for a, b in result["moved"]:
        lines.append(f"  moved    {a['paper']:<16} {a['claim'][:60]:<60} {a['effect']} {a['interval']} -> {b['effect']}")
    for r in result["only_reference"]:
        lines.append(f"  dropped  {r['paper']:<16} {r['claim'][:60]}")
    for r in result["only_current"]:
        lines.append(f"  new      {r['paper']:<16} {r['claim'][:60]}")
    return "\n".join(lines)


def readme_path(paper: str) -> Path:
    return PAPERS_DIR / paper / "README.md"


def write_readmes(summary: Path, papers: Sequence[str] | None = None, check: bool = False) -> list[Path]:
    """Replace the claims table of each paper's README with one generated from `summary`, and its
    tuning section with one from the tuning.csv beside it (when there is one); with `check`,
    write nothing and return the READMEs that differ."""
    from . import tuning

    rows = read_csv(_summary_file(summary))
    tuning_file = _summary_file(summary).parent / "tuning.csv"
    tuned = tuning.read_csv([tuning_file]) if tuning_file.exists() else []
    papers = papers or list(dict.fromkeys(r["paper"] for r in rows))
    changed = []
    for paper in papers:
        path = readme_path(paper)
        mine = [r for r in rows if r["paper"] == paper]
        if not mine:
            raise ValueError(f"{summary}: no claims rows for paper '{paper}'")
        text = path.read_text()
        new = readme_with_table(text, mine, "reference/summary.csv", path)
        knobs = [r for r in tuned if r["paper"] == paper]
        if knobs:
            new = tuning.readme_with_block(new, knobs, "reference/tuning.csv")
        if new != text:
            changed.append(path)
            if not check:
                write_text(path, new)
    return changed
