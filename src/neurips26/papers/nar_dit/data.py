"""Image sets for nar_dit: generated shapes or digits here, pre-extracted ImageNet latents at
paper scale.

The latent layout is the one DiT-style feature extraction writes (fast-DiT's
`extract_features.py`): a features folder of `<i>.npy` files, each a (1, C, H, W) or (C, H, W)
VAE latent (already scaled by 0.18215), and a labels folder of matching `<i>.npy` class ids.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch


class LatentFolder(torch.utils.data.Dataset):
    """Pre-extracted latents and labels, read lazily (ImageNet-256: 1.28M files of 4x32x32)."""

    def __init__(self, features_dir: str | Path, labels_dir: str | Path):
        self.features_dir, self.labels_dir = Path(features_dir), Path(labels_dir)
        for folder, key in ((self.features_dir, "data.features_dir"), (self.labels_dir, "data.labels_dir")):
            if not folder.is_dir():
                raise FileNotFoundError(f"config key 'nar_dit.{key}': folder {folder} does not exist")
        self.files = sorted(self.features_dir.glob("*.npy"), key=lambda p: (len(p.stem), p.stem))
        if not self.files:
            raise FileNotFoundError(f"no .npy latents in {self.features_dir}")
        missing = [p.name for p in self.files[:1000] if not (self.labels_dir / p.name).exists()]
        if missing:
            raise FileNotFoundError(f"labels missing in {self.labels_dir} for {missing[:3]}")

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int):
        x = np.load(self.files[i], allow_pickle=False)
        y = np.load(self.labels_dir / self.files[i].name, allow_pickle=False)
        x = torch.from_numpy(np.asarray(x, dtype=np.float32))
        if x.ndim == 4:
            x = x[0]
        return x, torch.as_tensor(int(np.asarray(y).reshape(-1)[0]))

    def shape(self) -> tuple[int, ...]:
        return tuple(self[0][0].shape)


def synthetic(source: str, image_size: int, counts: dict[str, int], seed: int) -> dict[str, torch.Tensor]:
    """Disjoint splits (`train`, `heldout`, `reference`, ...) of a generated set, images in [0, 1]."""
    from neurips26.data.images import digits, shapes

    total = sum(counts.values())
    if source == "shapes":
        x, y = shapes(total, image_size, seed)
    elif source == "digits":
        x, y = digits(image_size)
        if total > len(x):
            raise ValueError(f"config key 'nar_dit.data': digits has {len(x)} images, {total} requested")
        order = np.random.default_rng(seed).permutation(len(x))[:total]
        x, y = x[order], y[order]
    else:
        raise ValueError(f"config key 'nar_dit.data.source': unknown synthetic source '{source}'")
    out, start = {}, 0
    for name, n in counts.items():
        out[f"{name}_x"] = torch.from_numpy(x[start:start + n])
        out[f"{name}_y"] = torch.from_numpy(y[start:start + n])
        start += n
    return out
