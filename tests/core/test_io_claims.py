"""Atomic io and canonical JSON (claims rules: tests/core/test_claims.py)."""

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


def test_rounded_walks_containers_and_maps_non_finite_to_none():
    import math

    import numpy as np

    from neurips26.core import io as core_io

    obj = {"a": 1.23456789, "b": [np.float32(2.5), (3, float("nan"))], "c": np.array([1 / 3, 2 / 3]), "d": "x",
           "e": None, "f": True, "g": 1e-15}
    got = core_io.rounded(obj, 3, floor=1e-12)
    assert got == {"a": 1.23, "b": [2.5, [3, None]], "c": [0.333, 0.667], "d": "x", "e": None, "f": True, "g": 0.0}
    kept = core_io.rounded([float("inf"), float("nan")], 3, keep_nonfinite=True)
    assert kept[0] == math.inf and math.isnan(kept[1])
