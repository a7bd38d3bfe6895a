"""Data for Angular Nets: offline generated sets and loaders for the paper's real datasets.

Offline (default and smoke): `neurips26.data.images.shapes` (10 procedurally drawn classes,
RGB), scikit-learn's digits (sanity set), and a synthetic marker task for the encoder: a
sequence of random tokens holds k marked tokens and k is the class (0..9). Plain copies
of the marked values appear as distractors, and the head reads only [CLS], so the count
reaches it only through attention.

Real formats (config/paper.yaml):
- CIFAR-10, binary version: `data_batch_{1..5}.bin`, `test_batch.bin`; each record is one
  label byte then 3072 pixel bytes (1024 red, 1024 green, 1024 blue, row-major 32 x 32).
  The binary files are read with numpy, so no pickle is ever loaded.
- ImageNet in the torchvision ImageFolder layout: `<root>/<split>/<class>/<image>`, classes
  sorted by name; read with PIL, resized (shorter side) and centre-cropped.
- GLUE tasks as TSV (`train.tsv`, `dev.tsv`), with a word-level vocabulary built from train.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import numpy as np

PAD, CLS, SEP, MARK, UNK = 0, 1, 2, 3, 4
N_SPECIAL = 5


# ---------------------------------------------------------------- synthetic marker task
def marker_task(n: int, length: int, num_classes: int, num_distractors: int, seed: int):
    """ids (n, length) int64 with [CLS] first, attention mask, labels in [0, num_classes), vocab size.

    Tokens are plain values (10 ids), marked values (10 ids) and distractors. A sequence holds
    k marked tokens at random positions, k uniform in 0..num_classes-1, and k is the class.
    The head reads only [CLS], so the count reaches it only through attention."""
    rng = np.random.default_rng(seed)
    if num_classes > length - 1:
        raise ValueError(f"marker task: {num_classes} classes need sequences longer than {num_classes}")
    plain, marked = N_SPECIAL, N_SPECIAL + 10
    vocab = N_SPECIAL + 20 + num_distractors
    others = np.concatenate([np.arange(plain, plain + 10), np.arange(marked + 10, vocab)])
    ids = others[rng.integers(0, len(others), size=(n, length))]
    ids[:, 0] = CLS
    labels = rng.integers(0, num_classes, size=n)
    for i, k in enumerate(labels):
        pos = 1 + rng.permutation(length - 1)[:k]
        ids[i, pos] = marked + rng.integers(0, 10, size=k)
    return ids.astype(np.int64), np.ones_like(ids), labels.astype(np.int64), vocab


# ---------------------------------------------------------------- CIFAR-10 (binary version)
CIFAR_RECORD = 1 + 3 * 32 * 32


def read_cifar10_bin(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR-10 binary batch: images float32 (n, 3, 32, 32) in [0, 1] and labels int64."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"CIFAR-10 batch {path} does not exist")
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size % CIFAR_RECORD:
        raise ValueError(f"{path}: size {raw.size} is not a multiple of the {CIFAR_RECORD}-byte CIFAR-10 record")
    rec = raw.reshape(-1, CIFAR_RECORD)
    labels = rec[:, 0].astype(np.int64)
    if labels.max(initial=0) > 9:
        raise ValueError(f"{path}: label {labels.max()} out of range 0..9; is this the CIFAR-100 format?")
    return rec[:, 1:].reshape(-1, 3, 32, 32).astype(np.float32) / 255.0, labels


def load_cifar10(root: str | Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    root = Path(root)
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] if split == "train" else ["test_batch.bin"]
    present = [root / n for n in names if (root / n).exists()]
    if not present:
        raise FileNotFoundError(f"config key 'angular_nets.data.cifar10_dir': no {names[0]} in {root}")
    parts = [read_cifar10_bin(p) for p in present]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


# ---------------------------------------------------------------- ImageNet (ImageFolder)
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".webp"}


class ImageFolder:
    """torchvision's ImageFolder layout read with PIL: classes are the sorted sub-folders."""

    def __init__(self, root: str | Path, size: int):
        self.root, self.size = Path(root), int(size)
        if not self.root.is_dir():
            raise FileNotFoundError(f"config key 'angular_nets.data.imagenet_dir': folder {self.root} does not exist")
        self.classes = sorted(p.name for p in self.root.iterdir() if p.is_dir())
        self.samples = [(f, i) for i, c in enumerate(self.classes) for f in sorted((self.root / c).iterdir())
                        if f.suffix.lower() in IMAGE_SUFFIXES]
        if not self.samples:
            raise FileNotFoundError(f"{self.root}: no images in class sub-folders")

    def __len__(self):
        return len(self.samples)

    def load(self, index: int) -> np.ndarray:
        from PIL import Image

        path, _ = self.samples[index]
        with Image.open(path) as im:
            im = im.convert("RGB")
            w, h = im.size
            scale = self.size / min(w, h)
            im = im.resize((max(self.size, round(w * scale)), max(self.size, round(h * scale))), Image.BILINEAR)
            w, h = im.size
            left, top = (w - self.size) // 2, (h - self.size) // 2
            im = im.crop((left, top, left + self.size, top + self.size))
            return np.asarray(im, dtype=np.float32).transpose(2, 0, 1) / 255.0

    def __getitem__(self, index):
        import torch

        return torch.from_numpy(self.load(index)), torch.tensor(self.samples[index][1])


# ---------------------------------------------------------------- GLUE (TSV)
# task -> (first text column, second text column or None, label column); CoLA has no header
GLUE_COLUMNS = {
    "sst2": ("sentence", None, "label"), "mrpc": ("#1 String", "#2 String", "Quality"),
    "qnli": ("question", "sentence", "label"), "rte": ("sentence1", "sentence2", "label"),
    "qqp": ("question1", "question2", "is_duplicate"), "cola": (3, None, 1),
}
GLUE_LABELS = {"qnli": ["entailment", "not_entailment"], "rte": ["entailment", "not_entailment"]}


def read_glue_tsv(path: str | Path, task: str) -> tuple[list[str], list[str | None], list[int]]:
    path = Path(path)
    if task not in GLUE_COLUMNS:
        raise ValueError(f"config key 'angular_nets.data.glue_task': unknown task {task!r}; one of {sorted(GLUE_COLUMNS)}")
    if not path.exists():
        raise FileNotFoundError(f"GLUE file {path} does not exist")
    a_col, b_col, y_col = GLUE_COLUMNS[task]
    texts_a, texts_b, labels = [], [], []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = None if task == "cola" else next(reader)
        for line_no, row in enumerate(reader, start=2 if header else 1):
            get = (lambda c: row[c]) if header is None else (lambda c: row[header.index(c)])
            try:
                label = get(y_col)
                texts_a.append(get(a_col))
                texts_b.append(get(b_col) if b_col is not None else None)
            except (IndexError, ValueError) as exc:
                raise ValueError(f"{path}:{line_no}: malformed GLUE row ({exc})") from None
            names = GLUE_LABELS.get(task)
            labels.append(names.index(label) if names else int(label))
    return texts_a, texts_b, labels


def _words(text: str) -> list[str]:
    return "".join(c.lower() if c.isalnum() else f" {c} " if not c.isspace() else " " for c in text).split()


def build_vocab(texts: list[str], size: int) -> dict[str, int]:
    counts = Counter(w for t in texts for w in _words(t))
    return {w: i + N_SPECIAL for i, (w, _) in enumerate(counts.most_common(size - N_SPECIAL))}


def encode(texts_a, texts_b, vocab: dict[str, int], max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """[CLS] a [SEP] (b [SEP]), truncated to max_len, padded with [PAD]; and the mask."""
    ids = np.full((len(texts_a), max_len), PAD, dtype=np.int64)
    for i, (a, b) in enumerate(zip(texts_a, texts_b)):
        seq = [CLS] + [vocab.get(w, UNK) for w in _words(a)] + [SEP]
        if b is not None:
            seq += [vocab.get(w, UNK) for w in _words(b)] + [SEP]
        seq = seq[:max_len]
        ids[i, :len(seq)] = seq
    return ids, (ids != PAD).astype(np.int64)
