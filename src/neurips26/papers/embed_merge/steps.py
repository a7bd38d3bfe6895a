"""The steps the CLI calls for embed_merge: train -> merge -> figures.

`train` (one job per domain and seed) pre-trains the ViT and fine-tunes it on every image
task, or fine-tunes the upper layers of all-MiniLM-L6-v2 on every text task, or (paper scale)
reads released CLIP checkpoints; `merge` merges the first n tasks with every method, picks each
method's scale on the validation splits by the tuning protocol and reports test accuracy;
`figures` writes the plots, tables, claims and tuning.csv.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

from neurips26.core import claims, io, lm, plotting, tracking

from .claims import P, claim_rows

BACKBONE, HEAD = "backbone.", "head."


def _split_sizes(d: dict) -> dict:
    return {"train": d["train_size"], "val": d["val_size"], "test": d["test_size"]}


def _task_seed(seed: int, index: int) -> int:
    return 1000 * (seed + 1) + index


def _state(net: models.Classifier) -> dict:
    return {k: v.detach().clone().contiguous() for k, v in net.state_dict().items()}


def _backbone(state: dict) -> dict:
    return {k[len(BACKBONE):]: v for k, v in state.items() if k.startswith(BACKBONE)}


def _head(state: dict) -> dict:
    return {k[len(HEAD):]: v for k, v in state.items() if k.startswith(HEAD)}


# ---------------------------------------------------------------- data and models per domain
class Domain:
    """What train and merge need of one domain: the backbone, the tasks' data and heads."""

    def __init__(self, v: dict, seed: int):
        self.v, self.seed, self.kind = v, seed, v["kind"]
        self._minilm = None

    # vision --------------------------------------------------------
    def vit(self) -> models.TinyViT:
        from . import models

        m, d = self.v["model"], self.v["data"]
        return models.TinyViT(d["image_size"], m["patch"], 3, m["dim"], m["depth"], m["heads"], m["mlp_ratio"])

    # language ------------------------------------------------------
    def minilm(self):
        if self._minilm is None:
            self._minilm = lm.load_minilm(self.v.get("encoder_dir"), key="embed_merge.variants.<language>.encoder")
        return self._minilm

    def first_trained(self) -> int:
        n = len(self.minilm()[1].encoder.layer)
        k = self.v["trained_layers"]
        if not 1 <= k <= n:
            raise ValueError(f"config key 'embed_merge.variants.<language>.trained_layers': {k} not in 1..{n}")
        return n - k

    # shared ----------------------------------------------------------
    def features(self) -> int:
        if self.kind == "vision":
            return self.v["model"]["dim"]
        return self.minilm()[1].config.hidden_size

    def new_backbone(self) -> torch.nn.Module:
        from . import models

        if self.kind == "vision":
            return self.vit()
        return models.MiniLMTop(copy.deepcopy(self.minilm()[1].encoder.layer[self.first_trained():]))

    def task(self, index: int, name: str, splits=("train", "val", "test")) -> tuple[dict, int]:
        """{split: (inputs, labels)} with inputs a tensor (images) or a (hidden, mask) pair."""
        from . import models, tasks

        seed = _task_seed(self.seed, index)
        if self.kind == "vision":
            data, classes = tasks.vision_task(name, self.v["data"]["image_size"], _split_sizes(self.v["data"]), seed)
            return {s: data[s] for s in splits}, classes
        data, classes = tasks.text_task(name, _split_sizes(self.v["data"]), seed)
        tok, model = self.minilm()
        out = {}
        for s in splits:
            hidden, mask = models.minilm_hidden(tok, model, data[s][0], self.first_trained(), self.v["data"]["max_length"])
            out[s] = ((hidden, mask), data[s][1])
        return out, classes


def _tensors(inputs, labels) -> tuple:
    return (*inputs, labels) if isinstance(inputs, tuple) else (inputs, labels)


# ---------------------------------------------------------------- pre-train (vision)
PRETRAIN_KEY = "embed_merge.variants.<vision>.pretrain"


def pretrain(params, inputs, out: Path):
    """Pre-train the ViT on the shape classes once per vision domain (every seed's fine-tunes
    start from it, as every seed of the language domain starts from the released MiniLM) and
    check it against its bar: held-out accuracy >= pretrain.min_accuracy."""
    import torch

    from . import method, models, tasks

    v = params["variant_settings"]
    if v["kind"] != "vision":
        raise ValueError(f"embed_merge pretrain: variant '{params['variant']}' is not a vision domain")
    pt, seed = v["pretrain"], v["pretrain"].get("seed", 0)
    dom = Domain(v, seed)
    x, y = tasks.pretraining_set(v["data"]["pretrain_size"], v["data"]["image_size"], seed)
    torch.manual_seed(seed)
    net = models.Classifier(dom.vit(), dom.features(), 10)
    rank0 = models.train_classifier(net, (x, y), out / "runs", params, pt["steps"], pt["batch_size"], pt["lr"],
                                    pt["weight_decay"], seed, pt.get("schedule", "constant"), key=f"{PRETRAIN_KEY}.batch_size")
    if not rank0:
        return
    xt, yt = tasks.pretraining_set(1000, v["data"]["image_size"], seed + 7919)
    acc = models.accuracy(net, xt, yt)
    bar = pt.get("min_accuracy", 0.0)
    print(f"pretrain: held-out shape accuracy {acc:.3f} (bar {bar})", flush=True)
    if acc < bar:
        raise RuntimeError(f"config key '{PRETRAIN_KEY}.min_accuracy': the pre-trained ViT reaches {acc:.3f} on "
                           f"held-out shapes, below its bar {bar}; pre-train longer (pretrain.steps)")
    pretrained = _backbone(_state(net))
    space = _space(params["method"])
    ranks = {k: [method.choose_rank(torch.linalg.svdvals(w.double()), space), min(w.shape)]
             for k, w in pretrained.items() if method.is_matrix(k, w)}
    io.save_tensors(out / "pretrained.safetensors", pretrained)
    shutil.rmtree(out / "runs", ignore_errors=True)
    io.write_json(out / "pretrain.json", {"variant": params["variant"], "seed": seed, "held_out_accuracy": acc,
                                          "bar": bar, "ranks": ranks})


# ---------------------------------------------------------------- train
FINETUNES = ("full", "subspace")
# what each fine-tuning mode is called in tuning.csv
MODE_LABELS = {"full": "full fine-tune", "subspace": "in-space fine-tune",
               "random_subspace": "random-subspace fine-tune", "lora": "same-parameter LoRA fine-tune"}
BASIS_SEED = 7919  # the random bases and LoRA's A of a seed: drawn from BASIS_SEED + seed, shared by its tasks


def modes(v: dict) -> list[str]:
    """The fine-tunes a domain trains: full, in-space, and the controls it lists (`controls`)."""
    return ["full", "subspace"] + [c for c in v.get("controls", []) if c not in ("full", "subspace")]


def block_of(mode: str) -> str:
    """The config block of a mode's recipe: the controls share the in-space recipe (steps, batch,
    optimiser); their learning rates are tuned the same way (`lr_tuning`)."""
    return "finetune" if mode == "full" else "subspace_finetune"


def recipe(v: dict, mode: str, lrs: dict | None = None) -> dict:
    """The recipe of one mode, its lr replaced by the tuned one when `lr_tuning` tunes the mode."""
    opt = dict(v[block_of(mode)])
    if mode in v.get("lr_tuning", {}).get("modes", []):
        if not lrs or mode not in lrs:
            raise ValueError(f"config key 'embed_merge.variants.<{v['kind']}>.lr_tuning.modes': the '{mode}' "
                             f"learning rate is tuned, but no tuned value was given to this step")
        opt["lr"] = lrs[mode]
    return opt


def _finetune_one(dom, pretrained: dict, data: dict, classes: int, opt: dict, out: Path, params: dict,
                  seed: int, mode: str, space: method.EmbeddingSpace, key: str):
    """Fine-tune one task from the pre-trained backbone with a fresh head: every backbone
    parameter (`full`), only the model embedding E of every weight matrix, W = W0 + U_r E V_r^T
    (`subspace`, the paper's confinement), or a control (`random_subspace`: random bases of the
    same rank; `lora`: W0 + B A with as many trainable entries); returns (state dict, rank 0?,
    val/test accuracy)."""
    import torch

    from . import method, models

    backbone = dom.new_backbone()
    backbone.load_state_dict(pretrained)
    if mode != "full":
        method.confine_to_subspace(backbone, space, mode, seed=BASIS_SEED + seed)
    torch.manual_seed(seed)
    net = models.Classifier(backbone, dom.features(), classes)
    rank0 = models.train_classifier(net, _tensors(*data["train"]), out, params, opt["steps"], opt["batch_size"],
                                    opt["lr"], opt["weight_decay"], seed, opt.get("schedule", "constant"), key=key)
    if mode != "full":
        method.release_subspace(net.backbone)
    acc = {s: models.accuracy(net, *data[s]) for s in ("val", "test")}
    return _state(net), rank0, acc


def _pretrained_of(dom: Domain, v: dict, inputs: dict) -> dict:
    if v["kind"] == "vision":
        return io.load_tensors(inputs["pretrain"] / "pretrained.safetensors")
    return {k: t.detach().clone().contiguous() for k, t in dom.new_backbone().state_dict().items()}


def tune_lr(params, inputs, out: Path):
    """The learning rate of one constrained fine-tuning mode (in-space, random-subspace, LoRA) by
    the tuning protocol (`core.tuning.search` over `lr_tuning.grids.<mode>`, extended while the best
    sits on an edge), on the tuning seed `lr_tuning.seed` (disjoint from the test seeds: its own
    task data, splits and bases), scored by the experts' mean validation accuracy over the first
    `lr_tuning.tasks` tasks; every mode gets the same steps, batch and budget."""
    from neurips26.core import tuning

    v, mode = params["variant_settings"], params["mode"]
    lt = v.get("lr_tuning")
    if not lt or mode not in lt.get("modes", []):
        raise ValueError(f"config key 'embed_merge.variants.{params['variant']}.lr_tuning.modes': '{mode}' is not tuned")
    seed = lt["seed"]
    if seed in params.get("seeds", []):
        raise ValueError(f"config key 'embed_merge.variants.{params['variant']}.lr_tuning.seed': {seed} is a test seed")
    dom = Domain(v, seed)
    pretrained = _pretrained_of(dom, v, inputs)
    space = _space(params["method"])
    names = list(v["tasks"])[:lt.get("tasks") or len(v["tasks"])]
    data = [dom.task(i, n) for i, n in enumerate(names)]
    key = f"embed_merge.variants.{params['variant']}.{block_of(mode)}.batch_size"

    def evaluate(lr):
        opt = {**v[block_of(mode)], "lr": lr}
        accs = [_finetune_one(dom, pretrained, d, c, opt, out / "runs" / f"{lr:g}" / n, params, seed, mode, space, key)[2]["val"]
                for n, (d, c) in zip(names, data)]
        return sum(accs) / len(accs)

    chosen, recs = tuning.search(evaluate, {"lr": lt["grids"][mode]}, method=f"experts ({MODE_LABELS[mode]})",
                                 setting=params["variant"], metric="mean validation accuracy of the experts",
                                 extensions=tuning.settings(params)["extensions"], seed=seed,
                                 split=f"validation (the tuning seed's split of the first {len(names)} tasks)",
                                 progress=lambda m: print(m, flush=True))
    shutil.rmtree(out / "runs", ignore_errors=True)
    io.write_json(out / "lr.json", {"variant": params["variant"], "mode": mode, "lr": chosen["lr"],
                                    "tuning": [r.to_json() for r in recs]})


def train(params, inputs, out: Path):
    """Fine-tune one model per task twice from the pre-trained backbone: fully (the task vectors
    the baselines merge) and inside the pre-trained low-rank space (the model embeddings the
    paper merges); save backbones and heads."""
    v, seed = params["variant_settings"], params["seed"]
    if v["kind"] == "clip":
        from .clip import index_checkpoints

        return index_checkpoints(v, out)
    dom = Domain(v, seed)
    info = {"variant": params["variant"], "seed": seed, "kind": v["kind"], "tasks": {}}
    pretrained = _pretrained_of(dom, v, inputs)
    if v["kind"] == "vision":
        info["pretrain_accuracy"] = io.read_json(inputs["pretrain"] / "pretrain.json")["held_out_accuracy"]
    else:
        info["trained_layers"] = v["trained_layers"]
    tuned = [io.read_json(inputs["lr"] / m / "lr.json") for m in v.get("lr_tuning", {}).get("modes", [])]
    lrs = {t["mode"]: t["lr"] for t in tuned}
    info["lr"] = {m: recipe(v, m, lrs)["lr"] for m in modes(v)}
    info["lr_tuning"] = [r for t in tuned for r in t["tuning"]]
    space = _space(params["method"])
    rank0 = True
    for i, name in enumerate(v["tasks"]):
        data, classes = dom.task(i, name)
        info["tasks"][name] = {"classes": classes}
        for mode in modes(v):
            block = block_of(mode)
            state, rank0, acc = _finetune_one(dom, pretrained, data, classes, recipe(v, mode, lrs),
                                              out / "runs" / mode / name, params, seed, mode, space,
                                              f"embed_merge.variants.{params['variant']}.{block}.batch_size")
            if rank0:
                io.save_tensors(out / mode / f"{name}.safetensors", state, metadata={"classes": str(classes)})
            info["tasks"][name][mode] = acc
            tracking.active().log_metrics({f"{mode}/{name}/test_accuracy": acc["test"]})
            print(f"{name}: {mode} fine-tune, test accuracy {acc['test']:.3f}", flush=True)
    if not rank0:
        return
    io.save_tensors(out / "pretrained.safetensors", pretrained)
    shutil.rmtree(out / "runs", ignore_errors=True)  # Lightning checkpoints; the weights are saved above
    io.write_json(out / "train.json", info)


# ---------------------------------------------------------------- merge
def _space(m: dict) -> method.EmbeddingSpace:
    from . import method

    return method.EmbeddingSpace(basis=m["basis"], rank_mode=m["rank_mode"], rank_energy=m["rank_energy"],
                                 rank_fraction=m["rank_fraction"], rank=m["rank"])


def _method_settings(name: str, params: dict) -> dict:
    g, m = params["merge"], params["method"]
    if name == "ties":
        return {"keep": g["ties_keep"]}
    if name == "dare":
        return {"drop": g["dare_drop"], "seed": params["seed"]}
    if name.startswith("embed"):
        return dict(m)
    return {}


def scale_grid(name: str, g: dict) -> list[float]:
    """The scales a method is tuned over: `merge.scales.<name>` when set, else the grid every
    scaled method shares (`merge.scale_grid`)."""
    return list(g.get("scales", {}).get(name, g["scale_grid"]))


def tune_scale(evaluate, grid: list[float], *, method: str, uses_scale: bool, setting: str, seed: int,
               extensions: int) -> tuple[float, float, list[float], list]:
    """(scale, validation score, scales tried, tuning records) of one method: the tuning protocol
    (`core.tuning.search`) on the shared grid, extended by one factor of the grid's spacing while
    the best scale sits on an edge (at most `extensions` steps per edge); a method without a scale
    (weight averaging) is scored once at 1 and its scale recorded as fixed."""
    from neurips26.core import tuning

    if not uses_scale:
        rec = tuning.fixed(method, "scale", 1.0, "the method takes no scale (a plain average)", setting=setting)
        rec.seed = seed
        return 1.0, evaluate(1.0), [1.0], [rec]
    chosen, recs = tuning.search(evaluate, {"scale": grid}, method=method, setting=setting,
                                 metric="normalised accuracy", extensions=extensions, seed=seed,
                                 split="validation (each task's validation split of this seed)")
    return chosen["scale"], recs[0].score, list(recs[0].grid), recs


def source_of(name: str) -> str:
    """Which fine-tunes a method merges: the paper's methods merge the models fine-tuned inside
    the pre-trained space, the controls those fine-tuned inside a random subspace or with LoRA;
    the baselines and the post-hoc ablations merge the full fine-tunes."""
    from .baselines import CONTROLS

    return "subspace" if name in OURS else CONTROLS.get(name, "full")


def _device() -> torch.device:
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def check_memory(pretrained: dict, tasks_held: int, mem_mb: int | None) -> None:
    """Stop early, naming the key, when the merge job's memory cannot hold the pre-trained
    weights and every fine-tuned model and task vector at once (float32)."""
    if not mem_mb:
        return
    numel = sum(t.numel() for t in pretrained.values())
    need = numel * 4 * (2 + 2 * tasks_held) / 2**20 * 1.2 + 1000
    if need > mem_mb:
        raise MemoryError(f"config key 'embed_merge.resources.merge_mem_mb': {mem_mb} MB cannot hold the "
                          f"pre-trained model ({numel / 1e6:.1f} M parameters) and {tasks_held} fine-tuned models "
                          f"with their task vectors in float32; about {need:.0f} MB are needed")


def merge(params, inputs, out: Path):
    """Every method on the first n tasks, n in task_counts; each scaled method's scale picked on the
    validation splits by the tuning protocol (`core.tuning.search` over the shared grid
    `merge.scale_grid`, extended while the best scale sits on an edge, at most
    `tuning.extensions` steps per edge); metrics.json carries the tuning records."""
    import torch

    from neurips26.core import tuning

    from . import baselines, method, models

    v, seed, g = params["variant_settings"], params["seed"], params["merge"]
    if v["kind"] == "clip":
        from .clip import ClipDomain

        dom = ClipDomain(v, seed)
    else:
        dom = Domain(v, seed)
    names = list(v["tasks"])
    src = inputs["train"]
    pretrained = io.load_tensors(src / "pretrained.safetensors")
    # the control merges run where the domain trains their fine-tunes (`controls`)
    run_methods = [m for m in g["methods"] if source_of(m) in ("full", "subspace") or source_of(m) in v.get("controls", [])]
    sources = sorted({source_of(m) for m in run_methods} | {"full"})
    for s in sources:
        if not (src / s).is_dir():
            raise FileNotFoundError(f"config key 'embed_merge.merge.methods': {sorted(m for m in run_methods if source_of(m) == s)} "
                                    f"merge the '{s}' fine-tunes, which {src / s} does not hold")
    check_memory(pretrained, len(names) * len(sources), params.get("resources", {}).get("merge_mem_mb"))
    states = {s: {n: io.load_tensors(src / s / f"{n}.safetensors") for n in names} for s in sources}
    finetuned = {s: {n: _backbone(st) for n, st in states[s].items()} for s in sources}
    device = _device()  # the merged models are evaluated on the job's GPU when it has one
    backbone = dom.new_backbone().eval().to(device)
    data, heads = {}, {}
    for i, n in enumerate(names):
        data[n], classes = dom.task(i, n, splits=("val", "test"))
        head = torch.nn.Linear(dom.features(), classes)
        head.load_state_dict(_head(states["full"][n]))
        heads[n] = {"full": head.eval().to(device)}
        for s in sources:
            if s != "full":
                sub = torch.nn.Linear(dom.features(), classes)
                sub.load_state_dict(_head(states[s][n]))
                heads[n][s] = sub.eval().to(device)

    def correctness(backbone_state: dict, task_names: list[str], split: str, source: str = "full") -> dict:
        backbone.load_state_dict(backbone_state)
        return {n: models.correct_per_example(models.Classifier.of(backbone, heads[n][source]), *data[n][split])
                for n in task_names}

    def accuracies(backbone_state: dict, task_names: list[str], split: str, source: str = "full") -> dict:
        return {n: sum(c) / len(c) for n, c in correctness(backbone_state, task_names, split, source).items()}

    # every method is normalised by the same reference: the full fine-tune of each task
    individual = {n: accuracies(finetuned["full"][n], [n], "test")[n] for n in names}
    individual_val = {n: accuracies(finetuned["full"][n], [n], "val")[n] for n in names}
    individual_sub = ({n: accuracies(finetuned["subspace"][n], [n], "test", "subspace")[n] for n in names}
                      if "subspace" in finetuned else {})
    # each control's experts on their own tasks (test), beside the in-space ones
    individual_controls = {s: {n: accuracies(finetuned[s][n], [n], "test", s)[n] for n in names}
                           for s in sources if s not in ("full", "subspace")}
    train_info = io.read_json(src / "train.json") if (src / "train.json").exists() else {}
    zero = accuracies(pretrained, names, "test")
    results, grids, records = {}, {}, []
    extensions = tuning.settings(params)["extensions"]
    for mname in run_methods:
        merger = baselines.make(mname, _method_settings(mname, params))
        source = source_of(mname)
        grid = scale_grid(mname, g) if merger.uses_scale else [1.0]
        grids[mname] = grid
        results[mname] = {}
        for count in v["task_counts"]:
            subset = names[:count]
            update = merger.update(pretrained, [finetuned[source][n] for n in subset])  # theta_0 + scale * update
            setting = f"{params['variant']}, {count} tasks"

            def evaluate(scale, subset=subset, update=update, source=source):
                val = accuracies(baselines.apply(pretrained, update, scale), subset, "val", source)
                return sum(val[n] / max(individual_val[n], 1e-9) for n in subset) / len(subset)

            scale, score, tried, recs = tune_scale(evaluate, grid, method=mname, uses_scale=merger.uses_scale,
                                                   setting=setting, seed=seed, extensions=extensions)
            records += recs
            merged = baselines.apply(pretrained, update, scale)
            del update
            correct = correctness(merged, subset, "test", source)
            test = {n: sum(c) / len(c) for n, c in correct.items()}
            norm = {n: test[n] / max(individual[n], 1e-9) for n in subset}
            results[mname][str(count)] = {
                "scale": scale, "val_normalized": score, "test": test, "normalized": norm,
                "mean_accuracy": sum(test.values()) / len(test), "mean_normalized": sum(norm.values()) / len(norm),
                "grid": tried, "at_grid_edge": len(tried) > 1 and scale in (tried[0], tried[-1])}
            if count == v["task_counts"][-1]:  # per test example, for the claims' paired bootstrap
                results[mname][str(count)]["correct"] = correct
            print(f"{mname} n={count}: scale {scale} abs {results[mname][str(count)]['mean_accuracy']:.3f} "
                  f"norm {results[mname][str(count)]['mean_normalized']:.3f}", flush=True)
        full = results[mname][str(v["task_counts"][-1])]
        tracking.active().log_metrics({f"{mname}/mean_accuracy": full["mean_accuracy"],
                                       f"{mname}/mean_normalized": full["mean_normalized"]})
    # the hypothesis is measured on the full fine-tunes: how much of a free update lies in the space
    space = _space(params["method"])
    share = {n: {k: s for k, s in method.subspace_share(pretrained, finetuned["full"][n], space).items() if k != "layers"}
             for n in names}
    curve = {}
    for frac in g["share_fractions"]:
        sp = method.EmbeddingSpace(basis=space.basis, rank_mode="fraction", rank_fraction=frac)
        curve[str(frac)] = {n: {k: s for k, s in method.subspace_share(pretrained, finetuned["full"][n], sp).items()
                                if k != "layers"} for n in names}
    layers = method.subspace_share(pretrained, finetuned["full"][names[0]], space)["layers"]
    metrics = {"variant": params["variant"], "kind": v["kind"], "seed": seed, "tasks": names, "task_counts": v["task_counts"],
               "individual": individual, "individual_subspace": individual_sub,
               "individual_controls": individual_controls, "pretrained": zero,
               "finetune_lr": train_info.get("lr", {}), "lr_tuning": train_info.get("lr_tuning", []),
               "scale_grids": grids, "merges": results, "subspace_share": share,
               "tuning": [r.to_json() for r in records],
               "share_curve": curve, "ranks": {k: [l["rank"], l["full_rank"]] for k, l in layers.items()}}
    io.write_json(out / "metrics.json", metrics)


# ---------------------------------------------------------------- figures
LABELS = {"weight_averaging": "weight averaging", "task_arithmetic": "Task Arithmetic", "ties": "TIES",
          "dare": "DARE", "tsv_merge": "TSV-Merge", "iso_c": "Iso-C", "embed_mean": "embedding mean (ours)",
          "embed_aligned": "aligned embedding (ours)", "embed_mean_posthoc": "embedding mean, post-hoc projection",
          "random_subspace_mean": "mean of random-subspace fine-tunes (control)",
          "lora_mean": "mean of same-parameter LoRA fine-tunes (control)",
          "embed_aligned_posthoc": "aligned embedding, post-hoc projection", "pretrained": "pre-trained (no merge)"}
COLOURS = {"weight_averaging": "#7f7f7f", "task_arithmetic": "#1f77b4", "ties": "#2ca02c", "dare": "#9467bd",
           "tsv_merge": "#8c564b", "iso_c": "#e377c2", "embed_mean": "#ff7f0e", "embed_aligned": "#d62728",
           "embed_mean_posthoc": "#ffbb78", "embed_aligned_posthoc": "#ff9896", "pretrained": "#bcbd22",
           "random_subspace_mean": "#17becf", "lora_mean": "#9edae5"}
OURS = ("embed_mean", "embed_aligned")


def _mean(xs):
    return sum(xs) / len(xs)


HOLDS_FIXED = {"vision": "", "language": "the pre-trained all-MiniLM-L6-v2 encoder (a released model)",
               "clip": "the released CLIP checkpoints and the evaluation sets"}


def _normalised_items(run: dict, merge: dict) -> list[float] | None:
    """Per test example of every merged task, correct / the task's fine-tuned accuracy, weighted so
    that their mean is the mean normalised accuracy over tasks (None when not saved)."""
    from . import tasks

    correct = merge.get("correct")
    if correct is None:
        return None
    total, tasks = sum(len(c) for c in correct.values()), len(correct)
    return [x / max(run["individual"][n], 1e-9) * total / (tasks * len(c)) for n, c in correct.items() for x in c]


def claims_summary(runs: dict) -> dict:
    """Per domain, per seed: every method's mean normalised accuracy with all tasks merged (its
    validation score and its per-example scores), the experts' and the pre-trained backbone's mean
    accuracy, and the mean subspace share of the task updates and its chance level."""
    out = {}
    for v, rs in runs.items():
        full = str(rs[0]["task_counts"][-1])
        methods = {}
        for m in rs[0]["merges"]:
            items = [_normalised_items(r, r["merges"][m][full]) for r in rs]
            methods[m] = {"normalized": [r["merges"][m][full]["mean_normalized"] for r in rs],
                          "val": [r["merges"][m][full]["val_normalized"] for r in rs],
                          "items": None if any(i is None for i in items) else items}
        # the regime control: each expert on its own task against the pre-trained backbone with the
        # task heads; per seed the weaker of the full and (where run) the in-space fine-tunes
        experts = [min([_mean(list(r["individual"].values()))]
                       + ([_mean(list(r["individual_subspace"].values()))] if r.get("individual_subspace") else []))
                   for r in rs]
        out[v] = {"tasks": len(rs[0]["tasks"]), "full_count": int(full), "methods": methods, "holds_fixed": HOLDS_FIXED.get(rs[0].get("kind", v), ""),
                  "experts": experts, "pretrained": [_mean(list(r["pretrained"].values())) for r in rs],
                  "pretrained_normalized": [_mean([r["pretrained"][n] / max(r["individual"][n], 1e-9) for n in r["tasks"]])
                                            for r in rs],
                  "share": [_mean([x["share"] for x in r["subspace_share"].values()]) for r in rs],
                  "chance": [_mean([x["chance"] for x in r["subspace_share"].values()]) for r in rs]}
    return out


def figures(params, inputs, out: Path):
    variants, seeds, scale = params["run_variants"], params["seeds"], params["scale"]
    runs = {v: [io.read_json(inputs["merges"] / v / f"seed{s}" / "metrics.json") for s in seeds] for v in variants}
    figdir = out / "figures"
    methods = list(dict.fromkeys(m for v in variants for m in runs[v][0]["merges"]))  # a domain may run fewer (controls)

    def run_by(v):
        return [m for m in methods if m in runs[v][0]["merges"]]

    # normalised and absolute accuracy against the number of merged tasks
    fig, axes = plotting.figure(ncols=len(variants) + 1, nrows=2)  # the last column holds the legend
    for col, v in enumerate(variants):
        counts = runs[v][0]["task_counts"]
        for row, (key, ylabel) in enumerate((("mean_normalized", "normalised accuracy (merged / fine-tuned)"),
                                             ("mean_accuracy", "absolute test accuracy"))):
            ax = axes[row, col]
            for m in run_by(v):
                ys = [[r["merges"][m][str(c)][key] for c in counts] for r in runs[v]]
                plotting.mean_band(ax, counts, ys, LABELS.get(m, m), COLOURS.get(m))
            ax.set_xlabel("number of merged tasks")
            ax.set_xticks(counts)
            ax.set_ylabel(ylabel)
            ax.set_title(f"{v}: {'normalised' if row == 0 else 'absolute'} accuracy ({scale}, {len(seeds)} seeds)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    for row in range(2):
        axes[row, -1].axis("off")
    axes[0, -1].legend(handles, labels, fontsize=8, loc="upper left", borderaxespad=0.0)  # never over the curves
    plotting.save(fig, figdir / "accuracy_vs_tasks.png")

    # every method at the largest task count: mean over seeds, seeds as dots
    fig, axes = plotting.figure(ncols=len(variants), width=6.0, height=4.2)
    for col, v in enumerate(variants):
        ax = axes[0, col]
        full = str(runs[v][0]["task_counts"][-1])
        order = sorted(run_by(v), key=lambda m: _mean([r["merges"][m][full]["mean_normalized"] for r in runs[v]]))
        for i, m in enumerate(order):
            vals = [r["merges"][m][full]["mean_normalized"] for r in runs[v]]
            ax.barh(i, _mean(vals), color=COLOURS.get(m), hatch="//" if m in OURS else None, edgecolor="black", lw=0.5)
            ax.plot(vals, [i] * len(vals), "k.", ms=4)
        zero = [_mean([r["pretrained"][n] / max(r["individual"][n], 1e-9) for n in r["tasks"]]) for r in runs[v]]
        ax.axvline(_mean(zero), ls=":", color="#555555", lw=1, label="pre-trained backbone, task heads")
        ax.axvline(1.0, ls="--", color="#888888", lw=1, label="full fine-tune of each task")
        ax.set_yticks(range(len(order)), [LABELS.get(m, m) for m in order], fontsize=7)
        ax.set_xlabel("mean normalised accuracy (merged / full fine-tune)")
        ax.set_title(f"{v}: all {full} tasks merged (bars: mean, dots: {len(seeds)} seeds)", fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.14))
    plotting.save(fig, figdir / "methods_at_max_tasks.png")

    # per-task normalised accuracy with all tasks merged
    fig, axes = plotting.figure(nrows=len(variants), width=11, height=3.6)
    for row, v in enumerate(variants):
        ax = axes[row, 0]
        names, full = runs[v][0]["tasks"], str(runs[v][0]["task_counts"][-1])
        width = 0.8 / len(methods)
        for i, m in enumerate(run_by(v)):
            vals = [[r["merges"][m][full]["normalized"].get(n, float("nan")) for r in runs[v]] for n in names]
            xs = [j + (i - (len(methods) - 1) / 2) * width for j in range(len(names))]
            ax.bar(xs, [_mean(c) for c in vals], width, color=COLOURS.get(m), label=LABELS.get(m, m))
            for x, c in zip(xs, vals):
                ax.plot([x] * len(c), c, "k.", ms=2)
        ax.set_xticks(range(len(names)), [n.replace("_", "\n") for n in names], fontsize=7)
        ax.set_ylabel("normalised accuracy")
        ax.set_title(f"{v}: per-task normalised accuracy, all {full} tasks merged (bars: mean, dots: seeds)", fontsize=9)
        ax.axhline(1.0, ls="--", color="#888888", lw=1)
        if row == 0:
            ax.legend(fontsize=6, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plotting.save(fig, figdir / "per_task.png")

    # share of each task update inside the pre-trained top-r subspace
    fig, axes = plotting.figure(ncols=len(variants))
    for col, v in enumerate(variants):
        ax = axes[0, col]
        fracs = sorted(runs[v][0]["share_curve"], key=float)
        xs = [float(f) for f in fracs]
        ys = [[_mean([r["share_curve"][f][n]["share"] for n in r["tasks"]]) for f in fracs] for r in runs[v]]
        chance = [[_mean([r["share_curve"][f][n]["chance"] for n in r["tasks"]]) for f in fracs] for r in runs[v]]
        plotting.mean_band(ax, xs, ys, "fine-tuned updates (mean over tasks)", "#d62728")
        plotting.mean_band(ax, xs, chance, "random subspace of the same size", "#7f7f7f")
        ax.set_xlabel("rank r / full rank of each pre-trained matrix")
        ax.set_ylabel("share of update energy in U_r U_r^T dW V_r V_r^T")
        ax.set_title(f"{v}: update energy in the pre-trained space ({len(seeds)} seeds)")
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "subspace_share.png")

    # table
    rows = []
    for v in variants:
        full = str(runs[v][0]["task_counts"][-1])
        rows.append({"domain": v, "method": "fine-tuned (individual)",
                     "mean_accuracy": claims.fmt([_mean(list(r["individual"].values())) for r in runs[v]]),
                     "mean_normalized": "1", "scale": ""})
        if runs[v][0].get("individual_subspace"):
            rows.append({"domain": v, "method": "fine-tuned inside the pre-trained space (individual)",
                         "mean_accuracy": claims.fmt([_mean(list(r["individual_subspace"].values())) for r in runs[v]]),
                         "mean_normalized": claims.fmt([_mean([r["individual_subspace"][n] / r["individual"][n]
                                                              for n in r["tasks"]]) for r in runs[v]]), "scale": ""})
        for ctl in runs[v][0].get("individual_controls", {}):
            rows.append({"domain": v, "method": f"{MODE_LABELS.get(ctl, ctl)} (individual, control)",
                         "mean_accuracy": claims.fmt([_mean(list(r["individual_controls"][ctl].values())) for r in runs[v]]),
                         "mean_normalized": claims.fmt([_mean([r["individual_controls"][ctl][n] / r["individual"][n]
                                                              for n in r["tasks"]]) for r in runs[v]]), "scale": ""})
        rows.append({"domain": v, "method": "pre-trained (task heads)",
                     "mean_accuracy": claims.fmt([_mean(list(r["pretrained"].values())) for r in runs[v]]),
                     "mean_normalized": claims.fmt([_mean([r["pretrained"][n] / r["individual"][n] for n in r["tasks"]])
                                                    for r in runs[v]]), "scale": ""})
        for m in run_by(v):
            rows.append({"domain": v, "method": m,
                         "mean_accuracy": claims.fmt([r["merges"][m][full]["mean_accuracy"] for r in runs[v]]),
                         "mean_normalized": claims.fmt([r["merges"][m][full]["mean_normalized"] for r in runs[v]]),
                         "scale": "/".join(str(r["merges"][m][full]["scale"]) for r in runs[v])})
        rows.append({"domain": v, "method": "update share in pre-trained subspace (chance)",
                     "mean_accuracy": claims.fmt([_mean([x["share"] for x in r["subspace_share"].values()]) for r in runs[v]]),
                     "mean_normalized": claims.fmt([_mean([x["chance"] for x in r["subspace_share"].values()]) for r in runs[v]]),
                     "scale": ""})
    from neurips26.core import tuning

    summary = claims_summary(runs)
    records = tuning_records(params, runs, summary)
    tuning.write_csv(out / "tuning.csv", P, records)
    return [*claims.write_tables(out, rows, claim_rows(summary, scale, records=records)), out / "tuning.csv"]


FINETUNE_WHY = ("the same for every method: every merge of a domain and seed starts from one set of fine-tunes; "
                "the default run cannot afford a learning-rate grid for each expert, so the rate stays as set "
                "(the constrained modes listed in lr_tuning.modes are tuned instead)")


def tuning_records(params: dict, runs: dict, summary: dict) -> list:
    """Every knob as the tuning protocol chose or fixed it: each scaled method's merge scale (from
    the merge steps' records), the fixed merge knobs (TIES' keep share, DARE's drop rate), the
    fine-tuning recipes of each domain (fixed for every method) and the field's strongest method
    per domain (chosen on validation)."""
    from neurips26.core import tuning

    from .claims import field_choice

    records = []
    for v, rs in runs.items():
        for r in rs:
            records += [tuning.Record.from_json(x) for x in r.get("tuning", [])]
        _, choice = field_choice(v, summary[v])
        if choice is not None:
            records.append(choice)
        cfg = params.get("variants", {}).get(v, {})
        # the learning rates lr_tuning tuned (on its tuning seed, once per domain and mode)
        tuned = [tuning.Record.from_json(x) for x in rs[0].get("lr_tuning", [])]
        records += tuned
        tuned_modes = set(cfg.get("lr_tuning", {}).get("modes", []))
        for mode in (modes(cfg) if cfg.get("kind") in ("vision", "language") else []):
            if mode not in tuned_modes and block_of(mode) in cfg:
                records.append(tuning.fixed(f"experts ({MODE_LABELS[mode]})", "lr", cfg[block_of(mode)]["lr"],
                                            FINETUNE_WHY, setting=v))
    g = params.get("merge", {})
    if "ties_keep" in g:
        records.append(tuning.fixed("ties", "keep", g["ties_keep"], "the TIES paper's default share of kept entries",
                                    setting="every domain"))
    if "dare_drop" in g:
        records.append(tuning.fixed("dare", "drop", g["dare_drop"], "the DARE paper's default drop rate",
                                    setting="every domain"))
    return records
