"""The harness's generative task: causal-LM clients on E2E-style data-to-text, or on a real
instruction dataset (databricks-dolly-15k style JSONL) at paper scale.

Data-to-text reuses `data.data_to_text`: `make_data_to_text` writes records of 2 to 4 of the 4
fields of a venue (prompt: the fields in random order and a separator word; target: one
sentence naming the values in a fixed field order, one connective word per field, then an end
word), `lm_task` tokenizes prompt + target + eos with labels on the target and eos only.

Every item carries a class label for the Dirichlet split. Data-to-text: the number of fields
of the record minus 2 (classes 0, 1, 2 for 2, 3, 4 fields; about a third each). The label
changes what a client has to generate: the number of "<connective> <value>" clauses before the
end word and eos, i.e. the sentence's length and where it stops. A client holding mostly
2-field records learns to stop after two clauses and rarely sees the later fields' connectives
in context; under label skew the clients' targets differ in length and content, which is real
heterogeneity (not a relabelling). Dolly: the record's `category` (open_qa, brainstorming,
summarization, ...), sorted by name.

The clients (see `simulation`) are one causal LM with peft LoRA on `q_proj` and `v_proj` of
every decoder layer (`lora_targets` gives the full dotted module names); the frozen base
weights are shared by all clients (one tensor each). Loss: cross-entropy on target + eos tokens
(`LMData.labels`). Evaluation (`evaluate`): per item, teacher-forced exact match (every target
token and the eos is the argmax of the model given the gold prefix), which equals exact match
of greedy decoding (by induction over the target: greedy emits the gold token at every
position, then eos, exactly when each is the argmax after the gold prefix; tested against
`lora_harness.train.decode`), and the item's token accuracy (share of its target + eos tokens
that are the argmax).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from ...data.data_to_text import LMData, lm_task, make_data_to_text

TASK = "data_to_text"
CLASSES = 3  # 2, 3 or 4 fields per record
DOLLY_COLUMNS = ("instruction", "context", "response", "category")


@dataclass
class LMSet:
    """One split of a causal-LM task with a class label per row (the Dirichlet split's label)."""
    lm: LMData            # input_ids, labels (target + eos, -100 elsewhere), attention_mask
    label: torch.Tensor   # (n,) int64

    def __len__(self) -> int:
        return int(self.label.shape[0])


def field_count_label(target: str) -> int:
    """Class of a data-to-text target: its number of fields minus 2 (the target is
    '<connective> <value>' per field, then the end word; all single words)."""
    return (len(target.split()) - 1) // 2 - 2


def _split(lm: LMData, train_label, test_label) -> tuple[LMSet, LMSet]:
    test = lm.test
    lm.test = None
    return LMSet(lm, torch.as_tensor(train_label, dtype=torch.long)), LMSet(test, torch.as_tensor(test_label, dtype=torch.long))


def fit_length(tokenizer, items: list[dict], max_length: int) -> tuple[list[dict], int]:
    """The items whose prompt + target + eos fit `max_length` tokens, and how many were dropped."""
    keep = []
    for it in items:
        n = len(tokenizer(it["prompt"])["input_ids"]) + len(tokenizer(" " + it["target"], add_special_tokens=False)["input_ids"]) + 1
        if n <= max_length:
            keep.append(it)
    return keep, len(items) - len(keep)


def data_to_text(tokenizer, n_train: int, n_test: int, seed: int, max_length: int = 48) -> tuple[LMSet, LMSet, int]:
    """Train and test sets of the generated data-to-text task (disjoint draws of one seeded
    generator; the lexicon is the same for every seed), labelled by field count."""
    items = make_data_to_text(n_train + n_test, seed, tokenizer)
    labels = [field_count_label(it["target"]) for it in items]
    lm = lm_task(tokenizer, items[:n_train], items[n_train:], max_length)
    tr, te = _split(lm, labels[:n_train], labels[n_train:])
    return tr, te, CLASSES


def dolly_prompt(row: dict) -> str:
    ctx = row["context"].strip()
    return f"Instruction: {row['instruction'].strip()}\n" + (f"Context: {ctx}\n" if ctx else "") + "Response:"


def read_dolly(path, key: str = "lm.dataset_file") -> tuple[list[dict], list[str]]:
    """A databricks-dolly-15k style JSONL file (one object per line with instruction, context,
    response, category) as prompt/target items with a `category` class index, and the sorted
    category names. Errors name the config key and the file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"config key '{key}': {path} does not exist")
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"config key '{key}': {path} line {n} is not JSON ({err.msg})") from None
            missing = [c for c in DOLLY_COLUMNS if c not in row]
            if missing:
                raise ValueError(f"config key '{key}': {path} line {n} lacks the field(s) {', '.join(missing)} "
                                 f"(needs {', '.join(DOLLY_COLUMNS)})")
            rows.append(row)
    if not rows:
        raise ValueError(f"config key '{key}': {path} holds no records")
    names = sorted({str(r["category"]) for r in rows})
    index = {c: i for i, c in enumerate(names)}
    items = [{"prompt": dolly_prompt(r), "target": r["response"].strip(), "category": index[str(r["category"])]}
             for r in rows]
    return items, names


def dolly(tokenizer, path, n_train: int, n_test: int, seed: int, max_length: int,
          key: str = "lm.dataset_file") -> tuple[LMSet, LMSet, int, dict]:
    """Train and test sets from a Dolly-style file: the records longer than `max_length`
    tokens are dropped (counted), then a seeded permutation gives n_test test rows and up to
    n_train train rows. Returns the sets, the class (category) count and a report."""
    items, names = read_dolly(path, key)
    kept, dropped = fit_length(tokenizer, items, max_length)
    if len(kept) < 2:
        raise ValueError(f"config key '{key}': {len(kept)} of {len(items)} records of {path} fit "
                         f"max_length {max_length} tokens")
    perm = np.random.default_rng([seed, 71]).permutation(len(kept))
    n_te = min(n_test, len(kept) // 2)
    te = [kept[i] for i in np.sort(perm[:n_te])]
    tr = [kept[i] for i in np.sort(perm[n_te:n_te + n_train])]
    lm = lm_task(tokenizer, tr, te, max_length)
    a, b = _split(lm, [it["category"] for it in tr], [it["category"] for it in te])
    report = {"records": len(items), "dropped_too_long": dropped, "max_length": max_length, "categories": names,
              "n_train": len(tr), "n_test": len(te)}
    return a, b, len(names), report


# ---- model -----------------------------------------------------------------------------------

def load_base(name_or_path, key: str = "lm.model"):
    """(model, tokenizer) of any Hugging Face causal LM by folder or id through
    `neurips26.core.lm.load_model` (bfloat16 on CUDA when present, float32 on CPU), all frozen.
    The same code loads the lm_assets tiny Llama and a 7B."""
    from neurips26.core import lm

    local = Path(str(name_or_path))
    if str(name_or_path).startswith(("/", "./", "../")) and not local.exists():
        raise FileNotFoundError(f"config key '{key}': {local} does not exist")
    dtype = "bfloat16" if torch.cuda.is_available() else "float32"
    model = lm.load_model(name_or_path, dtype=dtype)
    tok = lm.load_tokenizer(name_or_path)
    for p in model.parameters():
        p.requires_grad_(False)
    return model, tok


def lora_targets(model, names=("q_proj", "v_proj"), key: str = "targets") -> list[str]:
    """Full dotted names of the Linear maps whose last name is one of `names`, in module order
    (q_proj and v_proj of every decoder layer of a Llama)."""
    out = [n for n, m in model.named_modules() if n.rsplit(".", 1)[-1] in names and isinstance(m, torch.nn.Linear)]
    if not out:
        raise ValueError(f"config key '{key}': the model has no Linear named {', '.join(names)}")
    return out


# ---- loss and evaluation ---------------------------------------------------------------------

def _rows(lm: LMData, idx, device=None):
    idx = torch.as_tensor(idx).cpu()
    mask = lm.attention_mask[idx]
    L = int(mask.sum(1).max())
    return lm.input_ids[idx, :L].to(device), mask[:, :L].to(device), lm.labels[idx, :L].to(device)


def loss(net, data: LMSet, idx, device=None) -> torch.Tensor:
    """Mean cross-entropy over the target + eos tokens of rows `idx` (next-token prediction)."""
    ids, mask, labels = _rows(data.lm, idx, device)
    logits = net(input_ids=ids, attention_mask=mask).logits[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels[:, 1:].reshape(-1), ignore_index=-100)


@torch.no_grad()
def evaluate(net, data: LMSet, batch: int = 128, device=None) -> tuple[np.ndarray, np.ndarray]:
    """Per item: teacher-forced exact match (0/1) and token accuracy over target + eos."""
    was = net.training
    net.eval()
    exact, acc = [], []
    try:
        for s in range(0, len(data), batch):
            ids, mask, labels = _rows(data.lm, range(s, min(s + batch, len(data))), device)
            pred = net(input_ids=ids, attention_mask=mask).logits[:, :-1].argmax(-1)
            gold = labels[:, 1:]
            on = gold != -100
            hit = (pred == gold) & on
            exact.append((hit | ~on).all(1).cpu())
            acc.append((hit.sum(1).float() / on.sum(1).clamp(min=1).float()).cpu())
    finally:
        net.train(was)
    return torch.cat(exact).double().numpy(), torch.cat(acc).double().numpy()


def per_class(values: np.ndarray, label: torch.Tensor, classes: int) -> np.ndarray:
    y = label.numpy()
    return np.asarray([float(values[y == c].mean()) if (y == c).any() else float("nan") for c in range(classes)])


# ---- storage ---------------------------------------------------------------------------------

def save(path, train: LMSet, test: LMSet, classes: int, info: dict | None = None) -> None:
    from neurips26.core import io

    tensors = {}
    for part, d in (("train", train), ("test", test)):
        for name in ("input_ids", "labels", "attention_mask"):
            tensors[f"{part}_{name}"] = getattr(d.lm, name).contiguous()
        tensors[f"{part}_label"] = d.label.contiguous()
    meta = {"classes": str(classes), "task": TASK, "kind": "lm",
            "prompts": json.dumps({"train": train.lm.prompts, "test": test.lm.prompts}),
            "targets": json.dumps({"train": train.lm.targets, "test": test.lm.targets})}
    if info:
        meta["info"] = json.dumps(info, sort_keys=True)
    io.save_tensors(path, tensors, meta)


def is_lm_file(path) -> bool:
    from neurips26.core import io

    return io.load_tensor_metadata(path).get("kind") == "lm"


def load(path, tokenizer=None) -> tuple[LMSet, LMSet, int]:
    from neurips26.core import io

    t = io.load_tensors(path)
    meta = io.load_tensor_metadata(path)
    prompts, targets = json.loads(meta["prompts"]), json.loads(meta["targets"])

    def part(p):
        lm = LMData(t[f"{p}_input_ids"], t[f"{p}_labels"], t[f"{p}_attention_mask"], prompts[p], targets[p],
                    tokenizer=tokenizer)
        return LMSet(lm, t[f"{p}_label"])

    return part("train"), part("test"), int(meta["classes"])
