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
