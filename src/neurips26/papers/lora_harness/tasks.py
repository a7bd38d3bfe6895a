"""The harness's tasks: GLUE-style classification for MiniLM and E2E-style data-to-text for the
tiny causal LMs.

Classification (`CLS_TASKS`): `topic_sentiment` (8 classes) and `intent` (5) are the federated
harness's single-sentence generators (`data.text_classification`); `paraphrase` (2) is a sentence
pair in the style of MRPC/QQP: two sentences of the `topic_sentiment` generator, label 1 when
they say the same thing (same topic and same sentiment of the final clause, written
differently), 0 otherwise, and half of the negatives are hard (same topic, opposite sentiment,
so the words overlap most). The pair is encoded as BERT's "[CLS] a [SEP] b [SEP]". Everything
below the last layer is run once (`data.text_classification.encode`).

Data-to-text (`make_data_to_text`, from `data.data_to_text`): an E2E-style meaning representation, 2 to 4 of the fields
of a venue in random order ("<k1> <v1> <k3> <v3> ..."), to be realised as one sentence that
names the values in a fixed order with a connective word per field. Field names, values and
connectives are whole words of the shared tokenizer (so no unknown tokens), drawn with the seed.
Scored by exact match, BLEU-4 and ROUGE-L (`train.evaluate`). `read_e2e_csv` reads the real E2E
NLG files (columns `mr`, `ref`) at paper scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ...data import text_classification as fed_tasks
# the data-to-text task, under the names the harness has always given it
from ...data.data_to_text import FIELDS, VALUES, LMData, lexicon, lm_task, make_data_to_text, read_e2e_csv, realise  # noqa: F401
from ...data.text_classification import Encoded

CLS_TASKS = {"topic_sentiment": 8, "intent": 5, "paraphrase": 2}
PAIR_TASKS = ("paraphrase",)


@dataclass
class ClsData:
    """A classification task encoded below the last layer: train and test, the class count."""
    train: Encoded
    test: Encoded
    classes: int
    task: str = ""


# ---- classification ---------------------------------------------------------------------------

def generate_pairs(n: int, seed: int) -> tuple[list[str], list[str], np.ndarray]:
    """n sentence pairs of the `paraphrase` task (about half positive)."""
    rng = np.random.default_rng([seed, 31])
    pool_s, pool_y = fed_tasks.generate("topic_sentiment", 8 * n + 64, seed=int(rng.integers(2**31)))
    by_label = {c: [i for i, y in enumerate(pool_y) if y == c] for c in range(8)}
    first, second, labels = [], [], []
    for _ in range(n):
        i = int(rng.integers(len(pool_s)))
        y = int(pool_y[i])
        if rng.random() < 0.5:
            c, lab = y, 1
        elif rng.random() < 0.5:
            c, lab = y ^ 1, 0  # same topic, opposite sentiment
        else:
            c, lab = int((y // 2 + 1 + rng.integers(3)) % 4) * 2 + int(rng.integers(2)), 0
        cands = [j for j in by_label[c] if pool_s[j] != pool_s[i]]
        j = cands[int(rng.integers(len(cands)))]
        first.append(pool_s[i])
        second.append(pool_s[j])
        labels.append(lab)
    return first, second, np.asarray(labels, dtype=np.int64)


class _PairTokenizer:
    """Calls the tokenizer on (first, second) pairs whatever sentences `encode` passes."""

    def __init__(self, tok, second: Sequence[str]):
        self.tok, self.second = tok, list(second)

    def __call__(self, first, **kwargs):
        return self.tok(list(first), self.second, **kwargs)


def _cut(enc: Encoded, a: int, b: int) -> Encoded:
    return Encoded(enc.hidden[a:b].contiguous(), enc.mask[a:b].contiguous(), enc.labels[a:b].contiguous())


def prepare_classification(task: str, n_train: int, n_test: int, seed: int, max_length: int = 48,
                           encoder_dir=None, data_dir=None, key: str = "data") -> ClsData:
    """Train and test sets of `task` (disjoint draws of one seeded generator; or `data_dir`'s
    train.csv/test.csv with columns sentence[, sentence2], label), encoded by the frozen lower
    layers of all-MiniLM-L6-v2 (or `encoder_dir`, a BERT-style encoder)."""
    from neurips26.core import io, lm

    if task not in CLS_TASKS and not data_dir:
        raise ValueError(f"config key '{key}.task': unknown task '{task}' (one of {sorted(CLS_TASKS)})")
    tok, model = lm.load_minilm(encoder_dir)
    n = n_train + n_test
    if data_dir:
        rows = []
        for name, k in (("train.csv", n_train), ("test.csv", n_test)):
            path = Path(data_dir) / name
            if not path.exists():
                raise FileNotFoundError(f"config key '{key}.data_dir': {path} does not exist")
            part = io.read_csv(path)
            take = np.sort(np.random.default_rng(seed).permutation(len(part))[:k])
            rows += [part[i] for i in take]
            if name == "train.csv":
                n_train = len(take)
        first = [r["sentence"] for r in rows]
        second = [r["sentence2"] for r in rows] if rows and "sentence2" in rows[0] else None
        labels = np.asarray([int(r["label"]) for r in rows], dtype=np.int64)
        classes, n = int(labels.max()) + 1, len(rows)
    elif task in PAIR_TASKS:
        first, second, labels = generate_pairs(n, seed)
        classes = CLS_TASKS[task]
    else:
        first, labels = fed_tasks.generate(task, n, seed)
        second, classes = None, CLS_TASKS[task]
    torch_tok = _PairTokenizer(tok, second) if second is not None else tok
    enc = fed_tasks.encode(torch_tok, model, first, labels, 1, max_length)
    return ClsData(_cut(enc, 0, n_train), _cut(enc, n_train, n), classes, task)


def split_validation(data, n_val: int, seed: int):
    """The tuning task of a ClsData / LMData: its training set minus n_val held-out rows (a
    seeded permutation) as train, those rows as test. Tune on it; train the tuned setting on
    the full training set and report the real test set."""
    if isinstance(data, ClsData):
        n = len(data.train.labels)
    else:
        n = len(data)
    if not 0 < n_val < n:
        raise ValueError(f"validation size {n_val} must lie between 0 and the {n} training rows")
    perm = torch.from_numpy(np.random.default_rng([seed, 97]).permutation(n))
    tr, va = perm[: n - n_val].sort().values, perm[n - n_val:].sort().values
    if isinstance(data, ClsData):
        pick = lambda idx: Encoded(data.train.hidden[idx], data.train.mask[idx], data.train.labels[idx])  # noqa: E731
        return ClsData(pick(tr), pick(va), data.classes, data.task)
    sub = lambda idx: LMData(data.input_ids[idx], data.labels[idx], data.attention_mask[idx],  # noqa: E731
                             [data.prompts[i] for i in idx], [data.targets[i] for i in idx])
    out = sub(tr)
    out.test = sub(va)
    out.tokenizer = out.test.tokenizer = data.tokenizer
    return out
