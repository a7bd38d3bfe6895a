"""Dirichlet label-skew client splits (Hsu et al., 2019; the usual non-IID protocol).

For every class c, a share vector q_c ~ Dir(alpha * 1_N) over the N clients; the examples of
class c (in a seeded random order) are cut at the cumulative shares. Small alpha gives each
client few classes (alpha = 0.1: nearly one class per client), large alpha approaches the IID
split (alpha = 10). Draws are repeated (at most `max_tries`) until every client holds at least
`min_size` examples, as in the reference implementations.
"""

from __future__ import annotations

import numpy as np


def dirichlet_split(labels, n_clients: int, alpha: float, rng: np.random.Generator, min_size: int = 1,
                    max_tries: int = 1000) -> list[np.ndarray]:
    """Index arrays (sorted) of the examples each client holds; every example goes to one client."""
    labels = np.asarray(labels)
    if alpha <= 0:
        raise ValueError(f"alpha must be positive, got {alpha}")
    if n_clients * min_size > len(labels):
        raise ValueError(f"{n_clients} clients x {min_size} examples need more than the {len(labels)} given")
    classes = np.unique(labels)
    for _ in range(max_tries):
        parts: list[list[int]] = [[] for _ in range(n_clients)]
        for c in classes:
            idx = np.flatnonzero(labels == c)
            idx = idx[rng.permutation(len(idx))]
            q = rng.dirichlet(np.full(n_clients, float(alpha)))
            cuts = (np.cumsum(q)[:-1] * len(idx)).astype(int)
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_size:
            return [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]
    raise ValueError(f"no Dirichlet split with alpha={alpha} gave every one of {n_clients} clients "
                     f"{min_size} examples in {max_tries} draws")


def label_shares(labels, parts: list[np.ndarray], n_classes: int) -> np.ndarray:
    """(clients x classes) share of each class in each client's data (rows sum to 1)."""
    labels = np.asarray(labels)
    out = np.zeros((len(parts), n_classes))
    for k, p in enumerate(parts):
        counts = np.bincount(labels[p], minlength=n_classes).astype(float)
        out[k] = counts / max(1.0, counts.sum())
    return out


def holdout(parts, fraction: float, rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
    """A validation split (the tune steps): each client's examples split into the ones it trains
    on and `fraction` of them held out (at least one of each when the client has two or more);
    returns the training parts and the sorted indices of every held-out example."""
    train_parts, held = [], []
    for part in parts:
        part = np.asarray(part)
        k = int(round(fraction * len(part)))
        k = min(max(k, 1 if len(part) > 1 else 0), len(part) - 1)
        order = rng.permutation(len(part))
        held.append(part[order[:k]])
        train_parts.append(np.sort(part[order[k:]]))
    return train_parts, np.sort(np.concatenate(held)) if held else np.zeros(0, dtype=np.int64)


def subset(data, idx):
    """The rows `idx` of a classification set (`tasks.Encoded`) or of a generative one (`LMSet`)."""
    import torch

    from neurips26.papers.fed_harness import generative, tasks

    idx = torch.as_tensor(np.asarray(idx), dtype=torch.long)
    if isinstance(data, generative.LMSet):
        from neurips26.data.data_to_text import LMData

        lm, rows = data.lm, idx.tolist()
        part = LMData(lm.input_ids[idx], lm.labels[idx], lm.attention_mask[idx],
                      [lm.prompts[i] for i in rows] if lm.prompts else [],
                      [lm.targets[i] for i in rows] if lm.targets else [], tokenizer=lm.tokenizer)
        return generative.LMSet(part, data.label[idx])
    return tasks.Encoded(data.hidden[idx], data.mask[idx], data.labels[idx])
