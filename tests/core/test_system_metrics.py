"""A training step's MLflow run records the machine's utilisation (MLflow's system metrics)."""

import time

from neurips26.core import tracking


def test_training_run_records_system_metrics(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", "1")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    runs = {}
    for step, system_metrics in (("train", True), ("evaluate", False)):
        with tracking.job_run("nar_dit", step, {"seed": 0}, out, system_metrics=system_metrics) as run:
            time.sleep(3)  # a few samples
            runs[step] = run.run_id
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    trained = client.get_run(runs["train"]).data.metrics
    assert "system/cpu_utilization_percentage" in trained and "system/system_memory_usage_megabytes" in trained, trained
    assert not [k for k in client.get_run(runs["evaluate"]).data.metrics if k.startswith("system/")]
