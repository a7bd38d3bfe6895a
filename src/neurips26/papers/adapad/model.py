"""AdaPaD on a network: rank-1 deflation components on several Linear maps, trained in parallel.

Each adapted map holds components (a_k, b_k) (`DeflationLinear`), W = W0 + s sum_k b_k a_k^T
over its active components. Worker level l (one per component index, across every adapted map)
sees the network with, in each map, the predecessors' latest estimates frozen and its own
component trainable,

    W_m^(l) = W0_m + s sum_{k < l} sg(b_k a_k^T) + s b_l a_l^T                         (sg = stop-gradient)

(a map with fewer components uses all of them, frozen), and minimises its own loss L_l; so
component l of every map fits what components < l leave. The read-out head trains on the
deployed network (every active component, frozen). Each map also holds one candidate component
(index r_m): it trains privately at level r_m (advance learning) but is neither deployed nor part
of any successor's target until it is activated. The objective of one step is

    J = L(deployed; head) + sum_l L_l(components at index l),

and `rank growth` activates, every few steps, the candidate of highest importance (the first-order
gain |<dL_l / dW, s b a^T>| = |sum b * grad b|, smoothed by an EMA as AdaLoRA's sensitivity), in
the map that holds it, until a shared parameter budget is spent (`method.grow_choice`) or the best
candidate's importance falls below `min_ratio` times the mean current importance of the active
components (the importance stop).

`sequential` (the classical deflation baseline) uses the same maps with a fixed rank and one level
at a time: component l trains alone (predecessors frozen, successors absent) for steps / r steps.

The harness's loop (`lora_harness.train.finetune`) takes the mean cross-entropy of the network's
output; `AdaPaDNet.forward` in training returns z = sum over the passes of log_softmax, and
`AdaPaDNet.correction` (the mean log-sum-exp of z, given to finetune as `extra_loss` with a minus
sign) makes CE(z, y) - correction = sum over the passes of CE exactly.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import method

MODULES = ("query", "key", "value", "attn_out", "ffn_in", "ffn_out")


class DeflationLinear(nn.Module):
    """A frozen Linear plus rank-1 components; `level` picks the pass (see the module docstring):
    None = deployed (active components, trainable), "frozen" = deployed with every component
    frozen, an int l = worker l's pass."""

    def __init__(self, base: nn.Linear, max_rank: int, scaling: float = 1.0, seed: int = 0, active: int = 1,
                 candidate: bool = True):
        super().__init__()
        self.base, self.max_rank, self.scaling = base, int(max_rank), float(scaling)
        gen = torch.Generator().manual_seed(int(seed))
        bound = 1.0 / math.sqrt(base.in_features)  # peft's LoRA A init (Kaiming uniform, a = sqrt(5))
        self.a = nn.ParameterList([nn.Parameter((torch.rand(base.in_features, generator=gen) * 2 - 1) * bound)
                                   for _ in range(max_rank)])
        self.b = nn.ParameterList([nn.Parameter(torch.zeros(base.out_features)) for _ in range(max_rank)])
        # buffers, so a checkpoint (which keeps buffers and trainable tensors) restores the ranks
        self.register_buffer("n_active", torch.tensor(int(active)))
        self.register_buffer("has_candidate", torch.tensor(bool(candidate)))
        self.register_buffer("ema_gain", torch.tensor(0.0, dtype=torch.float64))
        # EMA of the gain of each active component (the importance stop's reference)
        self.register_buffer("ema_active", torch.zeros(int(max_rank), dtype=torch.float64))
        self.level: int | str | None = None

    @property
    def active(self) -> int:
        return int(self.n_active)

    @active.setter
    def active(self, value: int):
        self.n_active.fill_(int(value))

    @property
    def candidate(self) -> bool:
        return bool(self.has_candidate)

    @candidate.setter
    def candidate(self, value: bool):
        self.has_candidate.fill_(bool(value))

    @property
    def importance(self) -> float:
        return float(self.ema_gain)

    @importance.setter
    def importance(self, value: float):
        self.ema_gain.fill_(float(value))

    @property
    def created(self) -> int:
        """Active components plus the candidate (if any)."""
        return min(self.max_rank, self.active + (1 if self.candidate else 0))

    def _sum(self, x, ks, frozen: bool):
        if not ks:
            return 0.0
        A = torch.stack([self.a[k] for k in ks])  # (k, n_in)
        B = torch.stack([self.b[k] for k in ks], 1)  # (m_out, k)
        if frozen:
            A, B = A.detach(), B.detach()
        return self.scaling * (x @ A.t()) @ B.t()

    def forward(self, x):
        out = self.base(x)
        level = self.level
        if level is None or level == "frozen":
            return out + self._sum(x, list(range(self.active)), level == "frozen")
        below = list(range(min(level, self.active)))
        out = out + self._sum(x, below, True)
        if level < self.created:
            out = out + self._sum(x, [level], False)
        return out

    def gain(self, k: int) -> float:
        """|sum b_k * grad b_k| = |<dL/dW, s b_k a_k^T>| of component k (0 without a gradient)."""
        g = self.b[k].grad
        return 0.0 if g is None else abs(float((self.b[k].detach() * g).sum()))

    def product(self, k: int) -> torch.Tensor:
        return self.scaling * torch.outer(self.b[k].detach(), self.a[k].detach())


def attach(net: nn.Module, modules, max_rank: int, seed: int, active: int, candidate: bool) -> dict:
    """Replace each named Linear of `net` by a DeflationLinear; freeze everything but the
    components and the head. Returns {name: DeflationLinear}."""
    maps = {}
    for i, name in enumerate(modules):
        base = getattr(net, name)
        if not isinstance(base, nn.Linear):
            raise ValueError(f"config key 'adapad.finetune.modules': '{name}' is not a Linear of the network")
        maps[name] = DeflationLinear(base, max_rank, 1.0, seed=1000 * int(seed) + i, active=active, candidate=candidate)
        setattr(net, name, maps[name])
    for n, p in net.named_parameters():
        p.requires_grad_(n.startswith("head.") or ".a." in n or ".b." in n)
    return maps


class AdaPaDNet(nn.Module):
    """The classifier with deflation maps; training forward = every worker's pass (see above)."""

    def __init__(self, net: nn.Module, maps: dict, mode: str = "adapad"):
        super().__init__()
        self.net, self.mode = net, mode
        self.maps = maps  # plain dict: the maps are submodules of net already
        self.stage = 0    # sequential: the component being trained
        self._correction = None

    def _set(self, level):
        for m in self.maps.values():
            m.level = level

    def _head_frozen(self, feats):
        head = self.net.head
        return F.linear(feats, head.weight.detach(), head.bias.detach())

    def forward(self, h, mask):
        if not self.training:
            self._set(None)
            return self.net(h, mask)
        if self.mode == "sequential":
            self._set(self.stage)
            self._correction = None
            return self.net(h, mask)
        self._set("frozen")
        passes = [F.log_softmax(self.net(h, mask), -1)]
        for level in range(max(m.created for m in self.maps.values())):
            self._set(level)
            passes.append(F.log_softmax(self._head_frozen(self.net.features(h, mask)), -1))
        self._set(None)
        z = torch.stack(passes).sum(0)
        self._correction = torch.logsumexp(z, -1).mean()
        return z

    def correction(self):
        """-mean logsumexp(z): with the harness's CE(z, y) this gives the sum of the passes' CEs."""
        if self._correction is None:
            return torch.zeros(())
        return -self._correction

    def ranks(self) -> dict:
        return {k: m.active for k, m in self.maps.items()}


class RankGrowth:
    """`after_step` hook of AdaPaD: EMA of the gain of each candidate and of each active component
    every step; at growth steps (every `every` steps from `start` to `end`) the best candidate that
    fits the budget is activated (method.grow_choice; `cost` per rank of each map, e.g. n_in + n_out
    for a parameter budget) and its map gets a fresh candidate. Importance stop: the candidate is
    not activated when its importance is below `min_ratio` times the mean importance of the active
    components at that step (their current gains, so the reference moves with training)."""

    def __init__(self, net: AdaPaDNet, budget: int, max_rank: int, start: int, end: int, every: int,
                 beta: float = 0.85, min_ratio: float = 0.0, cost: dict | None = None):
        self.net, self.budget, self.max_rank, self.cost = net, int(budget), int(max_rank), cost
        self.start, self.end, self.every, self.beta, self.min_ratio = int(start), int(end), max(1, int(every)), beta, min_ratio
        self.events: list[dict] = []
        self.stops: list[dict] = []

    def active_gain(self) -> float:
        """Mean EMA gain over the active components of every map (0 when there are none)."""
        gains = [float(m.ema_active[k]) for m in self.net.maps.values() for k in range(m.active)]
        return sum(gains) / len(gains) if gains else 0.0

    def __call__(self, _net, step: int):
        maps = self.net.maps
        for m in maps.values():
            if m.created > m.active:
                m.importance = self.beta * m.importance + (1 - self.beta) * m.gain(m.active)
            for k in range(m.active):
                m.ema_active[k] = self.beta * float(m.ema_active[k]) + (1 - self.beta) * m.gain(k)
        if step < self.start or step > self.end or (step - self.start) % self.every:
            return
        scores = {k: (m.importance if m.created > m.active else -1.0) for k, m in maps.items()}
        reference = self.active_gain()
        floor = self.min_ratio * reference
        pick = method.grow_choice(self.net.ranks(), scores, self.budget, self.max_rank, cost=self.cost,
                                  min_score=floor)
        if pick is None or scores[pick] < 0:
            if method.grow_choice(self.net.ranks(), scores, self.budget, self.max_rank, cost=self.cost) is not None:
                self.stops.append({"step": int(step), "best": float(max(scores.values())), "reference": reference})
            return
        m = maps[pick]
        m.active += 1
        m.ema_active[m.active - 1] = m.importance  # its gain so far, as a candidate
        m.candidate = m.active < m.max_rank
        m.importance = 0.0
        self.events.append({"step": int(step), "module": pick, "rank": m.active, "score": float(scores[pick]),
                            "reference": reference})


def sequential_stage_hook(net: AdaPaDNet, rank: int, steps: int):
    """`after_step` of sequential deflation: stage l = step // (steps / r)."""
    stage_len = max(1, steps // rank)

    def hook(_net, step):
        net.stage = min(rank - 1, (step + 1) // stage_len)
    return hook


# ---------------------------------------------------------------- AdaLoRA (peft)

def adalora(net: nn.Module, modules, init_r: int, target_r: int, steps: int, tinit: int, tfinal: int, delta_t: int,
            orth_reg_weight: float, seed: int, beta1: float = 0.85, beta2: float = 0.85):
    """peft's AdaLoraModel on `net` (SVD-form P diag(E) Q per map, init rank init_r, the budget
    schedule of RankAllocator down to target_r x maps ranks), head trainable. Returns the model,
    its after_step (update_and_allocate) and extra_loss (peft's orthogonal regulariser, which its
    forward adds only to outputs that carry a .loss)."""
    from peft import AdaLoraConfig
    from peft.tuners.adalora import AdaLoraModel

    cfg = AdaLoraConfig(init_r=int(init_r), target_r=int(target_r), lora_alpha=float(init_r), target_modules=list(modules),
                        tinit=int(tinit), tfinal=int(tfinal), deltaT=int(delta_t), total_step=int(steps), beta1=beta1,
                        beta2=beta2, orth_reg_weight=float(orth_reg_weight), lora_dropout=0.0)
    state = torch.get_rng_state()
    torch.manual_seed(int(seed))
    try:
        model = AdaLoraModel(net, cfg, "default")
    finally:
        torch.set_rng_state(state)
    for p in net.head.parameters():
        p.requires_grad_(True)

    def after_step(m, step):
        m.update_and_allocate(step)

    def extra_loss(m):
        reg, count = 0.0, 0
        for n, p in m.model.named_parameters():
            if ("lora_A" in n or "lora_B" in n) and "default" in n:
                cov = p @ p.T if "lora_A" in n else p.T @ p
                reg = reg + torch.norm(cov - torch.eye(cov.shape[0], dtype=cov.dtype), p="fro")
                count += 1
        return orth_reg_weight * reg / max(count, 1)
    return model, after_step, extra_loss


def adalora_ranks(model) -> dict:
    """Kept triplets per map: the nonzero entries of lora_E (masked entries are exactly 0)."""
    out = {}
    for n, p in model.model.named_parameters():
        if "lora_E" in n:
            out[n.split(".lora_E")[0]] = int((p.detach() != 0).sum())
    return out


def module_shapes(net: nn.Module, modules) -> dict:
    """(n_in, n_out) of each named Linear (the base of an adapted map)."""
    out = {}
    for name in modules:
        m = getattr(net, name)
        base = getattr(m, "base_layer", getattr(m, "base", m))
        out[name] = (base.in_features, base.out_features)
    return out
