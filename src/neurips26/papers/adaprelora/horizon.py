"""AdaPreLoRA against AdamW at a longer step budget, on the tuning split (a measurement, not a step
of the workflow): each method at the knobs its tune step chose for the default budget, and
AdaPreLoRA also at the config's undamped 1e-8, trained for each budget of `--steps` on the
tuning seed's training set minus its validation split and scored on that split.

    python -m neurips26.papers.adaprelora.horizon --tune results/adaprelora/tune/topic_sentiment/tune.json \
        --out /tmp/adaprelora_horizon [--steps 50 200]

Writes horizon.json (one row per method, damping and budget) and prints the table. The
reported test seeds and test rows are never read.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path


def config_block(path: str | Path = "config/config.yaml") -> dict:
    import yaml

    return yaml.safe_load(Path(path).read_text())["adaprelora"]


def measure(tune: dict, block: dict, steps_list, out: Path, inputs: dict | None = None) -> list[dict]:
    import torch

    from . import runner

    task, seed = tune["task"], tune["seed"]
    inputs = inputs or {}
    torch.manual_seed(seed)
    val = runner.validation_task(runner.load_task(task, block, seed, inputs), task, block, seed)
    damping = tune.get("damping", {})
    runs = [("adamw", tune["tuned"]["adamw"], None)]
    ada = [damping.get("adaprelora"), block["optim"]["damping"]]
    for d in dict.fromkeys(x for x in ada if x is not None):
        runs.append(("adaprelora", tune["tuned"]["adaprelora"], float(d)))
    rows = []
    for steps in steps_list:
        for method, lr, d in runs:
            res = runner.run(task, val, method, lr, block, seed, inputs, out / f"{method}_d{d}_s{steps}",
                             {"stage": "horizon"}, damping=d, steps=steps)
            rows.append({"task": task, "method": method, "lr": lr, "damping": d, "steps": steps,
                         runner.primary_metric(task): res.get(runner.primary_metric(task)),
                         "final_loss": res["losses"][-1], "seconds": res["seconds"]})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tune", required=True, help="a tune.json of the adaprelora tune step")
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--out", default=None)
    ap.add_argument("--steps", type=int, nargs="+", default=[50, 200])
    a = ap.parse_args(argv)
    tune = json.loads(Path(a.tune).read_text())
    out = Path(a.out or tempfile.mkdtemp(prefix="adaprelora_horizon_"))
    rows = measure(tune, config_block(a.config), a.steps, out / "runs")
    (out / "horizon.json").write_text(json.dumps(rows, indent=1))
    print(f"{out / 'horizon.json'}")


if __name__ == "__main__":
    main()
