"""benchmarks/gpu_check.py in toy mode on the CPU: every paper's cases train at least one step
with a positive throughput, and the JSON table has every field the papers' READMEs quote."""

import json

import pytest
from benchmark_scripts import load

NAME = "gpu_check"

ROW_FIELDS = {"paper", "case", "model", "params", "trainable_params", "batch", "micro_batch", "precision",
              "warmup_steps", "steps_requested", "steps_done", "stopped_by", "step_ms", "samples_per_s", "unit",
              "throughput", "peak_gpu_mem_bytes", "peak_gpu_mem_gb", "loss", "error"}


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("gpu_check") / "gpu_check.json"
    try:
        result = load(NAME).main(["--toy", "--steps", "2", "--warmup", "1", "--out", str(out)])
    finally:
        torch.set_num_threads(before)
    return result, json.loads(out.read_text())

def test_every_paper_trains_with_positive_throughput(toy_run):
    result, written = toy_run
    gpu_check = load(NAME)
    assert written["toy"] is True and written["device_type"] == "cpu"
    assert written["failed"] == [] and result["failed"] == []
    rows = written["rows"]
    assert {r["paper"] for r in rows} == set(gpu_check.PAPERS)
    assert {r["case"] for r in rows if r["paper"] == "nar_dit"} == {"dit", "nar"}
    assert len([r for r in rows if r["paper"] == "angular_nets"]) == 3  # resnet, vit, bert
    for r in rows:
        assert ROW_FIELDS <= set(r), (r["case"], ROW_FIELDS - set(r))
        assert r["error"] is None
        assert r["steps_done"] >= 1 and r["stopped_by"] in ("steps", "budget")
        assert r["throughput"] > 0 and r["samples_per_s"] > 0 and r["params"] > 0
        assert r["loss_finite"], (r["case"], r["loss"])
        assert r["peak_gpu_mem_gb"] is None  # no GPU here
    units = {r["paper"]: r["unit"] for r in rows}
    assert units["nar_dit"] == "images" and units["apexphys"] == "clips" and units["lora_encoder"] == "tokens"
    assert next(r for r in rows if r["paper"] == "apexphys")["frames_per_s"] > 0
    assert {n["paper"] for n in written["not_run"]} >= {"embed_merge", "fedlora_align"}

def test_bad_arguments_are_refused_with_a_message(capsys):
    gpu_check = load(NAME)
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["--papers", "nar_dit,not_a_paper"])
    assert "not_a_paper" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["--budget-s", "0"])
    assert "--budget-s" in capsys.readouterr().err
