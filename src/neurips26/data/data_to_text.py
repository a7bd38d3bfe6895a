"""E2E-style data-to-text for the tiny causal LMs of `lm_assets` (the LoRA and federated
harnesses both use it).

`make_data_to_text`: an E2E-style meaning representation, 2 to 4 of the fields of a venue in
random order ("<k1> <v1> <k3> <v3> ..."), to be realised as one sentence that names the values in
a fixed order with a connective word per field. Field names, values and connectives are whole
words of the shared tokenizer (so no unknown tokens), drawn with the seed. `read_e2e_csv` reads
the real E2E NLG files (columns `mr`, `ref`) at paper scale; `lm_task` tokenizes them (`LMData`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import torch


@dataclass
class LMData:
    """A causal-LM task: token ids right-padded, labels -100 outside the target, the mask, and
    the prompt / target strings (for decoding)."""
    input_ids: torch.Tensor       # (n, L) int64
    labels: torch.Tensor          # (n, L) int64
    attention_mask: torch.Tensor  # (n, L) int64
    prompts: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    test: "LMData | None" = None
    tokenizer: object = None      # the tokenizer that wrote the ids (decoding)

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


# ---- data-to-text -----------------------------------------------------------------------------

FIELDS = 4
VALUES = 6


def lexicon(tokenizer, seed: int) -> dict:
    """Seeded choice of field names, values and connectives among the tokenizer's whole words."""
    vocab = tokenizer.get_vocab()
    special = set(tokenizer.all_special_tokens)
    words = sorted(w for w in vocab if w.isalpha() and len(w) >= 3 and not w.startswith("##") and w not in special)
    need = FIELDS * (VALUES + 2) + 2
    if len(words) < need:
        raise ValueError(f"the tokenizer has {len(words)} whole words of 3+ letters; the data-to-text task needs {need}")
    rng = np.random.default_rng([seed, 53])
    pick = [words[i] for i in rng.permutation(len(words))[:need]]
    keys, conn = pick[:FIELDS], pick[FIELDS:2 * FIELDS]
    vals = [pick[2 * FIELDS + k * VALUES: 2 * FIELDS + (k + 1) * VALUES] for k in range(FIELDS)]
    return {"keys": keys, "connectives": conn, "values": vals, "separator": pick[-2], "end": pick[-1]}


def realise(lex: dict, fields: dict[int, int]) -> str:
    """The reference sentence of a record {field: value index}: fields in their fixed order,
    each as '<connective> <value>', closed by the end word."""
    parts = [f"{lex['connectives'][k]} {lex['values'][k][v]}" for k, v in sorted(fields.items())]
    return " ".join(parts + [lex["end"]])


def make_data_to_text(n: int, seed: int, tokenizer, lex_seed: int = 0) -> list[dict]:
    """n records: prompt = the fields in random order and the separator word, target = the
    sentence (`realise`). The lexicon depends on `lex_seed` only (the same task for every seed)."""
    lex = lexicon(tokenizer, lex_seed)
    rng = np.random.default_rng([seed, 59])
    items = []
    for _ in range(n):
        k = int(rng.integers(2, FIELDS + 1))
        chosen = sorted(int(i) for i in rng.choice(FIELDS, size=k, replace=False))
        rec = {f: int(rng.integers(VALUES)) for f in chosen}
        order = [chosen[i] for i in rng.permutation(k)]
        prompt = " ".join(f"{lex['keys'][f]} {lex['values'][f][rec[f]]}" for f in order) + f" {lex['separator']}"
        items.append({"prompt": prompt, "target": realise(lex, rec)})
    return items


def read_e2e_csv(path, n: int | None = None, seed: int = 0, key: str = "data.e2e_dir") -> list[dict]:
    """E2E NLG rows (columns `mr`, `ref`) as prompt/target items; a seeded subsample of n."""
    import csv

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"config key '{key}': {path} does not exist")
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if rows and not {"mr", "ref"} <= set(rows[0]):
        raise ValueError(f"config key '{key}': {path} needs the columns mr, ref")
    if n is not None and n < len(rows):
        rows = [rows[i] for i in np.sort(np.random.default_rng(seed).permutation(len(rows))[:n])]
    return [{"prompt": r["mr"].strip() + " =", "target": r["ref"].strip()} for r in rows]


def lm_task(tokenizer, train_items: Sequence[dict], test_items: Sequence[dict], max_len: int = 48) -> LMData:
    """Tokenize prompt + target + eos (the tokenizer's own prefix, e.g. <bos>, first); labels
    are the target and eos tokens, -100 elsewhere; right padding."""
    def build(items):
        ids, labels = [], []
        for it in items:
            p = tokenizer(it["prompt"])["input_ids"]
            t = tokenizer(" " + it["target"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            if len(p) + len(t) > max_len:
                raise ValueError(f"an example needs {len(p) + len(t)} tokens, above max_len {max_len}: {it['prompt']!r}")
            ids.append(p + t)
            labels.append([-100] * len(p) + t)
        L = max(len(x) for x in ids)
        pad = tokenizer.pad_token_id
        X = torch.full((len(ids), L), pad, dtype=torch.long)
        Y = torch.full((len(ids), L), -100, dtype=torch.long)
        M = torch.zeros((len(ids), L), dtype=torch.long)
        for i, (x, y) in enumerate(zip(ids, labels)):
            X[i, :len(x)], Y[i, :len(y)], M[i, :len(x)] = torch.tensor(x), torch.tensor(y), 1
        return LMData(X, Y, M, [it["prompt"] for it in items], [it["target"] for it in items], tokenizer=tokenizer)

    train = build(train_items)
    train.test = build(test_items)
    return train
