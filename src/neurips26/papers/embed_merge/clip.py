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


# ---------------------------------------------------------------- building the inputs above
# The released task-vector checkpoints (Ilharco et al., ICLR 2023) are open_clip image encoders;
# these builders turn them, their zero-shot heads and the evaluation images into the formats
# read above. Run as `python -m neurips26.papers.embed_merge.clip {convert,heads,eval} ...`.

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def _visual(state: dict) -> dict:
    """The image tower of an open_clip state dict, keys relative to `visual.` (prefixes such as
    `model.` of the task-vector ImageEncoder or `module.` of DDP are dropped)."""
    out = {}
    for k, t in state.items():
        i = k.find("visual.")
        if i >= 0 and (i == 0 or k[i - 1] == "."):
            out[k[i + len("visual."):]] = t
    if "conv1.weight" not in out:
        raise KeyError("not an open_clip ViT state dict: no 'visual.conv1.weight' key")
    return out


def open_clip_config(state: dict, head_width: int = 64, hidden_act: str = "quick_gelu", layer_norm_eps: float = 1e-5):
    """The transformers CLIPVisionConfig of an open_clip ViT, read from its tensor shapes (heads =
    width / head_width, open_clip's rule; OpenAI's weights use quick_gelu)."""
    from transformers import CLIPVisionConfig

    vis = _visual(state)
    width, _, patch, _ = vis["conv1.weight"].shape
    grid = int(round((vis["positional_embedding"].shape[0] - 1) ** 0.5))
    layers = 1 + max(int(k.split(".")[2]) for k in vis if k.startswith("transformer.resblocks."))
    return CLIPVisionConfig(hidden_size=width, intermediate_size=vis["transformer.resblocks.0.mlp.c_fc.weight"].shape[0],
                            projection_dim=vis["proj"].shape[1], num_hidden_layers=layers,
                            num_attention_heads=width // head_width, image_size=grid * patch, patch_size=patch,
                            hidden_act=hidden_act, layer_norm_eps=layer_norm_eps)


def open_clip_to_hf(state: dict) -> dict:
    """An open_clip ViT image tower as a transformers CLIPVisionModelWithProjection state dict
    (the fused attention input projection is split into q, k and v; `proj` is transposed)."""
    vis = _visual(state)
    out = {"visual_projection.weight": vis["proj"].T.contiguous(),
           "vision_model.embeddings.class_embedding": vis["class_embedding"],
           "vision_model.embeddings.patch_embedding.weight": vis["conv1.weight"],
           "vision_model.embeddings.position_embedding.weight": vis["positional_embedding"],
           "vision_model.pre_layrnorm.weight": vis["ln_pre.weight"], "vision_model.pre_layrnorm.bias": vis["ln_pre.bias"],
           "vision_model.post_layernorm.weight": vis["ln_post.weight"],
           "vision_model.post_layernorm.bias": vis["ln_post.bias"]}
    names = {"ln_1": "layer_norm1", "ln_2": "layer_norm2", "mlp.c_fc": "mlp.fc1", "mlp.c_proj": "mlp.fc2",
             "attn.out_proj": "self_attn.out_proj"}
    layers = sorted({int(k.split(".")[2]) for k in vis if k.startswith("transformer.resblocks.")})
    for i in layers:
        src, dst = f"transformer.resblocks.{i}.", f"vision_model.encoder.layers.{i}."
        for a, b in names.items():
            for p in ("weight", "bias"):
                out[f"{dst}{b}.{p}"] = vis[f"{src}{a}.{p}"]
        for p in ("weight", "bias"):
            q, k, v = vis[f"{src}attn.in_proj_{p}"].chunk(3, dim=0)
            out[f"{dst}self_attn.q_proj.{p}"], out[f"{dst}self_attn.k_proj.{p}"], out[f"{dst}self_attn.v_proj.{p}"] = q, k, v
    return {k: t.contiguous() for k, t in out.items()}


def convert_open_clip(state: dict, out_dir: str | Path, **config) -> Path:
    """Write an open_clip image tower as a transformers CLIP folder (every tensor checked)."""
    from transformers import CLIPVisionModelWithProjection

    model = CLIPVisionModelWithProjection(open_clip_config(state, **config))
    converted = open_clip_to_hf(state)
    missing, unexpected = model.load_state_dict(converted, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise KeyError(f"open_clip -> transformers: missing {missing[:5]}, unexpected {unexpected[:5]}")
    model.save_pretrained(str(out_dir))
    return Path(out_dir)


def zero_shot_head(text_embeddings: torch.Tensor, logit_scale: float) -> torch.Tensor:
    """The zero-shot head of the task-vector code: per class, the text embeddings of every
    prompt template (classes, templates, dim) normalised, averaged, normalised again, times the
    logit scale (exp of CLIP's learned log scale, 100 for the released models)."""
    e = F.normalize(text_embeddings.float(), dim=-1).mean(1)
    return F.normalize(e, dim=-1) * float(logit_scale)


def head_from_state(state: dict) -> torch.Tensor:
    """The weight of a released ClassificationHead state dict (`weight` or `*.weight`)."""
    keys = [k for k in state if k == "weight" or k.endswith(".weight")]
    if len(keys) != 1:
        raise KeyError(f"a classification head state dict has one weight, found {keys}")
    return state[keys[0]].float().contiguous()


def preprocess(image, size: int = 224) -> torch.Tensor:
    """CLIP's evaluation transform: shorter side to `size` (bicubic), centre crop, RGB in
    [0, 1], normalised by CLIP's channel mean and std; (3, size, size) float32."""
    import numpy as np

    image = image.convert("RGB")
    w, h = image.size
    scale = size / min(w, h)
    nw, nh = max(size, round(w * scale)), max(size, round(h * scale))
    from PIL import Image

    image = image.resize((nw, nh), Image.BICUBIC)
    left, top = (nw - size) // 2, (nh - size) // 2
    image = image.crop((left, top, left + size, top + size))
    x = torch.from_numpy(np.asarray(image, dtype=np.float32) / 255.0).permute(2, 0, 1)
    return (x - torch.tensor(CLIP_MEAN)[:, None, None]) / torch.tensor(CLIP_STD)[:, None, None]


def evaluation_tensors(images, labels, size: int = 224, dtype: torch.dtype = torch.float16) -> dict:
    """{"images": (N, 3, size, size), "labels": (N,)} of PIL images, in the format ClipDomain reads
    (float16 by default: SUN397's test split is 12 GB at 224 pixels in float32)."""
    return {"images": torch.stack([preprocess(im, size) for im in images]).to(dtype).contiguous(),
            "labels": torch.as_tensor(list(labels), dtype=torch.long)}


def image_folder_split(root: str | Path, out: str | Path, size: int = 224) -> list[str]:
    """An ImageFolder split (root/<class>/<image>, classes in sorted order) as one evaluation
    tensor file; returns the class names (the head's row order must follow them)."""
    from PIL import Image

    root = Path(root)
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    files = [(f, i) for i, c in enumerate(classes) for f in sorted((root / c).iterdir()) if f.is_file()]
    if not files:
        raise FileNotFoundError(f"{root}: no images in class folders")
    images = []
    for f, _ in files:
        with Image.open(f) as im:
            images.append(im.copy())
    io.save_tensors(Path(out), evaluation_tensors(images, [i for _, i in files], size))
    return classes


def _load_state(path: str | Path) -> dict:
    path = Path(path)
    if path.suffix == ".safetensors":
        return io.load_tensors(path)
    state = torch.load(path, map_location="cpu", weights_only=True)
    return state.get("state_dict", state)


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m neurips26.papers.embed_merge.clip",
                                description="Build the CLIP inputs of embed_merge's clip variants.")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="open_clip image-encoder state dict (.pt or .safetensors) -> transformers folder")
    c.add_argument("state"), c.add_argument("out")
    c.add_argument("--hidden-act", default="quick_gelu"), c.add_argument("--head-width", type=int, default=64)
    h = sub.add_parser("heads", help="released ClassificationHead state dict -> <task>.safetensors")
    h.add_argument("state"), h.add_argument("out")
    e = sub.add_parser("eval", help="ImageFolder split -> <task>/<split>.safetensors")
    e.add_argument("root"), e.add_argument("out"), e.add_argument("--size", type=int, default=224)
    a = p.parse_args(argv)
    if a.cmd == "convert":
        convert_open_clip(_load_state(a.state), a.out, hidden_act=a.hidden_act, head_width=a.head_width)
    elif a.cmd == "heads":
        io.save_tensors(Path(a.out), {"weight": head_from_state(_load_state(a.state))})
    else:
        print("\n".join(image_folder_split(a.root, a.out, a.size)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
