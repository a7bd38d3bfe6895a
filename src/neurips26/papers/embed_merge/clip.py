"""Paper scale: CLIP ViT-B/32 and ViT-L/14 vision encoders fine-tuned on the usual eight tasks
(SUN397, Cars, RESISC45, EuroSAT, SVHN, GTSRB, MNIST, DTD), merged with the same methods.

Nothing is fine-tuned here: the released fine-tuned encoders are read from disk. Formats:

    pretrained_dir/            a transformers CLIP folder (config.json, model.safetensors)
    finetuned_dir/<task>/      the same, one per task
    heads_dir/<task>.safetensors   {"weight": (classes, projection_dim)}: the zero-shot head,
                                   class-name text embeddings times the logit scale
    data_dir/<task>/{val,test}.safetensors  {"images": (N, 3, H, W) preprocessed, "labels": (N,)}
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from neurips26.core import io


def _require(path: str | Path | None, key: str) -> Path:
    if not path:
        raise ValueError(f"config key 'embed_merge.variants.<clip>.{key}' is not set")
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"config key 'embed_merge.variants.<clip>.{key}': {p} does not exist")
    return p


def load_vision(path: Path):
    from transformers import CLIPVisionModelWithProjection

    return CLIPVisionModelWithProjection.from_pretrained(str(path)).eval()


class ClipBackbone(nn.Module):
    """The CLIP image tower: normalised projected image embedding."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, images):
        return F.normalize(self.model(pixel_values=images).image_embeds, dim=-1)


def index_checkpoints(v: dict, out: Path):
    """Write the pre-trained and fine-tuned encoders (and heads) in this package's format."""
    pre_dir = _require(v.get("pretrained_dir"), "pretrained_dir")
    ft_dir = _require(v.get("finetuned_dir"), "finetuned_dir")
    heads_dir = _require(v.get("heads_dir"), "heads_dir")
    pre = ClipBackbone(load_vision(pre_dir))
    io.save_tensors(out / "pretrained.safetensors", {k: t.contiguous() for k, t in pre.state_dict().items()})
    info = {"kind": "clip", "tasks": {}}
    for name in v["tasks"]:
        backbone = ClipBackbone(load_vision(_require(ft_dir / name, f"finetuned_dir ({name})")))
        head = io.load_tensors(_require(heads_dir / f"{name}.safetensors", f"heads_dir ({name})"))["weight"]
        state = {f"backbone.{k}": t.contiguous() for k, t in backbone.state_dict().items()}
        state |= {"head.weight": head.contiguous(), "head.bias": torch.zeros(head.shape[0])}
        io.save_tensors(out / "finetuned" / f"{name}.safetensors", state, metadata={"classes": str(head.shape[0])})
        info["tasks"][name] = {"classes": int(head.shape[0])}
    io.write_json(out / "train.json", info)


class ClipDomain:
    """The merge step's view of the CLIP runs (same interface as steps.Domain)."""

    def __init__(self, v: dict, seed: int):
        self.v, self.seed, self.kind = v, seed, "clip"
        self._pre = ClipBackbone(load_vision(_require(v.get("pretrained_dir"), "pretrained_dir")))

    def features(self) -> int:
        return self._pre.model.config.projection_dim

    def new_backbone(self) -> nn.Module:
        return copy.deepcopy(self._pre)

    def task(self, index: int, name: str, splits=("val", "test")) -> tuple[dict, int]:
        root = _require(self.v.get("data_dir"), "data_dir")
        out = {}
        for s in splits:
            t = io.load_tensors(_require(root / name / f"{s}.safetensors", f"data_dir ({name}/{s})"))
            out[s] = (t["images"].float(), t["labels"].long())
        heads = _require(self.v.get("heads_dir"), "heads_dir")
        return out, int(io.load_tensors(heads / f"{name}.safetensors")["weight"].shape[0])
