"""ApexPhys: anchor physiological invariance in a shared backbone, expand plasticity in branches.

Backbone Consistency Representation Preservation (BCRP). After each domain, the diagonal
Fisher information F of the backbone under the physiological objective (negative Pearson
to the contact PPG) is accumulated; the fraction rho of parameters with the largest
accumulated Fisher are the ones that carry physiological consistency, and only they are
anchored:  L_BCRP = lambda/2 * sum_i M_i F_i (theta_i - theta*_i)^2,  M_i = 1[F_i in top rho].
The rest of the backbone stays free to adapt; the backbone's batch-norm statistics, part of the
representation every earlier domain relies on, are frozen after the first domain. The freezing
is this package's addition (the abstract names only the Fisher information) and has its own
switch, `bn_freeze` (default: on with BCRP), so that the anchor and the freezing are ablated
apart (`bcrp: false` keeps the freezing unless `bn_freeze: false` is also set).

Hierarchical Expansion Strategy (HES). Before domain t, its training chunks pass through a
frozen probe, a copy of the backbone taken after the first domain (the same network for every
domain, so that the statistics of domain t and of every earlier domain are measured alike: a
backbone that has just been trained on domain t-1 would make t-1 look closest), and every
layer l gets a discrepancy to the closest earlier domain,
    D_l = min_k mean_c [KL(N_t || N_k) + KL(N_k || N_t)],  N = N(mu_{l,c}, s2_{l,c}),
the symmetric KL between per-channel Gaussians of the activations. Layers with
D_l >= tau * max_l D_l (and D_l above a floor) get a new residual branch for domain t. A clip
is later routed to the branches of the domain whose stored statistics are closest to its
own (sum over layers of log(1 + D_l)), measured in a frozen copy of the backbone taken after
the first domain, the same probe.

Prior-Guided Pathfinding (PGP). A new branch starts from the parameters of the most similar
earlier domain's branch at that layer, k* = argmin_k sum_l D_l(t, k) (parameter
inheritance, with D from the same probe); where k* has none, it starts at zero (the output is
unchanged). `inherited_branches` counts the branches that were actually copied.
"""

from __future__ import annotations

import copy

import torch

from .baselines import QuadraticAnchor, chunk_fisher, normalise
from .model import LAYERS, PhysNet


@torch.no_grad()
def layer_statistics(model: PhysNet, x: torch.Tensor, batch: int = 8) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Per-layer, per-channel mean and variance of the backbone activations over (N, T, H, W)."""
    was_training = model.training
    model.eval()
    sums, sqs, counts = {}, {}, {}
    for i in range(0, len(x), batch):
        record = {}
        model(x[i:i + batch], path=None, record=record)
        for name, h in record.items():
            h = h.transpose(0, 1).reshape(h.shape[1], -1).double()
            sums[name] = sums.get(name, 0) + h.sum(1)
            sqs[name] = sqs.get(name, 0) + (h ** 2).sum(1)
            counts[name] = counts.get(name, 0) + h.shape[1]
    model.train(was_training)
    stats = {}
    for name in LAYERS:
        mean = sums[name] / counts[name]
        var = (sqs[name] / counts[name] - mean ** 2).clamp_min(1e-6)
        stats[name] = (mean, var)
    return stats


def symmetric_kl(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor]) -> float:
    """Mean over channels of KL(a||b) + KL(b||a) for per-channel Gaussians."""
    (ma, va), (mb, vb) = a, b
    skl = 0.5 * (va / vb + vb / va) - 1.0 + 0.5 * (ma - mb) ** 2 * (1.0 / va + 1.0 / vb)
    return float(skl.mean())


def discrepancies(stats: dict, earlier: list[dict]) -> list[dict[str, float]]:
    """D_l(new, k) for every earlier domain k."""
    return [{name: symmetric_kl(stats[name], old[name]) for name in LAYERS} for old in earlier]


class ApexPhys(QuadraticAnchor):
    name = "apexphys"

    def __init__(self, settings, seed):
        super().__init__(settings, seed)
        self.use_bcrp = bool(settings.get("bcrp", True))
        self.use_hes = bool(settings.get("hes", True))
        self.use_pgp = bool(settings.get("pgp", True))
        # batch-norm freezing: its own switch; a config without it freezes exactly when BCRP is on
        self.use_bn_freeze = bool(settings.get("bn_freeze", self.use_bcrp))
        self.strength = float(settings["bcrp_lambda"]) if self.use_bcrp else 0.0
        self.top_fraction = float(settings["bcrp_top_fraction"])
        self.tau = float(settings["hes_tau"])
        self.floor = float(settings["hes_min_discrepancy"])
        self.fisher_sum: list[torch.Tensor] | None = None
        self.signatures: list[dict] = []       # per finished domain, in the frozen probe (HES, PGP, routing)
        self.probe: PhysNet | None = None
        self.expanded: dict[int, list[str]] = {}
        self.inherited_from: dict[int, int | None] = {}
        self.discrepancy_log: dict[int, dict[str, float]] = {}
        self.inherited_branches = 0
        self.current = 0

    # ---- HES + PGP
    def before_task(self, model, task, domains):
        self.current = task
        if task == 0 or not self.use_hes:
            self.expanded[task] = []
            return
        stats = layer_statistics(self.probe, domains[task]["train_x"])
        per_domain = discrepancies(stats, self.signatures)
        closest = {name: min(d[name] for d in per_domain) for name in LAYERS}
        top = max(closest.values())
        layers = [name for name in LAYERS if closest[name] >= self.tau * top and closest[name] >= self.floor]
        prior = min(range(len(per_domain)), key=lambda k: sum(per_domain[k].values()))
        source = prior if self.use_pgp else None
        g = torch.Generator().manual_seed(20_000 + 97 * self.seed + task)
        for name in layers:
            inherits = source is not None and model.key(source, name) in model.branches
            branch = model.add_branch(task, name, init_from=source)
            self.inherited_branches += int(inherits)
            if not inherits:
                with torch.no_grad():  # seeded initialisation of the down projection
                    fan_in = branch.down.weight[0].numel()
                    branch.down.weight.copy_(torch.randn(branch.down.weight.shape, generator=g) / fan_in ** 0.5)
                    branch.down.bias.zero_()
        self.expanded[task] = layers
        self.inherited_from[task] = prior if self.use_pgp else None
        self.discrepancy_log[task] = closest

    def freeze_norm(self, task):
        return self.use_bn_freeze and task > 0

    def train_path(self, task):
        return task if self.use_hes else None

    # ---- BCRP
    def after_task(self, model, task, domains):
        d = domains[task]
        if self.use_hes:
            if self.probe is None:
                self.probe = copy.deepcopy(model).eval()
                self.probe.branches = torch.nn.ModuleDict()
            self.signatures.append(layer_statistics(self.probe, d["train_x"]))
        if not self.use_bcrp:
            return
        fisher = normalise(chunk_fisher(model, d["train_x"], d["train_y"], path=self.train_path(task)))
        self.fisher_sum = fisher if self.fisher_sum is None else [a + f for a, f in zip(self.fisher_sum, fisher)]
        flat = torch.cat([f.flatten() for f in self.fisher_sum])
        k = max(1, int(round(self.top_fraction * flat.numel())))
        threshold = torch.topk(flat, k).values.min()
        self.weights = [f * (f >= threshold) for f in self.fisher_sum]
        self.anchor = [p.detach().clone() for p in model.backbone_parameters()]

    # ---- routing at test time
    def eval_path(self, model, x_clip, seen):
        if not self.use_hes or seen == 0:
            return None
        stats = layer_statistics(self.probe, x_clip)
        per_domain = discrepancies(stats, self.signatures[:seen + 1])
        return min(range(len(per_domain)), key=lambda k: sum(torch.log1p(torch.tensor(list(per_domain[k].values()))).tolist()))

    def info(self):
        return {"expanded_layers": {str(k): v for k, v in self.expanded.items()},
                "inherited_from": {str(k): v for k, v in self.inherited_from.items()},
                "layer_discrepancy": {str(k): v for k, v in self.discrepancy_log.items()},
                "inherited_branches": self.inherited_branches}
