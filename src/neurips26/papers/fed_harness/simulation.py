"""The in-process federation: N clients train peft LoRA adapters locally, a server aggregates.

One federation = `rounds` rounds. In round t every client starts from what the server
dispatched (round 0: B = 0 and one shared A drawn with peft's initialisation, client i taking
the rank-r_i prefix), takes `local_steps` AdamW steps on minibatches of its own data (fresh
optimizer state each round, the same steps, batch size and learning rate for every
aggregator), and sends its factors (B_i, A_i) per LoRA module; the aggregator returns a
`Dispatch` per module (see `aggregators`). The classifier head is averaged with the data
weights p_i (FedAvg) under every aggregator.

All clients train inside one Lightning fit through `neurips26.core.trainer` (their parameters
are disjoint, so the summed loss gives each client exactly its own gradient and its own AdamW
state); the server round runs in `on_train_batch_end` after every `local_steps` steps. Every
draw is seeded (minibatch s of client i from Generator([seed, s, i])), so a rerun reproduces
the run bit for bit. The frozen weights are shared by the clients (a `base_delta` is applied once).

The same engine runs causal-LM clients (`generative`): the data is a `generative.LMSet`, the
targets are full dotted module names (`q_proj`/`v_proj` of every decoder layer, looked up with
`get_submodule`), every client is a copy of the base model that shares its frozen parameters
(one tensor each; a `base_delta` is applied once), the loss is the cross-entropy on the target +
eos tokens, there is no classifier head to average, and the evaluation is per-class
teacher-forced exact match (equal to greedy-decoding exact match) and token accuracy.

One client's round outside Lightning is `local_round` (the Flower engine, `flower`): the same
`minibatch`, `client_loss` and `drift_penalty` as the training step here, so both engines give
the same factors (to float32 rounding of the matmul kernels; bit for bit on some CPUs; tested).

Per round and module the engine records the conflict between the clients' round updates
dW_i = B_i A_i - B_i^0 A_i^0 (`subspace.pairwise_conflict`, column and row spaces).
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from . import aggregators as agg_mod
from . import subspace
from . import generative
from .tasks import Encoded


@dataclass
class FedSettings:
    rounds: int
    local_steps: int
    batch_size: int
    lr: float
    weight_decay: float = 0.0
    targets: tuple = ("query", "value")
    seed: int = 0
    conflict_rank: int | None = None   # k of the subspace metric (default: the largest client rank)


@dataclass
class FedResult:
    per_class_acc: np.ndarray                 # (clients, classes) test accuracy (LM: exact match) of each client's final model
    rounds: list[dict] = field(default_factory=list)   # per round and module: conflict scores, mean loss
    B: dict = field(default_factory=dict)     # module -> list of the final dispatched B_i (float64)
    A: dict = field(default_factory=dict)     # module -> list of A_i
    base_delta: dict = field(default_factory=dict)  # module -> accumulated change of the frozen weight
    per_class_token_acc: np.ndarray | None = None     # LM clients: (clients, classes) mean token accuracy


def _lora(module, adapter="default"):
    return module.lora_B[adapter].weight, module.lora_A[adapter].weight


def _module(net: nn.Module, name: str) -> nn.Module:
    """The module `name` of `net`: a full dotted path (LM clients) or a top-level name."""
    return net.get_submodule(name) if "." in name else getattr(net, name)


def has_head(net: nn.Module) -> bool:
    """A classifier with a head to FedAvg (the LM clients have none)."""
    return isinstance(getattr(net, "head", None), nn.Linear)


def build_clients(base: nn.Module, ranks: list[int], targets, seed: int) -> list[nn.Module]:
    """One model per client with a peft LoRA adapter of rank r_i on `targets` (lora_alpha = r_i,
    so the update is exactly B_i A_i; no dropout; B = 0 and the rank-r_i prefix of one shared A).
    A classifier shares `base`'s frozen modules and gets its own head (initialised from the
    seed, the same for every client); a causal LM (no head) is copied per client sharing the
    base parameters, with `targets` as full dotted module names."""
    from peft import LoraConfig, inject_adapter_in_model

    head = has_head(base)
    gen = torch.Generator().manual_seed(int(seed))
    if head:
        bound = 1.0 / base.head.in_features ** 0.5
        head_w = (torch.rand(base.head.weight.shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        head_b = torch.zeros(base.head.out_features, dtype=torch.float64)
    r_max = max(ranks)
    A0 = {t: agg_mod.lora_init_A(r_max, _module(base, t).in_features, gen) for t in targets}
    nets = []
    for r in ranks:
        if head:
            net = type(base)(shared=base)
        else:
            net = copy.deepcopy(base, memo={id(p): p for p in base.parameters()})  # shared frozen weights
        inject_adapter_in_model(LoraConfig(r=r, lora_alpha=r, lora_dropout=0.0, target_modules=list(targets)), net)
        with torch.no_grad():
            if head:
                net.head.weight.copy_(head_w)
                net.head.bias.copy_(head_b)
            for t in targets:
                Bw, Aw = _lora(_module(net, t))
                Bw.zero_()
                Aw.copy_(A0[t][:r])
        nets.append(net)
    return nets


def minibatch(n: int, batch: int, seed: int, step: int, client: int) -> np.ndarray:
    """Positions (sorted) in client `client`'s n examples of its minibatch at global step
    `step`, drawn from Generator([seed, step, client]) (both engines)."""
    rng = np.random.default_rng([seed, step, client])
    return np.sort(rng.choice(n, size=min(batch, n), replace=False))


def data_size(data) -> int:
    return len(data) if isinstance(data, generative.LMSet) else len(data.labels)


def client_loss(net: nn.Module, data: Encoded, idx, device=None) -> torch.Tensor:
    """Cross-entropy of `net` on the rows `idx` of `data` (both engines; an `LMSet`: on the
    target + eos tokens)."""
    if isinstance(data, generative.LMSet):
        return generative.loss(net, data, idx, device)
    idx = torch.as_tensor(idx).cpu()
    out = net(data.hidden[idx].to(device), data.mask[idx].to(device))
    return F.cross_entropy(out, data.labels[idx].to(device))


def drift_penalty(net: nn.Module, layers, states: dict, mu: float):
    """(mu/2) sum_layers ||(I - U U^T) B||_F^2 with U = states[layer]["reference_basis"] (0.0
    without mu or without a basis yet); the `drift_mu` client option (both engines)."""
    if not mu:
        return 0.0
    total = 0.0
    for t in layers:
        U = states[t].get("reference_basis")
        if U is None:
            continue
        B = _lora(_module(net, t))[0]
        U = U.to(B.device, B.dtype)
        total = total + 0.5 * mu * (B - U @ (U.T @ B)).pow(2).sum()
    return total


def trainable(net: nn.Module, layers, opts: dict) -> list:
    """The parameters a client trains: its head and LoRA factors (A frozen under `freeze_A`)."""
    if opts.get("freeze_A"):
        for t in layers:
            _lora(_module(net, t))[1].requires_grad_(False)
    return [p for p in net.parameters() if p.requires_grad]


def local_round(net: nn.Module, data: Encoded, client: int, rnd: int, settings: FedSettings, opts: dict,
                states: dict, device=None) -> tuple[float, int]:
    """One round of local training of one client outside Lightning (the Flower engine):
    `local_steps` AdamW steps (a fresh optimizer) on the minibatches of global steps
    rnd * local_steps ... of `data` (this client's own examples, in its split's order), the
    loss `client_loss` + `drift_penalty` as in the in-process engine's training step. Returns
    (the sum of the cross-entropy losses, the number of steps). `net` lives on `device`."""
    s = settings  # module modes stay as built (the Lightning fit leaves them too)
    opt = torch.optim.AdamW(trainable(net, s.targets, opts), lr=s.lr, weight_decay=s.weight_decay)
    loss_sum = 0.0
    mu = float(opts.get("drift_mu", 0.0))
    with torch.enable_grad():
        for step in range(rnd * s.local_steps, (rnd + 1) * s.local_steps):
            idx = minibatch(data_size(data), s.batch_size, s.seed, step, client)
            loss = client_loss(net, data, idx, device)
            loss_sum += float(loss.detach())
            total = 0.0 + loss + drift_penalty(net, s.targets, states, mu)
            opt.zero_grad(set_to_none=True)
            total.backward()
            opt.step()
    return loss_sum, s.local_steps


class _Steps(torch.utils.data.Dataset):
    """Step s -> one minibatch of indices per client, drawn from Generator([seed, s, i])."""

    def __init__(self, parts, steps: int, batch: int, seed: int):
        self.parts, self.steps, self.batch, self.seed = parts, steps, batch, seed

    def __len__(self):
        return self.steps

    def __getitem__(self, s):
        return [torch.as_tensor(p[minibatch(len(p), self.batch, self.seed, s, i)]) for i, p in enumerate(self.parts)]


class Engine:
    """The server and the clients' shared bookkeeping of one federation."""

    def __init__(self, nets, train: Encoded, parts, ranks, aggregator, settings: FedSettings):
        self.nets, self.train, self.ranks, self.agg, self.s = nets, train, list(ranks), aggregator, settings
        self.sizes = [len(p) for p in parts]
        self.p = agg_mod.weights(self.sizes)
        self.opts = agg_mod.client_options(aggregator)
        self.layers = list(settings.targets)
        self.states = {}
        for j, t in enumerate(self.layers):
            self.states[t] = {"generator": torch.Generator().manual_seed(int(settings.seed) * 1000 + 17 + j)}
        self.start = {t: [self._factors(i, t) for i in range(len(nets))] for t in self.layers}
        self.base_delta = {t: None for t in self.layers}
        self.records: list[dict] = []
        self.loss_sum, self.loss_n = 0.0, 0
        for net in nets:
            trainable(net, self.layers, self.opts)  # freeze_A: A stops requiring grad

    def _factors(self, i, t):
        B, A = _lora(_module(self.nets[i], t))
        return B.detach().cpu().double().clone(), A.detach().cpu().double().clone()

    # ---- client side
    def penalty(self, i):
        return drift_penalty(self.nets[i], self.layers, self.states, float(self.opts.get("drift_mu", 0.0)))

    # ---- server side
    @torch.no_grad()
    def server_round(self, rnd: int):
        n = len(self.nets)
        k = self.s.conflict_rank or max(self.ranks)
        mean_loss = self.loss_sum / max(1, self.loss_n)
        self.loss_sum, self.loss_n = 0.0, 0
        for t in self.layers:
            B = [self._factors(i, t)[0] for i in range(n)]
            A = [self._factors(i, t)[1] for i in range(n)]
            updates = [(torch.cat([b, -b0], 1), torch.cat([a, a0], 0)) for b, a, (b0, a0) in zip(B, A, self.start[t])]
            rec = {"round": rnd, "layer": t, "loss": mean_loss,
                   **subspace.pairwise_conflict(updates, k, self.p)}
            self.records.append(rec)
            state = self.states[t]
            state["round"], state["layer"] = rnd, t
            d = self.agg(B, A, list(self.sizes), list(self.ranks), state)
            if d.base_delta is not None:  # the frozen modules are shared: apply once
                base = _module(self.nets[0], t).base_layer.weight
                base.add_(d.base_delta.to(base.device, base.dtype))
                prev = self.base_delta[t]
                self.base_delta[t] = d.base_delta.double().clone() if prev is None else prev + d.base_delta.double()
            for i in range(n):
                Bw, Aw = _lora(_module(self.nets[i], t))
                if tuple(d.B[i].shape) != tuple(Bw.shape) or tuple(d.A[i].shape) != tuple(Aw.shape):
                    raise ValueError(f"aggregator '{self.agg.name}' dispatched B {tuple(d.B[i].shape)}, A "
                                     f"{tuple(d.A[i].shape)} to client {i} of rank {self.ranks[i]} in module {t}")
                Bw.copy_(d.B[i].to(Bw.dtype))
                Aw.copy_(d.A[i].to(Aw.dtype))
            self.start[t] = [self._factors(i, t) for i in range(n)]
        # FedAvg of the classifier heads (none for LM clients)
        for name in (("weight", "bias") if has_head(self.nets[0]) else ()):
            avg = agg_mod.weighted_sum([getattr(net.head, name).detach().cpu().double() for net in self.nets], self.p)
            for net in self.nets:
                getattr(net.head, name).copy_(avg.to(torch.float32))  # copy_ crosses devices
        print(f"fed_harness: {self.agg.name} round {rnd + 1}/{self.s.rounds}: mean local loss {mean_loss:.4f}, "
              f"column conflict {np.mean([r['column'] for r in self.records[-len(self.layers):]]):.3f}", flush=True)

    # ---- checkpoint contents (tensors and plain values only: weights-only loading)
    def snapshot(self) -> dict:
        states = {t: {k: (v.get_state() if isinstance(v, torch.Generator) else v) for k, v in s.items()}
                  for t, s in self.states.items()}
        return {"states": states, "start": self.start, "base_delta": self.base_delta, "records": self.records}

    def restore(self, snap: dict) -> None:
        for t, s in snap["states"].items():
            for k, v in s.items():
                if k == "generator":
                    self.states[t]["generator"].set_state(v)
                else:
                    self.states[t][k] = v
        self.start, self.base_delta, self.records = snap["start"], snap["base_delta"], list(snap["records"])


def _module_class():
    import lightning as L

    class FederatedModule(L.LightningModule):
        def __init__(self, engine: Engine):
            super().__init__()
            self.clients = nn.ModuleList(engine.nets)
            self.engine = engine
            self.lm = not has_head(engine.nets[0])
            if self.lm:  # the checkpoint holds the adapters only (the frozen base is rebuilt by the caller)
                self.strict_loading = False

        def training_step(self, batch, _):
            e, data = self.engine, self.engine.train
            total = 0.0
            dev = self.device
            for i, idx in enumerate(batch):
                loss = client_loss(self.clients[i], data, idx, dev)
                e.loss_sum += float(loss.detach()) * e.p[i]
                total = total + loss + e.penalty(i)
            e.loss_n += 1
            self.log("train/loss", total / len(batch), on_step=True, batch_size=len(batch[0]))
            return total

        def on_train_batch_end(self, outputs, batch, batch_idx):
            step = self.trainer.global_step
            if step % self.engine.s.local_steps == 0:
                self.engine.server_round(step // self.engine.s.local_steps - 1)
                for opt in self.trainer.optimizers:  # a fresh local optimizer every round
                    opt.state.clear()

        def configure_optimizers(self):
            params = [p for p in self.clients.parameters() if p.requires_grad]
            return torch.optim.AdamW(params, lr=self.engine.s.lr, weight_decay=self.engine.s.weight_decay)

        def on_save_checkpoint(self, checkpoint):
            checkpoint["federation"] = self.engine.snapshot()
            if self.lm:
                checkpoint["state_dict"] = {k: v for k, v in checkpoint["state_dict"].items() if "lora_" in k}

        def on_load_checkpoint(self, checkpoint):
            self.engine.restore(checkpoint["federation"])
            if self.lm:  # the shared base weights take the accumulated base deltas again
                with torch.no_grad():
                    for t, delta in self.engine.base_delta.items():
                        if delta is not None:
                            w = _module(self.engine.nets[0], t).base_layer.weight
                            w.add_(delta.to(w.device, w.dtype))

    return FederatedModule


@torch.no_grad()
def per_class_accuracy(net, data: Encoded, classes: int, batch: int = 512) -> np.ndarray:
    net.eval()
    pred = torch.cat([net(data.hidden[i:i + batch], data.mask[i:i + batch]).argmax(1)
                      for i in range(0, len(data.labels), batch)])
    y = data.labels
    out = np.zeros(classes)
    for c in range(classes):
        sel = y == c
        out[c] = float((pred[sel] == c).float().mean()) if sel.any() else float("nan")
    return out


def run_federation(base: nn.Module, train: Encoded, test: Encoded, parts, ranks, aggregator,
                   settings: FedSettings, out: Path, key: dict, classes: int) -> FedResult:
    """Run one federation through the project's trainer; `key` (JSON-able) names the run for
    its checkpoint (the aggregator's name, split and settings are added)."""
    from neurips26.core.trainer import fit, make_trainer

    if len(parts) != len(ranks):
        raise ValueError(f"{len(parts)} client splits but {len(ranks)} ranks")
    base = copy.deepcopy(base)  # the frozen weights change under base_delta aggregators (shared by LM clients)
    nets = build_clients(base, ranks, settings.targets, settings.seed)
    engine = Engine(nets, train, parts, ranks, aggregator, settings)
    steps = settings.rounds * settings.local_steps
    params = {"key": key, "aggregator": aggregator.name, "agg_settings": {k: v for k, v in vars(aggregator).items()
                                                                          if isinstance(v, (int, float, str, bool))},
              "ranks": list(ranks), "sizes": engine.sizes, "settings": asdict(settings)}
    trainer, resume = make_trainer(out, params, steps, checkpoint_every=steps, log_every_n_steps=max(1, settings.local_steps))
    loader = torch.utils.data.DataLoader(_Steps(parts, steps, settings.batch_size, settings.seed), batch_size=None,
                                         shuffle=False)
    module = _module_class()(engine)
    fit(trainer, module, loader, resume)
    if isinstance(test, generative.LMSet):  # evaluated where the model trains (a 7B on its GPU)
        dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        module.to(dev)
        scores = [generative.evaluate(net, test, device=dev) for net in nets]
        module.cpu()
        acc = np.stack([generative.per_class(e, test.label, classes) for e, _ in scores])
        res = FedResult(acc, engine.records,
                        per_class_token_acc=np.stack([generative.per_class(t, test.label, classes) for _, t in scores]))
    else:
        module.cpu()
        acc = np.stack([per_class_accuracy(net, test, classes) for net in nets])
        res = FedResult(acc, engine.records)
    for t in engine.layers:
        res.B[t] = [engine._factors(i, t)[0] for i in range(len(nets))]
        res.A[t] = [engine._factors(i, t)[1] for i in range(len(nets))]
        res.base_delta[t] = engine.base_delta[t]
    return res
