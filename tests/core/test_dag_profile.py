"""benchmarks/dag_profile.py reads a job's wall time from its benchmark file, and the step's own
time and CPU time from the CLI's closing line in its log (a warm-started job's benchmark measures
only its client)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import dag_profile  # noqa: E402

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def test_step_and_cpu_time_come_from_the_log_when_it_reports_them(tmp_path):
    rules = {"p_train": ("results/p/benchmarks/{variant}.tsv", "results/p/logs/{variant}.log")}
    (tmp_path / "results/p/benchmarks").mkdir(parents=True)
    (tmp_path / "results/p/logs").mkdir(parents=True)
    for variant, log in (("warm", "neurips26 p train: done in 7.5s (cpu 6.2s, peak memory 610 MB) -> out\n"),
                         ("old", "neurips26 p train: done in 4.0s -> out\n")):
        (tmp_path / f"results/p/benchmarks/{variant}.tsv").write_text(HEADER + "8.1\t0:00:08\t1\t1\t1\t1\t0\t0\t1\t0.04\n")
        (tmp_path / f"results/p/logs/{variant}.log").write_text(log)
    found = {j["wildcards"]["variant"]: j for j in dag_profile.jobs(rules, tmp_path)}
    assert found["warm"]["seconds"] == 8.1 and found["warm"]["step"] == 7.5 and found["warm"]["cpu"] == 6.2
    assert found["old"]["step"] == 4.0 and found["old"]["cpu"] == 0.04, "without the CPU in the log, the benchmark's"


def test_occupancy_counts_the_idle_cores_of_the_tail():
    # two cores: jobs [0, 10] and [0, 4], then [4, 6]; after 6 only the long job runs
    occ = dag_profile.occupancy([(0.0, 10.0), (0.0, 4.0), (4.0, 6.0)], cores=2)
    assert occ["wall"] == 10.0
    assert abs(occ["utilisation"] - 16.0 / 20.0) < 1e-12
    assert occ["under_seconds"] == 4.0 and occ["idle_core_seconds"] == 4.0
    # one core never idles while a job runs; a gap with no job idles every core
    gap = dag_profile.occupancy([(0.0, 2.0), (5.0, 6.0)], cores=1)
    assert gap["wall"] == 6.0 and gap["under_seconds"] == 3.0 and gap["idle_core_seconds"] == 3.0


def test_a_jobs_end_is_its_benchmark_files_time(tmp_path):
    import os

    rules = {"p_train": ("results/p/benchmarks/{variant}.tsv", None)}
    (tmp_path / "results/p/benchmarks").mkdir(parents=True)
    path = tmp_path / "results/p/benchmarks/a.tsv"
    path.write_text(HEADER + "8.1\t0:00:08\t1\t1\t1\t1\t0\t0\t1\t0.04\n")
    os.utime(path, (1000.0, 1000.0))
    (job,) = dag_profile.jobs(rules, tmp_path)
    assert job["end"] == 1000.0 and job["seconds"] == 8.1


def _graph(rules_and_deps):
    return [{"rule": rule, "wildcards": {}, "deps": deps} for rule, deps in rules_and_deps]


def test_bottom_levels_add_the_longest_chain_that_waits_on_a_rule():
    # a -> b -> d, a -> c -> d, e alone: a's level is a + max(b, c) + d
    edges = {("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")}
    levels = dag_profile.bottom_levels(edges, {"a": 1.0, "b": 5.0, "c": 2.0, "d": 3.0, "e": 4.0})
    assert levels == {"a": 9.0, "b": 8.0, "c": 5.0, "d": 3.0, "e": 4.0}


def test_longest_chain_first_ends_a_two_core_run_at_its_critical_path():
    # chain A(10) -> B(10) and three 5 s jobs that do not wait on anything; 2 cores, 30 job-seconds.
    # In the DAG's order (C, D, E, A, B) A starts at 5 and B ends at 25; longest chain first starts
    # A at 0 beside C, and B ends at 20, the critical path
    graph = _graph([("C", []), ("D", []), ("E", []), ("A", []), ("B", [3])])
    seconds = [5.0, 5.0, 5.0, 10.0, 10.0]
    assert dag_profile.simulate(graph, seconds, cores=2) == 25.0
    levels = dag_profile.bottom_levels(dag_profile.rule_edges_of(graph), dict(zip("CDEAB", seconds)))
    assert levels["A"] == 20.0
    assert dag_profile.simulate(graph, seconds, cores=2, priority=[levels[j["rule"]] for j in graph]) == 20.0
    # one core: the order cannot matter
    assert dag_profile.simulate(graph, seconds, cores=1) == 35.0


def test_simulate_is_bounded_by_every_order_on_small_random_dags():
    # on as many cores as jobs a replay ends at the critical path (computed here without the
    # module); on 2 cores it ends no earlier than the best of all 120 priority orders, which
    # ends no earlier than the critical path and half the job-seconds
    import itertools
    import random

    rng = random.Random(0)
    for _ in range(20):
        n = 5
        graph = _graph([(f"r{i}", sorted(rng.sample(range(i), rng.randint(0, i)))) for i in range(n)])
        seconds = [float(rng.randint(1, 9)) for _ in range(n)]
        finish = []
        for i, job in enumerate(graph):
            finish.append(seconds[i] + max((finish[d] for d in job["deps"]), default=0.0))
        path = max(finish)
        assert dag_profile.simulate(graph, seconds, cores=n) == path
        best = min(dag_profile.simulate(graph, seconds, cores=2, priority=[-p.index(i) for i in range(n)])
                   for p in itertools.permutations(range(n)))
        got = dag_profile.simulate(graph, seconds, cores=2)
        assert max(path, sum(seconds) / 2) <= best <= got <= sum(seconds)


def test_job_seconds_match_a_jobs_wildcards_to_its_benchmark():
    graph = [{"rule": "p_train", "wildcards": {"variant": "a", "seed": "1"}, "deps": []},
             {"rule": "p_train", "wildcards": {"variant": "b", "seed": "1"}, "deps": []},
             {"rule": "all", "wildcards": {}, "deps": [0, 1]}]
    found = [{"rule": "p_train", "wildcards": {"variant": "a", "seed": "1"}, "seconds": 3.0},
             {"rule": "p_train", "wildcards": {"variant": "b", "seed": "1"}, "seconds": 7.0}]
    assert dag_profile.job_seconds(graph, found) == ([3.0, 7.0, 0.0], 1)
