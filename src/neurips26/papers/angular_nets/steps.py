"""The steps the CLI calls for angular_nets: train (experiment x seed) and planted -> figures.

`train` runs every method of one experiment (a backbone on a data set) for one seed on the
same data, steps and optimiser, then evaluates each: test accuracy, bits, bit-packed storage,
and for experiments with `nu_study` the 1-bit angular net at every nu. `planted` runs the
one-layer planted-model study. `figures` draws the accuracy/bits, accuracy/nu, planted and
storage figures, the table and the claims.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking
from neurips26.core.seeding import generator
from neurips26.core.trainer import fit, make_trainer, train_loader

from .claims import claim_rows

P = "angular_nets"


def _code_hash() -> str:
    """Hash of this package's code: a checkpoint only resumes a run of the same code."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


# ---------------------------------------------------------------- data
REAL_DATA = ("cifar10", "imagenet", "glue")  # fixed files: every seed sees the same train and test sets


def data_seed(d: dict, seed: int) -> int:
    """Seed of the generated data (and of the digits split) of one training seed: each seed
    draws its own training and test sets."""
    return d["seed"] + 1000 * seed


def load_data(source: str, d: dict) -> tuple[torch.utils.data.Dataset, tuple, dict]:
    """(train dataset, test tensors, info) for one data source; `d["seed"]` seeds the generators."""
    import torch

    from . import data as D

    T = torch.utils.data.TensorDataset
    if source in ("shapes", "digits", "cifar10"):
        if source == "shapes":
            from neurips26.data.images import shapes

            xtr, ytr = shapes(d["train_size"], d["image_size"], seed=d["seed"])
            xte, yte = shapes(d["test_size"], d["image_size"], seed=d["seed"] + 1)
        elif source == "digits":
            from neurips26.data.images import digits

            x, y = digits(d["image_size"])
            perm = np.random.default_rng(d["seed"]).permutation(len(x))
            cut = len(x) - min(d["test_size"], len(x) // 3)
            xtr, ytr, xte, yte = x[perm[:cut]], y[perm[:cut]], x[perm[cut:]], y[perm[cut:]]
        else:
            xtr, ytr = D.load_cifar10(d["cifar10_dir"], "train")
            xte, yte = D.load_cifar10(d["cifar10_dir"], "test")
        xtr, ytr, xte, yte = map(torch.from_numpy, (xtr, ytr, xte, yte))
        info = {"channels": xtr.shape[1], "image_size": xtr.shape[-1], "num_classes": 10}
        return T(xtr, ytr), (xte, yte), info
    if source == "imagenet":
        train = D.ImageFolder(Path(d["imagenet_dir"]) / "train", d["image_size"])
        val = D.ImageFolder(Path(d["imagenet_dir"]) / "val", d["image_size"])
        n = min(len(val), d["test_size"])
        xte = torch.stack([torch.from_numpy(val.load(i)) for i in range(n)])
        yte = torch.tensor([val.samples[i][1] for i in range(n)])
        info = {"channels": 3, "image_size": d["image_size"], "num_classes": len(train.classes)}
        return train, (xte, yte), info
    if source == "markers":
        ids, mask, y, vocab = D.marker_task(d["train_size"], d["seq_len"], 10, d["num_distractors"], d["seed"])
        ids_te, mask_te, y_te, _ = D.marker_task(d["test_size"], d["seq_len"], 10, d["num_distractors"], d["seed"] + 1)
        info = {"vocab_size": vocab, "max_len": d["seq_len"], "num_classes": 10}
        t = torch.from_numpy
        return T(t(ids), t(mask), t(y)), (t(ids_te), t(mask_te), t(y_te)), info
    if source == "glue":
        root, task = Path(d["glue_dir"]), d["glue_task"]
        a, b, y = D.read_glue_tsv(root / "train.tsv", task)
        a_te, b_te, y_te = D.read_glue_tsv(root / "dev.tsv", task)
        vocab = D.build_vocab(a + [t for t in b if t], d["vocab_size"])
        ids, mask = D.encode(a, b, vocab, d["seq_len"])
        ids_te, mask_te = D.encode(a_te, b_te, vocab, d["seq_len"])
        info = {"vocab_size": d["vocab_size"], "max_len": d["seq_len"], "num_classes": max(y) + 1}
        t = torch.from_numpy
        return (T(t(ids), t(mask), torch.tensor(y)), (t(ids_te), t(mask_te), torch.tensor(y_te)), info)
    raise ValueError(f"config key 'angular_nets.variants.*.data': unknown data source {source!r}")


def validation_data(source: str, d: dict) -> tuple | None:
    """A validation set of `d["test_size"]` examples for a generated source, drawn from the
    generator with its own seed (`d["seed"] + 2`: the training set uses `d["seed"]`, the test set
    `d["seed"] + 1`), so its items are never test items; None for a fixed data set (no split is
    held out of its training set). The strongest baseline of an experiment without a tune step is
    chosen on it."""
    import torch

    from . import data as D

    if source == "shapes":
        from neurips26.data.images import shapes

        x, y = shapes(d["test_size"], d["image_size"], seed=d["seed"] + 2)
        return torch.from_numpy(x), torch.from_numpy(y)
    if source == "markers":
        ids, mask, y, _ = D.marker_task(d["test_size"], d["seq_len"], 10, d["num_distractors"], d["seed"] + 2)
        return torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(y)
    return None


# ---------------------------------------------------------------- training
def resample_rounds(steps: int, every: float, until: float) -> dict[int, int]:
    """step -> resampling round: G is redrawn every `every` x steps (a share of training) while
    the step is below `until` x steps, never at step 0 (the authors' TinyImageNet/ImageNet loop:
    every 5 epochs over the first 60% of a 100-epoch run; every <= 0 turns it off)."""
    if every <= 0:
        return {}
    period = max(1, round(every * steps))
    return {s: s // period for s in range(period, steps, period) if s < until * steps}


def classifier_module(model, t: dict, tag: str, lr: float | None = None, resample: dict | None = None):
    import torch
    import torch.nn.functional as F
    import lightning as L

    from .angular import _AngularBase
    from .baselines import clip_latent_weights

    rounds = resample_rounds(t["steps"], *(resample or (0.0, 0.0)))
    lr = t["lr"] if lr is None else lr

    class Classifier(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = model
            self.losses: list[float] = []

        def on_train_batch_start(self, batch, batch_idx):
            # G is a buffer, so a resumed run continues with the G of its checkpoint
            r = rounds.get(self.global_step)
            if r is not None:
                for m in self.model.modules():
                    if isinstance(m, _AngularBase):
                        m.resample_projection(r)

        def on_train_batch_end(self, outputs, batch, batch_idx):
            clip_latent_weights(self.model)  # BNN only; after the optimiser step

        def training_step(self, batch, batch_idx):
            *inputs, y = batch
            loss = F.cross_entropy(self.model(*inputs), y)
            self.losses.append(float(loss.detach()))
            self.log(f"{tag}/train_loss", loss, on_step=True, on_epoch=False)
            return loss

        # the loss history travels with the checkpoint, so a resumed job reports the same numbers
        def on_save_checkpoint(self, checkpoint):
            checkpoint["train_losses"] = list(self.losses)

        def on_load_checkpoint(self, checkpoint):
            self.losses = list(checkpoint.get("train_losses", []))

        def configure_optimizers(self):
            opt = torch.optim.AdamW(self.parameters(), lr=lr, weight_decay=t["weight_decay"])
            warm, total = t["warmup_steps"], t["steps"]

            def factor(step):
                if step < warm:
                    return (step + 1) / warm
                return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warm) / max(1, total - warm))))

            sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    return Classifier()


def correct_per_example(model, test: tuple, batch_size: int = 500) -> list[int]:
    """1 where the model classifies a test example right, else 0, on the GPU when there is one
    (the model is left on the CPU afterwards)."""
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.eval().to(device)
    *inputs, y = test
    correct: list[int] = []
    with torch.no_grad():
        for i in range(0, len(y), batch_size):
            out = model(*[t[i:i + batch_size].to(device) for t in inputs])
            correct += (out.argmax(1).cpu() == y[i:i + batch_size]).int().tolist()
    model.cpu()
    return correct


def method_spec(name: str, settings: dict, angular: dict, seed: int, nu: float | None = None,
                min_features: int | None = None):
    from .models import LayerSpec

    return LayerSpec(method=settings["method"], bits=settings.get("bits", 32 if settings["method"] == "fp" else 1),
                     a_bits=settings.get("a_bits"), nu=nu if nu is not None else settings.get("nu", angular["nu"]),
                     projection=angular["projection"], centre=angular["centre"], seed=seed,
                     min_features=angular["min_features"] if min_features is None else min_features,
                     gain_init=angular["gain_init"])


def resample_schedule(settings: dict, angular: dict) -> tuple[float, float]:
    """(every, until) of a method's G resampling: the method entry's `resample_every` /
    `resample_until` where it sets them (the resampling ablation), else `angular`'s (the default:
    0, never, as the authors' CIFAR and ImageNet code)."""
    return (float(settings.get("resample_every", angular["resample_every"])),
            float(settings.get("resample_until", angular["resample_until"])))


def train_one(name, spec, backbone, params, train_set, test, info, out: Path, lr: float | None = None,
              validation: tuple | None = None, resample: tuple[float, float] | None = None) -> dict:
    import torch

    from .models import ANGULAR, build
    from .storage import storage_bytes

    t, seed, a = params["train"], params["seed"], params["angular"]
    torch.manual_seed(seed * 7919 + sum(map(ord, name)))  # the same init stream for a name and seed
    model = build(backbone, spec, params["arch"][backbone], info)
    module = classifier_module(model, t, name, lr, resample or (a["resample_every"], a["resample_until"]))
    run_params = {**params, "method": name, "nu": spec.nu, "lr": lr, "code": _code_hash()}
    trainer, resume = make_trainer(out / name, run_params, t["steps"], checkpoint_every=t["steps"],
                                   log_every_n_steps=max(1, t["steps"] // 10))
    loader = train_loader(trainer, train_set, t["batch_size"], generator(seed), num_workers=t["num_workers"],
                          key="angular_nets.train.batch_size")
    fit(trainer, module, loader, resume)
    correct = correct_per_example(model, test)
    acc = sum(correct) / len(correct)
    val_correct = correct_per_example(model, validation) if validation is not None else None
    k = max(1, len(module.losses) // 10)
    n_rows = sorted({m.n_rows for m in model.modules() if hasattr(m, "n_rows")})
    result = {"accuracy": acc, "correct": correct, "weight_bits": spec.weight_bits, "activation_bits": spec.activation_bits,
              "nu": spec.nu if spec.method in ANGULAR else None, "features": n_rows or None,
              "lr": t["lr"] if lr is None else lr, "storage_bytes": storage_bytes(model),
              "validation_accuracy": sum(val_correct) / len(val_correct) if val_correct else None,
              "global_zero": bool(trainer.is_global_zero),
              "loss_start": float(np.mean(module.losses[:k])) if module.losses else None,
              "loss_end": float(np.mean(module.losses[-k:])) if module.losses else None}
    tracking.active().log_metrics({f"{name}/test_accuracy": acc, f"{name}/storage_bytes": result["storage_bytes"]})
    print(f"{name}: lr {result['lr']:g}  accuracy {acc:.4f}  storage {result['storage_bytes'] / 1e6:.4f} MB", flush=True)
    return result


def _methods(params) -> list[str]:
    v = params["variant_settings"]
    return v.get("methods") or list(params["methods"])


def tune(params, inputs, out: Path):
    """The learning rate of every method of one experiment by the tuning protocol
    (`core.tuning.search`): the grid `tune.lrs`, extended while a method's best rate sits on an
    edge (at most `tuning.extensions` steps per edge), each point trained as in `train` at the
    tuning seed `tune.seed` (never a test seed) on the training set less its last
    `tune.validation_share` and scored on that held-out part (never on the test set). Every method
    gets the same grid and budget; metrics.json names each method's best rate and carries the
    tuning records."""
    import torch

    from neurips26.core import tuning

    v, tcfg = params["variant_settings"], params["tune"]
    if tcfg["seed"] in params.get("seeds", []):
        raise ValueError(f"config key 'angular_nets.tune.seed': {tcfg['seed']} is one of the test seeds "
                         f"{params['seeds']}; the tuning seed must be disjoint from them")
    extensions = tuning.settings(params)["extensions"]
    params = {**params, "seed": tcfg["seed"]}
    train_set, _, info = load_data(v["data"], {**params["data"], "seed": data_seed(params["data"], tcfg["seed"])})
    n_val = int(round(len(train_set) * tcfg["validation_share"]))
    if not 0 < n_val < len(train_set):
        raise ValueError(f"config key 'angular_nets.tune.validation_share': {tcfg['validation_share']} leaves no "
                         f"training or validation examples out of {len(train_set)}")
    fit_set = torch.utils.data.Subset(train_set, range(len(train_set) - n_val))
    val = tuple(torch.stack([train_set[i][j] for i in range(len(train_set) - n_val, len(train_set))])
                for j in range(len(train_set[0])))
    grid, best, records, zero = {}, {}, [], True
    split = f"validation (the last {tcfg['validation_share']:g} of the tuning seed's training set, {n_val} examples)"
    for name in _methods(params):
        spec = method_spec(name, params["methods"][name], params["angular"], tcfg["seed"])
        grid[name] = {}

        def evaluate(lr, name=name, spec=spec):
            nonlocal zero
            r = train_one(f"{name}_lr{lr:g}", spec, v["backbone"], params, fit_set, val, info, out / "runs", lr=lr,
                          resample=resample_schedule(params["methods"][name], params["angular"]))
            grid[name][f"{lr:g}"] = r["accuracy"]
            zero = r["global_zero"]
            return r["accuracy"]

        chosen, recs = tuning.search(evaluate, {"lr": tcfg["lrs"]}, method=name, setting=params["variant"],
                                     metric="accuracy", extensions=extensions, seed=tcfg["seed"], split=split)
        best[name] = float(chosen["lr"])
        records += recs
    if zero:
        io.write_json(out / "metrics.json", {"experiment": params["variant"], "seed": tcfg["seed"],
                                             "validation_size": n_val, "validation_accuracy": grid, "best_lr": best,
                                             "tuning": [r.to_json() for r in records]})
    return [out / "metrics.json"]


def train(params, inputs, out: Path):
    """Every method of one experiment for one seed; metrics.json holds their test accuracy.
    With a `tune` input each method trains at its tuned learning rate."""
    v = params["variant_settings"]
    backbone, methods = v["backbone"], _methods(params)
    best_lr = io.read_json(inputs["tune"] / "metrics.json")["best_lr"] if inputs.get("tune") else {}
    missing = [n for n in methods if best_lr and n not in best_lr]
    if missing:
        raise ValueError(f"input 'tune' ({inputs['tune']}) has no learning rate for {missing}")
    d = {**params["data"], "seed": data_seed(params["data"], params["seed"])}
    train_set, test, info = load_data(v["data"], d)
    validation = validation_data(v["data"], d)
    results = {}
    for name in methods:
        spec = method_spec(name, params["methods"][name], params["angular"], params["seed"])
        results[name] = train_one(name, spec, backbone, params, train_set, test, info, out, lr=best_lr.get(name),
                                  validation=validation,
                                  resample=resample_schedule(params["methods"][name], params["angular"]))
    nu_study = {}
    if v.get("nu_study"):
        base = params["nu_study_method"]
        for nu in params["nu_values"]:
            # N = max(nu_study_min_features, int(nu d)): 0 at default scale, so the axis is nu itself
            spec = method_spec(base, params["methods"][base], params["angular"], params["seed"], nu=nu,
                               min_features=params["nu_study_min_features"])
            same = method_spec(base, params["methods"][base], params["angular"], params["seed"])
            if base in results and (spec.nu, spec.min_features) == (same.nu, same.min_features):
                nu_study[f"{nu:g}"] = dict(results[base])  # the experiment's own run
            else:
                nu_study[f"{nu:g}"] = train_one(f"{base}_nu{nu:g}", spec, backbone, params, train_set, test, info,
                                                out, lr=best_lr.get(base))
    if not all(r.pop("global_zero", True) for r in [*results.values(), *nu_study.values()]):
        return []  # outputs are rank 0's
    io.write_json(out / "metrics.json", {"experiment": params["variant"], "seed": params["seed"],
                                         "backbone": backbone, "data": v["data"], "methods": results,
                                         "nu_study": nu_study, "nu_study_method": params["nu_study_method"],
                                         "data_fixed": v["data"] in REAL_DATA})
    return [out / "metrics.json"]


# ---------------------------------------------------------------- planted model
def planted(params, inputs, out: Path):
    """Recovery of a planted binary target by G-gradient training, against n and the gradient norm."""
    import torch

    from .planted import PlantedTrials, lightning_module

    p = params["planted"]
    trials = PlantedTrials(p["dim"], p["sample_sizes"], p["trials"], p["nu"], p["seed"], p["condition_margin"])
    module = lightning_module(trials, p["lr"], p["steps"], p["resample"])
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(1)), batch_size=1)
    trainer, resume = make_trainer(out, {**params, "code": _code_hash()}, p["steps"], checkpoint_every=p["steps"],
                                   log_every_n_steps=max(1, p["steps"] // 10))
    fit(trainer, module, loader, resume)
    rows = trials.results()
    rate = {str(n): float(np.mean([r["recovered"] for r in rows if r["n"] == n])) for n in p["sample_sizes"]}
    tracking.active().log_metrics({f"planted/recovery_n{n}": r for n, r in rate.items()})
    if not trainer.is_global_zero:
        return []
    io.write_json(out / "metrics.json", {"trials": rows, "recovery_rate": rate, "dim": p["dim"],
                                         "condition_margin": p["condition_margin"]})
    return [out / "metrics.json"]


# ---------------------------------------------------------------- figures
COLOURS = {"fp": "#444444", "bnn": "#1f77b4", "xnor": "#2ca02c", "lsq": "#9467bd", "angular": "#d62728",
           "angular_ste": "#ff7f0e"}
ABLATIONS = {"resample": ", G resampled (ablation)", "equal_bits": ", N = d: BNN's stored bits"}
LABELS = {"fp": "full precision", "bnn": "BNN (STE sign)", "xnor": "XNOR-Net", "lsq": "LSQ",
          "angular": "Angular (A after an fp projection)", "angular_ste": "STE on the same projected signs"}


def _vals(runs, method, key="accuracy"):
    return [r["methods"][method][key] for r in runs if method in r["methods"]]


def num_classes(source: str, d: dict) -> int | None:
    """The number of classes of a data source, read without loading the data (chance accuracy is
    one over it); None when it cannot be told."""
    if source in ("shapes", "digits", "cifar10", "markers"):
        return 10
    if source == "imagenet":
        return sum(p.is_dir() for p in (Path(d["imagenet_dir"]) / "train").iterdir())
    if source == "glue":
        from . import data as D

        return max(D.read_glue_tsv(Path(d["glue_dir"]) / "dev.tsv", d["glue_task"])[2]) + 1
    return None


def claims_summary(runs: dict, planted_m: dict, methods_cfg: dict, data_params: dict | None = None,
                   tunes: dict | None = None) -> dict:
    """What the claims need, per experiment and method: family, bits, per-seed accuracy and
    per-seed per-example correctness (None when a run did not save it); the experiment's number
    of classes (None without `data_params`); each method's validation accuracy (the tune step's at
    its chosen rate, at the tuning seed, where `tunes` holds the experiment's tune metrics; else
    the mean over seeds of the train step's validation draw; None without either); the planted
    trials."""
    def entry(results: list[dict]) -> dict:
        correct = [r.get("correct") for r in results]
        sizes = [r.get("storage_bytes") for r in results]
        return {"accuracy": [r["accuracy"] for r in results],
                "correct": None if any(c is None for c in correct) else correct,
                "storage_bytes": None if any(b is None for b in sizes) else float(np.mean(sizes))}

    experiments = {}
    for e, rs in runs.items():
        first = rs[0]
        methods = {n: {"family": methods_cfg[n]["method"], "ablation": methods_cfg[n].get("ablation", ""),
                       "weight_bits": m["weight_bits"],
                       "activation_bits": m["activation_bits"], **entry([r["methods"][n] for r in rs])}
                   for n, m in first["methods"].items()}
        nu_study = {nu: entry([r["nu_study"][nu] for r in rs]) for nu in sorted(first["nu_study"], key=float)}
        tune = (tunes or {}).get(e)
        if tune:
            validation = {n: tune["validation_accuracy"][n][f"{tune['best_lr'][n]:g}"] for n in methods
                          if n in tune.get("best_lr", {})}
            where, vseed = f"the tune step's validation split (tuning seed {tune['seed']})", tune["seed"]
        else:
            validation = {}
            for n in methods:
                vals = [r["methods"][n].get("validation_accuracy") for r in rs]
                validation[n] = None if any(x is None for x in vals) else float(np.mean(vals))
            where, vseed = "a validation draw of the generator (mean over the seeds)", "test seeds"
        experiments[e] = {"methods": methods, "nu_study": nu_study, "data_fixed": bool(first.get("data_fixed")),
                          "data": first["data"], "nu_study_method": first.get("nu_study_method", ""),
                          "validation": validation, "validation_split": where, "validation_seed": vseed,
                          "num_classes": num_classes(first["data"], data_params) if data_params is not None else None}
    return {"experiments": experiments,
            "planted": {k: planted_m[k] for k in ("trials", "condition_margin")}}


FIXED_WHY = ("one learning rate for every method: the default run cannot afford a learning-rate grid for every "
             "training experiment (the tuned BERT experiment alone trains each method three to five times more); "
             "fixed for all, never tuned for one")


def tuning_records(params: dict, experiments: list[str], runs: dict, tunes: dict, summary: dict) -> list:
    """Every knob of every method as the tuning protocol chose or fixed it: the tune step's records
    (learning rate, tuned experiments), the shared rate `train.lr` (fixed, other experiments), the
    other training knobs (fixed for every method) and each experiment's strongest-baseline choice."""
    from neurips26.core import tuning

    from .claims import strongest_baseline

    t = params["train"]
    records = []
    for e in experiments:
        if e in tunes:
            records += [tuning.Record.from_json(r) for r in tunes[e].get("tuning", [])]
        else:
            for n in runs[e][0]["methods"]:
                records.append(tuning.fixed(n, "lr", t["lr"], FIXED_WHY, setting=e))
        _, choice, _ = strongest_baseline(e, summary["experiments"][e])
        if choice is not None:
            records.append(choice)
    for knob in ("steps", "batch_size", "weight_decay", "warmup_steps"):
        records.append(tuning.fixed("every method", knob, t[knob], "the paper's shared training recipe: the same for "
                                    "every method and experiment", setting="all experiments"))
    records.append(tuning.fixed("angular methods", "nu", params["angular"]["nu"], "the paper's N = nu d; its effect is "
                                "the nu study's, not a tuned knob", setting="all experiments"))
    return records


def figures(params, inputs, out: Path):
    experiments, seeds, scale = params["run_variants"], params["seeds"], params["scale"]
    methods_cfg = params["methods"]
    runs = {e: [io.read_json(inputs["trains"] / e / f"seed{s}" / "metrics.json") for s in seeds] for e in experiments}
    planted_m = io.read_json(inputs["planted"] / "metrics.json")
    tunes = {e: io.read_json(inputs["tunes"] / e / "metrics.json") for e in experiments
             if inputs.get("tunes") and (inputs["tunes"] / e / "metrics.json").exists()}
    figdir = out / "figures"

    # accuracy against bits, one panel per experiment
    fig, axes = plotting.figure(ncols=len(experiments), width=4.2)
    for ax, e in zip(axes[0], experiments):
        names = list(runs[e][0]["methods"])
        families: dict[str, list[str]] = {}
        for n in names:  # an ablation method is a series of its own
            ab = methods_cfg[n].get("ablation")
            families.setdefault(f"{methods_cfg[n]['method']}:{ab}" if ab else methods_cfg[n]["method"], []).append(n)
        for fam, members in families.items():
            members = sorted(members, key=lambda n: runs[e][0]["methods"][n]["weight_bits"])
            bits = [runs[e][0]["methods"][n]["weight_bits"] for n in members]
            accs = [_vals(runs[e], n) for n in members]
            if fam == "fp":
                m = float(np.mean(accs[0]))
                ax.axhline(m, color=COLOURS["fp"], ls="--", lw=1, label=f"{LABELS['fp']} (n={len(accs[0])})")
                ax.axhspan(min(accs[0]), max(accs[0]), color=COLOURS["fp"], alpha=0.1)
                continue
            means = [float(np.mean(a)) for a in accs]
            base, _, ab = fam.partition(":")
            ax.errorbar(bits, means, yerr=[[m - min(a) for m, a in zip(means, accs)], [max(a) - m for m, a in zip(means, accs)]],
                        color=COLOURS[base], marker="s" if ab else "o", mfc="none" if ab else None, ms=4, capsize=3,
                        ls="none" if ab else "-", label=f"{LABELS[base]}{ABLATIONS.get(ab, '')} (n={len(accs[0])})")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bits per weight = bits per activation")
        ax.set_ylabel("test accuracy (higher is better)")
        ax.set_title(f"{e}: {runs[e][0]['backbone']} on {runs[e][0]['data']}")
        ax.legend()
    fig.suptitle(f"angular_nets: accuracy vs bit-width, mean and min-max over seeds ({scale} scale)")
    plotting.save(fig, figdir / "accuracy_vs_bits.png")

    # accuracy against nu
    nu_exps = [e for e in experiments if runs[e][0]["nu_study"]]
    fig, axes = plotting.figure(ncols=max(1, len(nu_exps)))
    for ax, e in zip(axes[0], nu_exps):
        nus = sorted(runs[e][0]["nu_study"], key=float)
        accs = [[r["nu_study"][nu]["accuracy"] for r in runs[e]] for nu in nus]
        plotting.mean_band(ax, [float(n) for n in nus], list(map(list, zip(*accs))),
                           f"1-bit angular ({runs[e][0]['nu_study_method']})", COLOURS["angular"])
        for fam in ("fp", "bnn"):
            if fam in runs[e][0]["methods"]:
                ax.axhline(float(np.mean(_vals(runs[e], fam))), color=COLOURS[fam], ls="--", lw=1, label=LABELS[fam])
        ax.set_xscale("log", base=2)
        ax.set_xlabel("nu = N / d (random features per input dimension)")
        ax.set_ylabel("test accuracy (higher is better)")
        ax.set_title(f"{e}: accuracy vs nu ({scale} scale)")
        ax.legend()
    plotting.save(fig, figdir / "accuracy_vs_nu.png")

    # planted model
    trials = planted_m["trials"]
    sizes = sorted({t["n"] for t in trials})
    fig, axes = plotting.figure(ncols=2)
    ax = axes[0, 0]
    ax.plot(sizes, [planted_m["recovery_rate"][str(n)] for n in sizes], "o-", color=COLOURS["angular"],
            label=f"{sum(t['n'] == sizes[0] for t in trials)} trials per n")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"samples n (d = {planted_m['dim']})")
    ax.set_ylabel("exact recovery rate of w*")
    ax.set_title("planted model: recovery vs sample size")
    ax.legend()
    # the share recovered across the condition: trials binned by G-gradient norm / threshold
    ax = axes[0, 1]
    ratios = np.array([t["g_gradient_norm"] / t["threshold"] if t["threshold"] > 0 else np.inf for t in trials])
    rec = np.array([t["recovered"] for t in trials], dtype=float)
    finite = np.isfinite(ratios)
    if finite.any():
        lo, hi = np.log10(ratios[finite].min()), np.log10(ratios[finite].max())
        edges = np.logspace(min(lo, -0.5), max(hi, 0.5) + 1e-9, 9)
        idx = np.digitize(ratios[finite], edges) - 1
        centres = np.sqrt(edges[:-1] * edges[1:])
        share = [(centres[b], rec[finite][idx == b].mean(), int((idx == b).sum())) for b in range(len(centres))
                 if (idx == b).any()]
        ax.plot([c for c, _, _ in share], [m for _, m, _ in share], "o-", color=COLOURS["angular"],
                label="share recovered (bin)")
        for c, m, k in share:
            ax.annotate(str(k), (c, m), textcoords="offset points", xytext=(0, 5), fontsize=7, ha="center")
        ax.scatter(ratios[finite], rec[finite] + np.where(rec[finite] > 0, 0.03, -0.03), s=8, color="#888888",
                   alpha=0.5, label="trials (jittered)")
        ax.set_xscale("log")
    ax.axvline(1.0, color="#444444", ls="--", lw=1, label="condition: norm < threshold (left)")
    ax.set_xlabel("final G-gradient norm / the trial's threshold\n(threshold: margin lambda_min(H*) / sqrt(d))")
    ax.set_ylabel("exact recovery (share)")
    ax.set_title(f"planted model: recovery across the condition\n({int((~finite).sum())} trials with lambda_min = 0 left out)",
                 fontsize=10)
    ax.legend()
    plotting.save(fig, figdir / "planted_recovery.png")

    # table: accuracy, bits, storage
    rows = []
    for e in experiments:
        fp_bytes = float(np.mean(_vals(runs[e], "fp", "storage_bytes"))) if "fp" in runs[e][0]["methods"] else math.nan
        for n in runs[e][0]["methods"]:
            m0 = runs[e][0]["methods"][n]
            sb = float(np.mean(_vals(runs[e], n, "storage_bytes")))
            rows.append({"experiment": e, "backbone": runs[e][0]["backbone"], "data": runs[e][0]["data"], "method": n,
                         "weight_bits": f"{m0['weight_bits']:g}", "activation_bits": f"{m0['activation_bits']:g}",
                         "nu": "" if m0["nu"] is None else f"{m0['nu']:g}",
                         "accuracy": claims.fmt(_vals(runs[e], n)), "storage_mb": f"{sb / 1e6:.4f}",
                         "fp32_storage_mb": f"{fp_bytes / 1e6:.4f}", "compression_vs_fp32": f"{fp_bytes / sb:.1f}x"})
        for nu, _ in sorted(runs[e][0]["nu_study"].items(), key=lambda kv: float(kv[0])):
            accs = [r["nu_study"][nu]["accuracy"] for r in runs[e]]
            sb = float(np.mean([r["nu_study"][nu]["storage_bytes"] for r in runs[e]]))
            rows.append({"experiment": e, "backbone": runs[e][0]["backbone"], "data": runs[e][0]["data"],
                         "method": f"{runs[e][0]['nu_study_method']} (nu study)", "weight_bits": "1",
                         "activation_bits": "1", "nu": nu, "accuracy": claims.fmt(accs), "storage_mb": f"{sb / 1e6:.4f}",
                         "fp32_storage_mb": f"{fp_bytes / 1e6:.4f}", "compression_vs_fp32": f"{fp_bytes / sb:.1f}x"})
    from neurips26.core import tuning

    summary = claims_summary(runs, planted_m, methods_cfg, params["data"], tunes)
    records = tuning_records(params, experiments, runs, tunes, summary)
    tuning.write_csv(out / "tuning.csv", P, records)
    return [*claims.write_tables(out, rows, claim_rows(summary, scale, records)), out / "tuning.csv"]
