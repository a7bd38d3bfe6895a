"""The paper-scale path of beta_tta: the released checkpoints and image folders, wrapped so that
the methods of method.py / baselines.py run on them unchanged.

Models (transformers `save_pretrained` folders, given by path, never fetched):

- `HFViTClassifier`: a `ViTForImageClassification` (ViT-B/16 behind the API, ViT-Tiny as the
  client's steering model). logits = classifier(LN(encoder([cls; E(x) + P] + pos)))[class_index],
  x normalised with the checkpoint's mean/std.
- `CLIPZeroShotClassifier`: the image tower of a `CLIPModel` with a zero-shot head,
  logits = exp(s) * cos(W_v LN(vision([cls; E(x) + P] + pos)), t_c), t_c the normalised text
  embedding of "a photo of a {name}." for class c, computed once at build time.

Both take images in [0, 1] of shape (B, 3, H, W) and an optional additive prompt P of shape
(1 or B, tokens, dim) on the patch tokens (before the class token and the positions), and expose
`.tokens`, `.dim` and the checkpoint's `torch.nn.LayerNorm` modules (what TENT and BETA adapt).
The prompt enters through a forward hook on the patch embedding, so every other part of the
forward pass is the checkpoint's own: with P = None the logits are the HF model's.

Data (`imagenet_c_cell`, `class_folder`): `<root>/<wnid>/*.JPEG|*.jpg|*.png` class folders,
classes = sorted wnids (ImageNet's index order), images resized on the short side to
256 * size / 224 and centre-cropped to size (the ImageNet evaluation transform of TENT/EATA),
a seeded subset of n images.

Class names (`read_class_names`): a JSON object wnid -> name (or Keras' imagenet_class_index
format, index -> [wnid, name]). Its wnids, sorted, are the output columns of the ImageNet-1k
classifiers and of the CLIP head; `class_index` picks the columns of a dataset's own classes
(the 200 of ImageNet-R).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from torch import nn

IMAGE_EXTENSIONS = (".jpeg", ".jpg", ".png")
VIT_MEAN, VIT_STD = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
PROMPT_TEMPLATE = "a photo of a {}."


# ---------------------------------------------------------------- image folders
def class_wnids(folder) -> list[str]:
    """The class folders of `folder`, sorted (ImageNet's standard index order for wnids)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"image folder {folder} does not exist")
    wnids = sorted(p.name for p in folder.iterdir() if p.is_dir())
    if not wnids:
        raise FileNotFoundError(f"image folder {folder} holds no class folders (<wnid>/*.JPEG)")
    return wnids


def _files(folder: Path) -> tuple[list[Path], list[int], list[str]]:
    wnids = class_wnids(folder)
    files, labels = [], []
    for label, wnid in enumerate(wnids):
        found = sorted(p for p in (folder / wnid).iterdir() if p.suffix.lower() in IMAGE_EXTENSIONS)
        if not found:
            raise FileNotFoundError(f"class folder {folder / wnid} holds no images ({', '.join(IMAGE_EXTENSIONS)})")
        files += found
        labels += [label] * len(found)
    return files, labels, wnids


def load_image(path, image_size: int) -> torch.Tensor:
    """One image as (3, size, size) in [0, 1]: short side to round(256 * size / 224) (bilinear),
    centre crop to size (torchvision's Resize + CenterCrop arithmetic)."""
    from PIL import Image

    try:
        with Image.open(path) as raw:
            img = raw.convert("RGB")
    except OSError as exc:  # PIL's messages for truncated files do not name them
        raise OSError(f"image {path}: {exc}") from exc
    w, h = img.size
    short = int(round(256 * image_size / 224))
    size = (short, int(short * h / w)) if w <= h else (int(short * w / h), short)
    img = img.resize(size, Image.BILINEAR)
    left = int(round((size[0] - image_size) / 2.0))
    top = int(round((size[1] - image_size) / 2.0))
    arr = np.asarray(img.crop((left, top, left + image_size, top + image_size)), dtype=np.uint8)
    return torch.from_numpy(arr.copy()).permute(2, 0, 1).float().div_(255)


VALIDATION_SPLIT_SEED = 20260  # fixes which files are held out for tuning, the same for every seed


def read_folder(folder, n: int, seed: int, image_size: int, shuffled: bool = False,
                workers: int | None = None, held_out: int = 0, split: str = "test") -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded subset of n images of the class folders under `folder`: (x (n, 3, size, size) in
    [0, 1], y labels = index of the sorted wnid). The subset depends on the seed and the sorted
    file list only (the same files in every ImageNet-C cell); in file order, or with
    `shuffled` in a seeded random order (the stream order, without a second copy). With
    `held_out` > 0, that many files (a fixed draw) form the validation split the tuning stream
    reads (`split="validation"`), and the test split is the rest: no test stream sees them."""
    folder = Path(folder)
    files, labels, _ = _files(folder)
    if split not in ("test", "validation"):
        raise ValueError(f"unknown split '{split}'")
    if held_out:
        if held_out >= len(files):
            raise ValueError(f"image folder {folder} holds {len(files)} images, not more than the {held_out} held out")
        cut = torch.randperm(len(files), generator=torch.Generator().manual_seed(VALIDATION_SPLIT_SEED))
        pool = cut[:held_out] if split == "validation" else cut[held_out:]
    else:
        if split == "validation":
            raise ValueError("a validation split needs held_out > 0")
        pool = torch.arange(len(files))
    if n > len(pool):
        where = f" in its {split} split" if held_out else ""
        raise ValueError(f"image folder {folder} holds {len(pool)} images{where}, fewer than the {n} asked for")
    g = torch.Generator().manual_seed(int(seed))
    pick = pool[torch.randperm(len(pool), generator=g)[:n]]
    if not shuffled:
        pick = pick.sort().values
    pick = pick.tolist()
    x = torch.empty(n, 3, image_size, image_size)

    def put(i):
        x[i] = load_image(files[pick[i]], image_size)

    # PIL decodes and resizes without the GIL: threads fill the preallocated tensor in place
    with ThreadPoolExecutor(max_workers=workers or min(8, os.cpu_count() or 1)) as pool:
        list(pool.map(put, range(n)))
    return x, torch.tensor([labels[j] for j in pick], dtype=torch.long)


def imagenet_c_cell(data_dir, corruption: str, severity: int, n: int, seed: int, image_size: int,
                    shuffled: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """One ImageNet-C stream: `<data_dir>/<corruption>/<severity>/<wnid>/*.JPEG`."""
    return read_folder(Path(data_dir) / corruption / str(severity), n, seed, image_size, shuffled)


def class_folder(data_dir, n: int, seed: int, image_size: int, shuffled: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """ImageNet-R (`<data_dir>/<wnid>/*.jpg`) or ImageNet-Sketch (`<data_dir>/<wnid>/*.JPEG`)."""
    return read_folder(data_dir, n, seed, image_size, shuffled)


# ---------------------------------------------------------------- class names
def read_class_names(path) -> dict[str, str]:
    """wnid -> name, sorted by wnid. Accepts {"n01440764": "tench", ...} or Keras'
    imagenet_class_index.json ({"0": ["n01440764", "tench"], ...})."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"class-name file {path} does not exist")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"class-name file {path}: not JSON ({exc})") from exc
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"class-name file {path}: expected a JSON object wnid -> name")
    names = {}
    for k, val in raw.items():
        if isinstance(val, str):
            names[k] = val
        elif isinstance(val, list) and len(val) == 2 and all(isinstance(s, str) for s in val):
            names[val[0]] = val[1]
        else:
            raise ValueError(f"class-name file {path}: entry {k!r} is neither a name nor [wnid, name]")
    return dict(sorted(names.items()))


def column_index(wnids: list[str], columns: list[str] | None, outputs: int, what: str) -> list[int] | None:
    """The output columns of a model (columns = its sorted wnids, or None when unknown) that
    belong to the dataset's classes `wnids`; None when they are all the columns, in order."""
    if columns is None:
        if len(wnids) != outputs:
            raise ValueError(f"{what}: the data has {len(wnids)} classes and the model {outputs} outputs; "
                             f"set data.class_names (wnid -> name JSON) to map them")
        return None
    if len(columns) != outputs:
        raise ValueError(f"{what}: the class-name file lists {len(columns)} wnids, the model has {outputs} outputs")
    pos = {w: i for i, w in enumerate(columns)}
    missing = [w for w in wnids if w not in pos]
    if missing:
        raise ValueError(f"{what}: data classes {missing[:5]} are not in the class-name file")
    index = [pos[w] for w in wnids]
    return None if index == list(range(outputs)) else index


# ---------------------------------------------------------------- models
def _add_to_tokens(module, args, output):
    p = module.__dict__.get("_beta_prompt")
    return output if p is None else output + p


def _add_to_grid(module, args, output):
    p = module.__dict__.get("_beta_prompt")
    if p is None:
        return output
    b, d, h, w = output.shape  # conv output; tokens are its flattened (row, column) positions
    return output + p.transpose(1, 2).reshape(p.shape[0], d, h, w)


def _checkpoint(path, model_type: str):
    from transformers import AutoConfig

    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"checkpoint folder {path} does not exist (a transformers save_pretrained folder)")
    config = AutoConfig.from_pretrained(str(path), local_files_only=True)
    if config.model_type != model_type:
        raise ValueError(f"checkpoint {path}: model_type '{config.model_type}', expected '{model_type}'")
    return config


def _normalisation(path, mean, std) -> tuple[torch.Tensor, torch.Tensor]:
    """image_mean / image_std of the folder's preprocessor_config.json, else the defaults given."""
    f = Path(path) / "preprocessor_config.json"
    if f.is_file():
        cfg = json.loads(f.read_text())
        mean, std = cfg.get("image_mean", mean), cfg.get("image_std", std)
    return torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1), torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1)


class _Prompted(nn.Module):
    """Shared parts: normalisation buffers, the column subset, device handling and the prompt."""

    def _setup(self, path, mean, std, class_index, patch_module, hook):
        m, s = _normalisation(path, mean, std)
        self.register_buffer("mean", m)
        self.register_buffer("std", s)
        # not saved: the columns depend on the data the adapt step reads, not on the weights
        self.register_buffer("class_index", None if class_index is None else torch.tensor(class_index, dtype=torch.long),
                             persistent=False)
        # a list, not a second registration of the submodule (deepcopy's memo keeps it pointing
        # at the copy's own patch embedding)
        self._patch = [patch_module]
        patch_module.register_forward_hook(hook)

    def _run(self, x, prompt, body):
        dev = self.mean.device
        h = (x.to(dev) - self.mean) / self.std
        patch = self._patch[0]
        patch.__dict__["_beta_prompt"] = None if prompt is None else prompt.to(dev)
        try:
            logits = body(h)
        finally:
            patch.__dict__["_beta_prompt"] = None
        if self.class_index is not None:
            logits = logits.index_select(1, self.class_index)
        return logits.to(x.device)  # the methods keep their tensors on the CPU; weights may sit on a GPU


class HFViTClassifier(_Prompted):
    """A transformers ViTForImageClassification with an additive patch-token prompt.

    `pretrained=False` builds the architecture from the folder's config only (the weights then
    come from `load_state_dict`, as in the adapt step)."""

    def __init__(self, path, class_index: list[int] | None = None, pretrained: bool = True):
        super().__init__()
        from transformers import ViTForImageClassification

        config = _checkpoint(path, "vit")
        if pretrained:
            model = ViTForImageClassification.from_pretrained(str(path), local_files_only=True)
        else:
            model = ViTForImageClassification(config)
        self.model = model.float().eval()
        self.image_size = int(config.image_size)
        self.tokens = (self.image_size // int(config.patch_size)) ** 2
        self.dim = int(config.hidden_size)
        self.outputs = int(config.num_labels)
        self._setup(path, VIT_MEAN, VIT_STD, class_index, self.model.vit.embeddings.patch_embeddings, _add_to_tokens)

    def forward(self, x, prompt: torch.Tensor | None = None):
        return self._run(x, prompt, lambda h: self.model(pixel_values=h).logits)


def _text_embeddings(clip, tokenizer, names: list[str], batch_size: int = 256) -> torch.Tensor:
    max_len = int(clip.config.text_config.max_position_embeddings)
    dev = next(clip.parameters()).device
    out = []
    with torch.no_grad():
        for i in range(0, len(names), batch_size):
            texts = [PROMPT_TEMPLATE.format(n) for n in names[i:i + batch_size]]
            enc = tokenizer(texts, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
            t = clip.get_text_features(input_ids=enc["input_ids"].to(dev), attention_mask=enc["attention_mask"].to(dev))
            t = t if isinstance(t, torch.Tensor) else t.pooler_output  # transformers 5 returns an output object
            out.append(t.float().cpu())
    t = torch.cat(out)
    return t / t.norm(dim=-1, keepdim=True)


class CLIPZeroShotClassifier(_Prompted):
    """The image tower of a transformers CLIPModel with the zero-shot head of `class_names`.

    Only the vision tower, its projection, logit_scale and the text embeddings (a buffer) are
    kept: TENT's LayerNorms are the vision tower's. `pretrained=False` builds the architecture
    and a zero head of len(class_names) rows, to be filled by `load_state_dict`."""

    def __init__(self, path, class_names: list[str], class_index: list[int] | None = None, pretrained: bool = True,
                 device: str | torch.device = "cpu"):
        super().__init__()
        from transformers import CLIPModel

        config = _checkpoint(path, "clip")
        if pretrained:
            from transformers import AutoTokenizer

            clip = CLIPModel.from_pretrained(str(path), local_files_only=True).float().eval().to(device)
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            text = _text_embeddings(clip, tokenizer, list(class_names))
        else:
            clip = CLIPModel(config).eval()
            text = torch.zeros(len(class_names), int(config.projection_dim))
        self.vision = clip.vision_model.cpu()
        self.projection = clip.visual_projection.cpu()
        self.register_buffer("logit_scale", clip.logit_scale.detach().float().cpu().clone())
        self.register_buffer("text_embeds", text)
        vc = config.vision_config
        self.image_size = int(vc.image_size)
        self.tokens = (self.image_size // int(vc.patch_size)) ** 2
        self.dim = int(vc.hidden_size)
        self.outputs = len(class_names)
        self._setup(path, CLIP_MEAN, CLIP_STD, class_index, self.vision.embeddings.patch_embedding, _add_to_grid)

    def _logits(self, h):
        img = self.projection(self.vision(pixel_values=h).pooler_output)
        img = img / img.norm(dim=-1, keepdim=True)
        return self.logit_scale.exp() * img @ self.text_embeds.t()

    def forward(self, x, prompt: torch.Tensor | None = None):
        return self._run(x, prompt, self._logits)


# ---------------------------------------------------------------- the variants' models
def released_models(v: dict, key: str, wnids: list[str] | None = None, states: dict | None = None,
                    device: str | torch.device = "cpu") -> tuple[nn.Module, nn.Module]:
    """(source, steering) of a variant of kind imagenet_c or clip.

    train: `states=None`, the released weights (`from_pretrained`); adapt: the architecture from
    the checkpoint folders and `states` = {"source": ..., "steering": ...} (the train step's
    state dicts). With `wnids` (the data's classes) the outputs are restricted to those classes."""
    kind, d = v["kind"], v.get("data", {})
    paths = {}
    for name in ("source", "steering"):
        p = v.get(f"{name}_checkpoint", "")
        if not p:
            raise ValueError(f"config key '{key}.{name}_checkpoint': empty (a transformers save_pretrained folder)")
        if not Path(p).is_dir():
            raise FileNotFoundError(f"config key '{key}.{name}_checkpoint': checkpoint folder {p} does not exist")
        paths[name] = p
    names = None
    if d.get("class_names"):
        names = read_class_names(d["class_names"])
    elif kind == "clip":
        raise ValueError(f"config key '{key}.data.class_names': the CLIP zero-shot head needs the wnid -> name JSON")
    columns = list(names) if names is not None else None
    pretrained = states is None
    built = {}
    for name in ("source", "steering"):
        what = f"config key '{key}.{name}_checkpoint' ({paths[name]})"
        if name == "source" and kind == "clip":
            net = CLIPZeroShotClassifier(paths[name], list(names.values()), pretrained=pretrained, device=device)
        elif kind in ("imagenet_c", "clip"):
            net = HFViTClassifier(paths[name], pretrained=pretrained)
        else:
            raise ValueError(f"config key '{key}.kind': '{kind}' has no released models")
        if net.image_size != d.get("image_size"):
            raise ValueError(f"config key '{key}.data.image_size': {d.get('image_size')}, but {paths[name]} "
                             f"takes {net.image_size} px images")
        if states is not None:
            state = states[name]
            if "text_embeds" in state and tuple(state["text_embeds"].shape) != tuple(net.text_embeds.shape):
                raise ValueError(f"{what}: the train step's head has {state['text_embeds'].shape[0]} classes, "
                                 f"{key}.data.class_names lists {net.text_embeds.shape[0]}; rerun train")
            net.load_state_dict(state)
        if wnids is not None:
            index = column_index(wnids, columns, net.outputs, what)
            net.class_index = None if index is None else torch.tensor(index, dtype=torch.long)
        built[name] = net.to(device).eval()
    return built["source"], built["steering"]
