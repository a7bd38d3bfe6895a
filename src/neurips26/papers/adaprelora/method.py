"""AdaPreLoRA: Adafactor's factored preconditioner on W, mapped to the LoRA factors in closed form.

With W = W0 + s B A (B: m x r, A: r x n) and G = dL/dW, the factor gradients are s G A^T and
s B^T G, so the chain rule cannot be inverted: many factor updates (dB, dA) give the same
first-order change s (dB A + B dA) of W. AdaPreLoRA (i) preconditions in W with Adafactor's
factored second moment, V_t = R_t C_t^T / mean(R_t) (R_t, C_t: EMAs of the row and column means
of G^2 + eps1), so sqrt(V_t) = p_r p_c^T with p_r = sqrt(R_t / mean R_t), p_c = sqrt(C_t), and the
W-direction is Adafactor's update D_t = G / sqrt(V_t), RMS-clipped; (ii) maps Delta = -lr D_t back
by the closest LoRA approximation in the H-norm ||X||_H^2 = sum_ij p_r,i p_c,j X_ij^2 =
||D_r^{1/2} X D_c^{1/2}||_F^2 (D_r = diag p_r, D_c = diag p_c), and (iii) picks, among the
solutions (the gauge family (dB + B K, dA - K A)), the one with the least H-weighted imbalance
||dB A - B dA||_H between the two factor contributions. In tilde variables B~ = D_r^{1/2} B,
A~ = A D_c^{1/2}, Z = D_r^{1/2} Delta D_c^{1/2} / s the problem is an unweighted Frobenius one, and

    dB~ = (I - P_B/2) Z A~^+,   dA~ = B~^+ Z (I - P_A/2),
    P_B = B~ B~^+, P_A = A~^+ A~,  B~^+ = (B~^T B~)^{-1} B~^T,  A~^+ = A~^T (A~ A~^T)^{-1},

then dB = D_r^{-1/2} dB~, dA = dA~ D_c^{-1/2}. Only R (m), C (n) and, with beta1, a momentum of
the factor updates (m r + r n) are kept between steps: O((m + n) r) state. G itself is
captured once per step by hooks on each adapted Linear (`GradientCapture`), transient.
"""

from __future__ import annotations

import math

import torch
from torch import nn


# ---------------------------------------------------------------- the closed form
def balanced_projection(delta_w: torch.Tensor, B: torch.Tensor, A: torch.Tensor, scaling: float,
                        p_r: torch.Tensor | None = None, p_c: torch.Tensor | None = None,
                        damping: float = 1e-8) -> tuple[torch.Tensor, torch.Tensor]:
    """(dB, dA) whose first-order image s (dB A + B dA) is the closest LoRA approximation of
    `delta_w` in the norm weighted by p_r p_c^T (Frobenius when p_r, p_c are None), with the least
    imbalance ||dB A - B dA|| in that norm. `damping` is added to the r x r Gram matrices."""
    m, n = delta_w.shape
    wr = torch.ones(m, dtype=delta_w.dtype) if p_r is None else p_r.sqrt()
    wc = torch.ones(n, dtype=delta_w.dtype) if p_c is None else p_c.sqrt()
    Bt = wr[:, None] * B
    At = A * wc[None, :]
    Z = (wr[:, None] * delta_w * wc[None, :]) / scaling
    eye = torch.eye(B.shape[1], dtype=B.dtype)
    gram_b = Bt.T @ Bt + damping * eye
    gram_a = At @ At.T + damping * eye
    ZAp = torch.linalg.solve(gram_a, (Z @ At.T).T).T          # Z A~^+          (m x r)
    BpZ = torch.linalg.solve(gram_b, Bt.T @ Z)                # B~^+ Z          (r x n)
    dBt = ZAp - 0.5 * Bt @ torch.linalg.solve(gram_b, Bt.T @ ZAp)
    dAt = BpZ - 0.5 * torch.linalg.solve(gram_a, (BpZ @ At.T).T).T @ At
    return dBt / wr[:, None], dAt / wc[None, :]


def factored_second_moment(row: torch.Tensor, col: torch.Tensor, grad: torch.Tensor, beta2: float,
                           eps1: float = 1e-30) -> None:
    """Adafactor's EMAs of the row and column means of G^2 + eps1, in place (Shazeer & Stern 2018;
    transformers' `exp_avg_sq_row` / `exp_avg_sq_col`)."""
    sq = grad * grad + eps1
    row.mul_(beta2).add_(sq.mean(dim=1), alpha=1 - beta2)
    col.mul_(beta2).add_(sq.mean(dim=0), alpha=1 - beta2)


def sqrt_second_moment_factors(row: torch.Tensor, col: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(p_r, p_c) with sqrt(V) = p_r p_c^T, V = R C^T / mean(R)."""
    return (row / row.mean()).sqrt(), col.sqrt()


def adafactor_direction(grad: torch.Tensor, p_r: torch.Tensor, p_c: torch.Tensor, clip_threshold: float = 1.0) -> torch.Tensor:
    """Adafactor's update G / sqrt(V), divided by max(1, RMS / clip_threshold)."""
    d = grad / (p_r[:, None] * p_c[None, :])
    rms = d.pow(2).mean().sqrt()
    return d / torch.clamp(rms / clip_threshold, min=1.0)


def decay_beta2(step: int, decay_rate: float = -0.8) -> float:
    """transformers' Adafactor second-moment decay 1 - t^decay_rate (0 at t = 1)."""
    return 1.0 - math.pow(step, decay_rate)


# ---------------------------------------------------------------- W's gradient from hooks
def _module_of(net: nn.Module, weight: nn.Parameter) -> nn.Module:
    for m in net.modules():
        if isinstance(m, nn.Linear) and m.weight is weight:
            return m
    raise ValueError("a LoRA factor without its Linear module")


class GradientCapture:
    """G_W = sum over rows of grad_out^T x for every LoRA pair of `net`: the base Linear's forward
    hook keeps x, a tensor hook on lora_B's output receives s * grad_out (peft adds
    lora_B(lora_A(x)) * s to W0 x), so G_W = (grad_lora_B_out / s)^T x. Only under grad mode;
    accumulates over several forwards before one backward; `pop(i)` hands it over."""

    def __init__(self, net: nn.Module, pairs):
        self.pairs, self.inputs, self.grads, self.handles = pairs, {}, {}, []
        for i, p in enumerate(pairs):
            self.handles.append(p.base.register_forward_hook(self._keep_input(i)))
            self.handles.append(_module_of(net, p.B).register_forward_hook(self._hook_output(i)))

    def _keep_input(self, i):
        def hook(_module, args, _out):
            if torch.is_grad_enabled():
                self.inputs[i] = args[0].detach()
        return hook

    def _hook_output(self, i):
        def hook(_module, _args, out):
            if not (torch.is_grad_enabled() and out.requires_grad) or i not in self.inputs:
                return
            x = self.inputs.pop(i)
            s = self.pairs[i].scaling

            def on_grad(g):
                gw = (g.reshape(-1, g.shape[-1]).T.to(torch.float32) @ x.reshape(-1, x.shape[-1]).to(torch.float32)) / s
                self.grads[i] = gw if i not in self.grads else self.grads[i] + gw
            out.register_hook(on_grad)
        return hook

    def pop(self, i: int):
        return self.grads.pop(i, None)

    def remove(self):
        for h in self.handles:
            h.remove()


# ---------------------------------------------------------------- the other trainable tensors
def adamw_update_(p: torch.Tensor, state: dict, lr: float, betas=(0.9, 0.999), eps: float = 1e-8,
                  weight_decay: float = 0.0) -> None:
    """torch.optim.AdamW's update for a tensor outside the LoRA pairs (a classifier head)."""
    g = p.grad
    if not state:
        state["step"] = 0
        state["exp_avg"] = torch.zeros_like(p)
        state["exp_avg_sq"] = torch.zeros_like(p)
    state["step"] += 1
    t, (b1, b2) = state["step"], betas
    p.mul_(1 - lr * weight_decay)
    state["exp_avg"].lerp_(g, 1 - b1)
    state["exp_avg_sq"].mul_(b2).addcmul_(g, g, value=1 - b2)
    denom = (state["exp_avg_sq"] / (1 - b2 ** t)).sqrt().add_(eps)
    p.addcdiv_(state["exp_avg"], denom, value=-lr / (1 - b1 ** t))


class PairOptimizer(torch.optim.Optimizer):
    """Base of the pair-aware optimizers: one param group (lr from the scheduler), the LoRA pairs
    of `net` from lora_harness.models.lora_pairs, and AdamW for every other trainable tensor;
    a subclass defines `pair_step(i, pair, lr, weight_decay)`, the update of one pair."""

    def __init__(self, net: nn.Module, lr: float, weight_decay: float = 0.0, capture: bool = False):
        from neurips26.papers.lora_harness import models

        self.pairs = models.lora_pairs(net)
        if not self.pairs:
            raise ValueError("the network has no LoRA pairs")
        paired = {id(t) for p in self.pairs for t in (p.A, p.B)}
        self.others = [q for q in net.parameters() if q.requires_grad and id(q) not in paired]
        params = [t for p in self.pairs for t in (p.A, p.B)] + self.others
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})
        self.capture = GradientCapture(net, self.pairs) if capture else None

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        group = self.param_groups[0]
        lr, wd = group["lr"], group["weight_decay"]
        for i, pair in enumerate(self.pairs):
            if pair.A.grad is None and pair.B.grad is None:
                continue
            self.pair_step(i, pair, lr, wd)
        for q in self.others:
            if q.grad is not None:
                adamw_update_(q, self.state[q], lr, weight_decay=wd)
        return loss


class AdaPreLoRA(PairOptimizer):
    """AdaPreLoRA (module docstring): Adafactor direction in W (decay 1 - t^-0.8, eps1 = 1e-30,
    RMS clipping at `clip_threshold`, no relative step: lr is absolute), H-weighted closest LoRA
    approximation with the least H-weighted imbalance, and an EMA of the factor updates with
    `beta1` (Adafactor's optional first moment, kept in factor space: O((m + n) r))."""

    def __init__(self, net, lr: float, beta1: float | None = 0.9, clip_threshold: float = 1.0,
                 decay_rate: float = -0.8, eps1: float = 1e-30, damping: float = 1e-8, weight_decay: float = 0.0,
                 weighted: bool = True):
        super().__init__(net, lr, weight_decay, capture=True)
        self.beta1, self.clip, self.decay_rate, self.eps1 = beta1, clip_threshold, decay_rate, eps1
        self.damping, self.weighted = damping, weighted
        self.record, self.last = False, {}   # with record: the step's quantities per pair (the closed-form check)

    def pair_step(self, i, pair, lr, wd):
        G = self.capture.pop(i)
        if G is None:
            raise RuntimeError(f"{pair.name}: W's gradient was not captured (was the forward run under grad mode?)")
        A, B = pair.A, pair.B
        st = self.state[B]
        if not st:
            st["step"] = 0
            st["exp_avg_sq_row"] = torch.zeros(G.shape[0], dtype=G.dtype)
            st["exp_avg_sq_col"] = torch.zeros(G.shape[1], dtype=G.dtype)
            if self.beta1:
                st["exp_avg_B"] = torch.zeros_like(B)
                self.state[A]["exp_avg_A"] = torch.zeros_like(A)
        st["step"] += 1
        factored_second_moment(st["exp_avg_sq_row"], st["exp_avg_sq_col"], G, decay_beta2(st["step"], self.decay_rate), self.eps1)
        p_r, p_c = sqrt_second_moment_factors(st["exp_avg_sq_row"], st["exp_avg_sq_col"])
        direction = -lr * adafactor_direction(G, p_r, p_c, self.clip)
        Bf, Af = B.detach().float(), A.detach().float()
        if self.weighted:
            dB, dA = balanced_projection(direction, Bf, Af, pair.scaling, p_r, p_c, self.damping)
        else:
            dB, dA = balanced_projection(direction, Bf, Af, pair.scaling, damping=self.damping)
        if self.record:
            self.last[i] = {"delta_w": direction, "B": Bf, "A": Af, "p_r": p_r, "p_c": p_c, "dB": dB, "dA": dA,
                            "scaling": pair.scaling}
        if self.beta1:
            st["exp_avg_B"].mul_(self.beta1).add_(dB.to(B.dtype), alpha=1 - self.beta1)
            self.state[A]["exp_avg_A"].mul_(self.beta1).add_(dA.to(A.dtype), alpha=1 - self.beta1)
            dB, dA = st["exp_avg_B"], self.state[A]["exp_avg_A"]
        if wd:
            B.mul_(1 - lr * wd)
            A.mul_(1 - lr * wd)
        B.add_(dB.to(B.dtype))
        A.add_(dA.to(A.dtype))
