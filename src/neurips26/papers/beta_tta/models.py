"""The classifiers of beta_tta: a small pre-norm ViT (the API's source model and, smaller, the
client's steering model) with an optional additive token prompt, trained through the project's
Lightning trainer.

The prompt is an additive offset on the patch tokens, x_tok <- x_tok + P (P in R^{n x d}, zero
at start, so a prompted model equals the source model until P is tuned); it may be one prompt
for the batch (B = 1 broadcast) or one per sample (TPT's episodic per-sample prompts).
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    """Patches -> linear embedding (+ prompt) + class token + positions -> pre-norm blocks ->
    LayerNorm -> linear head on the class token."""

    def __init__(self, image_size: int, patch: int, dim: int, depth: int, heads: int, mlp_ratio: float,
                 classes: int, channels: int = 3):
        super().__init__()
        if image_size % patch:
            raise ValueError(f"image size {image_size} is not divisible by patch {patch}")
        self.patch, self.tokens = patch, (image_size // patch) ** 2
        self.patch_embed = nn.Linear(channels * patch * patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, self.tokens + 1, dim) * 0.02)
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)
        self.dim = dim

    def forward(self, x, prompt: torch.Tensor | None = None):
        p = self.patch
        b, c, h, w = x.shape
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(b, self.tokens, c * p * p)
        tok = self.patch_embed(x)
        if prompt is not None:
            tok = tok + prompt
        x = torch.cat([self.cls_token.expand(b, -1, -1), tok], 1) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x[:, 0]))


def build(arch: dict, image_size: int, classes: int) -> ViT:
    return ViT(image_size, arch["patch"], arch["dim"], arch["depth"], arch["heads"], arch["mlp_ratio"], classes)


def norm_parameters(net: nn.Module) -> list[nn.Parameter]:
    """The affine parameters of every LayerNorm: what TENT adapts on a transformer."""
    return [p for m in net.modules() if isinstance(m, nn.LayerNorm) for p in (m.weight, m.bias)]


def _lightning_module():
    import lightning as L

    class ClassifierModule(L.LightningModule):
        """Cross-entropy training with AdamW and a one-cycle schedule, flip augmentation."""

        def __init__(self, net: nn.Module, lr: float, weight_decay: float, steps: int):
            super().__init__()
            self.net, self.lr, self.weight_decay, self.steps = net, lr, weight_decay, steps

        def training_step(self, batch, _):
            x, y = batch
            flip = torch.rand(len(x), device=x.device) < 0.5
            x = torch.where(flip[:, None, None, None], x.flip(-1), x)
            loss = F.cross_entropy(self.net(x), y)
            self.log("train/loss", loss, on_step=True, prog_bar=False, batch_size=len(y))
            return loss

        def configure_optimizers(self):
            opt = torch.optim.AdamW(self.net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            sched = torch.optim.lr_scheduler.OneCycleLR(opt, self.lr, total_steps=max(2, self.steps), pct_start=0.1)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    return ClassifierModule


def train_classifier(net: nn.Module, x: torch.Tensor, y: torch.Tensor, out: Path, params: dict, opt: dict,
                     seed: int, key: str) -> bool:
    """Fit `net` through the project's Lightning trainer; returns whether this is rank 0."""
    from neurips26.core.seeding import generator
    from neurips26.core.trainer import fit, make_trainer, train_loader

    steps = opt["steps"]
    trainer, resume = make_trainer(out, {**params, "_net": key}, steps, checkpoint_every=steps,
                                   log_every_n_steps=max(1, min(steps // 5, 10)))
    loader = train_loader(trainer, torch.utils.data.TensorDataset(x, y), opt["batch_size"], generator(seed),
                          key=f"{key}.batch_size")
    fit(trainer, _lightning_module()(net, opt["lr"], opt.get("weight_decay", 0.0), steps), loader, resume)
    net.cpu().eval()
    return trainer.global_rank == 0


@torch.no_grad()
def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 512) -> float:
    net.eval()
    correct = 0
    for i in range(0, len(y), batch_size):
        correct += int((net(x[i:i + batch_size]).argmax(1) == y[i:i + batch_size]).sum())
    return correct / len(y)
