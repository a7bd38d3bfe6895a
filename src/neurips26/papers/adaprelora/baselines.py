"""The LoRA optimizers AdaPreLoRA is compared with, all on the same harness and step budget.

- `adamw`: AdamW on the factors (Hu et al. 2022).
- `loraplus`: LoRA+ (Hayou et al. 2024): AdamW with B's learning rate = ratio x A's (ratio 16),
  through peft's `create_loraplus_optimizer`.
- `scaled_adamw`: Riemannian preconditioned LoRA (Zhang & Pilanci 2024): g_A <- (B^T B + reg I)^-1 g_A,
  g_B <- g_B (A A^T + reg I)^-1, then AdamW (peft's `create_riemannian_optimizer` is the tests' reference).
- `lora_pro`: LoRA-Pro (Wang et al. 2024), the authors' "full" AdamW variant: the equivalent
  gradient g~ = s (B g_A' + g_B' A), g_A' = s^-2 (B^T B)^-1 g_A, g_B' = s^-2 (I - B (B^T B)^-1 B^T) g_B (A A^T)^-1
  (= the Frobenius projection of G onto the LoRA tangent space), AdamW moments of g~ in W space
  (2 m n state), and the Adam direction U mapped back with the same closed form and the gauge X
  that solves the Sylvester equation B^T B X + X A A^T = -s^-2 (B^T B)^-1 (s B^T U) A^T (the X that
  keeps the factor updates closest to the plain factor gradients of U).
- `adafactor_proj`: the "closest LoRA approximation" reference: the same Adafactor direction D_t
  and state as AdaPreLoRA, mapped back by the unweighted Frobenius projection with the
  Frobenius-balanced gauge (AdaPreLoRA's closed form with p_r = p_c = 1). It differs from
  AdaPreLoRA only in the metric of the projection and of the balance: H_t versus identity.
- `full_adafactor`: full fine-tuning of the same matrices with transformers' Adafactor (beta1 =
  0.9, absolute lr): the W-space optimizer whose memory LoRA optimizers avoid.
"""

from __future__ import annotations

import numpy as np
import torch

from .method import PairOptimizer, adamw_update_


def lora_pro_factor_grads(G: torch.Tensor, B: torch.Tensor, A: torch.Tensor, scaling: float,
                          damping: float = 1e-8, gauge: str = "sylvester") -> tuple[torch.Tensor, torch.Tensor]:
    """LoRA-Pro's (g_A, g_B) for a W-space matrix G (a gradient or an Adam direction): the factor
    gradients g_A = s B^T G, g_B = s G A^T mapped by the closed form, with gauge X from the
    Sylvester equation ('sylvester') or X = 0 ('zero')."""
    from scipy.linalg import solve_sylvester

    r = B.shape[1]
    eye = torch.eye(r, dtype=B.dtype)
    gA, gB = scaling * B.T @ G, scaling * G @ A.T
    btb, aat = B.T @ B, A @ A.T
    btb_inv = torch.linalg.pinv(btb + damping * eye)
    aat_inv = torch.linalg.pinv(aat + damping * eye)
    s2 = 1.0 / scaling ** 2
    if gauge == "sylvester":
        rhs = -s2 * btb_inv @ gA @ A.T
        X = torch.from_numpy(solve_sylvester(btb.double().numpy(), aat.double().numpy(), rhs.double().numpy())).to(B.dtype)
    else:
        X = torch.zeros(r, r, dtype=B.dtype)
    grad_A = s2 * btb_inv @ gA + X @ A
    grad_B = s2 * (gB - B @ (btb_inv @ (B.T @ gB))) @ aat_inv - B @ X
    return grad_A, grad_B


class LoRAPro(PairOptimizer):
    """LoRA-Pro with AdamW (the authors' full mode; float32 moments where they use bfloat16)."""

    def __init__(self, net, lr: float, betas=(0.9, 0.999), eps: float = 1e-8, damping: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(net, lr, weight_decay)
        self.betas, self.eps, self.damping = betas, eps, damping

    def pair_step(self, i, pair, lr, wd):
        A, B, s = pair.A, pair.B, pair.scaling
        Af, Bf = A.detach().float(), B.detach().float()
        gA = A.grad.float() if A.grad is not None else torch.zeros_like(Af)
        gB = B.grad.float() if B.grad is not None else torch.zeros_like(Bf)
        eye = torch.eye(Bf.shape[1])
        btb_inv = torch.linalg.pinv(Bf.T @ Bf + self.damping * eye)
        aat_inv = torch.linalg.pinv(Af @ Af.T + self.damping * eye)
        gA_eq = btb_inv @ gA / s ** 2
        gB_eq = (gB - Bf @ (btb_inv @ (Bf.T @ gB))) @ aat_inv / s ** 2
        equiv = s * (Bf @ gA_eq + gB_eq @ Af)
        st = self.state[B]
        if not st:
            st["step"] = 0
            st["exp_avg"] = torch.zeros_like(equiv)
            st["exp_avg_sq"] = torch.zeros_like(equiv)
        st["step"] += 1
        b1, b2 = self.betas
        st["exp_avg"].lerp_(equiv, 1 - b1)
        st["exp_avg_sq"].mul_(b2).addcmul_(equiv, equiv, value=1 - b2)
        t = st["step"]
        U = (st["exp_avg"] / (1 - b1 ** t)) / ((st["exp_avg_sq"] / (1 - b2 ** t)).sqrt() + self.eps)
        dA, dB = lora_pro_factor_grads(U, Bf, Af, s, self.damping)
        if wd:
            A.mul_((1 - lr * wd) ** 0.5)
            B.mul_((1 - lr * wd) ** 0.5)
        A.add_(dA.to(A.dtype), alpha=-lr)
        B.add_(dB.to(B.dtype), alpha=-lr)


def adamw(net, lr, weight_decay=0.0):
    return torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=lr, weight_decay=weight_decay)


def loraplus(net, lr, ratio=16.0, weight_decay=0.0):
    from peft.optimizers import create_loraplus_optimizer

    return create_loraplus_optimizer(net, torch.optim.AdamW, lr=lr, loraplus_lr_ratio=ratio, weight_decay=weight_decay)


class ScaledAdamW(torch.optim.AdamW):
    """AdamW on Riemannian-preconditioned factor gradients (Zhang & Pilanci 2024):
    g_A <- (B^T B + reg I)^-1 g_A, g_B <- g_B (A A^T + reg I)^-1 before AdamW's update. (peft's
    `create_riemannian_optimizer` refuses the closure Lightning passes to `step`, so it is the
    test's reference, not the optimizer used.)"""

    def __init__(self, net, lr, reg=1e-6, weight_decay=0.0):
        from neurips26.papers.lora_harness import models

        self.pairs, self.reg = models.lora_pairs(net), reg
        super().__init__([p for p in net.parameters() if p.requires_grad], lr=lr, weight_decay=weight_decay)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for pair in self.pairs:
            A, B = pair.A, pair.B
            eye = torch.eye(A.shape[0], dtype=A.dtype, device=A.device)
            if A.grad is not None:
                A.grad.copy_(torch.linalg.solve(B.T @ B + self.reg * eye, A.grad))
            if B.grad is not None:
                B.grad.copy_(torch.linalg.solve(A @ A.T + self.reg * eye, B.grad.T).T)
        super().step()
        return loss


def scaled_adamw(net, lr, reg=1e-6, weight_decay=0.0):
    return ScaledAdamW(net, lr, reg, weight_decay)


def full_adafactor(net, lr, beta1=0.9, weight_decay=0.0):
    from transformers.optimization import Adafactor

    return Adafactor([p for p in net.parameters() if p.requires_grad], lr=lr, beta1=beta1, weight_decay=weight_decay,
                     scale_parameter=False, relative_step=False, warmup_init=False)


def riemannian_reference(grad_A: torch.Tensor, grad_B: torch.Tensor, A: torch.Tensor, B: torch.Tensor, reg: float):
    """The Riemannian preconditioning written out: ((B^T B + reg I)^-1 g_A, g_B (A A^T + reg I)^-1)."""
    eye = torch.eye(A.shape[0], dtype=A.dtype)
    return (np.linalg.solve((B.T @ B + reg * eye).numpy(), grad_A.numpy()),
            np.linalg.solve((A @ A.T + reg * eye).numpy(), grad_B.T.numpy()).T)


__all__ = ["LoRAPro", "ScaledAdamW", "adamw", "loraplus", "scaled_adamw", "full_adafactor", "lora_pro_factor_grads",
           "riemannian_reference", "adamw_update_"]
