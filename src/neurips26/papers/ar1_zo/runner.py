"""The matched-budget zeroth-order training loop and the signal measurement shared by the steps.

Every method is an object with `perturb_(step, seed, scale)` and `update_(step, seed, coef)`;
one step spends two forward passes (counted by the harness' QueryCounter):

    L_pm = L(theta +- eps z) + sigma xi_pm,   g_hat = (L_+ - L_-) / (2 eps),   theta <- theta - lr g_hat z,

with z regenerated from the step's seed and xi_pm ~ N(0, 1) the fixed evaluation-noise floor
sigma (the residual noise of a low-precision loss evaluation; 0 turns it off).
"""

from __future__ import annotations

import copy
import math

import torch

from neurips26.papers.zo_harness import tasks, zo

from . import baselines, method

METHODS = ("mezo_full", "mezo_lora", "lozo", "naive_atom", "ar1_zo")
LORA_METHODS = ("mezo_lora", "naive_atom", "ar1_zo")
ATOM_METHODS = ("naive_atom", "ar1_zo")


subset = tasks.PromptClassifier.subset  # rows of an encoder batch


class Setup:
    """The data of one run (encoded once; for the encoder, through its frozen lower layers) and
    the base model. `model_cfg['kind']`: 'encoder' (a BERT-style sentence encoder, the top
    `tuned_layers` tuned) or 'causal' (a causal LM scored on verbalizer tokens, every layer tuned)."""

    def __init__(self, tokenizer, encoder, data: dict, model_cfg: dict):
        self.tok, self.base, self.cfg = tokenizer, encoder, model_cfg
        self.kind = model_cfg.get("kind", "encoder")
        if self.kind == "encoder":
            n_layers = len(encoder.encoder.layer)
            self.tuned = list(range(n_layers - int(model_cfg["tuned_layers"]), n_layers))
        else:
            self.tuned = None  # LoRA on every layer
        clf = self.classifier(encoder)
        self.subset = clf.subset
        self.batches = {name: clf.encode(items) for name, items in data.items()}

    def classifier(self, model):
        if self.kind == "causal":
            return tasks.CausalPromptClassifier(self.tok, model, max_length=self.cfg["max_length"])
        return tasks.PromptClassifier(self.tok, model, temperature=self.cfg["temperature"],
                                      max_length=self.cfg["max_length"], cache_below=self.tuned[0])

    def build(self, name: str, rank: int, alpha: float, lozo: dict, init_seed: int):
        """(classifier, optimiser object, LoRA modules) of method `name` on a fresh copy of the encoder."""
        enc = copy.deepcopy(self.base)
        modules = []
        if name in LORA_METHODS:
            scheme = "ar1" if name == "ar1_zo" else "canonical"
            modules = method.add_lora(enc, rank, method.lora_alpha_for(scheme, alpha, rank), self.tuned,
                                      self.cfg["lora_targets"], init_seed)
        clf = self.classifier(enc)
        if name == "mezo_full":
            opt = baselines.GaussianZO([p.data for _, p in clf.top_parameters()])
        elif name == "lozo":
            opt = baselines.LoZO([p.data for _, p in clf.top_parameters()], lozo["rank"], lozo["nu"], init_seed)
        elif name == "mezo_lora":
            opt = baselines.GaussianZO(method.all_factors(modules))
        elif name in ATOM_METHODS:
            opt = method.AtomwiseZO(modules, rank)
        else:
            raise KeyError(f"unknown method '{name}'; known: {', '.join(METHODS)}")
        return clf, opt, modules


def evaluate(clf, batch: dict, chunk: int = 128) -> dict:
    correct, losses = [], []
    n = len(batch["labels"])
    for i in range(0, n, chunk):
        part = clf.subset(batch, range(i, min(n, i + chunk)))
        logits = clf.logits(part)
        correct += (logits.argmax(-1) == part["labels"]).int().tolist()
        losses.append(float(torch.nn.functional.cross_entropy(logits, part["labels"], reduction="sum")))
    return {"accuracy": sum(correct) / n, "loss": sum(losses) / n, "correct": correct}


def train(setup: Setup, name: str, rank: int, alpha: float, lozo: dict, lr: float, eps: float, steps: int,
          batch_size: int, noise_floor: float, run_seed: int, log_every: int = 25, progress=None) -> dict:
    """One matched-budget run: `steps` two-point steps (2 * steps forward passes)."""
    clf, opt, _ = setup.build(name, rank, alpha, lozo, run_seed)
    counter = zo.QueryCounter(budget=2 * steps)
    gen = torch.Generator().manual_seed(int(run_seed))
    noise = torch.Generator().manual_seed(int(run_seed) + 1)
    train_batch = setup.batches["train"]
    n_train = len(train_batch["labels"])
    curve, window, diverged = [], [], False
    for t in range(steps):
        batch = setup.subset(train_batch, torch.randint(n_train, (batch_size,), generator=gen))
        seed = zo.step_seed(run_seed, t)
        xi = torch.randn(2, generator=noise).tolist()
        opt.perturb_(t, seed, eps)
        lp = clf.loss(batch)
        opt.perturb_(t, seed, -2 * eps)
        lm = clf.loss(batch)
        opt.perturb_(t, seed, eps)
        counter.add(2)
        g_hat = ((lp + noise_floor * xi[0]) - (lm + noise_floor * xi[1])) / (2 * eps)
        if not math.isfinite(g_hat):
            diverged = True
            break
        opt.update_(t, seed, -lr * g_hat)
        window.append(0.5 * (lp + lm))
        if (t + 1) % log_every == 0:
            curve.append(sum(window) / len(window))
            window = []
            if progress:
                progress(t + 1, curve[-1])
    if counter.forwards > counter.budget:
        raise RuntimeError(f"{name}: spent {counter.forwards} forward passes, budget {counter.budget}")
    val, test = evaluate(clf, setup.batches["val"]), evaluate(clf, setup.batches["test"])
    if not (math.isfinite(val["loss"]) and math.isfinite(test["loss"])):
        diverged = True
    return {"val_accuracy": val["accuracy"], "val_loss": val["loss"], "test_accuracy": test["accuracy"],
            "test_loss": test["loss"], "test_correct": test["correct"], "train_curve": curve,
            "forwards": counter.forwards, "diverged": diverged}


def reinit_(modules, seed: int) -> None:
    """peft's LoRA initialisation again (A Kaiming-uniform, B = 0) under `seed`."""
    with torch.random.fork_rng():
        torch.manual_seed(int(seed))
        for m in modules:
            m.reset_lora_parameters(method.ADAPTER, True)


def signal_vs_rank(setup: Setup, ranks, alpha: float, eps: float, queries: int, batch_size: int,
                   noise_floor: float, seed: int, inits: int = 1) -> dict:
    """Active FD signal of atom queries at the LoRA initialisation, per rank, for the canonical
    (naive) and AR1 scalings: RMS of (L_+ - L_-)/2 over `queries` atom queries (alternating atoms,
    spread over `inits` fresh LoRA initialisations, one fixed batch, noise-free), FD-SNR =
    signal^2 / (sigma^2 / 2) (the variance the floor adds to (L_+ - L_-)/2), and the share of noisy
    queries whose sign agrees with the noise-free one. Both scalings see the same initialisations,
    directions and noise draws."""
    gen = torch.Generator().manual_seed(int(seed))
    batch = setup.subset(setup.batches["train"], torch.randint(len(setup.batches["train"]["labels"]), (batch_size,), generator=gen))
    out = {}
    per_init = max(1, queries // max(1, inits))
    for scheme, name in (("canonical", "naive_atom"), ("ar1", "ar1_zo")):
        rows = {}
        for r in ranks:
            clf, opt, modules = setup.build(name, r, alpha, {}, seed * 1000 + r)
            deltas = []
            for k in range(inits):
                reinit_(modules, zo.step_seed(seed, 1000 * r + k))
                deltas += [method.atom_signal(lambda: clf.loss(batch), modules, q % r, zo.step_seed(seed, 100 * k + q), eps)
                           for q in range(per_init)]
            n = len(deltas)
            # the same noise draws for both scalings at a rank
            noise = torch.Generator().manual_seed(zo.step_seed(seed, 10_000 + r))
            xi = torch.randn(n, 2, generator=noise, dtype=torch.float64)
            noisy = [d + noise_floor * 0.5 * float(x[0] - x[1]) for d, x in zip(deltas, xi)]
            rms = math.sqrt(sum(d * d for d in deltas) / n)
            snr = rms ** 2 / (noise_floor ** 2 / 2) if noise_floor > 0 else float("inf")
            agree = sum(1 for d, y in zip(deltas, noisy) if (d > 0) == (y > 0)) / n
            rows[str(r)] = {"signal": rms, "fd_snr": snr, "sign_agreement": agree,
                            "scaling": method.scaling(modules[0])}
        out[name] = rows
    return out
