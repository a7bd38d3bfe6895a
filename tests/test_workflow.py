"""The workflow as a whole: lint, dry runs of all three configs, bad configs, and the smoke
DAG end to end (outputs, one finished MLflow run per job, nothing to do on rerun, and
byte-identical metrics.json when a job of every paper reruns from scratch)."""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from neurips26.core.cost import parse_dry_run
from neurips26.core.cost import stand_in_paths
from neurips26.core import tuning
from neurips26.core.io import read_csv

import smoke_runs
from smoke_runs import ROOT, SNAKEMAKE, clean_env, copy_workflow, output, snakemake  # noqa: F401 (used by test_reruns, test_cluster)


def test_lint_passes():
    proc = snakemake(ROOT, "--lint")
    assert proc.returncode == 0, output(proc)
    assert "Lints for" not in output(proc), output(proc)


@pytest.mark.parametrize("configs", [[], ["config/smoke.yaml"], ["config/paper.yaml"]], ids=["default", "smoke", "paper"])
def test_dry_runs(tmp_path, configs):
    wf = copy_workflow(tmp_path / "wf")
    args = ["-n", "--cores", "2"]
    if configs:
        extra = list(configs)
        if configs == ["config/paper.yaml"]:
            paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
            (wf / "stand_in_paths.yaml").write_text(yaml.safe_dump(stand_in_paths(paper, tmp_path / "data")))
            extra.append("stand_in_paths.yaml")
        args += ["--configfile", *extra]
    proc = snakemake(wf, *args)
    assert proc.returncode == 0, output(proc)
    text = output(proc)
    enabled = yaml.safe_load((ROOT / "config/config.yaml").read_text())["papers"]
    for paper in enabled:
        assert f"{paper}_" in text, f"no job of {paper} in the dry run"
    assert not (wf / "results").exists()


def test_paper_config_without_its_data_fails_naming_the_path(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    proc = snakemake(wf, "-n", "--cores", "1", "--configfile", "config/paper.yaml")
    assert proc.returncode != 0
    assert "imagenet256_features" in output(proc)


@pytest.mark.parametrize("bad, key", [
    ({"nar_dit": {"train": {"stpes": 5}}}, "nar_dit.train.stpes"),
    ({"nar_dit": {"train": {"steps": "many"}}}, "nar_dit.train.steps"),
    ({"papers": ["nar_dit", "no_such_paper"]}, "no_such_paper"),
    ({"nar_dit": {"train": {"route_start": 5, "route_end": 1}}}, "nar_dit.train.route_start"),
])
def test_bad_config_stops_before_any_job_and_touches_nothing(tmp_path, bad, key):
    wf = copy_workflow(tmp_path / "wf")
    (wf / "results").mkdir()
    (wf / "results" / "keep.txt").write_text("untouched")
    (wf / "bad.yaml").write_text(yaml.safe_dump(bad))
    proc = snakemake(wf, "--cores", "1", "--configfile", "bad.yaml")
    assert proc.returncode != 0
    assert key in output(proc), output(proc)
    assert sorted(p.name for p in (wf / "results").iterdir()) == ["keep.txt"]
    assert (wf / "results" / "keep.txt").read_text() == "untouched"


@pytest.fixture(scope="session")
def smoke():
    """The smoke DAG every end-to-end test below reads (started after collection, see conftest.py)."""
    return smoke_runs.result("smoke")


WARM_LOG = ".snakemake/log/neurips26-warm-start.log"


@pytest.mark.workflow
def test_smoke_dag_outputs(smoke):
    wf, _ = smoke
    results = wf / "results"
    summary = (results / "summary.md").read_text()
    enabled = yaml.safe_load((ROOT / "config/config.yaml").read_text())["papers"]
    for paper in enabled:
        assert (results / paper / "claims.csv").exists()
        assert list((results / paper / "figures").glob("*.png")), paper
        assert (results / paper / "figures" / "claims.png").stat().st_size > 5_000, paper
        assert (results / paper / "figures" / "tuning.png").stat().st_size > 5_000, paper
        assert tuning.read_csv([results / paper / "tuning.csv"]), paper  # every paper records its knobs
        assert f"| {paper} |" in summary
    assert (results / "summary.png").exists() and "![Verdicts per paper](summary.png)" in summary
    assert "knobs tuned on validation data" in summary and (results / "tuning.csv").exists()
    # compact: a line per claims row (its criteria stay in summary.csv), so the size follows the rows
    rows = len(read_csv(results / "summary.csv"))
    assert len(summary.encode()) < 6_000 + 100 * rows, (len(summary.encode()), rows)
    assert "Scale: smoke." in summary
    assert (results / "compare.md").exists()
    # every job was a fork of the warm-start server
    warm_log = (wf / WARM_LOG).read_text()
    assert "preloaded" in warm_log and "starts a fresh process" not in warm_log, warm_log


@pytest.mark.workflow
def test_smoke_dag_produces_every_claim_of_the_reference(smoke):
    """The committed reference has a row for every claim the smoke DAG produces (numbers and
    lists of numbers inside the texts aside: a metric may name a config value, such as a reference step; the
    baseline is not part of the key, since a row names the strongest one, which the data decide)."""
    wf, _ = smoke
    # a list of numbers (a grid of ranks, whose length the scale sets) counts as one number
    key = lambda r: tuple(re.sub(r"\d+(\.\d+)?(,\s*\d+(\.\d+)?)*", "N", r[c]) for c in ("paper", "claim", "metric"))  # noqa: E731
    produced = {key(r) for r in read_csv(wf / "results" / "summary.csv")}
    reference = {key(r) for r in read_csv(ROOT / "reference" / "summary.csv")}
    # the smoke sizes leave out some experiments (real-data blocks, larger grids): a subset
    assert produced <= reference, sorted(produced - reference)


@pytest.mark.workflow
def test_smoke_dag_one_finished_mlflow_run_per_job(smoke):
    wf, log = smoke
    jobs = [line for line in log.splitlines() if line.startswith("Finished jobid") and "(Rule: all)" not in line]
    db = sqlite3.connect(wf / "results" / "mlflow.db")
    rows = db.execute(
        "select r.run_uuid, r.status, t.value from runs r join tags t on t.run_uuid = r.run_uuid "
        "where t.key = 'neurips26.step' and t.value != 'invocation'").fetchall()
    assert len(rows) == len(jobs), (len(rows), len(jobs))
    assert {status for _, status, _ in rows} == {"FINISHED"}
    assert "database is locked" not in log
    assert db.execute("pragma journal_mode").fetchone()[0] == "wal"
    per_job = db.execute(
        "select r.value, coalesce(w.value, '') from tags r left join tags w on w.run_uuid = r.run_uuid "
        "and w.key = 'snakemake.wildcards' where r.key = 'snakemake.rule'").fetchall()
    assert len(per_job) == len(set(per_job)) == len(jobs), "a job with no run or with two"
    for run_id, _, _ in rows:
        tags = dict(db.execute("select key, value from tags where run_uuid = ?", (run_id,)).fetchall())
        assert tags.get("mlflow.parentRunId"), tags
        assert tags.get("snakemake.rule"), tags
        assert "neurips26.paper" in tags and "mlflow.source.git.commit" in tags
        assert db.execute("select count(*) from params where run_uuid = ?", (run_id,)).fetchone()[0] > 0
    parents = db.execute(
        "select r.status from runs r join tags t on t.run_uuid = r.run_uuid "
        "where t.key = 'neurips26.step' and t.value = 'invocation'").fetchall()
    assert parents and {s for (s,) in parents} == {"FINISHED"}
    artifacts = list((wf / "results" / "mlartifacts").rglob("metrics.json"))
    assert artifacts, "no job outputs were logged as artifacts"


@pytest.mark.workflow
def test_smoke_dag_rerun_has_nothing_to_do_and_report_renders(smoke):
    wf, _ = smoke
    proc = snakemake(wf, "-n", "--cores", "2", "--configfile", "config/smoke.yaml")
    assert proc.returncode == 0, output(proc)
    assert "Nothing to be done" in output(proc), output(proc)[-3000:]
    proc = snakemake(wf, "--cores", "1", "--configfile", "config/smoke.yaml", "--report", "results/report.html")
    assert proc.returncode == 0, output(proc)[-3000:]
    assert "(ERROR/" not in output(proc), "a figure caption is not valid reStructuredText"
    assert (wf / "results" / "report.html").stat().st_size > 10_000
    html = (wf / "results" / "report.html").read_text()
    assert '"0 Summary"' in html and "results/summary.png" in html and "figures/claims.png" in html
    assert "figures/tuning.png" in html


@pytest.mark.workflow
def test_smoke_dag_moved_elsewhere_plans_nothing_and_logs_inside_the_copy(smoke, tmp_path):
    """No rule's params name the checkout or the interpreter: the finished run copied to another
    folder (its name with a space) plans no job, and a job forced there logs its MLflow artifacts
    into the copy's store folder, not the original's."""
    first, _ = smoke
    moved = tmp_path / "moved here"
    shutil.copytree(first, moved, symlinks=True)
    args = ("--configfile", "config/smoke.yaml")
    proc = snakemake(moved, "-n", "--cores", "1", *args)
    assert proc.returncode == 0, output(proc)
    assert "Nothing to be done" in output(proc), output(proc)[-3000:]
    originals = sorted((first / "results" / "mlartifacts").rglob("*"))
    target = "results/anchor_pca/eval/wine/metrics.json"
    proc = snakemake(moved, target, "--cores", "1", "--profile", "profiles/default", *args,
                     "--forcerun", "anchor_pca_evaluate")
    assert proc.returncode == 0, output(proc)[-3000:]
    db = sqlite3.connect(moved / "results" / "mlflow.db")
    store = (moved / "results" / "mlartifacts").resolve().as_uri()
    locations = [loc for (loc,) in db.execute("select artifact_location from experiments where name like 'neurips26/%'")]
    assert locations and all(loc.startswith(store) for loc in locations), locations
    uris = [u for (u,) in db.execute("select artifact_uri from runs")]
    assert all(u.startswith(store) for u in uris), [u for u in uris if not u.startswith(store)][:3]
    assert sorted((first / "results" / "mlartifacts").rglob("*")) == originals
    logged = list((moved / "results" / "mlartifacts" / "anchor_pca").rglob("metrics.json"))
    assert len(logged) > len(list((first / "results" / "mlartifacts" / "anchor_pca").rglob("metrics.json")))


@pytest.mark.workflow
def test_smoke_dag_jobs_rerun_from_scratch_to_identical_metrics(smoke, tmp_path):
    """The fastest metrics job of every paper, forced to run again in a copy of the finished
    smoke run (its checkpoints were removed when it succeeded, so training runs again), writes
    the same bytes. The smoke run's jobs were forks of the warm-start server, the reruns are
    fresh processes: a fork computes what a fresh process does."""
    first, _ = smoke
    again = tmp_path / "again"
    shutil.copytree(first, again, symlinks=True, ignore=shutil.ignore_patterns("mlartifacts"))
    args = ("--configfile", "config/smoke.yaml")
    fastest = {}
    for job in smoke_runs.metrics_jobs(again, *args):
        if job["paper"] not in fastest or job["seconds"] < fastest[job["paper"]]["seconds"]:
            fastest[job["paper"]] = job
    enabled = yaml.safe_load((ROOT / "config/config.yaml").read_text())["papers"]
    assert set(enabled) <= set(fastest), sorted(set(enabled) - set(fastest))
    targets = sorted(j["output"] for j in fastest.values())
    before = {t: (again / t).read_bytes() for t in targets}
    rules = sorted({j["rule"] for j in fastest.values()})
    proc = snakemake(again, *targets, "--cores", "2", "--profile", "profiles/default", *args, "--forcerun", *rules,
                     env={"NEURIPS26_WARM_START": "0"})
    assert proc.returncode == 0, output(proc)[-6000:]
    assert (again / WARM_LOG).read_text() == (first / WARM_LOG).read_text(), "the reruns were forks of a server"
    ran = [line for line in output(proc).splitlines() if line.startswith("Finished jobid")]
    assert len(ran) == len(targets), output(proc)[-3000:]
    for t in targets:
        assert (again / t).read_bytes() == before[t], t


# the rules that run on GPUs at paper scale, and how many each asks for (config/paper.yaml)
PAPER_GPU_RULES = {"nar_dit_train": 8, "nar_dit_size": 8, "nar_dit_evaluate": 1, "crl_spectral_train": 1, "angular_nets_train": 1,
                   "angular_nets_tune": 1, "apexphys_train": 1, "apexphys_tune": 1,
                   "embed_merge_train": 1, "embed_merge_merge": 1, "bdc_merge_tune": 1, "bdc_merge_run": 1, "fedlora_align_tune": 1, "fedlora_align_train": 1,
                   "fedaba_tune": 1, "fedaba_train": 1, "beta_tta_train": 1, "beta_tta_tune": 1, "beta_tta_adapt": 1, "ar1_zo_mechanism": 1, "ar1_zo_tune": 1, "ar1_zo_train": 1,
                   "es_dynamics_lm": 1, "adapad_tune": 1, "adapad_train": 1,
                   "adaprelora_tune": 1, "adaprelora_train": 1}


# training rules whose loop is not Lightning's (zeroth-order: forward passes only), so no trainer
# saves a checkpoint on the warning signal, which they are therefore not sent
NO_TRAINER = {"ar1_zo_tune", "ar1_zo_train", "beta_tta_tune", "bdc_merge_tune"}  # bdc_merge_tune merges and scores


def test_paper_dry_run_on_slurm_puts_gpu_rules_on_the_gpu_partition(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    (wf / "stand_in_paths.yaml").write_text(yaml.safe_dump(stand_in_paths(paper, tmp_path / "data")))
    proc = snakemake(wf, "-n", "--profile", "profiles/slurm", "--configfile", "config/paper.yaml", "stand_in_paths.yaml")
    assert proc.returncode == 0, output(proc)
    jobs: dict[str, list[dict[str, str]]] = {}
    for job in parse_dry_run(output(proc)):
        jobs.setdefault(job["rule"], []).append(job["resources"])
    for rule, gpus in PAPER_GPU_RULES.items():
        assert rule in jobs, f"no {rule} job in the paper dry run"
        for res in jobs[rule]:
            assert res.get("slurm_partition") == "gpu", (rule, res)
            assert res.get("gpu") == str(gpus), (rule, res)
            assert res.get("cpus_per_task") == "8", (rule, res)
            # one rank per GPU, made by SLURM (--ntasks-per-node), not by --ntasks
            assert res.get("tasks_per_node") == (str(gpus) if gpus > 1 else None), (rule, res)
            assert "tasks" not in res, (rule, res)
            # rules that train (training, tuning, the size study) ask for the warning signal before their time limit
            signalled = rule.endswith(("_train", "_tune", "_size")) and rule not in NO_TRAINER
            assert (res.get("slurm_extra") == "--signal=USR1@90") == signalled, (rule, res)
    for rule, resources in jobs.items():
        if rule not in PAPER_GPU_RULES:
            for res in resources:
                assert res.get("slurm_partition") == "cpu" and "gpu" not in res, (rule, res)


def test_shell_lines_quote_paths_and_use_the_configured_threads(tmp_path):
    """A data path with a space and a `;` reaches the step as one argument; every step gets the
    configured threads_per_job (or 1 where its rule says so), not Snakemake's count scaled to --cores."""
    import shlex

    wf = copy_workflow(tmp_path / "wf")
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    data = tmp_path / "data dir;touch hacked;#"
    (wf / "stand_in_paths.yaml").write_text(yaml.safe_dump({**stand_in_paths(paper, data), "threads_per_job": 3}))
    proc = snakemake(wf, "-n", "-p", "--cores", "1", "--configfile", "config/paper.yaml", "stand_in_paths.yaml")
    assert proc.returncode == 0, output(proc)[-3000:]
    shells = [line.split(":", 1)[1].strip() for line in output(proc).splitlines()
              if line.startswith("Shell command:") and " -m neurips26 " in line]
    assert shells
    quoted_inputs = 0
    for line in shells:
        words = shlex.split(line)
        assert ";" not in words and "touch" not in words, line
        if words[words.index("neurips26") + 1] == "report":
            continue
        threads = words[words.index("--threads") + 1]
        step = words[words.index("neurips26") + 2]
        assert threads in ("1", "3"), line
        if step in ("train", "tune", "pretrain"):
            assert threads == "3", line
        json.loads(words[words.index("--params") + 1])
        for word in words:
            path = word.split("=", 1)[1] if "=" in word and not word.startswith("{") else word
            if path.startswith(str(data)):  # a whole argument: the path as configured
                assert Path(path).exists(), (path, line)
                quoted_inputs += 1
    assert quoted_inputs, "no job reads a configured data path"
    assert not (wf / "hacked").exists()


def test_cluster_run_refuses_the_sqlite_store(tmp_path):
    """A non-local executor with no tracking server stops before any job, naming the way out."""
    wf = copy_workflow(tmp_path / "wf")
    proc = snakemake(wf, "--profile", "profiles/slurm", "--configfile", "config/smoke.yaml",
                     "--config", "papers=[sparse_halfspace]", timeout=120)
    assert proc.returncode != 0
    assert "A team tracking server" in output(proc) and "allow_sqlite" in output(proc), output(proc)[-3000:]
    assert not (wf / "results").exists()


def test_cost_table_of_the_paper_config_is_the_readme_table():
    """`neurips26 cost` sums the paper dry run's jobs; docs/cluster.md shows its table as it is."""
    proc = subprocess.run([sys.executable, "-m", "neurips26", "cost", "--configfile", "config/paper.yaml"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, output(proc)
    table = proc.stdout.split("\n", 1)[1]
    nar_dit = next(line for line in table.splitlines() if line.startswith("| `nar_dit` | 14 | "))
    assert "`nar_dit_train`: 4 x (8 GPU, 64 CPU, 64 GB, 72 h)" in nar_dit
    assert table in (ROOT / "docs" / "cluster.md").read_text(), \
        "docs/cluster.md's paper-scale cost table is out of date: paste `neurips26 cost --configfile config/paper.yaml`"


# answers the three questions Snakemake asks conda before a dry run, nothing else
STAND_IN_CONDA = """#!/bin/sh
case "$*" in
  "info --json") echo '{"conda_version": "24.7.1", "envs_dirs": [], "root_prefix": "/opt/conda", "conda_prefix": "/opt/conda", "channels": [], "platform": "linux-64"}';;
  "--version") echo "conda 24.7.1";;
  config*) echo '{"get": {"channel_priority": "strict"}}';;
  *) echo '{}';;
esac
"""


@pytest.mark.parametrize("sdm", [True, False], ids=["conda", "no-sdm"])
def test_rules_run_the_cli_of_their_conda_environment(tmp_path, sdm):
    """Under --sdm conda a rule runs `python -m neurips26` from its activated environment; otherwise
    the interpreter that runs Snakemake."""
    wf = copy_workflow(tmp_path / "wf")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "conda").write_text(STAND_IN_CONDA)
    (tmp_path / "bin" / "conda").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "NEURIPS26_PARENT"))}
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    args = [SNAKEMAKE, "-n", "-p", "--cores", "1", "--configfile", "config/smoke.yaml", "--config", "papers=[sparse_halfspace]"]
    proc = subprocess.run(args + (["--sdm", "conda"] if sdm else []), cwd=wf, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, output(proc)[-3000:]
    shells = [line for line in output(proc).splitlines() if "-m neurips26 sparse_halfspace" in line]
    assert shells
    # the interpreter comes from the environment (common.smk sets NEURIPS26_PYTHON: `python` under
    # --sdm, else the one running Snakemake), never from params, so no absolute path is recorded
    expected = '"${NEURIPS26_PYTHON:-python}" -m neurips26'
    assert all(line.split(":", 1)[1].strip().startswith(expected) for line in shells), shells[0]
    assert not any(sys.executable in line for line in shells)
