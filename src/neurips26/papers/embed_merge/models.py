"""The models merged here: a small ViT built by hand (pre-trained in the DAG) and the top
layers of the pre-trained all-MiniLM-L6-v2 encoder; one linear head per task.

Both are split into a mergeable backbone (its state dict is what the merging methods see) and
task heads that stay with their task.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, int(dim * mlp_ratio))
        self.fc2 = nn.Linear(int(dim * mlp_ratio), dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class TinyViT(nn.Module):
    """Patches -> linear embedding + class token + learned positions -> pre-norm blocks -> the
    normalised class token as the feature."""

    def __init__(self, image_size=16, patch=4, channels=3, dim=64, depth=4, heads=4, mlp_ratio=4.0):
        super().__init__()
        self.patch, self.dim = patch, dim
        n = (image_size // patch) ** 2
        self.patch_embed = nn.Linear(channels * patch * patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        p = self.patch
        b, c, h, w = x.shape
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(b, (h // p) * (w // p), c * p * p)
        x = torch.cat([self.cls_token.expand(b, -1, -1), self.patch_embed(x)], 1) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x[:, 0])


@torch.no_grad()
def minilm_hidden(tok, model, sentences: list[str], first_trained: int, max_length: int, batch_size=256):
    """Hidden states entering layer `first_trained` (the frozen lower layers run once) and the
    attention masks, padded to the longest sentence (at most `max_length` tokens)."""
    enc = tok(sentences, padding="longest", truncation=True, max_length=max_length, return_tensors="pt")
    hs = []
    for i in range(0, len(sentences), batch_size):
        ids, types = enc["input_ids"][i:i + batch_size], enc["token_type_ids"][i:i + batch_size]
        h = model.embeddings(input_ids=ids, token_type_ids=types)
        ext = _extended(enc["attention_mask"][i:i + batch_size])
        for layer in model.encoder.layer[:first_trained]:
            h = layer(h, attention_mask=ext)
            h = h[0] if isinstance(h, tuple) else h
        hs.append(h)
    return torch.cat(hs), enc["attention_mask"]


def _extended(mask: torch.Tensor) -> torch.Tensor:
    return (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min


class MiniLMTop(nn.Module):
    """The upper layers of all-MiniLM-L6-v2 with its mean pooling: input (hidden, mask)."""

    def __init__(self, layers: nn.ModuleList):
        super().__init__()
        self.layers = layers

    def forward(self, batch):
        h, mask = batch
        ext = _extended(mask)
        for layer in self.layers:
            h = layer(h, attention_mask=ext)
            h = h[0] if isinstance(h, tuple) else h
        m = mask[..., None].to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp_min(1.0)


class Classifier(nn.Module):
    def __init__(self, backbone: nn.Module, features: int, classes: int):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(features, classes)

    def forward(self, x):
        return self.head(self.backbone(x))

    @classmethod
    def of(cls, backbone: nn.Module, head: nn.Module) -> "Classifier":
        """A classifier over existing modules (shared, not copied)."""
        net = cls.__new__(cls)
        nn.Module.__init__(net)
        net.backbone, net.head = backbone, head
        return net


def _lightning_module():
    import lightning as L

    class ClassifierModule(L.LightningModule):
        """Cross-entropy training of a classifier with AdamW."""

        def __init__(self, net: nn.Module, lr: float, weight_decay: float = 0.0, schedule: str = "constant",
                     steps: int = 1):
            super().__init__()
            self.net, self.lr, self.weight_decay, self.schedule, self.steps = net, lr, weight_decay, schedule, steps

        def training_step(self, batch, _):
            *x, y = batch
            x = x[0] if len(x) == 1 else tuple(x)
            loss = F.cross_entropy(self.net(x), y)
            self.log("train/loss", loss, on_step=True, prog_bar=False, batch_size=len(y))
            return loss

        def configure_optimizers(self):
            params = [p for p in self.net.parameters() if p.requires_grad]
            opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)
            if self.schedule == "constant":
                return opt
            if self.schedule == "onecycle":  # 10% warm-up to lr, cosine decay to ~0
                sched = torch.optim.lr_scheduler.OneCycleLR(opt, self.lr, total_steps=max(2, self.steps), pct_start=0.1)
                return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
            raise ValueError(f"config key 'embed_merge.variants.<name>.*.schedule': unknown '{self.schedule}'")

    return ClassifierModule


def train_classifier(net: nn.Module, tensors: tuple, out: Path, params: dict, steps: int, batch_size: int,
                     lr: float, weight_decay: float, seed: int, schedule: str = "constant",
                     key: str = "embed_merge.variants.<name>.finetune.batch_size") -> bool:
    """Fit `net` on (inputs..., labels) through the project's Lightning trainer; the global batch
    is split over the trainer's ranks (`core.trainer.train_loader`). Returns whether this process
    is rank 0 (the one that writes outputs)."""
    from neurips26.core.seeding import generator
    from neurips26.core.trainer import fit, make_trainer, train_loader

    trainer, resume = make_trainer(out, params, steps, checkpoint_every=steps, log_every_n_steps=max(1, min(steps // 5, 10)))
    loader = train_loader(trainer, torch.utils.data.TensorDataset(*tensors), batch_size, generator(seed), key=key)
    fit(trainer, _lightning_module()(net, lr, weight_decay, schedule, steps), loader, resume)
    net.cpu()
    return trainer.global_rank == 0


@torch.no_grad()
def correct_per_example(net: nn.Module, inputs, labels: torch.Tensor, batch_size: int = 512) -> list[int]:
    """1 where `net` classifies an example right, else 0; batch by batch on the net's device."""
    net.eval()
    device = next(net.parameters()).device
    correct: list[int] = []
    for i in range(0, len(labels), batch_size):
        x = tuple(t[i:i + batch_size].to(device) for t in inputs) if isinstance(inputs, tuple) else inputs[i:i + batch_size].to(device)
        correct += (net(x).argmax(1) == labels[i:i + batch_size].to(device)).int().tolist()
    return correct


def accuracy(net: nn.Module, inputs, labels: torch.Tensor, batch_size: int = 512) -> float:
    correct = correct_per_example(net, inputs, labels, batch_size)
    return sum(correct) / len(correct)
