"""Atomic io, canonical JSON and the claims judge."""

import json
import math

import pytest
import torch

from neurips26.core import claims, io


def test_write_json_is_canonical_and_atomic(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    io.write_json(a, {"z": 1.0, "a": [1, 2], "m": torch.tensor(0.5)})
    io.write_json(b, {"m": 0.5, "a": [1, 2], "z": 1.0})
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(a.read_text())["m"] == 0.5
    assert not list(tmp_path.glob(".*.tmp"))


def test_failed_write_leaves_old_file(tmp_path):
    path = tmp_path / "x.txt"
    io.write_text(path, "old")
    with pytest.raises(RuntimeError):
        with io.atomic_path(path) as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert path.read_text() == "old"


def test_tensors_round_trip_with_metadata(tmp_path):
    t = {"w": torch.arange(6.0).reshape(2, 3).t()}  # non-contiguous on purpose
    io.save_tensors(tmp_path / "t.safetensors", t, metadata={"k": "v"})
    back = io.load_tensors(tmp_path / "t.safetensors")
    assert torch.equal(back["w"], t["w"])
    assert io.load_tensor_metadata(tmp_path / "t.safetensors") == {"k": "v"}


def test_missing_input_names_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        io.read_json(tmp_path / "nope.json")


def test_mean_std_matches_statistics():
    import statistics

    vals = [1.0, 2.0, 4.0]
    m, s = claims.mean_std(vals)
    assert m == pytest.approx(statistics.mean(vals))
    assert s == pytest.approx(statistics.stdev(vals))
    assert math.isnan(claims.mean_std([])[0])


def test_judge_directions():
    assert claims.judge([10, 11, 12], [1, 2, 3], higher_is_better=True) == "yes"
    assert claims.judge([10, 11, 12], [1, 2, 3], higher_is_better=False) == "no"
    assert claims.judge([2.1, 1.0, 3.2], [2.0, 1.1, 3.0], higher_is_better=True) == "partly"
    assert claims.judge([1.0], [float("nan")], higher_is_better=True) == "no"


def test_claims_file_has_the_design_columns(tmp_path):
    row = claims.row("p", "c", "m", "ours", [1, 2], "base", [0, 1], True, "smoke", "f.png")
    claims.write_claims(tmp_path / "claims.csv", [row])
    header = (tmp_path / "claims.csv").read_text().splitlines()[0].split(",")
    assert header == claims.COLUMNS
