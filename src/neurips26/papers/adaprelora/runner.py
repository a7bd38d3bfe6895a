"""One fine-tuning run of one optimizer on one task, through the shared LoRA harness.

`load_task` builds a task of the config (MiniLM classification: `topic_sentiment`, `intent`,
`paraphrase`; the tiny-LM data-to-text task `data_to_text`), `build_net` the network (LoRA
adapters, or the plain matrices for full-W Adafactor), `make_optimizer` the method's optimizer,
`run` trains and scores it and reads the memory figures; `closed_form_check` compares
AdaPreLoRA's last-step factor update of every adapted layer with a generic solver.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

P = "adaprelora"
LM_TASKS = ("data_to_text",)


def is_lm(task: str) -> bool:
    return task in LM_TASKS


def primary_metric(task: str) -> str:
    return "bleu" if is_lm(task) else "accuracy"


# ---------------------------------------------------------------- data
def lm_model_dir(block: dict, inputs: dict):
    where = block["lm"]["model"] or inputs.get("model")
    if not where:
        raise ValueError(f"config key '{P}.lm.model': no model (neither an id/folder nor the lm_assets model input)")
    return where


def load_task(task: str, block: dict, seed: int, inputs: dict):
    from neurips26.papers.lora_harness import models, tasks

    if is_lm(task):
        c = block["lm"]
        _, tok = models.tiny_lm(lm_model_dir(block, inputs))
        if c["e2e_dir"]:
            train = tasks.read_e2e_csv(Path(c["e2e_dir"]) / "train.csv", c["n_train"], seed, key=f"{P}.lm.e2e_dir")
            test = tasks.read_e2e_csv(Path(c["e2e_dir"]) / "test.csv", c["n_test"], seed, key=f"{P}.lm.e2e_dir")
        else:
            items = tasks.make_data_to_text(c["n_train"] + c["n_test"], seed, tok)
            train, test = items[: c["n_train"]], items[c["n_train"]:]
        return tasks.lm_task(tok, train, test, c["max_len"])
    c = block["classification"]
    return tasks.prepare_classification(task, c["n_train"], c["n_test"], seed, c["max_length"], c["encoder_dir"],
                                        (c["data_dirs"] or {}).get(task), key=f"{P}.classification")


def validation_task(data, task: str, block: dict, seed: int):
    from neurips26.papers.lora_harness import tasks

    n_val = block["lm" if is_lm(task) else "classification"]["n_val"]
    return tasks.split_validation(data, n_val, seed)


# ---------------------------------------------------------------- network and optimizer
def build_net(task: str, data, method: str, block: dict, seed: int, inputs: dict):
    from neurips26.papers.lora_harness import models

    c = block["lm" if is_lm(task) else "classification"]
    if is_lm(task):
        net, _ = models.tiny_lm(lm_model_dir(block, inputs))
    else:
        net = models.minilm_classifier(data.classes, c["encoder_dir"], seed)
    if method == "full_adafactor":
        # full fine-tuning of the matrices LoRA adapts (and the head)
        for p in net.parameters():
            p.requires_grad_(False)
        hit = 0
        for name, mod in net.named_modules():
            if isinstance(mod, torch.nn.Linear) and name.split(".")[-1] in c["targets"]:
                mod.weight.requires_grad_(True)
                hit += 1
        if hasattr(net, "head"):
            for p in net.head.parameters():
                p.requires_grad_(True)
        if not hit:
            raise ValueError(f"config key '{P}.{'lm' if is_lm(task) else 'classification'}.targets': no Linear named {c['targets']}")
        return net
    return models.add_lora(net, c["rank"], tuple(c["targets"]), c["alpha"], seed)


DAMPED = ("scaled_adamw", "lora_pro", "adafactor_proj", "adaprelora")


def default_damping(method: str, block: dict) -> float | None:
    """The config's damping of a method's r x r Gram matrices (None: the method has none):
    ScaledAdamW's `optim.scaled_adamw_reg`, `optim.damping` for LoRA-Pro, AdaPreLoRA and the
    Frobenius projection."""
    o = block["optim"]
    if method not in DAMPED:
        return None
    return float(o["scaled_adamw_reg"] if method == "scaled_adamw" else o["damping"])


def make_optimizer(method: str, lr: float, block: dict, damping: float | None = None):
    """A function net -> optimizer (what lora_harness.train.finetune takes); the optimizer it made
    last is kept in `.made` (AdaPreLoRA's closed-form check reads it). `damping` (tuned) replaces
    the config's damping of the r x r Gram matrices of a method in DAMPED."""
    from . import baselines, method as apl

    o = dict(block["optim"])
    wd = o["weight_decay"]
    if damping is not None:
        if method not in DAMPED:
            raise ValueError(f"config key '{P}.damping_grid.{method}': {method} has no damping (only {', '.join(DAMPED)})")
        o["scaled_adamw_reg" if method == "scaled_adamw" else "damping"] = float(damping)

    def make(net):
        if method == "adamw":
            opt = baselines.adamw(net, lr, wd)
        elif method == "loraplus":
            opt = baselines.loraplus(net, lr, o["loraplus_ratio"], wd)
        elif method == "scaled_adamw":
            opt = baselines.scaled_adamw(net, lr, o["scaled_adamw_reg"], wd)
        elif method == "lora_pro":
            opt = baselines.LoRAPro(net, lr, damping=o["damping"], weight_decay=wd)
        elif method in ("adaprelora", "adafactor_proj"):
            opt = apl.AdaPreLoRA(net, lr, beta1=o["beta1"], clip_threshold=o["clip_threshold"], damping=o["damping"],
                                 weight_decay=wd, weighted=method == "adaprelora")
        elif method == "full_adafactor":
            opt = baselines.full_adafactor(net, lr, o["beta1"] or None, wd)
        else:
            raise ValueError(f"config key '{P}.methods': unknown method '{method}'")
        make.made = opt
        return opt

    make.made = None
    return make


# ---------------------------------------------------------------- one run
@torch.no_grad()
def test_accuracy(net, data, batch_size: int = 256) -> tuple[float, list[int]]:
    """Test accuracy and per-item correctness of a classifier on whatever device its parameters
    are (the network is put in eval mode for the pass and back after it)."""
    d = data.test
    device = next(net.parameters()).device
    was = net.training
    net.eval()
    try:
        pred = torch.cat([net(d.hidden[i:i + batch_size].to(device), d.mask[i:i + batch_size].to(device)).argmax(1).cpu()
                          for i in range(0, len(d.labels), batch_size)])
    finally:
        net.train(was)
    correct = (pred == d.labels).int().tolist()
    return float(np.mean(correct)), correct


def run(task: str, data, method: str, lr: float, block: dict, seed: int, inputs: dict, out: Path, key: dict,
        check: bool = False, check_layers: int = 4, damping: float | None = None, steps: int | None = None,
        record_at=()) -> dict:
    """`record_at`: step counts (1..steps) after which the test accuracy is recorded along the run
    (classification only): `res["at"]` the counts, `res["accuracy_at"]` and `res["items_at"]`
    the accuracy and per-item correctness after that many optimizer steps."""
    from neurips26.papers.lora_harness import train

    c = block["lm" if is_lm(task) else "classification"]
    o = block["optim"]
    steps = int(steps or c["steps"])
    record_at = sorted({int(s) for s in record_at})
    if record_at and is_lm(task):
        raise ValueError(f"config key '{P}.classification.horizon_at': accuracy along a run is recorded on "
                         f"classification tasks only, not '{task}'")
    if record_at and (record_at[0] < 1 or record_at[-1] > steps):
        raise ValueError(f"config key '{P}.classification.horizon_at': {record_at} must lie in 1..{steps} (the run's steps)")
    net = build_net(task, data, method, block, seed, inputs)
    make = make_optimizer(method, lr, block, damping)
    recorded = {}

    def after_step(_net, step):
        # AdaPreLoRA keeps the quantities of its last step for the closed-form check
        if check and step == steps - 2 and make.made is not None:
            make.made.record = True
        if step + 1 in record_at:   # `step` optimizer steps done before this one: step + 1 after it
            recorded[step + 1] = test_accuracy(_net, data)

    if torch.cuda.is_available():
        net = net.cuda()
    fit = train.finetune(net, data, make, steps=steps, batch_size=c["batch_size"], seed=seed, out=out,
                         # "peak": what the step's peak counts (a checkpoint of an older count is not reused)
                         key={**key, "method": method, "lr": lr, "task": task, "damping": damping,
                              "peak": "resident parameters and optimizer state, gradients, step tensors"},
                         schedule=o["schedule"],
                         warmup=o["warmup"], after_step=after_step)
    scores = train.evaluate(net, data)
    res = {"method": method, "lr": lr, "damping": damping, "losses": fit.losses, "state_bytes": fit.state_bytes, "peak_bytes": fit.peak_bytes,
           "peak_kind": fit.peak_kind, "seconds": fit.seconds}
    for k in ("accuracy", "exact_match", "bleu", "rouge_l"):
        if k in scores:
            v = float(scores[k])
            res[k] = v if math.isfinite(v) else None
    res["items"] = scores.get("correct") or scores.get("rouge_items")
    if record_at:
        if sorted(recorded) != record_at:
            raise RuntimeError(f"{out}: accuracy recorded after {sorted(recorded)} steps, not {record_at} (a finished "
                               "checkpoint was reused without its steps being run: remove the folder)")
        res["at"] = record_at
        res["accuracy_at"] = [recorded[s][0] for s in record_at]
        res["items_at"] = [recorded[s][1] for s in record_at]
    if check and make.made is not None and getattr(make.made, "last", None):
        picked = dict(sorted(make.made.last.items())[:check_layers])
        res["closed_form_check"] = closed_form_check(picked)
    elif check:
        res["closed_form_check"] = None   # a resumed run: the last step was not re-run
    if getattr(make.made, "capture", None) is not None:
        make.made.capture.remove()
    return res


# ---------------------------------------------------------------- the closed form against a generic solver
def generic_balanced_solution(delta_w, B, A, scaling, p_r, p_c, iters: int = 50000):
    """The H-weighted closest LoRA approximation found without the closed form: LSQR on the
    vectorised weighted problem min ||Wt (s (dB A + B dA) - delta_w)||_F (Wt = sqrt(p_r p_c^T); the
    two blocks of unknowns scaled by the norms of their coefficient factors, a diagonal right
    preconditioner), then the imbalance selection as a second least-squares problem over the
    gauge K: min_K ||Wt ((dB + B K) A - B (dA - K A))||_F (torch.linalg.lstsq). float64.
    LSQR stops at its tolerances or after `iters` iterations: with factors trained at the tuned
    rates (cond(B) about 360) 5000 iterations left its residual above the closed form's (a 6e-4
    relative image difference); 50 000 reach it (1e-11)."""
    from scipy.sparse.linalg import LinearOperator, lsqr

    D, B, A = (t.double().cpu().numpy() for t in (delta_w, B, A))
    w = np.sqrt(np.outer(p_r.double().cpu().numpy(), p_c.double().cpu().numpy()))
    m, n = D.shape
    r = B.shape[1]
    s = float(scaling)
    cb = 1.0 / max(np.linalg.norm(w.mean(0)[None, :] * A) * s, 1e-300)   # column scale of the dB block
    ca = 1.0 / max(np.linalg.norm(w.mean(1)[:, None] * B) * s, 1e-300)   # and of the dA block

    def mv(x):
        dB, dA = cb * x[: m * r].reshape(m, r), ca * x[m * r:].reshape(r, n)
        return (w * s * (dB @ A + B @ dA)).ravel()

    def rmv(y):
        Y = w * s * y.reshape(m, n)
        return np.concatenate([cb * (Y @ A.T).ravel(), ca * (B.T @ Y).ravel()])

    op = LinearOperator((m * n, (m + n) * r), matvec=mv, rmatvec=rmv, dtype=np.float64)
    sol = lsqr(op, (w * D).ravel(), atol=1e-15, btol=1e-15, conlim=1e16, iter_lim=iters)[0]
    dB0, dA0 = cb * sol[: m * r].reshape(m, r), ca * sol[m * r:].reshape(r, n)
    # gauge: columns of the design are vec(Wt * 2 B E_ij A) for the r x r unit matrices E_ij
    cols = []
    for i in range(r):
        for j in range(r):
            E = np.zeros((r, r))
            E[i, j] = 1.0
            cols.append((w * 2.0 * (B @ E @ A)).ravel())
    design = torch.from_numpy(np.stack(cols, 1))
    target = torch.from_numpy(-(w * (dB0 @ A - B @ dA0)).ravel())[:, None]
    K = torch.linalg.lstsq(design, target, driver="gelsd").solution.numpy().reshape(r, r)
    return dB0 + B @ K, dA0 - K @ A


def closed_form_check(last: dict) -> dict:
    """The closed form against the generic solution on the adapted layers of the last step: the
    relative difference of their weighted W-images (the projection, unique), how much the closed
    form's H-weighted imbalance exceeds the generic one (relative; <= 0 when it is as small), and
    the relative difference of the factor updates themselves."""
    from .method import balanced_projection

    worst_factor, worst_image, worst_imbalance, layers = 0.0, 0.0, 0.0, 0
    for q in last.values():
        D, B, A = (q[k].double() for k in ("delta_w", "B", "A"))
        p_r, p_c = q["p_r"].double(), q["p_c"].double()
        s = q["scaling"]
        dB, dA = balanced_projection(D, B, A, s, p_r, p_c, damping=0.0)
        gB, gA = (torch.from_numpy(x) for x in generic_balanced_solution(D, B, A, s, p_r, p_c))
        w = (p_r[:, None] * p_c[None, :]).sqrt()
        img, gimg = w * s * (dB @ A + B @ dA), w * s * (gB @ A + B @ gA)
        worst_image = max(worst_image, float((img - gimg).norm() / (gimg.norm() or 1.0)))
        imb, gimb = float((w * (dB @ A - B @ dA)).norm()), float((w * (gB @ A - B @ gA)).norm())
        worst_imbalance = max(worst_imbalance, (imb - gimb) / (gimb or 1.0))
        scale = math.sqrt(float(gB.pow(2).sum() + gA.pow(2).sum())) or 1.0
        worst_factor = max(worst_factor, math.sqrt(float((dB - gB).pow(2).sum() + (dA - gA).pow(2).sum())) / scale)
        layers += 1
    return {"layers": layers, "max_rel_image_diff": worst_image, "max_rel_imbalance_excess": worst_imbalance,
            "max_rel_factor_diff": worst_factor}
