"""Where the time of a finished DAG run went: job time per paper and rule, time inside the steps
against start-up, and the critical path.

    python benchmarks/dag_profile.py [--configfile config/smoke.yaml] [--workdir DIR] [--markdown]

Reads every job's `benchmark:` file (wall seconds `s`, CPU seconds `cpu_time`) and its `log:` (the CLI's closing line
"done in X s (cpu Y s, ...)" is the time inside the step and the step process's CPU time, which replaces the
benchmark's: under a warm start the benchmark measures only the client; the rest of a job is start-up and
imports). Rules and their file patterns come from the workflow itself (Snakemake's API), the
rule dependencies from its job DAG (as with --forceall). The critical path is computed on the rule
graph with each rule weighted by its slowest job: the run's duration on unlimited cores; on C
cores a run lasts at least max(critical path, job-seconds / C).

`--simulate` replays the run's jobs on C cores from their measured times as a list schedule (a
free core takes the next ready job): (a) in the DAG's job order, a stand-in for the order
Snakemake picks among jobs of equal priority (every rule's, here), and (b) longest chain first (each rule ranked by its bottom level: its slowest
job plus the longest chain of rules that wait on it), the order rule priorities would give. When
(b) is not shorter, priorities would not shorten the run.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DONE = re.compile(r"done in ([0-9.]+)s")
# the step's own CPU seconds on the same line (a warm-started job's benchmark measures only its client)
CPU = re.compile(r"done in [0-9.]+s \(cpu ([0-9.]+)s")


def _pattern_regex(pattern: str) -> re.Pattern:
    out, pos = "", 0
    for m in re.finditer(r"\{([^{}]+)\}", pattern):
        out += re.escape(pattern[pos:m.start()])
        name, _, constraint = m.group(1).partition(",")
        out += f"(?P<{name.strip()}>{constraint or '[^/]+'})"
        pos = m.end()
    return re.compile(out + re.escape(pattern[pos:]) + "$")


def _glob(pattern: str) -> str:
    return re.sub(r"\{[^{}]+\}", "*", pattern)


@contextlib.contextmanager
def _workflow(configfiles: list[str], root: Path):
    """The parsed workflow (Snakemake's API) under config/config.yaml and `configfiles`."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    files = [root / "config" / "config.yaml", *(root / c for c in configfiles)]
    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        yield api.workflow(resource_settings=ResourceSettings(cores=1), config_settings=ConfigSettings(configfiles=files),
                           snakefile=root / "Snakefile", workdir=root)


def workflow_rules(configfiles: list[str], root: Path = ROOT) -> dict[str, tuple[str | None, str | None]]:
    """rule -> (benchmark pattern, log pattern)."""
    with _workflow(configfiles, root) as wf:
        rules = {}
        for rule in wf._workflow.rules:
            log = rule.log[0] if rule.log else None
            rules[rule.name] = (str(rule.benchmark) if rule.benchmark else None, str(log) if log else None)
        return rules


def job_graph(configfiles: list[str], root: Path = ROOT) -> list[dict]:
    """Every job of the run (Snakemake's DAG, as with --forceall) in the DAG's order: its rule, its
    wildcards and the indices of the jobs it waits on."""
    from snakemake.settings.types import DAGSettings

    with _workflow(configfiles, root) as wf:
        workflow = wf.dag(dag_settings=DAGSettings(forceall=True)).workflow_api._workflow
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
        workflow._build_dag()
        dag = workflow.dag
        order = list(dag.jobs)
        index = {job: i for i, job in enumerate(order)}
        return [{"rule": job.rule.name, "wildcards": dict(job.wildcards.items()),
                 "deps": sorted(index[d] for d in dag._dependencies[job] if d in index)} for job in order]


def rule_edges_of(graph: list[dict]) -> set[tuple[str, str]]:
    return {(graph[d]["rule"], job["rule"]) for job in graph for d in job["deps"]}


def bottom_levels(edges: set[tuple[str, str]], weight: dict[str, float]) -> dict[str, float]:
    """Per rule: its weight plus the longest chain of weights of the rules that wait on it (the
    longest path ending at it in the reversed graph)."""
    return {n: length for n, (length, _) in longest_paths({(v, u) for u, v in edges}, weight).items()}


def simulate(graph: list[dict], seconds: list[float], cores: int, priority: list[float] | None = None) -> float:
    """The wall seconds of a list schedule on `cores` single-threaded slots: whenever a slot is free,
    the ready job of highest priority starts (ties, or no priorities: the DAG's job order)."""
    import heapq

    waiting = [len(job["deps"]) for job in graph]
    users = defaultdict(list)
    for i, job in enumerate(graph):
        for d in job["deps"]:
            users[d].append(i)
    key = (lambda i: (-priority[i], i)) if priority is not None else (lambda i: (0, i))
    ready = [key(i) for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    running: list[tuple[float, int]] = []
    now, done = 0.0, 0
    while ready or running:
        while ready and len(running) < cores:
            i = heapq.heappop(ready)[1]
            heapq.heappush(running, (now + seconds[i], i))
        now, i = heapq.heappop(running)
        done += 1
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, key(u))
    if done != len(graph):
        raise ValueError("the job graph has a cycle")
    return now


def job_seconds(graph: list[dict], found: list[dict]) -> tuple[list[float], int]:
    """Each graph job's measured seconds (its benchmark file; 0 for a job without one) and how many
    jobs had none."""
    measured = {(j["rule"], tuple(sorted(j["wildcards"].items()))): j["seconds"] for j in found}
    out, missing = [], 0
    for job in graph:
        hits = [s for (rule, wc), s in measured.items()
                if rule == job["rule"] and all(job["wildcards"].get(k) == v for k, v in wc)]
        missing += not hits
        out.append(max(hits, default=0.0))
    return out, missing


def jobs(rules: dict, root: Path = ROOT) -> list[dict]:
    out = []
    for rule, (bench, log) in rules.items():
        if not bench:
            continue
        regex = _pattern_regex(bench)
        for path in sorted(root.glob(_glob(bench))):
            m = regex.search(str(path.relative_to(root)))
            if not m:
                continue
            lines = path.read_text().splitlines()
            if len(lines) < 2:
                continue
            row = dict(zip(lines[0].split("\t"), lines[-1].split("\t")))
            seconds = float(row["s"])
            step, cpu = float("nan"), float(row.get("cpu_time") or "nan")
            if log:
                log_path = root / re.sub(r"\{([^{},]+)(,[^{}]*)?\}", lambda w: m.group(w.group(1).strip()), log)
                text = log_path.read_text() if log_path.exists() else ""
                found, own_cpu = DONE.findall(text), CPU.findall(text)
                step = float(found[-1]) if found else float("nan")
                cpu = float(own_cpu[-1]) if own_cpu else cpu
            end = path.stat().st_mtime  # the benchmark file is written as the job ends
            out.append({"rule": rule, "wildcards": m.groupdict(), "seconds": seconds, "step": step, "cpu": cpu,
                        "end": end})
    return out


def paper_of(rule: str, papers: list[str]) -> str:
    best = [p for p in papers if rule == p or rule.startswith(p + "_")]
    return max(best, key=len) if best else rule


def occupancy(spans: list[tuple[float, float]], cores: int) -> dict:
    """From the jobs' (start, end) times: the run's wall seconds (first start to last end), core
    utilisation (job-seconds / (cores x wall)), and the seconds during which fewer jobs than
    cores ran, with the core-seconds left idle then (a run's tail, or a chain of single jobs)."""
    if not spans:
        return {"wall": 0.0, "utilisation": float("nan"), "under_seconds": 0.0, "idle_core_seconds": 0.0}
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    under = idle = 0.0
    running, last = 0, events[0][0]
    for t, step in events:
        if running < cores:
            under += t - last
            idle += (cores - running) * (t - last)
        running, last = running + step, t
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    busy = sum(e - s for s, e in spans)
    return {"wall": wall, "utilisation": busy / (cores * wall) if wall > 0 else float("nan"),
            "under_seconds": under, "idle_core_seconds": idle}


def longest_paths(edges: set[tuple[str, str]], weight: dict[str, float]) -> dict[str, tuple[float, list[str]]]:
    """Per node: the heaviest path of weights that ends at it (its length and nodes)."""
    preds = defaultdict(set)
    nodes = set(weight)
    for u, v in edges:
        preds[v].add(u)
        nodes |= {u, v}
    memo: dict[str, tuple[float, list[str]]] = {}

    def longest(node: str) -> tuple[float, list[str]]:
        if node not in memo:
            best = max((longest(p) for p in preds[node]), default=(0.0, []), key=lambda t: t[0])
            memo[node] = (best[0] + weight.get(node, 0.0), best[1] + [node])
        return memo[node]

    return {n: longest(n) for n in sorted(nodes)}


def critical_path(edges: set[tuple[str, str]], weight: dict[str, float]) -> tuple[float, list[str]]:
    return max(longest_paths(edges, weight).values(), key=lambda t: t[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", action="append", default=[], help="the configs of the run (on top of config/config.yaml)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=ROOT,
                        help="the folder the run ran in (a copy of the workflow; default: this checkout)")
    parser.add_argument("--markdown", action="store_true", help="print the README's timing table only")
    parser.add_argument("--simulate", action="store_true",
                        help="replay the run's jobs on --cores in the DAG's order and longest chain first")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT / "src"))
    from neurips26.papers import SHARED, available

    root = args.workdir.resolve()
    rules = workflow_rules(args.configfile, root)
    found = jobs(rules, root)
    if not found:
        raise SystemExit(f"dag_profile: no benchmark files under {root / 'results'}: run the DAG first")
    papers = [*available(), *SHARED]
    per_paper: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "seconds": 0.0, "step": 0.0, "cpu": 0.0})
    per_rule: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "seconds": 0.0, "step": 0.0, "max": 0.0})
    for j in found:
        step = j["step"] if j["step"] == j["step"] else j["seconds"]
        for table, key in ((per_paper, paper_of(j["rule"], papers)), (per_rule, j["rule"])):
            table[key]["jobs"] += 1
            table[key]["seconds"] += j["seconds"]
            table[key]["step"] += step
        per_paper[paper_of(j["rule"], papers)]["cpu"] += j["cpu"] if j["cpu"] == j["cpu"] else 0.0
        per_rule[j["rule"]]["max"] = max(per_rule[j["rule"]]["max"], j["seconds"])
    total = sum(v["seconds"] for v in per_paper.values())
    total_step = sum(v["step"] for v in per_paper.values())
    graph = job_graph(args.configfile, root)
    edges = rule_edges_of(graph)
    length, path = critical_path(edges, {r: v["max"] for r, v in per_rule.items()})
    bound = max(length, total / args.cores)

    total_cpu = sum(v["cpu"] for v in per_paper.values())
    occ = occupancy([(j["end"] - j["seconds"], j["end"]) for j in found], args.cores)
    head = ["| paper | jobs | job time (s) | inside steps (s) | start-up per job (s) | CPU time (s) | share |",
            "|---|---|---|---|---|---|---|"]
    body = [f"| {p} | {v['jobs']} | {v['seconds']:.0f} | {v['step']:.0f} | {(v['seconds'] - v['step']) / v['jobs']:.1f} | "
            f"{v['cpu']:.0f} | {v['seconds'] / total:.0%} |" for p, v in sorted(per_paper.items(), key=lambda kv: -kv[1]["seconds"])]
    foot = [f"| all | {sum(v['jobs'] for v in per_paper.values())} | {total:.0f} | {total_step:.0f} | "
            f"{(total - total_step) / max(len(found), 1):.1f} | {total_cpu:.0f} | 100% |"]
    summary = (f"Critical path {length / 60:.1f} min ({' -> '.join(path)}); on {args.cores} cores the run "
               f"lasts at least {bound / 60:.1f} min. CPU time is that of the job's processes: other work on "
               "the machine stretches job time, not CPU time. "
               f"The run: {occ['wall'] / 60:.1f} min from the first job's start to the last one's end, core "
               f"utilisation {occ['utilisation']:.0%} (job-seconds / ({args.cores} cores x wall)); fewer jobs than "
               f"cores ran for {occ['under_seconds'] / 60:.1f} min, leaving {occ['idle_core_seconds'] / 60:.1f} "
               "core-minutes idle (start and end times from the benchmark files: a DAG run in pieces reads as one "
               "long run).")
    if args.simulate:
        summary += " " + simulation_summary(graph, found, args.cores,
                                            bottom_levels(edges, {r: v["max"] for r, v in per_rule.items()}))
    if args.markdown:
        print("\n".join(head + body + foot))
        print()
        print(summary)
        return 0
    print("Per paper")
    print("\n".join(head + body + foot))
    print("\nPer rule")
    print("| rule | jobs | job time (s) | inside steps (s) | slowest job (s) |\n|---|---|---|---|---|")
    for r, v in sorted(per_rule.items(), key=lambda kv: -kv[1]["seconds"]):
        print(f"| {r} | {v['jobs']} | {v['seconds']:.0f} | {v['step']:.0f} | {v['max']:.0f} |")
    print("\n" + summary)
    return 0


def simulation_summary(graph: list[dict], found: list[dict], cores: int, levels: dict[str, float]) -> str:
    seconds, missing = job_seconds(graph, found)
    plain = simulate(graph, seconds, cores)
    ranked = simulate(graph, seconds, cores, [levels.get(job["rule"], 0) for job in graph])
    busy = sum(seconds)
    return (f"Replayed on {cores} cores from the measured job times ({len(graph)} jobs, {missing} without a "
            f"benchmark counted as 0 s): {plain / 60:.1f} min in the DAG's order (utilisation "
            f"{busy / (cores * plain):.0%}), {ranked / 60:.1f} min longest chain first (rules ranked by their bottom level) "
            f"(utilisation {busy / (cores * ranked):.0%}).")


if __name__ == "__main__":
    sys.exit(main())
