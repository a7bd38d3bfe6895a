"""GPU check: training throughput and peak GPU memory of each GPU paper's paper-scale model.

On a CUDA machine this runs a few hundred training steps (forward, backward, optimiser step) of
the models the GPU papers train at `config/paper.yaml`'s sizes, on generated tensors of the
papers' input shapes (no downloads, no data files), within one wall-clock budget (default 480 s,
model building and warm-up included). Per case it prints the model, its parameter count, the
batch, the steps done and what stopped them (the step count or the case's share of the budget),
the throughput (images, tokens or clips per second) and the peak GPU memory
(`torch.cuda.max_memory_allocated`, reset per case); at the end a table, also written as JSON to
`--out`.

Cases (`--papers` picks papers):

* nar_dit: DiT-XL/2-sized DiT (config/paper.yaml's nar_dit.model) on 4x32x32 latents (the
  SD-VAE latents of 256x256 ImageNet images the paper config trains on), plain DiT and the `nar`
  variant's noise-aware routing, `flow_loss` with an EMA update per step; images/s.
* angular_nets: the ResNet (CIFAR-10, 32x32), ViT (ImageNet, 224x224) and BERT (SST-2, 128
  tokens) backbones of `angular_nets.models.build` at paper.yaml's arch, every projection an
  angular layer of the config's nu-study method (built as `steps.method_spec` builds it);
  images/s or tokens/s.
* apexphys: PhysNet at paper.yaml's widths on 6-channel 128-frame 72x72 chunks, with one later
  domain's expansion branch on every layer and the BCRP anchor penalty, negative-Pearson loss;
  clips/s (and frames/s).
* lora_encoder: a randomly initialised RoBERTa-large (the fedlora_align / fedaba classification
  encoder at paper scale, built from a `RobertaConfig`, no download) with peft LoRA of the
  fedlora_align config's rank on query and value of every layer, batch and length from the same
  block; tokens/s. It stands in for the papers that start from downloaded weights (embed_merge,
  the LoRA and language-model papers), which are not run here.

Precision (`--precision auto`): bf16 autocast where such models are trained in mixed precision
(DiT-XL/2 with routing, the LoRA encoder fine-tune); fp32 for the angular layers (their
quantisers threshold fp32 projections, as the project trains them) and for PhysNet (the
rPPG-Toolbox recipe trains it in fp32). `--precision fp32` or `bf16` sets every case. The
project's own trainer runs fp32 (Lightning's "32-true").

Timing: cudnn.benchmark on, warm-up steps left out of the timing, the device synchronised before
the clock starts and after every step. If the batch does not fit, it is split into micro-batches
(gradients accumulated; the table says so). The cheaper papers run first, so that budget they
leave unused goes to the DiT.

    python benchmarks/gpu_check.py                      # on a CUDA machine, paper sizes, <= 8 min
    python benchmarks/gpu_check.py --papers nar_dit --budget-s 120 --steps 200
    python benchmarks/gpu_check.py --toy                # tiny widths on the CPU, a few steps

Without CUDA it runs `--toy` (every paper at tiny widths, 3 steps); tests/test_gpu_check.py runs it so.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import math
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "results" / "benchmarks" / "gpu_check.json"

# listing order (the brief's) and running order (cheapest first: unused budget flows to the DiT)
PAPERS = ("nar_dit", "angular_nets", "apexphys", "lora_encoder")
RUN_ORDER = ("apexphys", "lora_encoder", "angular_nets", "nar_dit")

# papers that request GPUs in config/paper.yaml but are not run here, and why
NOT_RUN = {
    "crl_spectral": "small MLP encoders (width <= 2048) on generated pairs; not part of this check",
    "embed_merge": "merges downloaded CLIP task-vector checkpoints; represented by lora_encoder",
    "bdc_merge": "needs downloaded Llama-3 weights; represented by lora_encoder",
    "fedlora_align": "needs downloaded RoBERTa-large / Llama-2 weights; lora_encoder is its encoder, "
                     "randomly initialised",
    "fedaba": "needs downloaded RoBERTa-large / Llama-2 weights; lora_encoder is its encoder, randomly initialised",
    "beta_tta": "needs downloaded ViT / CLIP weights; represented by lora_encoder",
    "ar1_zo": "needs downloaded OPT-13B weights; represented by lora_encoder",
    "es_dynamics": "needs downloaded Qwen2.5 weights; represented by lora_encoder",
    "adapad": "needs downloaded DeBERTaV3 weights; represented by lora_encoder",
    "adaprelora": "needs downloaded BERT-large / GPT-2 weights; represented by lora_encoder",
}

# RoBERTa-large's geometry (FacebookAI/roberta-large), so the encoder is built with no download
ROBERTA_LARGE = dict(vocab_size=50265, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                     intermediate_size=4096, max_position_embeddings=514, type_vocab_size=1,
                     pad_token_id=1, layer_norm_eps=1e-5)
# the ImageNet-256 SD-VAE latents nar_dit's paper config trains on (data.source: imagenet_latents)
LATENT_SHAPE = (4, 32, 32)


@dataclass
class Case:
    """One model to time. `loss(lo, hi)` is the training loss on rows lo:hi of the batch."""

    paper: str
    name: str
    model_desc: str
    model: object
    optimizer: object
    batch: int
    unit: str                      # what the throughput counts: images, tokens, clips
    per_sample: int                # units per sample (tokens per sequence, ...)
    loss: Callable[[int, int], object]
    precision: str                 # bf16 or fp32
    precision_note: str
    after_step: Callable[[], None] | None = None
    frames_per_sample: int | None = None
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------- cases
def _auto(precision: str, choice: str, note: str, device) -> tuple[str, str]:
    """The precision of a case: `--precision` when set, else the case's choice on CUDA (fp32 on
    the CPU, where bf16 autocast only slows a toy run down)."""
    if precision != "auto":
        return precision, "set by --precision"
    if device.type != "cuda":
        return "fp32", "fp32 on the CPU"
    return choice, note


def nar_dit_cases(cfg: dict, toy: bool, device, precision: str) -> list[Callable[[], Case]]:
    block = cfg["nar_dit"]
    m, t = block["model"], block["train"]
    if block["data"].get("source") == "imagenet_latents":
        channels, size = LATENT_SHAPE[0], LATENT_SHAPE[-1]
    else:
        channels, size = 3, int(block["data"]["image_size"])
    sizes = dict(patch=m["patch"], depth=m["depth"], hidden=m["hidden"], heads=m["heads"])
    batch = int(t["batch_size"])
    if toy:
        size, sizes, batch = 8, dict(patch=2, depth=4, hidden=32, heads=2), 6
    prec, note = _auto(precision, "bf16", "bf16 autocast: DiT-XL/2-scale training runs in mixed precision", device)

    def make(variant: str) -> Callable[[], Case]:
        def build() -> Case:
            import torch

            from neurips26.papers.nar_dit.diffusion import flow_loss, sample_t
            from neurips26.papers.nar_dit.model import DiT, DiTConfig, RoutingPolicy

            dcfg = DiTConfig(image_size=size, in_channels=channels, mlp_ratio=m["mlp_ratio"],
                             num_classes=m["num_classes"], class_dropout=m["class_dropout"], **sizes)
            v = block["variants"][variant]
            policy = RoutingPolicy(kind=v["kind"], ratio=v.get("ratio", 0.0), ratios=tuple(v.get("ratios", ())),
                                   boundaries=tuple(v.get("boundaries", (1 / 3, 2 / 3))),
                                   route_start=t["route_start"], route_end=t["route_end"])
            model = DiT(dcfg).to(device)
            ema = copy.deepcopy(model).requires_grad_(False).eval()  # as training.FlowMatchingDiT keeps it
            opt = torch.optim.AdamW(model.parameters(), lr=t["lr"], weight_decay=t.get("weight_decay", 0.0))
            x = torch.rand(batch, channels, size, size, device=device) * 2 - 1
            y = torch.randint(0, dcfg.num_classes, (batch,), device=device)
            decay = float(t["ema_decay"])

            def loss(lo, hi):
                tt = sample_t(hi - lo, device=device)
                xb = x[lo:hi]
                return flow_loss(model, xb, y[lo:hi], tt, torch.randn_like(xb), policy.ratios_for(tt),
                                 policy.route_start, policy.route_end)

            @torch.no_grad()
            def after_step():
                for e, p in zip(ema.parameters(), model.parameters()):
                    e.lerp_(p, 1 - decay)

            routing = "no routing" if policy.kind == "none" else (
                f"{policy.kind} ratios {'/'.join(f'{r:g}' for r in (policy.ratios or (policy.ratio,)))}, "
                f"blocks {policy.route_start}..{policy.route_end % dcfg.depth} routed")
            desc = (f"DiT depth {dcfg.depth}, hidden {dcfg.hidden}, {dcfg.heads} heads, patch {dcfg.patch}, "
                    f"{channels}x{size}x{size} inputs ({dcfg.tokens} tokens), {routing}; EMA")
            return Case("nar_dit", variant, desc, model, opt, batch, "images", 1, loss, prec, note, after_step,
                        extra={"ema": ema, "mean_routing_ratio": policy.mean_ratio()})
        return build

    return [make(v) for v in ("dit", "nar")]


def angular_nets_cases(cfg: dict, toy: bool, device, precision: str) -> list[Callable[[], Case]]:
    block = cfg["angular_nets"]
    method = block["nu_study_method"]
    d, t = block["data"], block["train"]
    prec, note = _auto(precision, "fp32", "fp32: the angular quantisers threshold fp32 projections, as the project "
                       "trains them", device)
    # (backbone, data info of the paper's data set, unit)
    infos = {
        "resnet": ({"channels": 3, "image_size": 32, "num_classes": 10}, "images", "CIFAR-10"),
        "vit": ({"channels": 3, "image_size": int(d["image_size"]), "num_classes": 1000}, "images", "ImageNet"),
        "bert": ({"vocab_size": int(d["vocab_size"]), "max_len": int(d["seq_len"]), "num_classes": 2}, "tokens",
                 "SST-2"),
    }
    backbones = []
    for name in block["run_variants"]:
        backbone = block["variants"][name]["backbone"]
        if backbone not in (b for b, _ in backbones):
            backbones.append((backbone, name))

    def make(backbone: str, variant: str) -> Callable[[], Case]:
        def build() -> Case:
            import torch
            import torch.nn.functional as F

            from neurips26.papers.angular_nets.models import build as build_model
            from neurips26.papers.angular_nets.steps import method_spec

            info, unit, data_name = (dict(infos[backbone][0]), *infos[backbone][1:])
            arch = dict(block["arch"][backbone])
            angular = dict(block["angular"])
            batch = int(t["batch_size"])
            if toy:
                batch, angular["min_features"] = 4, 0
                arch = {"resnet": {"widths": [4, 8], "blocks": 1},
                        "vit": {"patch": 4, "dim": 16, "depth": 1, "heads": 2, "mlp_ratio": 2.0},
                        "bert": {"dim": 16, "depth": 1, "heads": 2, "mlp_ratio": 2.0}}[backbone]
                info.update({"image_size": 8} if backbone != "bert" else {"vocab_size": 100, "max_len": 8})
            spec = method_spec(method, block["methods"][method], angular, seed=0)
            model = build_model(backbone, spec, arch, info).to(device)
            opt = torch.optim.AdamW(model.parameters(), lr=t["lr"], weight_decay=t["weight_decay"])
            if backbone == "bert":
                n = info["max_len"]
                ids = torch.randint(0, info["vocab_size"], (batch, n), device=device)
                mask = torch.ones(batch, n, dtype=torch.long, device=device)
                inputs, per_sample = (ids, mask), n
            else:
                s = info["image_size"]
                inputs, per_sample = (torch.randn(batch, info["channels"], s, s, device=device),), 1
            y = torch.randint(0, info["num_classes"], (batch,), device=device)

            def loss(lo, hi):
                return F.cross_entropy(model(*(a[lo:hi] for a in inputs)), y[lo:hi])

            rows = sorted({mod.n_rows for mod in model.modules() if hasattr(mod, "n_rows")})
            shape = (f"{info['max_len']} tokens" if backbone == "bert"
                     else f"{info['channels']}x{info['image_size']}x{info['image_size']}")
            arch_desc = ", ".join(f"{k} {v}" for k, v in arch.items())
            desc = (f"{backbone} ({arch_desc}) on {data_name}-shaped inputs ({shape}), "
                    f"angular layers {method} (N {rows[0]}..{rows[-1]} features)" if rows else
                    f"{backbone} ({arch_desc}), {method}")
            return Case("angular_nets", f"{backbone} ({variant})", desc, model, opt, batch, unit, per_sample, loss,
                        prec, note)
        return build

    return [make(b, v) for b, v in backbones]


def apexphys_cases(cfg: dict, toy: bool, device, precision: str) -> list[Callable[[], Case]]:
    block = cfg["apexphys"]
    m, t, p = block["model"], block["train"], block["preprocess"]
    prec, note = _auto(precision, "fp32", "fp32: the rPPG-Toolbox recipe trains PhysNet in fp32", device)

    def build() -> Case:
        import torch

        from neurips26.papers.apexphys.method import ApexPhys
        from neurips26.papers.apexphys.model import LAYERS, PhysNet, neg_pearson

        widths, pool, rank = tuple(m["widths"]), int(m["spatial_pool"]), int(m["branch_rank"])
        size, frames, batch = int(p["size"]), int(p["chunk_length"]), int(t["batch_size"])
        if toy:
            widths, pool, rank, size, frames, batch = (4, 8, 8), 2, 2, 8, 16, 4
        model = PhysNet(in_channels=6, widths=widths, spatial_pool=pool, branch_rank=rank)
        for layer in LAYERS:  # a later domain (1) with a branch on every layer: its training path
            model.add_branch(1, layer)
        model = model.to(device)
        settings = block["variants"]["apexphys"]
        strategy = ApexPhys(settings, seed=0)
        with torch.no_grad():  # the BCRP anchor after domain 0: top-rho mask of a (random) Fisher
            fisher = [torch.rand_like(q) for q in model.backbone_parameters()]
            flat = torch.cat([f.flatten() for f in fisher])
            k = max(1, int(round(strategy.top_fraction * flat.numel())))
            threshold = torch.topk(flat, k).values.min()
            strategy.weights = [f * (f >= threshold) for f in fisher]
            strategy.anchor = [q.detach().clone() for q in model.backbone_parameters()]
        opt = torch.optim.Adam([q for q in model.parameters() if q.requires_grad], lr=t["lr"])
        x = torch.randn(batch, 6, frames, size, size, device=device)
        y = torch.randn(batch, frames, device=device)

        def loss(lo, hi):
            pred = model(x[lo:hi], path=1)
            return neg_pearson(pred, y[lo:hi]) + strategy.penalty(model) * (hi - lo) / batch

        desc = (f"PhysNet widths {'/'.join(map(str, widths))}, spatial pool {pool}, HES branches (rank {rank}) "
                f"on all {len(LAYERS)} layers + BCRP penalty; 6x{frames}x{size}x{size} chunks")
        return Case("apexphys", "apexphys", desc, model, opt, batch, "clips", 1, loss, prec, note,
                    frames_per_sample=frames)

    return [build]


def lora_encoder_cases(cfg: dict, toy: bool, device, precision: str) -> list[Callable[[], Case]]:
    block = cfg["fedlora_align"]
    fed, data = block["federation"], block["data"]
    prec, note = _auto(precision, "bf16", "bf16 autocast: the usual mixed precision of encoder LoRA fine-tuning "
                       "on a GPU", device)

    def build() -> Case:
        import torch
        import torch.nn.functional as F
        from transformers import RobertaConfig, RobertaForSequenceClassification
        from transformers.utils import logging as hf_logging

        from neurips26.papers.lora_harness.models import add_lora

        hf_logging.set_verbosity_error()
        geometry = dict(ROBERTA_LARGE)
        batch, n, rank = int(fed["batch_size"]), int(data["max_length"]), int(fed["rank"])
        if toy:
            geometry.update(vocab_size=200, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=32, max_position_embeddings=20)
            batch, n, rank = 4, 8, 2
        config = RobertaConfig(num_labels=4, **geometry)
        torch.manual_seed(0)
        net = RobertaForSequenceClassification(config)
        add_lora(net, rank, targets=tuple(fed["targets"]), keep_trainable=("classifier",))
        net = net.to(device)
        opt = torch.optim.AdamW([q for q in net.parameters() if q.requires_grad], lr=5e-4,
                                weight_decay=fed.get("weight_decay", 0.0))
        ids = torch.randint(3, geometry["vocab_size"], (batch, n), device=device)
        ids[:, 0] = 0  # <s>
        mask = torch.ones(batch, n, dtype=torch.long, device=device)
        y = torch.randint(0, 4, (batch,), device=device)

        def loss(lo, hi):
            return F.cross_entropy(net(input_ids=ids[lo:hi], attention_mask=mask[lo:hi]).logits, y[lo:hi])

        size = "RoBERTa-large geometry" if not toy else "tiny RoBERTa"
        desc = (f"{size} (layers {geometry['num_hidden_layers']}, hidden {geometry['hidden_size']}), random init, "
                f"peft LoRA r {rank} on {'/'.join(fed['targets'])} of every layer + head; {n} tokens")
        return Case("lora_encoder", "roberta_lora", desc, net, opt, batch, "tokens", n, loss, prec, note)

    return [build]


BUILDERS = {"nar_dit": nar_dit_cases, "angular_nets": angular_nets_cases, "apexphys": apexphys_cases,
            "lora_encoder": lora_encoder_cases}


# ---------------------------------------------------------------- the timed loop
def _is_oom(exc: BaseException) -> bool:
    import torch

    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


def run_case(case: Case, device, steps: int, warmup: int, share_s: float, started: float) -> dict:
    """Warm-up steps, then timed steps until `steps` or until `share_s` seconds after `started`
    (the case's start, building included), whichever first; at least one timed step."""
    import torch

    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    dtype = torch.bfloat16 if case.precision == "bf16" else None
    params = [q for q in case.model.parameters()]
    micro = case.batch

    def one_step():
        case.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for lo in range(0, case.batch, micro):
            hi = min(case.batch, lo + micro)
            with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
                loss = case.loss(lo, hi)
                scaled = loss * ((hi - lo) / case.batch) if micro < case.batch else loss
            scaled.backward()
            total = total + scaled.detach()
        case.optimizer.step()
        if case.after_step is not None:
            case.after_step()
        return total

    def step_fitting():
        """One step; on running out of memory, halve the micro-batch and try again."""
        nonlocal micro
        while True:
            try:
                return one_step()
            except RuntimeError as exc:
                if not (cuda and _is_oom(exc)) or micro == 1:
                    raise
            # out of the except block: the failed step's tensors, held by the exception, are free now
            case.optimizer.zero_grad(set_to_none=True)
            gc.collect()
            torch.cuda.empty_cache()
            micro = max(1, micro // 2)
            print(f"  out of memory at micro-batch {micro * 2}: accumulating {math.ceil(case.batch / micro)} "
                  f"micro-batches of {micro}", flush=True)

    case.model.train()
    for _ in range(warmup):
        step_fitting()
    sync()
    timed, seconds, stopped_by, loss = 0, 0.0, "steps", None
    while timed < steps:
        if timed > 0 and time.perf_counter() - started >= share_s:
            stopped_by = "budget"
            break
        t0 = time.perf_counter()
        before = micro
        loss = step_fitting()
        sync()
        if micro != before:  # the batch was split mid-run: time afresh
            timed, seconds = 0, 0.0
            continue
        seconds += time.perf_counter() - t0
        timed += 1
    loss_value = float(loss) if loss is not None else float("nan")
    samples_s = case.batch * timed / seconds if seconds > 0 else 0.0
    n_params = sum(q.numel() for q in params)
    trainable = sum(q.numel() for q in params if q.requires_grad)
    row = {
        "paper": case.paper, "case": case.name, "model": case.model_desc,
        "params": n_params, "trainable_params": trainable,
        "batch": case.batch, "micro_batch": micro, "precision": case.precision, "precision_note": case.precision_note,
        "warmup_steps": warmup, "steps_requested": steps, "steps_done": timed, "stopped_by": stopped_by,
        "budget_share_s": round(share_s, 1), "case_wall_s": round(time.perf_counter() - started, 2),
        "timed_s": round(seconds, 4), "step_ms": round(1000 * seconds / timed, 3) if timed else None,
        "samples_per_s": samples_s, "unit": case.unit, "throughput": samples_s * case.per_sample,
        "frames_per_s": samples_s * case.frames_per_sample if case.frames_per_sample else None,
        "loss": loss_value, "loss_finite": math.isfinite(loss_value),
        "peak_gpu_mem_bytes": torch.cuda.max_memory_allocated(device) if cuda else None,
        "error": None,
    }
    row["peak_gpu_mem_gb"] = row["peak_gpu_mem_bytes"] / 2 ** 30 if cuda else None
    return row


def _fmt_count(n: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:.3g}"


def print_row(row: dict) -> None:
    if row["error"]:
        print(f"  FAILED: {row['error']}", flush=True)
        return
    batch = f"{row['batch']}" + (f" ({math.ceil(row['batch'] / row['micro_batch'])} x {row['micro_batch']})"
                                 if row["micro_batch"] < row["batch"] else "")
    mem = f"{row['peak_gpu_mem_gb']:.2f} GiB" if row["peak_gpu_mem_gb"] is not None else "n/a (CPU)"
    frames = f", {row['frames_per_s']:.1f} frames/s" if row["frames_per_s"] else ""
    print(f"  model: {row['model']}\n"
          f"  parameters {row['params']:,} ({row['trainable_params']:,} trainable), batch {batch}, {row['precision']}\n"
          f"  steps {row['steps_done']}/{row['steps_requested']} (stopped by {row['stopped_by']}; "
          f"share {row['budget_share_s']} s, case took {row['case_wall_s']} s), {row['step_ms']} ms/step\n"
          f"  {row['throughput']:.1f} {row['unit']}/s{frames}, peak GPU memory {mem}, last loss {row['loss']:.4g}",
          flush=True)


def table(rows: list[dict]) -> str:
    head = ["paper", "case", "params", "batch", "prec", "steps", "stopped", "ms/step", "throughput", "peak mem"]
    lines = []
    for r in rows:
        if r["error"]:
            lines.append([r["paper"], r["case"], "", "", "", "", "failed", "", r["error"][:40], ""])
            continue
        batch = str(r["batch"]) + (f"/{r['micro_batch']}" if r["micro_batch"] < r["batch"] else "")
        mem = f"{r['peak_gpu_mem_gb']:.2f} GiB" if r["peak_gpu_mem_gb"] is not None else "-"
        lines.append([r["paper"], r["case"], _fmt_count(r["params"]), batch, r["precision"],
                      f"{r['steps_done']}/{r['steps_requested']}", r["stopped_by"], f"{r['step_ms']:.1f}",
                      f"{_fmt_count(r['throughput'])} {r['unit']}/s", mem])
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in lines]
    return "\n".join(out)


# ---------------------------------------------------------------- main
def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", default=",".join(PAPERS),
                        help=f"comma-separated, any of {', '.join(PAPERS)} (default: all)")
    parser.add_argument("--budget-s", type=float, default=480.0,
                        help="wall-clock budget of the whole check in seconds, building and warm-up included "
                             "(default 480)")
    parser.add_argument("--steps", type=int, default=None,
                        help="timed steps per case (default 300; 3 with --toy)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed warm-up steps per case (default 5; 1 with --toy)")
    parser.add_argument("--toy", action="store_true",
                        help="tiny widths and a few steps on the CPU (automatic without CUDA)")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="auto: CUDA when present, except with --toy (default auto)")
    parser.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto",
                        help="auto: each case's choice (see above); bf16 or fp32 for every case")
    parser.add_argument("--config", action="append", default=None,
                        help="config files layered on config/config.yaml (default: config/paper.yaml)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"JSON output (default {DEFAULT_OUT.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    papers = [p.strip() for p in args.papers.split(",") if p.strip()]
    unknown = [p for p in papers if p not in PAPERS]
    if unknown or not papers:
        parser.error(f"--papers: unknown {unknown or 'empty list'}; choose from {', '.join(PAPERS)}")
    args.papers = papers
    if args.budget_s <= 0:
        parser.error("--budget-s must be positive")
    for name in ("steps", "warmup"):
        value = getattr(args, name)
        if value is not None and value < (1 if name == "steps" else 0):
            parser.error(f"--{name} must be at least {1 if name == 'steps' else 0}, got {value}")
    return args


def main(argv=None) -> dict:
    started = time.perf_counter()
    args = parse_args(argv)
    import torch

    from neurips26.papers import load_config

    has_cuda = torch.cuda.is_available()
    if args.device == "cuda" and not has_cuda:
        raise SystemExit("gpu_check: --device cuda, but torch sees no CUDA device "
                         f"(torch {torch.__version__}, built with CUDA {torch.version.cuda})")
    device = torch.device("cuda" if args.device == "cuda" or (args.device == "auto" and has_cuda and not args.toy)
                          else "cpu")
    toy = args.toy or device.type == "cpu"
    if not args.toy and toy:
        print(f"gpu_check: {'no CUDA device' if not has_cuda else '--device cpu'}; running the toy sizes on the "
              "CPU (--toy)", flush=True)
    steps = args.steps if args.steps is not None else (3 if toy else 300)
    warmup = args.warmup if args.warmup is not None else (1 if toy else 5)
    configs = args.config if args.config is not None else ["config/paper.yaml"]
    try:
        cfg = load_config(ROOT, configs)
    except Exception as exc:  # noqa: BLE001 - a config error is reported, not traced
        raise SystemExit(f"gpu_check: cannot load config {['config/config.yaml', *configs]}: {exc}") from exc
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        name = torch.cuda.get_device_name(device)
    else:
        name = f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
    print(f"gpu_check: {name}, torch {torch.__version__}, {'toy sizes' if toy else 'paper sizes'}, "
          f"{steps} steps (+{warmup} warm-up) per case, budget {args.budget_s:g} s", flush=True)

    order = [p for p in RUN_ORDER if p in args.papers]
    rows: list[dict] = []
    for i, paper in enumerate(order):
        paper_left = args.budget_s - (time.perf_counter() - started)
        paper_share = paper_left / (len(order) - i)
        paper_start = time.perf_counter()
        try:
            builders = BUILDERS[paper](cfg, toy, device, args.precision)
        except KeyError as exc:
            raise SystemExit(f"gpu_check: config has no key {exc} needed for {paper}") from exc
        for j, build in enumerate(builders):
            case_start = time.perf_counter()
            share = (paper_share - (case_start - paper_start)) / (len(builders) - j)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            torch.manual_seed(0)
            case = None
            label = f"{paper} [{j + 1}/{len(builders)}]"
            try:
                case = build()
                print(f"\n== {paper} / {case.name} (share {share:.0f} s)", flush=True)
                row = run_case(case, device, steps, warmup, share, case_start)
            except Exception as exc:  # noqa: BLE001 - one failing case must not cost the others
                what = "out of memory" if _is_oom(exc) else f"{type(exc).__name__}: {exc}"
                print(f"\n== {label}: failed ({what})", flush=True)
                row = {"paper": paper, "case": case.name if case else label, "model": case.model_desc if case else "",
                       "error": what}
            else:
                print_row(row)
            rows.append(row)
            del case
            gc.collect()
            if device.type == "cuda":
                torch.cuda.empty_cache()

    total = time.perf_counter() - started
    print(f"\ngpu_check: {len(rows)} cases in {total:.1f} s (budget {args.budget_s:g} s)\n")
    print(table(rows))
    result = {
        "device": name, "device_type": device.type, "torch": torch.__version__, "cuda": torch.version.cuda,
        "toy": toy, "precision": args.precision, "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32), "budget_s": args.budget_s,
        "total_s": round(total, 2), "steps": steps, "warmup_steps": warmup, "configs": configs,
        "rows": rows,
        "not_run": [{"paper": p, "reason": r} for p, r in NOT_RUN.items()],
        "failed": [f"{r['paper']}/{r['case']}" for r in rows if r["error"]],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwritten: {out}")
    if result["failed"]:
        print(f"gpu_check: failed cases: {', '.join(result['failed'])}", file=sys.stderr)
    return result


if __name__ == "__main__":
    sys.exit(1 if main()["failed"] else 0)
