"""The CLI seeds torch when a step first imports it, not before: a step without torch does not
import it, and a step with torch sees the state an eager seed gives."""

import subprocess
import sys

SNIPPET = """
import sys
from neurips26.core import seeding
seeding.seed_everything(7, threads=1, lazy={lazy})
print("imported_before", "torch" in sys.modules)
from torch import nn  # a submodule import loads torch first
import torch
print("threads", torch.get_num_threads())
print("deterministic", torch.are_deterministic_algorithms_enabled())
print("draw", torch.rand(3).tolist(), torch.randn(2).tolist())
"""


def _run(lazy: bool) -> dict:
    out = subprocess.run([sys.executable, "-c", SNIPPET.format(lazy=lazy)], check=True, capture_output=True,
                         text=True).stdout
    return dict(line.split(" ", 1) for line in out.strip().splitlines())


def test_lazy_seed_does_not_import_torch_and_matches_the_eager_seed():
    lazy, eager = _run(True), _run(False)
    assert lazy["imported_before"] == "False"
    assert eager["imported_before"] == "True"
    assert lazy["threads"] == eager["threads"] == "1"
    assert lazy["deterministic"] == eager["deterministic"] == "True"
    assert lazy["draw"] == eager["draw"]


def test_a_second_seed_replaces_the_pending_one():
    snippet = ("from neurips26.core import seeding\n"
               "seeding.seed_everything(1, lazy=True)\nseeding.seed_everything(7, threads=1, lazy=True)\n"
               "import sys\nprint(sum(type(f).__name__ == '_SeedTorchOnImport' for f in sys.meta_path))\n"
               "import torch\nprint(torch.rand(3).tolist())\n")
    out = subprocess.run([sys.executable, "-c", snippet], check=True, capture_output=True, text=True).stdout.split("\n")
    assert out[0] == "1"
    assert out[1] == _run(False)["draw"].split("] [")[0] + "]"
