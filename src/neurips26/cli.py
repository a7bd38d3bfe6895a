"""`neurips26`: the one entry point every Snakemake rule calls.

    neurips26 <paper> <step> --params JSON --out DIR [--input NAME=PATH ...]
    neurips26 list [--configfile FILE ...]
    neurips26 report --claims FILE ... --out DIR [--reference DIR]
    neurips26 show PAPER [--results DIR] [--reference DIR]
    neurips26 ui [--store FILE] [--host HOST] [--port PORT]
    neurips26 readme [--summary FILE] [PAPER ...]
    neurips26 reference [--results DIR] [--out DIR]
    neurips26 compare [A] [B]
    neurips26 cost [--configfile FILE ...]
    neurips26 power [--summary FILE] [--results DIR]

Heavy libraries (torch, lightning, mlflow) are imported inside the steps, so start-up is fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .papers import SHARED, available, info, steps_module


# steps that train (Lightning): their runs record what the allocation did (CPU, memory, GPU utilisation)
TRAINING_STEPS = ("train", "pretrain", "classifier")


def _step_help() -> str:
    lines = ["papers and their steps:"]
    for paper in available():
        mod = info(paper)
        lines.append(f"  {paper:<16} {' -> '.join(mod.STEPS)}    {mod.TITLE}")
    lines += ["", "other commands:",
              "  list             each enabled paper with the variants and seeds the config would run",
              "  report           gather every paper's claims.csv into results/summary.{md,csv}",
              "  show PAPER       the paper's verdicts in the terminal (results/, or reference/ before a run)",
              "  ui               MLflow's web UI on the run's store (one worker; Ctrl-C stops every process)",
              "  readme           regenerate each paper README's claims table from a summary.csv",
              "  reference        copy results/summary.csv into reference/ with the commit, config and machine",
              "  compare          rows whose verdict or number moved between two summaries (default reference/ vs results/)",
              "  cost             GPU-hours and CPU-hours per paper that a config asks a SLURM cluster for",
              "  power            seeds and job-seconds that would decide each inconclusive comparison row"]
    for name in SHARED:
        mod = info(name)
        lines.append(f"  {name:<16} {' -> '.join(mod.STEPS)}    {mod.TITLE}")
    return "\n".join(lines)


def _parse_inputs(items: list[str]) -> dict[str, Path]:
    inputs = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            raise SystemExit(f"neurips26: --input expects NAME=PATH, got {item!r}")
        if path:  # NAME= is an optional input the config does not use
            inputs[name] = Path(path)
    return inputs


def _run_step(paper: str, step: str, args) -> int:
    mod = info(paper)
    if step not in mod.STEPS:
        raise SystemExit(f"neurips26: paper '{paper}' has no step '{step}'; steps: {', '.join(mod.STEPS)}")
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"neurips26: --params is not valid JSON ({exc})")
    inputs = _parse_inputs(args.input)
    for name, path in inputs.items():
        if not path.exists():
            raise SystemExit(f"neurips26 {paper} {step}: input '{name}' ({path}) does not exist")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    job = {"rule": args.rule or f"{paper}_{step}", "wildcards": json.loads(args.wildcards) if args.wildcards else {}}
    params.setdefault("threads", args.threads)

    from .core import job as job_context
    from .core import seeding, tracking
    from .core.io import InputFileError

    seeding.seed_everything(int(params.get("seed", 0)), threads=args.threads, lazy=True)
    steps = steps_module(paper)
    started = time.perf_counter()
    before = _files_under(out)
    job_context.begin(paper, inputs, retrain=job_context.retrain_requested(f"{paper} {step}"))
    rank = job_context.global_rank()
    if rank != 0:
        print(f"neurips26 {paper} {step}: rank {rank}: outputs and MLflow logging are left to rank 0", flush=True)
    try:
        with tracking.job_run(paper, step, params, out, job=job, enabled=not args.no_tracking and rank == 0,
                              system_metrics=step in TRAINING_STEPS) as run:
            written = getattr(steps, step)(params=params, inputs=inputs, out=out)
            if written:
                run.outputs = list(written)
            run.log_metrics({"job_seconds": time.perf_counter() - started})
    except BaseException as exc:
        if rank == 0:
            _remove_partial_outputs(out, before)
        if isinstance(exc, InputFileError):
            raise SystemExit(f"neurips26 {paper} {step}: {exc}") from None
        if isinstance(exc, Exception) and tracking.is_tracking_error(exc):
            # fail the job, so Snakemake removes its outputs: no result without its run
            raise SystemExit(f"neurips26 {paper} {step}: MLflow tracking at {tracking.tracking_uri()} failed, "
                             f"the job's outputs are not kept: {str(exc).splitlines()[0][:500]}") from None
        raise
    if rank != 0:
        return 0
    for folder in job_context.finish():
        print(f"neurips26 {paper} {step}: outputs written, removed the checkpoints in {folder} "
              f"(keep_checkpoints: true keeps them)")
    cpu, peak_mb = _own_usage()
    print(f"neurips26 {paper} {step}: done in {time.perf_counter() - started:.1f}s "
          f"(cpu {cpu:.1f}s, peak memory {peak_mb:.0f} MB) -> {out}")
    return 0


def _own_usage() -> tuple[float, float]:
    """CPU seconds of this process and the children it waited for, and its peak resident memory
    in MB. Reported by the step itself: under a warm start (core/warm.py) Snakemake's benchmark
    measures only the client that waits for it."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    return cpu, max(own.ru_maxrss, children.ru_maxrss) / 1024


def _files_under(out: Path) -> set[Path]:
    return set(out.rglob("*"))


def _remove_partial_outputs(out: Path, before: set[Path]) -> None:
    """Remove the files a failed step created in `out` itself or in folders it created (a
    folder that was already there may hold another job's outputs); checkpoints stay, for the
    resume."""
    for path in sorted(_files_under(out) - before, reverse=True):
        rel = path.relative_to(out)
        if "checkpoints" in rel.parts or not path.is_file():
            continue
        if any(parent in before for parent in path.parents if parent != out and out in parent.parents):
            continue
        path.unlink(missing_ok=True)


def _list(args) -> int:
    from .core.config import ConfigError
    from .papers import load_config

    try:
        config = load_config(args.workflow_dir, args.configfile)
    except ConfigError as exc:
        raise SystemExit(f"neurips26: {exc}")
    print(f"scale: {config['scale']}")
    for paper in config["papers"]:
        block = config[paper]
        variants = block.get("run_variants") or list(block.get("variants", {})) or ["-"]
        seeds = block.get("seeds", [0])
        print(f"{paper:<16} variants: {', '.join(variants)}   seeds: {', '.join(map(str, seeds))}")
    return 0


def _report(args) -> int:
    from .core import report, tracking
    from .core.io import write_json, write_text

    out = Path(args.out)
    with tracking.job_run("summary", "report", {"claims": args.claims}, out,
                          job={"rule": "report"}, enabled=not args.no_tracking) as run:
        written = report.summarize([Path(p) for p in args.claims], out)
        if args.tuning:
            from .core import tuning

            pictures, text = tuning.summarize([Path(p) for p in args.tuning], out)
            written += pictures
            report.add_paragraph(out / "summary.md", text)
        from .core.reference import machine as this_machine

        machine = this_machine()
        if args.reference:
            from .core import reference

            result, md = reference.compare_folders(Path(args.reference), out, out / "compare.md",
                                                   config_hash=args.config_hash, current_machine=machine)
            print(report.compare_outcome(result))
        else:
            md = out / "compare.md"
            write_text(md, "# Comparison\n\nNo reference run (reference/summary.csv) to compare with.\n")
        written.append(md)
        write_json(out / "run_info.json", {"config_hash": args.config_hash, "machine": machine})
        written.append(out / "run_info.json")
        run.outputs = written
    print(f"neurips26 report: {out / 'summary.md'}")
    return 0


def _show(args) -> int:
    from .core import report

    paper = args.paper
    if paper not in available():
        print(f"neurips26 show: no paper '{paper}'; papers: {', '.join(available())}")
        return 2
    own = Path(args.results) / paper / "claims.csv"
    reference = Path(args.reference) / "summary.csv"
    if not reference.exists() and args.reference == "reference":  # run from outside the checkout
        reference = Path(__file__).resolve().parents[2] / "reference" / "summary.csv"
    if own.exists():
        rows, source = report.read_claims([own]), str(own)
    elif reference.exists():
        rows = [r for r in report.read_claims([reference]) if r["paper"] == paper]
        source = f"{reference}, the reference run: {own} does not exist yet"
    else:
        rows, source = [], ""
    if not rows:
        print(f"neurips26 show: no claims rows for '{paper}' in {own} or {reference}")
        return 2
    print(f"{paper}: {info(paper).TITLE}")
    print(report.terminal_table(rows, source))
    return 0


def _readme(args) -> int:
    from .core import reference

    changed = reference.write_readmes(Path(args.summary), args.papers or None, check=args.check)
    for path in changed:
        print(f"{'out of date' if args.check else 'updated'}: {path}")
    return 1 if (args.check and changed) else 0


def _reference(args) -> int:
    from .core import reference

    try:
        written = reference.make_reference(Path(args.results), Path(args.out), args.configfile, papers=args.papers)
    except ValueError as exc:
        print(f"neurips26 reference: {exc}")
        return 2
    print("\n".join(f"wrote {p}" for p in written))
    return 0


def _compare(args) -> int:
    from .core import reference

    a, b = Path(args.a), Path(args.b)
    for side in (a, b):
        if not (side / "summary.csv" if side.is_dir() else side).exists():
            print(f"neurips26 compare: no summary at {side} (a folder holding summary.csv, or the file)")
            return 2
    md_out = Path(args.markdown) if args.markdown else ((b if b.is_dir() else b.parent) / "compare.md")
    result, md = reference.compare_folders(a, b, md_out, tolerance=args.tolerance)
    print(md.read_text() if args.verbose else reference.terminal_table(result))
    print(f"written: {md}")
    return 1 if (result["changed"] or result["only_reference"] or result["only_current"]) else 0


def _power(args) -> int:
    from .core import power
    from .core.io import read_csv

    summary = Path(args.summary)
    if not summary.exists():
        print(f"neurips26 power: no summary at {summary}")
        return 2
    print(power.markdown(power.table(read_csv(summary), Path(args.results))), end="")
    return 0


def _cost(args) -> int:
    from .core import cost
    from .core.config import ConfigError
    from .papers import load_config

    try:
        config = load_config(args.workflow_dir, args.configfile)
    except ConfigError as exc:
        raise SystemExit(f"neurips26: {exc}")
    try:
        jobs = cost.dry_run(Path(args.workflow_dir), ["config/config.yaml", *args.configfile])
    except RuntimeError as exc:
        raise SystemExit(f"neurips26 cost: {exc}")
    print(f"scale: {config['scale']}; hours are the rules' time limits (runtime), an upper bound")
    print(cost.markdown(cost.per_paper(jobs, config["papers"])), end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="neurips26", description="Re-run NeurIPS 2026 papers against their baselines.",
        epilog=_step_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command",
                                metavar="{<paper>,list,show,ui,report,readme,reference,compare,power,cost}")

    p_list = sub.add_parser("list", help="papers, variants and seeds the config would run")
    p_list.add_argument("--configfile", action="append", default=[], help="extra config on top of config/config.yaml")
    p_list.add_argument("--workflow-dir", default=".", help="folder holding config/ and workflow/")

    p_report = sub.add_parser("report", help="summary table of every paper's claims")
    p_report.add_argument("--claims", nargs="+", required=True)
    p_report.add_argument("--out", required=True)
    p_report.add_argument("--tuning", nargs="*", default=[],
                          help="each paper's tuning.csv: also write tuning.csv and <paper>/figures/tuning.png")
    p_report.add_argument("--no-tracking", action="store_true", help="do not log to MLflow")
    p_report.add_argument("--reference", default="", help="folder with a reference summary.csv: also write compare.md")
    p_report.add_argument("--config-hash", default="", help="hash of this run's config, named in compare.md")

    p_show = sub.add_parser("show", help="a paper's verdicts in the terminal (results/, else reference/)")
    p_show.add_argument("paper", help="the paper (neurips26 --help lists them)")
    p_show.add_argument("--results", default="results", help="the run's folder (default results/)")
    p_show.add_argument("--reference", default="reference",
                        help="folder with the reference summary.csv, read when the run has no claims.csv for the paper")

    p_ui = sub.add_parser("ui", help="MLflow's web UI on the run's store (make ui)")
    p_ui.add_argument("--store", default="results/mlflow.db", help="the run's MLflow SQLite store")
    p_ui.add_argument("--host", default="127.0.0.1")
    p_ui.add_argument("--port", type=int, default=5000)

    p_readme = sub.add_parser("readme", help="regenerate the claims table of each paper README")
    p_readme.add_argument("papers", nargs="*", help="papers to update (default: every paper in the summary)")
    p_readme.add_argument("--summary", default="reference/summary.csv", help="summary.csv (or a paper's claims.csv) to read")
    p_readme.add_argument("--check", action="store_true", help="only report READMEs that differ; exit 1 if any")

    p_ref = sub.add_parser("reference", help="record results/summary.csv as the reference run")
    p_ref.add_argument("--results", default="results")
    p_ref.add_argument("--out", default="reference")
    p_ref.add_argument("--configfile", action="append", default=[], help="configs the run used on top of config/config.yaml")
    p_ref.add_argument("--papers", nargs="+", default=[], help="update only these papers' rows (the others keep theirs)")

    p_cost = sub.add_parser("cost", help="GPU-hours and CPU-hours per paper that a config asks a SLURM cluster for")
    p_cost.add_argument("--configfile", action="append", default=[], help="extra config on top of config/config.yaml")
    p_cost.add_argument("--workflow-dir", default=".", help="folder holding the Snakefile, config/ and profiles/")

    p_pow = sub.add_parser("power", help="replicates and job-seconds that would decide each inconclusive comparison")
    p_pow.add_argument("--summary", default="results/summary.csv", help="summary.csv to read (e.g. reference/summary.csv)")
    p_pow.add_argument("--results", default="results", help="the run whose benchmark files give the cost of a seed")

    p_cmp = sub.add_parser("compare", help="compare two summaries: verdicts changed, numbers moved, rows on one side")
    p_cmp.add_argument("a", nargs="?", default="reference", help="reference folder or summary.csv (default reference/)")
    p_cmp.add_argument("b", nargs="?", default="results", help="folder or summary.csv to check (default results/)")
    p_cmp.add_argument("--tolerance", type=float, default=0.05, help="relative change allowed for rows without an interval")
    p_cmp.add_argument("--markdown", default="", help="where to write the markdown (default compare.md beside B)")
    p_cmp.add_argument("--verbose", action="store_true", help="print the whole markdown instead of the table")

    for paper in [*available(), *SHARED]:
        mod = info(paper)
        p = sub.add_parser(paper, help=mod.TITLE)
        p.add_argument("step", choices=mod.STEPS)
        p.add_argument("--params", default="{}", help="the step's params as JSON")
        p.add_argument("--out", required=True, help="output folder of the step")
        p.add_argument("--input", action="append", default=[], metavar="NAME=PATH")
        p.add_argument("--threads", type=int, default=1, help="torch threads (fixed for reproducibility)")
        p.add_argument("--rule", default="", help="the Snakemake rule running this step (default <paper>_<step>), for tracking")
        p.add_argument("--wildcards", default="", help="the Snakemake job's wildcards as JSON (for tracking)")
        p.add_argument("--no-tracking", action="store_true", help="do not log to MLflow")

    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "list":
        return _list(args)
    if args.command == "report":
        return _report(args)
    if args.command == "show":
        return _show(args)
    if args.command == "ui":
        from .core import ui

        return ui.serve(Path(args.store), args.host, args.port)
    if args.command == "cost":
        return _cost(args)
    if args.command == "power":
        return _power(args)
    if args.command in ("readme", "reference", "compare"):
        return {"readme": _readme, "reference": _reference, "compare": _compare}[args.command](args)
    return _run_step(args.command, args.step, args)


def finish(rc: int | None) -> None:
    """End the process with status `rc`. A finished job has ended its MLflow run and written its
    outputs atomically; tearing down torch's and MLflow's modules at exit would add about a second
    to every job, so the process ends here once its streams are flushed. In a fresh process an
    error (SystemExit, exception) exits the usual way; a warm-start fork ends through here in
    both cases (core/warm.py), as tearing down its preloaded modules takes seconds."""
    import logging
    import os

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
