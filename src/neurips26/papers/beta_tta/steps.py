"""The steps the CLI calls for beta_tta: train -> adapt -> figures.

`train` (variant x seed) trains the API's source ViT and the client's smaller steering ViT on
clean shapes (disjoint draws); `adapt` (variant x seed) corrupts a fresh test set with every
corruption x severity of the config, streams it in batches (order from the seed) and runs every
method from a fresh start per corruption x severity (the ImageNet-C protocol); `figures` writes
the plots, tables and claims.

Kinds imagenet_c and clip (config/paper.yaml) use the released checkpoints and image folders
(loaders.py): `train` trains nothing and stores the wrapped released weights; `adapt` reads each
ImageNet-C corruption x severity folder (or the one ImageNet-R / ImageNet-Sketch folder) instead
of corrupting generated images.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking

from .api import BlackBoxAPI
from .claims import claim_rows

CLASSES = 10  # the shapes set of the vision kind; the released kinds take theirs from the data
RELEASED = ("imagenet_c", "clip")
# LAME's window grid (stream batches its affinity spans: 16 to 128 images at batch 16), log-spaced;
# kept here because the config schema of `beta_tta.tune` has no key for it
LAME_WINDOWS = [1, 2, 4, 8]
# window 1 is plain LAME on its own batch: the knob's natural lower end, so a best there is tuned, not capped
LAME_PLAIN = (1, "window = 1 (plain LAME on its own batch) is the knob's natural lower end")


def _data(d: dict, n: int, seed: int):
    import torch

    from neurips26.data.images import shapes

    x, y = shapes(n, d["image_size"], seed)
    return torch.as_tensor(x), torch.as_tensor(y)


def _seeds(seed: int) -> dict:
    return {"source": 1000 * seed + 1, "steering": 1000 * seed + 2, "test": 1000 * seed + 3,
            "held_out": 1000 * seed + 4}


def train(params, inputs, out: Path):
    """Source model (behind the API) and steering model (client side), each on its own clean draw."""
    import torch

    from . import models

    v, seed = params["variant_settings"], params["seed"]
    if v["kind"] in RELEASED:
        return _train_released(params, out)
    d = v["data"]
    s = _seeds(seed)
    info = {"variant": params["variant"], "seed": seed}
    xt, yt = _data(d, d["held_out_size"], s["held_out"])
    rank0 = True
    for name, size in (("source", d["train_size"]), ("steering", d["steering_train_size"])):
        x, y = _data(d, size, s[name])
        torch.manual_seed(s[name])
        net = models.build(v[name], d["image_size"], CLASSES)
        rank0 = models.train_classifier(net, x, y, out / "runs" / name, params, v[name]["train"], s[name],
                                        key=f"beta_tta.variants.{params['variant']}.{name}.train")
        acc = models.accuracy(net, xt, yt)
        info[f"{name}_clean_accuracy"] = io.significant(acc, 6)
        info[f"{name}_parameters"] = sum(p.numel() for p in net.parameters())
        print(f"{name}: clean held-out accuracy {acc:.3f}", flush=True)
        if rank0:
            io.save_tensors(out / f"{name}.safetensors", {k: t.contiguous() for k, t in net.state_dict().items()})
    if not rank0:
        return None
    import shutil

    shutil.rmtree(out / "runs", ignore_errors=True)
    io.write_json(out / "train.json", info)
    return [out / "train.json"]


def _key(params: dict) -> str:
    return f"beta_tta.variants.{params['variant']}"


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _train_released(params, out: Path):
    """Nothing to train: the released models, wrapped, stored as the rule's outputs."""
    from . import loaders

    v, key = params["variant_settings"], _key(params)
    source, steering = loaders.released_models(v, key, device=_device())
    info = {"variant": params["variant"], "seed": params["seed"], "kind": v["kind"]}
    for name, net in (("source", source), ("steering", steering)):
        info[f"{name}_checkpoint"] = v[f"{name}_checkpoint"]
        info[f"{name}_parameters"] = sum(p.numel() for p in net.parameters())
        info[f"{name}_outputs"] = net.outputs
        io.save_tensors(out / f"{name}.safetensors", {k: t.contiguous() for k, t in net.state_dict().items()})
        print(f"{name}: {v[f'{name}_checkpoint']} ({info[f'{name}_parameters']} parameters, "
              f"{net.outputs} outputs)", flush=True)
    io.write_json(out / "train.json", info)
    return [out / "train.json"]


def _load(v: dict, name: str, src: Path) -> models.ViT:
    from . import models

    net = models.build(v[name], v["data"]["image_size"], CLASSES)
    net.load_state_dict(io.load_tensors(src / f"{name}.safetensors"))
    return net.eval()


def method_names(params: dict) -> list[str]:
    """Every method the adapt step runs, in table order."""
    names = [m for m in params["methods"] if m != "zoo"]
    if "zoo" in params["methods"]:
        names += [f"zoo_{o}_{q}" for o in params["zoo"]["optimizers"] for q in params["zoo"]["budgets"]]
    return names


def beta_settings(params: dict, name: str) -> dict:
    if name == "beta":
        return dict(params["beta"])
    ablation = name[len("beta_"):]
    if ablation not in params["beta_ablations"]:
        raise ValueError(f"config key 'beta_tta.methods': '{name}' is neither beta nor beta_<ablation> of beta_ablations")
    return {**params["beta"], **params["beta_ablations"][ablation]}


def _api(source, a: dict) -> BlackBoxAPI:
    return BlackBoxAPI(source, a["latency_per_call_s"], a["latency_per_image_s"], a["price_per_1k_queries"])


def method_config(params: dict, name: str, tuned: dict | None = None) -> dict:
    """The config section a method runs with: its block of the config (BETA's ablations merged
    into `beta`), with the knobs the tune step chose for it (`tuned[name]`) on top."""
    if name == "beta" or name.startswith("beta_"):
        base = beta_settings(params, name)
    elif name.startswith("zoo_"):
        base = dict(params["zoo"])
    else:
        base = dict(params.get(name, {}))
    return {**base, **((tuned or {}).get(name, {}))}


def run_method(name: str, params: dict, source, steering, x: torch.Tensor, seed: int, classes: int = CLASSES,
               tuned: dict | None = None) -> dict:
    """One method over the stream x (already in stream order), from a fresh start, with the knobs
    `tuned` holds for it (the tune step's choice; the config's values otherwise)."""
    import torch

    from . import baselines
    from .method import Beta

    bs, a = params["shift"]["batch_size"], params["api"]
    cfg = method_config(params, name, tuned)
    api = _api(source, a)
    preds, evaluations = [], 0
    start = time.process_time()  # CPU time of the client side: less sensitive to a loaded machine
    torch.manual_seed(seed)
    if name == "lame":
        # the affinity spans the current batch and the API answers of the `window` - 1 batches
        # before it (cached, never re-queried): LAME's batch grown without looking ahead
        window, past = int(cfg.get("window", 1)), []
        for i in range(0, len(x), bs):
            p = api.predict(x[i:i + bs])
            past = (past + [p])[-window:]
            z = baselines.lame_window(past, int(cfg["knn"]), cfg["iterations"])
            preds.append(torch.as_tensor(z.argmax(1)))
    elif name == "source":
        for i in range(0, len(x), bs):
            preds.append(torch.as_tensor(api.predict(x[i:i + bs]).argmax(1)))
    elif name == "tent":
        m = baselines.Tent(source, cfg)
        preds = [m.step(x[i:i + bs]) for i in range(0, len(x), bs)]
        evaluations = m.evaluations
    elif name == "tpt":
        m = baselines.Tpt(source, cfg, seed)
        preds = [m.step(x[i:i + bs]) for i in range(0, len(x), bs)]
        evaluations = m.evaluations
    elif name.startswith("zoo_"):
        _, opt, budget = name.split("_")
        m = baselines.Zoo(api, cfg, opt, int(budget), x.shape[-1], seed)
        preds = [m.step(x[i:i + bs]) for i in range(0, len(x), bs)]
    elif name == "beta" or name.startswith("beta_"):
        m = Beta(api, steering, cfg, classes, seed)
        preds = [m.step(x[i:i + bs]) for i in range(0, len(x), bs)]
        evaluations = m.evaluations
    else:
        raise ValueError(f"config key 'beta_tta.methods': unknown method '{name}'")
    elapsed = time.process_time() - start
    n = len(x)
    # the client's own compute: the job's CPU time less the time inside the API's model
    return {"pred": torch.cat(preds).long(), "api_queries": api.queries, "api_calls": api.calls,
            "simulated_latency_s": api.simulated_latency_s, "cost": api.cost,
            "whitebox_evaluations": evaluations, "client_seconds": max(0.0, elapsed - api.model_seconds),
            "api_model_seconds": api.model_seconds, "n": n}


def _cell(params: dict, names: list[str], source, steering, xc, yc, seed: int, classes: int, timing: dict,
          tuned: dict | None = None) -> dict:
    """Every method on one stream (xc, yc already in stream order): the cell of metrics.json."""
    cell = {}
    for name in names:
        r = run_method(name, params, source, steering, xc, seed, classes, tuned)
        correct = (r["pred"] == yc).int().tolist()
        cell[name] = {"accuracy": io.significant(sum(correct) / len(correct), 6),
                      "correct": "".join(map(str, correct)),
                      "api_queries_per_sample": io.significant(r["api_queries"] / r["n"], 6),
                      "api_calls": r["api_calls"],
                      "simulated_api_latency_per_sample_s": io.significant(r["simulated_latency_s"] / r["n"], 6),
                      "cost_per_sample": io.significant(r["cost"] / r["n"], 6),
                      "whitebox_evaluations_per_sample": io.significant(r["whitebox_evaluations"] / r["n"], 6)}
        timing.setdefault(name, []).append((r["client_seconds"] / r["n"], r["api_model_seconds"] / r["n"]))
    return cell


def _progress(done: int, total: int, key: str, cell: dict, names: list[str]) -> None:
    summary = " ".join(f"{m}={cell[m]['accuracy']:.3f}" for m in names)
    print(f"[{done}/{total}] {key}: {summary}", flush=True)
    tracking.active().log_metrics({f"{m}/accuracy": cell[m]["accuracy"] for m in names}, step=done)


def _write(out: Path, params: dict, names: list[str], src: Path, cells: dict, timing: dict,
           tuned: dict | None) -> list[Path]:
    info = io.read_json(src / "train.json")
    io.write_json(out / "metrics.json", {"variant": params["variant"], "seed": params["seed"], "methods": names,
                                         "train": info, "tuned": tuned, "cells": cells})
    io.write_json(out / "timing.json", {m: {"client_seconds_per_sample": float(np.mean([c for c, _ in t])),
                                            "api_model_seconds_per_sample": float(np.mean([a for _, a in t]))}
                                        for m, t in timing.items()})
    return [out / "metrics.json", out / "timing.json"]


def _models(params: dict, src: Path, key: str):
    """(source, steering, classes): the trained models of the vision kind, or the released ones."""
    v = params["variant_settings"]
    if v["kind"] not in RELEASED:
        if v["kind"] != "vision":
            raise ValueError(f"config key '{key}.kind': unknown kind '{v['kind']}'")
        return _load(v, "source", src), _load(v, "steering", src), CLASSES
    from . import loaders

    cells_at = released_cells(params)
    wnids = loaders.class_wnids(cells_at[0][1])
    states = {name: io.load_tensors(src / f"{name}.safetensors") for name in ("source", "steering")}
    source, steering = loaders.released_models(v, key, wnids=wnids, states=states, device=_device())
    return source, steering, len(wnids)


def streams(params: dict, seed: int, split: str = "test"):
    """(cell name, x, y) of every stream of the config, in stream order, for a seed: the test
    streams of a test seed or the validation streams of the tuning seed (`split`). The vision kind
    corrupts a fresh draw of the seed (another seed: other images, noise and order); the released
    kinds read their folders, the validation split being `data.validation_size` images of each
    folder that no test stream draws (loaders.read_folder)."""
    import torch

    v, key = params["variant_settings"], _key(params)
    s = _seeds(seed)
    if v["kind"] not in RELEASED:
        from . import corruptions

        x_clean, y = _data(v["data"], v["data"]["test_size"], s["test"])
        order = torch.randperm(len(y), generator=torch.Generator().manual_seed(s["test"])) \
            if params["shift"]["order"] == "shuffled" else torch.arange(len(y))
        for ci, corruption in enumerate(params["shift"]["corruptions"]):
            for severity in params["shift"]["severities"]:
                xc = torch.as_tensor(corruptions.corrupt(x_clean.numpy(), corruption, severity,
                                                         s["test"] * 100 + ci * 10 + severity))[order]
                yield f"{corruption}/{severity}", xc, y[order]
        return
    from . import loaders

    d = v["data"]
    cells_at = released_cells(params)
    wnids = loaders.class_wnids(cells_at[0][1])
    held_out = int(d.get("validation_size", 0))
    if split == "validation" and held_out < 1:
        raise ValueError(f"config key '{key}.data.validation_size': 0; the tuning stream needs images no test "
                         "stream draws")
    size = d["test_size"] if split == "test" else min(d["test_size"], held_out)
    for cell_key, folder in cells_at:
        if loaders.class_wnids(folder) != wnids:
            raise ValueError(f"config key '{key}.data.data_dir': {folder} has other class folders than {cells_at[0][1]}")
        try:
            xc, yc = loaders.read_folder(folder, size, s["test"], d["image_size"],
                                         params["shift"]["order"] == "shuffled", held_out=held_out, split=split)
        except ValueError as exc:
            raise ValueError(f"config key '{key}.data.test_size': {exc}") from exc
        yield cell_key, xc, yc


def _tuned(inputs: dict) -> dict | None:
    """The knobs the tune step chose, per method (None without a tune input: the config's values)."""
    folder = inputs.get("tune")
    return io.read_json(Path(folder) / "tune.json")["chosen"] if folder else None


def adapt(params, inputs, out: Path):
    seed, key = params["seed"], _key(params)
    src = inputs["train"]
    tuned = _tuned(inputs)
    source, steering, classes = _models(params, src, key)
    names = method_names(params)
    cells, timing = {}, {}
    total = len(released_cells(params)) if params["variant_settings"]["kind"] in RELEASED else \
        len(params["shift"]["corruptions"]) * len(params["shift"]["severities"])
    for done, (cell_key, xc, yc) in enumerate(streams(params, seed, "test"), start=1):
        cells[cell_key] = _cell(params, names, source, steering, xc, yc, seed, classes, timing, tuned)
        del xc
        _progress(done, total, cell_key, cells[cell_key], names)
    return _write(out, params, names, src, cells, timing, tuned)


def released_cells(params: dict) -> list[tuple[str, Path]]:
    """(cell name, image folder) of a released-kind variant: every corruption x severity folder
    of ImageNet-C, or the one folder of ImageNet-R / ImageNet-Sketch (named after it)."""
    v, key = params["variant_settings"], _key(params)
    root = v["data"].get("data_dir", "")
    if not root:
        raise ValueError(f"config key '{key}.data.data_dir': empty (the image folders of kind {v['kind']})")
    root = Path(root)
    if v["kind"] == "imagenet_c":
        return [(f"{c}/{sev}", root / c / str(sev)) for c in params["shift"]["corruptions"]
                for sev in params["shift"]["severities"]]
    return [(root.name, root)]


# ---------------------------------------------------------------- tune
def _top_budget_zoo(params: dict) -> list[str]:
    if "zoo" not in params["methods"]:
        return []
    top = max(params["zoo"]["budgets"])
    return [f"zoo_{o}_{top}" for o in params["zoo"]["optimizers"]]


def knobs(params: dict, name: str) -> dict:
    """The knobs the tune step tunes for a method: knob -> (grid, integer, bounds), from
    `beta_tta.tune`. The learning rate of every gradient method (BETA and each ablation that adapts,
    TENT, TPT) on the one `lr` grid; LAME's neighbour count and window of past batches (the window
    grid is LAME_WINDOWS); ZOO's gain (SPSA's a, CMA-ES's sigma0)
    at each budget that buys at least one step. Empty: nothing to tune (source, the frozen
    steering model, a ZOO budget with no step)."""
    t = params["tune"]
    if name in ("tent", "tpt") or ((name == "beta" or name.startswith("beta_"))
                                   and beta_settings(params, name)["adapt_steering"]):
        return {"lr": (t["lr"], False, (None, None))}
    if name == "lame":
        # the neighbours of the affinity; the window of past batches it spans (LAME's batch)
        return {"knn": (t["knn"], True, (1, max(1, params["shift"]["batch_size"] - 1))),
                "window": (LAME_WINDOWS, True, (1, None))}
    if name.startswith("zoo_"):
        _, opt, budget = name.split("_")
        z = params["zoo"]
        if opt == "spsa" and (int(budget) - 1) // 2 >= 1:
            return {"spsa_lr": (t["spsa_lr"], False, (None, None))}
        if opt == "cma" and (int(budget) - 1) // z["cma_popsize"] >= 1:
            return {"cma_sigma0": (t["cma_sigma0"], False, (None, None))}
    return {}


def _fixed_records(params: dict, setting: str) -> list:
    """The knobs fixed for every method that has them, each with its reason."""
    from neurips26.core import tuning

    names = method_names(params)
    b, z = params["beta"], params["zoo"]
    out = [tuning.fixed("every method", "batch_size", params["shift"]["batch_size"],
                        "the stream's batch: one API request per batch, the same for every method (online protocol)",
                        setting)]
    steps = {"beta": ("steps_per_batch", b["steps_per_batch"]), "tent": ("steps_per_batch", params["tent"]["steps_per_batch"]),
             "tpt": ("steps", params["tpt"]["steps"])}
    for m, (knob, value) in steps.items():
        if m in names:
            out.append(tuning.fixed(m, knob, value, "one gradient step per batch (TPT: per image), as in TENT and TPT",
                                    setting))
    if "beta" in names:
        for knob in ("api_weight", "entropy_margin", "consistency_weight", "views", "view_select"):
            out.append(tuning.fixed("beta", knob, b[knob], "our reading of the paper's BETA (README); not swept",
                                    setting))
    if "tpt" in names:
        out.append(tuning.fixed("tpt", "views", params["tpt"]["views"], "TPT's published setting (views, select)",
                                setting))
    for m in names:
        if m.startswith("zoo_") and not knobs(params, m):
            opt = m.split("_")[1]
            out.append(tuning.fixed(m, "spsa_lr" if opt == "spsa" else "cma_sigma0",
                                    z["spsa_lr"] if opt == "spsa" else z["cma_sigma0"],
                                    "the budget buys no optimiser step: the source model's prediction", setting))
    return out


def tune_methods(params: dict, score, setting: str, seed: int) -> tuple[dict, list, dict, dict, dict]:
    """The protocol over every method of the config: `score(name, point)` is a method's validation
    accuracy with the knobs `point`. Returns (chosen knobs per method, tuning records, validation
    accuracy per method, the strongest-baseline choices, seconds per method)."""
    from neurips26.core import tuning

    ext = tuning.settings(params)["extensions"]
    chosen, records, validation, seconds = {}, _fixed_records(params, setting), {}, {}
    for name in method_names(params):
        t0 = time.perf_counter()
        grids = knobs(params, name)
        if not grids:
            validation[name] = score(name, {})
        else:
            point, recs = tuning.search(
                lambda **p: score(name, p), {k: g for k, (g, _, _) in grids.items()}, method=name, setting=setting,
                metric="accuracy", extensions=ext, integer=[k for k, (_, i, _) in grids.items() if i],
                bounds={k: b for k, (_, _, b) in grids.items()}, seed=seed, split="validation",
                natural_ends={"window": LAME_PLAIN} if name == "lame" else None,
                progress=lambda line: print(line, flush=True))
            chosen[name] = point
            records += recs
            validation[name] = recs[0].score
        seconds[name] = round(time.perf_counter() - t0, 2)
        print(f"{name}: validation accuracy {validation[name]:.4f} ({seconds[name]:.1f} s)", flush=True)
    choice = {}
    top = [m for m in _top_budget_zoo(params) if m in validation]
    if top:
        controls = [c for c in ("source",) if c in validation]
        choice["zoo"], rec = tuning.strongest({m: validation[m] for m in top + controls}, candidates=top,
                                              controls=controls, setting=setting, metric="accuracy", seed=seed)
        records.append(rec)
    return chosen, records, validation, choice, seconds


def tune(params, inputs, out: Path):
    """Every method's knobs on the validation streams of the tuning seed (`beta_tta.tune.seed`: its
    own models, images, corruption noise and order), one grid per knob, through core.tuning.search;
    then the stronger ZOO optimiser at the largest budget, chosen on the same validation scores."""
    start = time.perf_counter()
    seed, key, v = params["tune"]["seed"], _key(params), params["variant"]
    src = inputs["train"]
    source, steering, classes = _models(params, src, key)
    # the generated streams are small and kept; the released kinds' folders are read again per point
    kept = None if params["variant_settings"]["kind"] in RELEASED else list(streams(params, seed, "validation"))
    cells = lambda: kept if kept is not None else streams(params, seed, "validation")  # noqa: E731

    def score(name: str, point: dict) -> float:
        accs = []
        for _, xc, yc in cells():
            r = run_method(name, params, source, steering, xc, seed, classes, {name: point})
            accs.append(float((r["pred"] == yc).float().mean()))
        return float(np.mean(accs))

    chosen, records, validation, choice, seconds = tune_methods(params, score, v, seed)
    io.write_json(out / "tune.json", {"variant": v, "seed": seed, "cells": [k for k, _, _ in cells()],
                                      "chosen": chosen, "strongest": choice,
                                      "validation": {m: io.significant(s, 6) for m, s in validation.items()},
                                      "records": [r.to_json() for r in records],
                                      "seconds": seconds, "total_seconds": round(time.perf_counter() - start, 1)})
    return [out / "tune.json"]


# ---------------------------------------------------------------- figures
def summarise(runs: dict, timings: dict, params: dict) -> dict:
    """Per variant: per method, mean accuracy over cells per seed, per-item correctness per seed
    (every cell's items), queries per sample, latency, and the per-cell accuracies."""
    out = {}
    for v, seeds in runs.items():
        first = seeds[0]
        names = first["methods"]
        cells = list(first["cells"])
        dom = {"methods": {}, "cells": cells, "api": params["api"], "budgets": params["zoo"]["budgets"],
               "optimizers": params["zoo"]["optimizers"], "cma_popsize": params["zoo"]["cma_popsize"]}
        for m in names:
            per_seed = [float(np.mean([r["cells"][c][m]["accuracy"] for c in cells])) for r in seeds]
            items = [[int(ch) for c in cells for ch in r["cells"][c][m]["correct"]] for r in seeds]
            dom["methods"][m] = {
                "accuracy": per_seed, "items": items,
                "per_cell": {c: [r["cells"][c][m]["accuracy"] for r in seeds] for c in cells},
                "queries_per_sample": float(np.mean([r["cells"][c][m]["api_queries_per_sample"] for r in seeds for c in cells])),
                "api_latency_per_sample_s": float(np.mean([r["cells"][c][m]["simulated_api_latency_per_sample_s"]
                                                           for r in seeds for c in cells])),
                "client_seconds_per_sample": float(np.mean([t[m]["client_seconds_per_sample"] for t in timings[v]])),
                # per seed, for the latency row's interval over seeds
                "client_seconds_per_sample_seeds": [float(t[m]["client_seconds_per_sample"]) for t in timings[v]],
                # CPU time inside the API's model per image this method sent (machine-dependent)
                "api_model_seconds_per_sample_seeds": [float(t[m].get("api_model_seconds_per_sample", np.nan))
                                                       for t in timings[v]],
                "api_latency_per_sample_seeds": [float(np.mean([r["cells"][c][m]["simulated_api_latency_per_sample_s"]
                                                                for c in cells])) for r in seeds],
                "whitebox_evaluations_per_sample": float(np.mean([r["cells"][c][m]["whitebox_evaluations_per_sample"]
                                                                  for r in seeds for c in cells])),
            }
        # optimiser updates a stream allows (one per batch): what the accuracy rows need to be read
        # (the batches of a stream: the API requests of a one-query-per-image method, one per batch)
        stream = len(first["cells"][cells[0]][names[0]]["correct"]) if cells and names else 0
        dom["stream_length"] = stream
        dom["updates_per_stream"] = max((first["cells"][c][m]["api_calls"] for c in cells for m in names
                                         if first["cells"][c][m]["api_queries_per_sample"] == 1), default=None)
        # the released kinds train nothing here: no clean accuracy of their own
        dom["source_clean_accuracy"] = [r["train"].get("source_clean_accuracy") for r in seeds]
        dom["steering_clean_accuracy"] = [r["train"].get("steering_clean_accuracy") for r in seeds]
        out[v] = dom
    return out


COLOURS = {"source": "#7f7f7f", "lame": "#bcbd22", "tent": "#1f77b4", "tpt": "#17becf", "beta": "#d62728"}


def figures(params, inputs, out: Path):
    root = inputs["adapt"]
    runs, timings = {}, {}
    for v in params["run_variants"]:
        runs[v] = [io.read_json(root / v / f"seed{s}" / "metrics.json") for s in params["seeds"]]
        timings[v] = [io.read_json(root / v / f"seed{s}" / "timing.json") for s in params["seeds"]]
    summary = summarise(runs, timings, params)
    from neurips26.core import tuning

    records = []
    for v in params["run_variants"]:
        t = io.read_json(Path(inputs["tune"]) / v / "tune.json") if inputs.get("tune") else None
        recs = [tuning.Record.from_json(r) for r in t["records"]] if t else []
        records += recs
        summary[v]["tuning"] = {"records": recs, "strongest": t["strongest"] if t else {},
                                "validation": t["validation"] if t else {}}
    tuning.write_csv(out / "tuning.csv", "beta_tta", records)
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    import matplotlib.pyplot as plt

    # accuracy per corruption x severity
    fig, axes = plotting.figure(ncols=len(summary), width=max(7.0, 0.6 * max(len(d["cells"]) for d in summary.values())))
    axes = axes.ravel()
    for ax, (v, dom) in zip(axes, summary.items()):
        main = [m for m in ("source", "lame", "tent", "tpt", "beta") if m in dom["methods"]]
        zoo = [m for m in dom["methods"] if m.startswith("zoo_")]
        best_zoo = max(zoo, key=lambda m: np.mean(dom["methods"][m]["accuracy"])) if zoo else None
        shown = main + ([best_zoo] if best_zoo else [])
        width = 0.8 / len(shown)
        xs = np.arange(len(dom["cells"]))
        for k, m in enumerate(shown):
            means = [np.mean(dom["methods"][m]["per_cell"][c]) for c in dom["cells"]]
            stds = [np.std(dom["methods"][m]["per_cell"][c], ddof=1) if len(params["seeds"]) > 1 else 0
                    for c in dom["cells"]]
            ax.bar(xs + k * width, means, width, yerr=stds, label=m, color=COLOURS.get(m, "#9467bd"))
        ax.set_xticks(xs + 0.4 - width / 2, [c.replace("/", "\n") for c in dom["cells"]], fontsize=6, rotation=60)
        ax.set_ylabel("accuracy")
        ax.set_title(f"{v}: accuracy per corruption/severity (mean ± sd, {len(params['seeds'])} seeds)")
        ax.legend(fontsize=6, ncol=3)
    plotting.save(fig, figdir / "accuracy_per_corruption.png")

    # accuracy against API queries per sample
    fig, axes = plotting.figure(ncols=len(summary))
    axes = axes.ravel()
    for ax, (v, dom) in zip(axes, summary.items()):
        for opt, colour in (("spsa", "#2ca02c"), ("cma", "#9467bd")):
            ms = [f"zoo_{opt}_{q}" for q in dom["budgets"] if f"zoo_{opt}_{q}" in dom["methods"]]
            if ms:
                qs = [dom["methods"][m]["queries_per_sample"] for m in ms]
                plotting.mean_band(ax, qs, [[dom["methods"][m]["accuracy"][i] for m in ms] for i in range(len(params["seeds"]))],
                                   f"ZOO ({opt.upper()})", colour)
        for m in ("source", "lame", "beta"):
            if m in dom["methods"]:
                d = dom["methods"][m]
                ax.errorbar([d["queries_per_sample"]], [np.mean(d["accuracy"])], yerr=[np.std(d["accuracy"], ddof=1)
                            if len(d["accuracy"]) > 1 else 0], fmt="o", color=COLOURS[m], label=m)
        ax.set_xscale("log")
        ax.set_xlabel("API queries per test image (log)")
        ax.set_ylabel("mean accuracy over corruptions")
        ax.set_title(f"{v}: accuracy vs API cost")
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "accuracy_vs_queries.png")

    # ablation
    fig, axes = plotting.figure(ncols=len(summary))
    axes = axes.ravel()
    for ax, (v, dom) in zip(axes, summary.items()):
        abl = [m for m in dom["methods"] if m == "beta" or m.startswith("beta_")] + ["source"]
        means = [np.mean(dom["methods"][m]["accuracy"]) for m in abl]
        stds = [np.std(dom["methods"][m]["accuracy"], ddof=1) if len(params["seeds"]) > 1 else 0 for m in abl]
        ax.barh(abl, means, xerr=stds, color=["#d62728" if m == "beta" else "#ff9896" for m in abl])
        ax.set_xlabel("mean accuracy over corruptions")
        ax.set_title(f"{v}: BETA ablations\n(mean ± sd over seeds)")
    plotting.save(fig, figdir / "ablation.png")
    plt.close("all")

    rows = []
    for v, dom in summary.items():
        for m, d in dom["methods"].items():
            rows.append({"domain": v, "method": m, "mean_accuracy": claims.fmt(d["accuracy"]),
                         "api_queries_per_sample": claims.num(d["queries_per_sample"], 4),
                         "simulated_api_latency_per_sample_s": claims.num(d["api_latency_per_sample_s"], 3),
                         "client_ms_per_sample": claims.num(1000 * d["client_seconds_per_sample"], 2),
                         "api_model_ms_per_sample": claims.num(1000 * float(np.mean(d["api_model_seconds_per_sample_seeds"])), 3),
                         "whitebox_evaluations_per_sample": claims.num(d["whitebox_evaluations_per_sample"], 3)})
        for c in dom["cells"]:
            rows.append({"domain": v, "method": f"per cell {c}",
                         "mean_accuracy": " ".join(f"{m}={np.mean(d['per_cell'][c]):.3f}" for m, d in dom["methods"].items()),
                         "api_queries_per_sample": "", "simulated_api_latency_per_sample_s": "",
                         "client_ms_per_sample": "", "api_model_ms_per_sample": "",
                         "whitebox_evaluations_per_sample": ""})
    return claims.write_tables(out, rows, claim_rows(summary, params["scale"]))
