"""The steps the CLI calls for nar_dit: prepare -> classifier -> train -> evaluate -> figures.

Each takes (params, inputs, out): params from the config (see
workflow/schemas/papers/nar_dit.schema.yaml), inputs by name, and the output folder.
"""

from __future__ import annotations

import math
from pathlib import Path

from neurips26.core import claims, io, plotting, tracking
from neurips26.core.seeding import generator
from neurips26.core.trainer import fit, make_trainer, train_loader

from . import claims as nar_claims

SPLITS = ("train", "heldout", "reference")
# what a seed does not vary: prepare and the classifier run once per config
HOLDS_FIXED = "the generated image sets (train, held-out, reference) and the FD_cls classifier"


# ---------------------------------------------------------------- prepare
def prepare(params, inputs, out: Path):
    """Generate (or index) the image set: train, held-out and a fresh reference split.

    With ImageNet latents, reference and held-out images are drawn from the latent folder and
    their indices are written to the manifest, so training leaves them out."""
    import torch

    from .data import LatentFolder, synthetic

    d = params["data"]
    if d["source"] == "imagenet_latents":
        folder = LatentFolder(d["features_dir"], d["labels_dir"])
        n_ref, n_probe = d["reference_size"], d["heldout_per_class"] * 10
        if n_ref + 2 * n_probe >= len(folder):
            raise ValueError(f"config key 'nar_dit.data.reference_size': {n_ref} + 2 x {n_probe} probe images "
                             f"leave no training data in {len(folder)} latents")
        picks = torch.randperm(len(folder), generator=generator(d["seed"])).tolist()
        splits = {"reference": picks[:n_ref], "heldout": picks[n_ref:n_ref + n_probe],
                  "train": picks[n_ref + n_probe:n_ref + 2 * n_probe]}
        tensors = {}
        for name, idx in splits.items():
            pairs = [folder[i] for i in idx]
            tensors[f"{name}_x"] = torch.stack([x for x, _ in pairs])
            tensors[f"{name}_y"] = torch.stack([y for _, y in pairs])
        manifest = {"source": d["source"], "latents": len(folder), "shape": list(folder.shape()),
                    "features_dir": str(d["features_dir"]), "labels_dir": str(d["labels_dir"]),
                    "excluded_from_training": sorted(splits["reference"] + splits["heldout"])}
    else:
        counts = {"train": d["train_per_class"] * 10, "heldout": d["heldout_per_class"] * 10,
                  "reference": d["reference_size"]}
        tensors = synthetic(d["source"], d["image_size"], counts, d["seed"])
        tensors = {k: (v * 2 - 1 if k.endswith("_x") else v) for k, v in tensors.items()}  # model space [-1, 1]
        manifest = {"source": d["source"], "shape": list(tensors["train_x"].shape[1:]),
                    **{f"{k}_size": v for k, v in counts.items()}}
    io.save_tensors(out / "images.safetensors", tensors)
    io.write_json(out / "manifest.json", manifest)


def _load_images(inputs) -> tuple[dict, dict]:
    data_dir = inputs["data"]
    return io.load_tensors(data_dir / "images.safetensors"), io.read_json(data_dir / "manifest.json")


# ---------------------------------------------------------------- classifier
def classifier(params, inputs, out: Path):
    """Train the FD_cls feature network on a fresh generated set; report its accuracy."""
    import torch

    from neurips26.data.images import shapes

    from .classifier import FeatureCNN, accuracy
    from .training import ClassifierModule

    c, d = params["classifier"], params["data"]
    images, manifest = _load_images(inputs)
    if manifest["source"] == "imagenet_latents":
        raise ValueError("config key 'nar_dit.evaluate.metric': use 'inception' with ImageNet latents; "
                         "the FD_cls classifier is for the generated image sets")
    if manifest["source"] == "shapes":
        x, y = shapes(c["train_size"], d["image_size"], seed=c["seed"])
        x, y = torch.from_numpy(x), torch.from_numpy(y)
    else:  # digits: the train split, the only labelled images that are not the reference
        x, y = (images["train_x"] + 1) / 2, images["train_y"]
    net = FeatureCNN(x.shape[1], c["width"], c["features"])
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=c["batch_size"],
                                         shuffle=True, generator=generator(c["seed"]), drop_last=True)
    trainer, resume = make_trainer(out, params, c["steps"])
    fit(trainer, ClassifierModule(net, c["lr"]), loader, resume)
    acc = accuracy(net, (images["reference_x"] + 1) / 2, images["reference_y"])
    tracking.active().log_metrics({"classifier/reference_accuracy": acc})
    io.save_tensors(out / "classifier.safetensors", net.state_dict(),
                    metadata={"in_channels": str(x.shape[1]), "width": str(c["width"]), "features": str(c["features"])})
    io.write_json(out / "metrics.json", {"reference_accuracy": acc, "train_size": len(x)})


def _load_classifier(path: Path):
    from .classifier import FeatureCNN

    meta = io.load_tensor_metadata(path)
    net = FeatureCNN(int(meta["in_channels"]), int(meta["width"]), int(meta["features"]))
    net.load_state_dict(io.load_tensors(path))
    return net.eval()


# ---------------------------------------------------------------- train
def _model_config(params, shape) -> DiTConfig:
    from .model import DiTConfig

    m = params["model"]
    return DiTConfig(image_size=shape[-1], in_channels=shape[0], patch=m["patch"], depth=m["depth"],
                     hidden=m["hidden"], heads=m["heads"], mlp_ratio=m["mlp_ratio"],
                     num_classes=m["num_classes"], class_dropout=m["class_dropout"])


def _policy(params) -> RoutingPolicy:
    from .model import RoutingPolicy

    v, t = params["variant_settings"], params["train"]
    return RoutingPolicy(kind=v["kind"], ratio=v.get("ratio", 0.0), ratios=tuple(v.get("ratios", ())),
                         boundaries=tuple(v.get("boundaries", (1 / 3, 2 / 3))),
                         route_start=t["route_start"], route_end=t["route_end"])


def _snapshot_steps(train) -> list[int]:
    every, total = train["eval_every"], train["steps"]
    return sorted({*range(every, total + 1, every), total})


def train(params, inputs, out: Path):
    """Train one regime (dit, tread, nar, nar_inverted) for one seed; save EMA snapshots."""
    import torch

    from .data import LatentFolder
    from .model import DiT, RoutingPolicy, train_step_flops
    from .training import FlowMatchingDiT

    t = params["train"]
    images, manifest = _load_images(inputs)
    if manifest["source"] == "imagenet_latents":
        folder = LatentFolder(manifest["features_dir"], manifest["labels_dir"])
        excluded = set(manifest["excluded_from_training"])
        dataset = torch.utils.data.Subset(folder, [i for i in range(len(folder)) if i not in excluded])
    else:
        dataset = torch.utils.data.TensorDataset(images["train_x"], images["train_y"])
    shape = manifest["shape"]
    cfg = _model_config(params, shape)
    policy = _policy(params)
    model = DiT(cfg)
    snapshots = _snapshot_steps(t)
    module = FlowMatchingDiT(model, policy, t["lr"], t["weight_decay"], t["warmup_steps"], t["ema_decay"], snapshots)
    trainer, resume = make_trainer(out, params, t["steps"], checkpoint_every=t["checkpoint_every"])
    loader = train_loader(trainer, dataset, t["batch_size"], generator(params["seed"]), num_workers=t["num_workers"],
                          key="nar_dit.train.batch_size")
    fit(trainer, module, loader, resume)
    flat = {f"{step}/{k}": v for step, state in module.snapshots.items() for k, v in state.items()}
    io.save_tensors(out / "snapshots.safetensors", flat, metadata={"steps": ",".join(map(str, sorted(module.snapshots)))})
    flops = train_step_flops(cfg, policy, t["batch_size"])
    dense = train_step_flops(cfg, RoutingPolicy(), t["batch_size"])
    io.write_json(out / "train.json", {
        "steps": t["steps"], "snapshot_steps": sorted(module.snapshots),
        "flops_per_step": flops, "dense_flops_per_step": dense, "mean_routing_ratio": policy.mean_ratio(),
        "params": sum(p.numel() for p in model.parameters()),
    })
    # wall-clock differs run to run, so it lives apart from the reproducible outputs
    io.write_json(out / "timing.json", {"train_seconds": {str(k): v for k, v in sorted(module.train_seconds.items())}})


# ---------------------------------------------------------------- evaluate
def _load_snapshots(path: Path) -> dict[int, dict]:
    flat = io.load_tensors(path)
    steps = [int(s) for s in io.load_tensor_metadata(path)["steps"].split(",")]
    return {s: {k.split("/", 1)[1]: v for k, v in flat.items() if k.startswith(f"{s}/")} for s in steps}


def _generate(model, n, num_classes, shape, e, seed, cfg_scale=None) -> tuple[torch.Tensor, torch.Tensor]:
    """`n` samples in model space, classes 0..num_classes-1 in turn; the same noise and labels
    for every regime of a seed (and for guided and unguided sampling). `cfg_scale` None: the
    config's `evaluate.cfg_scale`."""
    import torch

    from .diffusion import sample

    g = generator(10_000 + seed)
    y = torch.arange(n) % num_classes
    noise = torch.randn(n, *shape, generator=g)
    device = next(model.parameters()).device
    chunks = []
    for i in range(0, n, e["batch_size"]):
        chunks.append(sample(model, y[i:i + e["batch_size"]].to(device), noise[i:i + e["batch_size"]].to(device),
                             e["sampling_steps"], e["sampler"],
                             e["cfg_scale"] if cfg_scale is None else cfg_scale).cpu())
    return torch.cat(chunks), y


def _fd_features(e, inputs, device):
    """The metric's feature network. fd_cls: the classifier trained in the DAG, on images
    mapped to [0, 1]. inception (paper scale): latents decoded by the VAE, Inception pool
    features via torchmetrics/torch-fidelity, cluster-side packages imported only here."""
    import torch

    if e["metric"] == "fd_cls":
        net = _load_classifier(inputs["classifier"] / "classifier.safetensors")

        def to_images(x):
            return ((x + 1) / 2).clamp(0, 1)

        return "FD_cls", net.features, net.num_features, to_images, net
    try:
        from diffusers.models import AutoencoderKL
        from torchmetrics.image.fid import FrechetInceptionDistance

        inception = FrechetInceptionDistance(feature=2048).inception.to(device)
    except (ImportError, ModuleNotFoundError) as exc:
        raise ModuleNotFoundError("config key 'nar_dit.evaluate.metric' is 'inception': install diffusers and "
                                  f"torch-fidelity in the cluster environment ({exc})") from exc
    vae = AutoencoderKL.from_pretrained(e["vae"]).to(device).eval()

    @torch.no_grad()
    def to_images(latents):
        chunks = [vae.decode(latents[i:i + 32].to(device) / 0.18215).sample.cpu() for i in range(0, len(latents), 32)]
        return ((torch.cat(chunks) + 1) / 2).clamp(0, 1)

    return "FID", (lambda x: inception((x * 255).to(torch.uint8).to(device)).cpu()), 2048, to_images, None


# images per feature pass of the FD/KID (frechet_and_kid's batch)
FEATURE_CHUNK = 256


def evaluate(params, inputs, out: Path):
    """FD (FD_cls offline, Inception FID at paper scale), KID and, with FD_cls, the classifier's
    accuracy on samples along training; the route sensitivity per noise group and the
    train/held-out loss gap of the final model."""
    import torch

    from .model import DiT

    from neurips26.core.metrics import chunks, frechet_and_kid_stream

    from .diffusion import flow_loss, noise_group_edges, route_sensitivity

    e, t = params["evaluate"], params["train"]
    seed = params["seed"]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    images, manifest = _load_images(inputs)
    fd_name, features, num_features, to_images, classifier = _fd_features(e, inputs, device)
    shape = manifest["shape"]
    cfg = _model_config(params, shape)
    model = DiT(cfg).to(device).eval()
    snapshots = _load_snapshots(inputs["train"] / "snapshots.safetensors")
    reference = images["reference_x"]
    curve, kid, acc = {}, {}, {}

    def score(fake):
        """FD and KID of `fake` against the reference; the decoded images kept for the
        classifier's accuracy (all of them) or for the sample strip (the first 40)."""
        # images are decoded chunk by chunk and only their features kept (50k decoded 256x256
        # images are 39 GB a side); the classifier's accuracy (small scales) sees them all at once
        kept: list[torch.Tensor] = []

        def fake_chunks():
            for chunk in chunks(fake, FEATURE_CHUNK):
                decoded = to_images(chunk)
                if classifier is not None or sum(len(k) for k in kept) < 40:
                    kept.append(decoded)
                yield decoded

        scores = frechet_and_kid_stream(features, num_features, (to_images(c) for c in chunks(reference, FEATURE_CHUNK)),
                                        fake_chunks(), n=min(len(reference), len(fake)), seed=seed)
        return scores, torch.cat(kept)

    for step, state in sorted(snapshots.items()):
        model.load_state_dict(state)
        fake, labels = _generate(model, e["samples"], cfg.num_classes, shape, e, seed)
        scores, fake_images = score(fake)
        curve[str(step)], kid[str(step)] = scores["fd"], scores["kid_mean"]
        logged = {"fd": scores["fd"], "kid": scores["kid_mean"]}
        if classifier is not None:
            with torch.no_grad():
                acc[str(step)] = (classifier(fake_images).argmax(1) == labels).double().mean().item()
            logged["sample_accuracy"] = acc[str(step)]
        tracking.active().log_metrics(logged, step=step)
        print(f"step {step}: {fd_name} {scores['fd']:.3f}  KID {scores['kid_mean']:.4f}", flush=True)
    io.save_tensors(out / "samples.safetensors", {"images": fake_images[:40], "labels": labels[:40]})  # final model

    # guided sampling of the final model: the same noise and labels at the guidance scale
    guided = {}
    if e.get("guided_scale") is not None:
        fake, _ = _generate(model, e["samples"], cfg.num_classes, shape, e, seed, cfg_scale=e["guided_scale"])
        scores, guided_images = score(fake)
        guided = {"guided_scale": e["guided_scale"], "final_fd_guided": scores["fd"],
                  "final_kid_guided": scores["kid_mean"],
                  "final_sample_accuracy_guided": None}
        if classifier is not None:
            with torch.no_grad():
                guided["final_sample_accuracy_guided"] = (classifier(guided_images).argmax(1) == labels).double().mean().item()
        print(f"final model, guidance scale {e['guided_scale']}: {fd_name} {scores['fd']:.3f}", flush=True)

    # mechanism: route sensitivity and generalisation gap per noise group, at the final model
    g = generator(20_000 + seed)
    edges = [0.0, *noise_group_edges(e["noise_group_boundaries"]), 1.0]
    group_names = ["low", "mid", "high"] if len(edges) == 4 else [f"g{i}" for i in range(len(edges) - 1)]
    n_probe = min(len(images["train_x"]), len(images["heldout_x"]), e["probe_samples"])
    x_train, y_train = images["train_x"][:n_probe].to(device), images["train_y"][:n_probe].to(device)
    x_held, y_held = images["heldout_x"][:n_probe].to(device), images["heldout_y"][:n_probe].to(device)
    sensitivity, loss_train, loss_held, gap_items = {}, {}, {}, {}
    for name, lo, hi in zip(group_names, edges[:-1], edges[1:]):
        tg = (lo + (hi - lo) * torch.rand(n_probe, generator=g)).to(device)
        eps = torch.randn(x_train.shape, generator=g).to(device)
        with torch.no_grad():
            per_train = flow_loss(model, x_train, y_train, tg, eps, reduce=False)
            per_held = flow_loss(model, x_held, y_held, tg, eps, reduce=False)
        loss_train[name], loss_held[name] = per_train.mean().item(), per_held.mean().item()
        # probe pair i: a held-out and a training image at the same t and noise; the same pairs
        # for every regime of a seed, so the per-pair gaps pair the regimes item by item
        gap_items[name] = (per_held - per_train).cpu().tolist()
        sensitivity[name] = route_sensitivity(model, x_held, y_held, tg, e["probe_ratio"], t["route_start"],
                                              t["route_end"], e["probe_repeats"], g)
    final = str(max(snapshots))
    gap = {k: loss_held[k] - loss_train[k] for k in group_names}
    metrics = {
        "variant": params["variant"], "seed": seed, "fd_name": fd_name, "steps": sorted(snapshots),
        "fd": curve, "kid": kid, "sample_accuracy": acc, "final_fd": curve[final], "final_kid": kid[final],
        "final_sample_accuracy": acc.get(final), "route_sensitivity": sensitivity,
        "loss_train": loss_train, "loss_heldout": loss_held, "generalization_gap": gap,
        "mean_generalization_gap": sum(gap.values()) / len(gap), "generalization_gap_items": gap_items,
        "noise_groups": group_names,
        "noise_group_t_edges": edges, **guided,
    }
    tracking.active().log_metrics({f"route_sensitivity/{k}": v for k, v in sensitivity.items()}
                                  | {f"generalization_gap/{k}": v for k, v in gap.items()})
    io.write_json(out / "metrics.json", metrics)


# ---------------------------------------------------------------- size study
def size_params(params) -> dict:
    """The params of one size of the size study: the main model and training with the size's
    depth, width and heads, trained as many steps as the main runs (one EMA snapshot, at the
    end, so size is the only thing that changes along the study), and no guided sampling."""
    spec = {s["name"]: s for s in params["size_study"]["sizes"]}.get(params["size"])
    if spec is None:
        raise ValueError(f"config key 'nar_dit.size_study.sizes' has no size '{params['size']}'")
    steps = params["train"]["steps"]
    return {**params,
            "model": {**params["model"], "depth": spec["depth"], "hidden": spec["hidden"], "heads": spec["heads"]},
            "train": {**params["train"], "steps": steps, "eval_every": steps, "checkpoint_every": steps,
                      "warmup_steps": min(params["train"]["warmup_steps"], steps // 4)},
            "evaluate": {**params["evaluate"], "guided_scale": None}}


def size(params, inputs, out: Path):
    """One size of the size study: every regime of the study and every seed, trained with the
    main runs' routing settings at this size and training length, then the final EMA's FD_cls
    and mechanism probes as `evaluate` computes them. One job per size (the runs are short;
    a job each would cost more in start-up than in training)."""
    from neurips26.core.seeding import seed_everything

    from . import size_study_variants

    results = {}
    for v in size_study_variants(params["size_study"], params["run_variants"]):
        if v not in params["variants"]:
            raise ValueError(f"config key 'nar_dit.size_study.variants': '{v}' is not defined under nar_dit.variants")
        for seed in params["seeds"]:
            print(f"size {params['size']}: {v} seed {seed}", flush=True)
            seed_everything(seed, threads=params.get("threads"))  # the model's initialisation, as a train job
            p = size_params({**params, "variant": v, "variant_settings": params["variants"][v], "seed": seed})
            run = out / v / f"seed{seed}"
            train(p, inputs, run / "train")
            evaluate(p, {**inputs, "train": run / "train"}, run)
            m, info = io.read_json(run / "metrics.json"), io.read_json(run / "train" / "train.json")
            results.setdefault(v, {})[str(seed)] = {
                "final_fd": m["final_fd"], "final_kid": m["final_kid"], "params": info["params"],
                "steps": info["steps"], "route_sensitivity": m["route_sensitivity"],
                "mean_generalization_gap": m["mean_generalization_gap"]}
    # the reference of the regime control size_learns: the untrained model of this size, sampled
    # with the same noise and labels as the trained ones
    untrained = {}
    for seed in params["seeds"]:
        seed_everything(seed, threads=params.get("threads"))
        untrained[str(seed)] = untrained_fd(size_params({**params, "seed": seed}), inputs, seed)
    io.write_json(out / "metrics.json", {"size": params["size"], "fd_name": m["fd_name"], "runs": results,
                                         "untrained_fd": untrained})


def untrained_fd(params, inputs, seed: int) -> float:
    """The FD of an untrained model's samples (the model of `params`, freshly initialised), drawn
    with the noise and labels every regime of `seed` is sampled with. adaLN-Zero zeroes the output
    layer, so the untrained model predicts zero velocity and returns the sampler's starting noise:
    the value is the same at every size."""
    import torch

    from neurips26.core.metrics import chunks, frechet_and_kid_stream

    from .model import DiT

    e = params["evaluate"]
    images, manifest = _load_images(inputs)
    _, features, num_features, to_images, _ = _fd_features(e, inputs, "cpu")
    model = DiT(_model_config(params, manifest["shape"])).eval()
    fake, _ = _generate(model, e["samples"], model.cfg.num_classes, manifest["shape"], e, seed)
    reference = images["reference_x"]
    with torch.no_grad():
        scores = frechet_and_kid_stream(features, num_features, (to_images(c) for c in chunks(reference, FEATURE_CHUNK)),
                                        (to_images(c) for c in chunks(fake, FEATURE_CHUNK)),
                                        n=min(len(reference), len(fake)), seed=seed)
    return scores["fd"]


def _size_study(params, inputs, runs, train_info, variants) -> dict | None:
    """Final FD per regime, seed and size (the extra sizes, then the main runs as the largest)."""
    from . import size_study_variants

    study = params.get("size_study") or {}
    regimes = size_study_variants(study, variants)
    if not regimes:
        return None
    seeds = params["seeds"]
    specs = {s["name"]: s for s in study["sizes"]}
    names = list(specs)
    fd = {v: [[] for _ in seeds] for v in regimes}
    counts, size_steps = {}, {}
    for name in names:
        size_runs = io.read_json(inputs["sizes"] / name / "metrics.json")["runs"]
        for v in regimes:
            for i, s in enumerate(seeds):
                fd[v][i].append(size_runs[v][str(s)]["final_fd"])
                counts[name] = size_runs[v][str(s)]["params"]
                size_steps[name] = size_runs[v][str(s)]["steps"]
    for v in regimes:
        for i in range(len(seeds)):
            fd[v][i].append(runs[v][i]["final_fd"])
    # the untrained reference per seed: the same at every size (adaLN-Zero: the untrained model
    # returns the sampler's noise), so the extra sizes' values stand for the main runs' size too
    untrained = []
    for s in seeds:
        values = [io.read_json(inputs["sizes"] / name / "metrics.json")["untrained_fd"][str(s)] for name in names]
        if max(values) - min(values) > 1e-6 * max(abs(x) for x in values):
            raise ValueError(f"the untrained FD of seed {s} differs between sizes ({values}): the untrained "
                             "model no longer returns the sampler's noise")
        untrained.append(values[0])
    counts["default"] = train_info["dit"][0]["params"]
    order = sorted(counts, key=counts.get)
    if order[-1] != "default":
        raise ValueError("config key 'nar_dit.size_study.sizes': every extra size must be smaller than the main model")
    names = [*names, "default"]
    idx = [names.index(n) for n in order]
    return {"variants": regimes, "sizes": order, "params": [counts[n] for n in order],
            "steps": [size_steps[n] if n != "default" else train_info["dit"][0]["steps"] for n in order],
            "fd": {v: [[seed_fd[k] for k in idx] for seed_fd in fd[v]] for v in regimes},
            "untrained_fd": untrained,
            "extrapolate_params": study.get("extrapolate_params", 675e6)}


def _size_figure(study, fd_name, scale, path):
    import numpy as np

    fig, axes = plotting.figure(ncols=2)
    params = study["params"]
    ax = axes[0, 0]
    for v in study["variants"]:
        plotting.mean_band(ax, params, [list(c) for c in study["fd"][v]], REGIME_LABELS.get(v, v), COLOURS.get(v))
    ax.set_xscale("log")
    ax.set_xlabel(f"parameters (every size {', '.join(map(str, sorted(set(study['steps']))))} training steps)")
    u = sum(study["untrained_fd"]) / len(study["untrained_fd"])
    ax.axhline(u, color="#888888", ls=":", lw=1, label=f"untrained model ({u:.3g})")
    ax.axhline(u / 2, color="#888888", ls="--", lw=1, label="half the untrained (size_learns)")
    ax.set_ylabel(f"final {fd_name} (lower is better)")
    ax.set_title(f"final {fd_name} per size ({scale} scale)")
    ax.legend()
    ax = axes[0, 1]
    x_far = study["extrapolate_params"]
    grid = np.logspace(math.log10(params[0]), math.log10(x_far), 50)
    for v in study["variants"]:
        if v == "dit":
            continue
        fits = nar_claims.size_trend(params, study["fd"][v], study["fd"]["dit"])
        for seed_fd, dit_fd in zip(study["fd"][v], study["fd"]["dit"]):
            ax.plot(params, [r / d - 1 for r, d in zip(seed_fd, dit_fd)], ".", color=COLOURS.get(v), ms=5)
        pred = nar_claims.size_prediction(fits, x_far)
        line = pred["intercept"] + pred["slope"] * np.log10(grid)
        inside = grid <= params[-1]
        ax.plot(grid[inside], line[inside], "-", color=COLOURS.get(v),
                label=f"{REGIME_LABELS.get(v, v)}: {pred['slope']:+.3f} per decade")
        ax.plot(grid[~inside], line[~inside], ":", color=COLOURS.get(v))
    ax.axhline(0.0, color="#444444", lw=1)
    ax.axvline(x_far, color="#888888", ls="--", lw=1, label=f"extrapolation to {x_far / 1e6:.0f}M (DiT-XL/2)")
    ax.set_xscale("log")
    ax.set_xlabel("parameters")
    ax.set_ylabel(f"routed / DiT - 1 in final {fd_name} (< 0: routing pays)")
    ax.set_title("routed / DiT - 1 against size (dots: seeds; dotted: extrapolated)")
    ax.legend(fontsize=7)
    plotting.save(fig, path)


# ---------------------------------------------------------------- figures
REGIME_LABELS = {"dit": "DiT (no routing)", "tread": "TREAD (ratio 0.5)", "nar": "NAR (low<mid<high)",
                 "nar_inverted": "inverted NAR (control)"}
COLOURS = {"dit": "#444444", "tread": "#1f77b4", "nar": "#d62728", "nar_inverted": "#2ca02c"}


def figures(params, inputs, out: Path):
    """FD_cls against steps, FLOPs and wall-clock; speedups; mechanism plots; tables; claims."""
    import torch

    variants, seeds, scale = params["run_variants"], params["seeds"], params["scale"]
    runs = {v: [io.read_json(inputs["evals"] / v / f"seed{s}" / "metrics.json") for s in seeds] for v in variants}
    train_info = {v: [io.read_json(inputs["trains"] / v / f"seed{s}" / "train.json") for s in seeds] for v in variants}
    timing = {v: [io.read_json(inputs["trains"] / v / f"seed{s}" / "timing.json")["train_seconds"] for s in seeds]
              for v in variants}
    steps = runs["dit"][0]["steps"]
    fd_name = runs["dit"][0]["fd_name"]
    total = steps[-1]
    figdir = out / "figures"

    def curves(v, key="fd"):
        return [[r[key][str(s)] for s in steps] for r in runs[v]]

    ref = params["claims"]["speedup_reference_step"] or total
    if ref not in steps:
        raise ValueError(f"config key 'nar_dit.claims.speedup_reference_step': {ref} is not a snapshot step {steps}")
    summary = {
        "fd_name": fd_name, "steps": steps, "reference_step": ref, "holds_fixed": HOLDS_FIXED,
        "regimes": {v: {"fd": curves(v), "final_fd": [r["final_fd"] for r in runs[v]],
                        "route_sensitivity_high": [r["route_sensitivity"][r["noise_groups"][-1]] for r in runs[v]],
                        "mean_generalization_gap": [r["mean_generalization_gap"] for r in runs[v]],
                        "gap_items": [[x for g in r["noise_groups"] for x in r["generalization_gap_items"][g]]
                                      for r in runs[v]]}
                    for v in variants},
    }

    # FD_cls against steps, GFLOPs and wall-clock
    for name, xlabel, xs in (
        ("fd_vs_steps", "training steps", lambda v: steps),
        ("fd_vs_flops", "training compute (PFLOP, estimated)", lambda v: [s * train_info[v][0]["flops_per_step"] / 1e15 for s in steps]),
        ("fd_vs_wallclock", "training wall-clock (s, mean over seeds, this machine)",
         lambda v: [sum(tm[str(s)] for tm in timing[v]) / len(timing[v]) for s in steps]),
    ):
        fig, axes = plotting.figure()
        ax = axes[0, 0]
        for v in variants:
            plotting.mean_band(ax, xs(v), curves(v), REGIME_LABELS.get(v, v), COLOURS.get(v))
        if "nar" in variants:
            nar_at_ref = sum(c[steps.index(ref)] for c in curves("nar")) / len(runs["nar"])
            ax.axhline(nar_at_ref, ls="--", color="#888888", lw=1, label=f"NAR's {fd_name} at step {ref}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"{fd_name} (lower is better)")
        ax.set_yscale("log")
        ax.set_title(f"nar_dit: {fd_name} vs {xlabel.split(' (')[0]} ({scale} scale)")
        ax.legend()
        plotting.save(fig, figdir / f"{name}.png")

    # speedup over DiT (the paper's definition; see claims.py)
    speedup = {v: nar_claims.speedups(summary, v) for v in variants}
    speedup_linear = {v: nar_claims.speedups(summary, v, reading="linear") for v in variants}

    # mechanism: route sensitivity and generalisation gap per noise group
    groups = runs["dit"][0]["noise_groups"]  # low -> high noise
    fig, axes = plotting.figure(ncols=2)
    width = 0.8 / len(variants)
    for panel, (key, ylabel) in enumerate((("route_sensitivity", "route sensitivity (relative MSE, lower = flatter)"),
                                           ("generalization_gap", "held-out minus train loss (lower is better)"))):
        ax = axes[0, panel]
        for i, v in enumerate(variants):
            vals = [[r[key][g] for g in groups] for r in runs[v]]
            means = [sum(col) / len(col) for col in zip(*vals)]
            xs = [j + (i - (len(variants) - 1) / 2) * width for j in range(len(groups))]
            ax.bar(xs, means, width, label=f"{REGIME_LABELS.get(v, v)} (n={len(vals)})", color=COLOURS.get(v))
            for j, col in enumerate(zip(*vals)):
                ax.plot([xs[j]] * len(col), col, "k.", ms=3)
        ax.set_xticks(range(len(groups)), [f"{g} noise" for g in groups])
        if key == "route_sensitivity":  # DiT's sensitivity is ~100x the routed regimes'
            ax.set_yscale("log")
        ax.set_ylabel(ylabel + (" (log)" if key == "route_sensitivity" else ""))
        ax.set_title(key.replace("_", " ") + " per noise group (final EMA)")
        ax.legend()
    plotting.save(fig, figdir / "mechanism.png")

    # guided against unguided sampling of the final models
    guided_runs = [v for v in variants if all("final_fd_guided" in r for r in runs[v])]
    if guided_runs:
        g_scale = runs[guided_runs[0]][0]["guided_scale"]
        summary["guided"] = {"scale": g_scale, "regimes": {v: [r["final_fd_guided"] for r in runs[v]]
                                                           for v in guided_runs}}
        fig, axes = plotting.figure()
        ax = axes[0, 0]
        for i, v in enumerate(guided_runs):
            for j, (key, label) in enumerate((("final_fd", "unguided"), ("final_fd_guided", f"guided {g_scale:g}"))):
                vals = [r[key] for r in runs[v]]
                x = i + (j - 0.5) * 0.4
                ax.bar(x, sum(vals) / len(vals), 0.4, color=COLOURS.get(v), alpha=1.0 if j else 0.45,
                       label=label if i == 0 else None, edgecolor="k" if j else None)
                ax.plot([x] * len(vals), vals, "k.", ms=3)
        ax.set_xticks(range(len(guided_runs)), [REGIME_LABELS.get(v, v) for v in guided_runs], fontsize=7)
        ax.set_ylabel(f"final {fd_name} (lower is better)")
        ax.set_title(f"classifier-free guidance at scale {g_scale:g} vs unguided (same noise and labels; dots: seeds)")
        ax.legend()
        plotting.save(fig, figdir / "guidance.png")

    # size study: final FD per regime and size, and routing's deficit against size
    study = _size_study(params, inputs, runs, train_info, variants)
    if study:
        summary["size_study"] = study
        _size_figure(study, fd_name, scale, figdir / "size_study.png")
        size_rows = []
        for k, (name, count, n_steps) in enumerate(zip(study["sizes"], study["params"], study["steps"])):
            row = {"size": name, "params": count, "train_steps": n_steps,
                   f"untrained_{fd_name}": claims.fmt(study["untrained_fd"])}
            for v in study["variants"]:
                row[f"final_{fd_name}_{v}"] = claims.fmt([c[k] for c in study["fd"][v]])
                if v != "dit":
                    row[f"{v}_over_dit_minus_1"] = claims.fmt([c[k] / d[k] - 1 for c, d in
                                                               zip(study["fd"][v], study["fd"]["dit"])])
            size_rows.append(row)
        for v in study["variants"]:
            if v == "dit":
                continue
            pred = nar_claims.size_prediction(nar_claims.size_trend(study["params"], study["fd"][v], study["fd"]["dit"]),
                                              study["extrapolate_params"])
            size_rows.append({"size": f"trend {v}: slope per decade {pred['slope']:+.4g}; mean line at "
                                      f"{pred['at_params'] / 1e6:.4g}M params {pred['deficit_at_params']:+.4g}; "
                                      f"reaches 0 at {pred['breakeven_params']:.3g} params"})
        io.write_csv(out / "size_study.csv", size_rows)

    # samples of the final models, seed 0
    sample_sets = {v: io.load_tensors(inputs["evals"] / v / f"seed{seeds[0]}" / "samples.safetensors") for v in variants}
    fig, axes = plotting.figure(ncols=1, nrows=len(variants), width=8, height=1.2)
    for ax, v in zip(axes[:, 0], variants):
        imgs = sample_sets[v]["images"][:20]
        strip = torch.cat(list(imgs), dim=2).permute(1, 2, 0).numpy()
        ax.imshow(strip, interpolation="nearest")
        ax.set_axis_off()
        ax.set_title(f"{REGIME_LABELS.get(v, v)}: samples, classes 0-9 twice", fontsize=8)
    plotting.save(fig, figdir / "samples.png")

    # per-regime table
    rows = []
    for v in variants:
        rows.append({
            "regime": v,
            f"final_{fd_name}": claims.fmt([r["final_fd"] for r in runs[v]]),
            "final_kid": claims.fmt([r["final_kid"] for r in runs[v]]),
            "sample_accuracy": claims.fmt([r["final_sample_accuracy"] for r in runs[v] if r["final_sample_accuracy"] is not None]),
            f"{fd_name}_at_step_{ref}": claims.fmt([c[steps.index(ref)] for c in curves(v)]),
            # DiT's steps to reach this FD / ref (the last snapshot before DiT reaches it: a lower
            # bound; linear interpolation beside it); NaN where DiT never reaches it
            f"speedup_vs_dit_at_step_{ref}": claims.fmt(speedup[v][0]),
            f"speedup_vs_dit_at_step_{ref}_interpolated": claims.fmt(speedup_linear[v][0]),
            "gflops_per_step": f"{train_info[v][0]['flops_per_step'] / 1e9:.2f}",
            "mean_routing_ratio": f"{train_info[v][0]['mean_routing_ratio']:.3f}",
            "train_seconds": claims.fmt([tm[str(total)] for tm in timing[v]]),
            "route_sensitivity_high": claims.fmt([r["route_sensitivity"][groups[-1]] for r in runs[v]]),
            "mean_generalization_gap": claims.fmt([r["mean_generalization_gap"] for r in runs[v]]),
            f"final_{fd_name}_guided": claims.fmt([r["final_fd_guided"] for r in runs[v] if "final_fd_guided" in r]),
        })
    written = claims.write_tables(out, rows, nar_claims.claim_rows(summary, scale))
    from neurips26.core import tuning

    tuning.write_csv(out / "tuning.csv", "nar_dit", tuning_records(params, variants))
    written.append(out / "tuning.csv")
    return [*written, out / "size_study.csv"] if study else written


TRAIN_WHY = ("the same for every regime (DiT, TREAD, NAR, inverted NAR): the regimes differ only in routing, so one "
             "recipe isolates it (the paper trains every regime with DiT's recipe); a grid per regime would multiply "
             "the training jobs (18-28 s each at default scale) past the default run's budget")


def tuning_records(params: dict, variants: list[str]) -> list:
    """Every knob as the tuning protocol records it. Nothing is tuned here: the training recipe
    (learning rate, steps, batch, warm-up, weight decay, EMA decay) is shared by every regime, and
    the guidance scale of the guided rows is DiT's 1.5 for every regime, never chosen on a score."""
    from neurips26.core import tuning

    t, e = params.get("train", {}), params.get("evaluate", {})
    records = []
    for v in variants:
        for knob in ("lr", "steps", "batch_size", "warmup_steps", "weight_decay", "ema_decay"):
            if knob in t:
                records.append(tuning.fixed(v, knob, t[knob], TRAIN_WHY, setting="main runs"))
        if "guided_scale" in e:
            records.append(tuning.fixed(v, "guided_scale", e["guided_scale"], "DiT's classifier-free guidance scale for "
                                        "its FID setting, the same for every regime; not chosen on any score",
                                        setting="main runs"))
    return records
