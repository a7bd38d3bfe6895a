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
