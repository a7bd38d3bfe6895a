"""The two generated offline tasks of the zeroth-order harness, with their loaders and scorers.

Sentiment (for the packaged all-MiniLM-L6-v2, MeZO's SST-2 prompt setup read for a sentence
encoder). A review sentence x is drawn from templates: one or two clauses "the <aspect> was
[not] [intensifier] <adjective>", joined by "but" (the label is the polarity of the last
clause; "not" flips it), or "and" (both clauses agree). The prompt is
"<x> It was [MASK] ." and the two classes are the verbalizers "great" / "terrible", so with
h(.) the mean-pooled encoder output,

    p(y | x) = softmax_y( cos(h(prompt(x)), h("It was <verbalizer_y> .")) / T ),

the label words scored by the same (perturbed) model, no new head: zero-shot works from the
start and a zeroth-order method only moves the encoder. The lower encoder layers can be frozen
and cached once (`cache_below`), so a query runs only the tuned top layers.

Addition (for the tiny causal LMs of `lm_assets`, a verifiable reward). a + b with `digits`-digit
operands (zero-padded) and a (digits+1)-digit answer, every digit written as one symbol the
shared tokenizer knows (its corpora have no numerals): prompt "a_1 .. a_n PLUS b_1 .. b_n EQUALS "
and target "s_0 .. s_n ." The reward is verifiable: exact match of the completion's number, or
the dense share of answer symbols right (`addition_reward`); `teacher_forced_reward` scores the
greedy prediction of each answer symbol given the right prefix (one forward pass per batch),
`greedy_rewards` decodes freely.
"""

from __future__ import annotations

from typing import Sequence

import torch

# ---- sentiment ----------------------------------------------------------------------------------

POSITIVE = ("good", "great", "wonderful", "excellent", "delightful", "brilliant", "charming", "moving",
            "superb", "enjoyable", "fresh", "clever", "beautiful", "gripping", "funny", "warm")
NEGATIVE = ("bad", "terrible", "awful", "dull", "boring", "weak", "clumsy", "tedious", "poor",
            "bland", "painful", "messy", "stale", "shallow", "annoying", "lifeless")
ASPECTS = ("film", "movie", "plot", "acting", "script", "cast", "ending", "story", "music", "direction",
           "dialogue", "pacing", "camera work", "lead actor", "soundtrack", "humor")
INTENSIFIERS = ("", "", "really", "very", "quite", "truly", "rather", "simply")
VERBALIZERS = ("terrible", "great")  # label 0 = negative, 1 = positive
TEMPLATE = "{x} It was [MASK] ."
LABEL_TEMPLATE = "It was {word} ."


def prompt(text: str) -> str:
    """MeZO's SST-2 template: '<sentence> It was [MASK] .'"""
    return TEMPLATE.format(x=text)


def _clause(rng, polarity: int, negate: bool) -> str:
    words = POSITIVE if (polarity ^ negate) else NEGATIVE
    adj = words[int(rng.integers(len(words)))]
    aspect = ASPECTS[int(rng.integers(len(ASPECTS)))]
    inten = INTENSIFIERS[int(rng.integers(len(INTENSIFIERS)))]
    verb = "was not" if negate else "was"
    return " ".join(w for w in ("the", aspect, verb, inten, adj) if w)


def make_sentiment(n: int, seed: int, negation: float = 0.3, contrast: float = 0.4) -> list[dict]:
    """`n` labelled review sentences {'text', 'label'} (balanced in expectation)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    items = []
    for _ in range(n):
        label = int(rng.integers(2))
        last = _clause(rng, label, bool(rng.random() < negation))
        u = rng.random()
        if u < contrast:
            first = _clause(rng, 1 - label, bool(rng.random() < negation))
            text = f"{first} , but {last} ."
        elif u < contrast + 0.2:
            first = _clause(rng, label, bool(rng.random() < negation))
            text = f"{first} and {last} ."
        else:
            text = f"{last} ."
        items.append({"text": text[0].upper() + text[1:], "label": label})
    return items


def sentiment_splits(sizes: dict, seed: int, **kwargs) -> dict[str, list[dict]]:
    """Disjoint seeded splits, e.g. {'train': 512, 'val': 128, 'test': 256}; each split is drawn
    from its own seed (derived from `seed` and the split's position)."""
    return {name: make_sentiment(int(n), seed * 1000 + k, **kwargs) for k, (name, n) in enumerate(sizes.items())}


def _call_layer(layer, hidden, mask):
    out = layer(hidden, attention_mask=mask)
    return out[0] if isinstance(out, (tuple, list)) else out


class PromptClassifier:
    """Prompt-based two-class scorer on a BERT-style encoder (all-MiniLM-L6-v2): cosine between
    the mean-pooled prompt and the mean-pooled verbalizer sentences, over temperature T.
    Layers below `cache_below` are run once per item in `encode` (they must stay frozen)."""

    def __init__(self, tokenizer, encoder, temperature: float = 0.05, max_length: int = 48,
                 cache_below: int = 0):
        self.tok, self.enc = tokenizer, encoder.eval()
        self.temperature = float(temperature)
        self.max_length = int(max_length)
        self.layers = list(encoder.encoder.layer)
        if not 0 <= cache_below <= len(self.layers):
            raise ValueError(f"cache_below must be in 0..{len(self.layers)}, got {cache_below}")
        self.cache_below = int(cache_below)
        self.labels = self._lower([LABEL_TEMPLATE.format(word=w) for w in VERBALIZERS])

    def top_modules(self) -> list:
        """The encoder layers a query runs (the tunable part when lower layers are cached)."""
        return self.layers[self.cache_below:]

    def top_parameters(self) -> list[tuple[str, torch.nn.Parameter]]:
        return [(f"encoder.layer.{self.cache_below + i}.{n}", p)
                for i, layer in enumerate(self.top_modules()) for n, p in layer.named_parameters()]

    @torch.no_grad()
    def _lower(self, texts: Sequence[str]) -> dict:
        enc = self.tok(list(texts), return_tensors="pt", padding=True, truncation=True, max_length=self.max_length)
        mask = enc["attention_mask"]
        h = self.enc.embeddings(input_ids=enc["input_ids"], token_type_ids=enc.get("token_type_ids"))
        ext = (1.0 - mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
        if self.cache_below:
            for layer in self.layers[:self.cache_below]:
                h = _call_layer(layer, h, ext)
        return {"hidden": h, "mask": mask, "ext": ext}

    def encode(self, items: Sequence[dict]) -> dict:
        """A batch: the items' prompts run through the cached (frozen) lower layers, and labels."""
        batch = self._lower([prompt(it["text"]) for it in items])
        batch["labels"] = torch.tensor([int(it["label"]) for it in items])
        return batch

    @staticmethod
    def subset(batch: dict, idx) -> dict:
        """Rows `idx` of an encoded batch, trimmed to their longest sequence."""
        idx = torch.as_tensor(idx)
        mask = batch["mask"][idx]
        n = int(mask.sum(1).max())
        return {"hidden": batch["hidden"][idx, :n], "mask": mask[:, :n], "ext": batch["ext"][idx][..., :n],
                "labels": batch["labels"][idx]}

    def _pooled(self, part: dict) -> torch.Tensor:
        h = part["hidden"]
        for layer in self.top_modules():
            h = _call_layer(layer, h, part["ext"])
        m = part["mask"][..., None].to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp_min(1.0)

    @torch.no_grad()
    def logits(self, batch: dict) -> torch.Tensor:
        x = torch.nn.functional.normalize(self._pooled(batch), dim=-1)
        c = torch.nn.functional.normalize(self._pooled(self.labels), dim=-1)
        return x @ c.T / self.temperature

    def loss(self, batch: dict) -> float:
        """Mean cross-entropy of the batch (one forward pass / query)."""
        return float(torch.nn.functional.cross_entropy(self.logits(batch), batch["labels"]))

    def correct(self, batch: dict) -> list[int]:
        return (self.logits(batch).argmax(-1) == batch["labels"]).int().tolist()

    def accuracy(self, batch: dict) -> float:
        c = self.correct(batch)
        return sum(c) / max(1, len(c))


# ---- addition (verifiable reward) ---------------------------------------------------------------

# single letters that start words of the lm_assets corpora, so the shared BPE tokenizer has each
# as one token (the corpora hold no numerals)
DIGIT_SYMBOLS = ("r", "g", "p", "v", "s", "t", "l", "n", "k", "b")
PLUS, EQUALS, END = "m", "d", "."


def render_number(x: int, width: int, symbols: Sequence[str] = DIGIT_SYMBOLS) -> str:
    """x zero-padded to `width` digits, most significant first, one symbol per digit."""
    s = str(int(x)).zfill(width)
    if len(s) > width:
        raise ValueError(f"{x} has more than {width} digits")
    return " ".join(symbols[int(c)] for c in s)


def parse_number(text: str, symbols: Sequence[str] = DIGIT_SYMBOLS) -> int | None:
    """The number written by the symbols of `text` up to END; None if anything else appears."""
    index = {s: str(i) for i, s in enumerate(symbols)}
    digits = []
    for w in text.split():
        if w == END:
            break
        if w not in index:
            return None
        digits.append(index[w])
    return int("".join(digits)) if digits else None


def make_addition(n: int, digits: int, seed: int, symbols: Sequence[str] = DIGIT_SYMBOLS) -> list[dict]:
    """`n` addition problems {'a', 'b', 'answer', 'prompt', 'target'}; every prompt has the same
    number of tokens, and so has every target (digits + 1 answer symbols and END)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    hi = 10 ** int(digits)
    items = []
    for _ in range(n):
        a, b = int(rng.integers(hi)), int(rng.integers(hi))
        items.append({"a": a, "b": b, "answer": a + b,
                      "prompt": f"{render_number(a, digits, symbols)} {PLUS} {render_number(b, digits, symbols)} {EQUALS} ",
                      "target": f"{render_number(a + b, digits + 1, symbols)} {END}"})
    return items


def addition_reward(completion: str, item: dict, dense: bool = False,
                    symbols: Sequence[str] = DIGIT_SYMBOLS) -> float:
    """1.0 when the completion's number is the sum, else 0.0; with `dense`, the share of the
    target's symbols the completion has right, position by position."""
    if not dense:
        return float(parse_number(completion, symbols) == item["answer"])
    want, got = item["target"].split(), completion.split()
    return sum(1 for i, w in enumerate(want) if i < len(got) and got[i] == w) / len(want)


def check_tokens(tokenizer, texts: Sequence[str]) -> None:
    """Raise when a text needs the unknown token (a symbol the tokenizer does not have)."""
    unk = tokenizer.unk_token_id
    for t in texts:
        if unk is not None and unk in tokenizer(t)["input_ids"]:
            raise ValueError(f"the tokenizer has no token for a symbol of {t!r}; choose other symbols")


def _ids(tokenizer, texts: Sequence[str]) -> torch.Tensor:
    rows = [tokenizer(t)["input_ids"] for t in texts]
    if len({len(r) for r in rows}) != 1:
        raise ValueError("addition prompts of one batch must have the same token length")
    return torch.tensor(rows)


@torch.no_grad()
def teacher_forced_reward(model, tokenizer, items: Sequence[dict], batch_size: int = 64) -> list[float]:
    """Per item, the share of target tokens that are the model's argmax given the prompt and the
    right target prefix (a dense verifiable reward, one forward pass per batch)."""
    out = []
    for i in range(0, len(items), batch_size):
        chunk = items[i:i + batch_size]
        p = _ids(tokenizer, [it["prompt"] for it in chunk])
        full = _ids(tokenizer, [it["prompt"] + it["target"] for it in chunk])
        start = p.shape[1]
        logits = model(input_ids=full.to(model.device)).logits.cpu()
        pred = logits[:, start - 1:-1].argmax(-1)
        out.extend((pred == full[:, start:]).float().mean(1).tolist())
    return out


@torch.no_grad()
def answer_logprob(model, tokenizer, items: Sequence[dict], batch_size: int = 64) -> list[float]:
    """Per item, the mean log-probability of the target tokens given the prompt."""
    out = []
    for i in range(0, len(items), batch_size):
        chunk = items[i:i + batch_size]
        p = _ids(tokenizer, [it["prompt"] for it in chunk])
        full = _ids(tokenizer, [it["prompt"] + it["target"] for it in chunk])
        start = p.shape[1]
        logp = torch.log_softmax(model(input_ids=full.to(model.device)).logits.float().cpu(), -1)
        tgt = full[:, start:]
        out.extend(logp[:, start - 1:-1].gather(-1, tgt[..., None])[..., 0].mean(1).tolist())
    return out


@torch.no_grad()
def greedy_rewards(model, tokenizer, items: Sequence[dict], max_new_tokens: int | None = None,
                   batch_size: int = 64, dense: bool = False) -> list[float]:
    """Greedy decoding from each prompt, scored by `addition_reward`."""
    out = []
    for i in range(0, len(items), batch_size):
        chunk = items[i:i + batch_size]
        ids = _ids(tokenizer, [it["prompt"] for it in chunk]).to(model.device)
        steps = max_new_tokens or len(chunk[0]["target"].split())
        new = []
        for _ in range(steps):
            nxt = model(input_ids=ids).logits[:, -1].argmax(-1, keepdim=True)
            new.append(nxt)
            ids = torch.cat([ids, nxt], 1)
        gen = torch.cat(new, 1).cpu()
        for it, row in zip(chunk, gen):
            text = " ".join(tokenizer.convert_ids_to_tokens(row.tolist()))
            out.append(addition_reward(text, it, dense=dense))
    return out


class CausalPromptClassifier:
    """MeZO's prompt classification with a causal LM (OPT, Qwen3, the tiny Llama): the prompt
    "<sentence> It was" and the next-token log-probabilities of the verbalizers " terrible" /
    " great" (their first tokens) at its last position are the two class logits. Nothing is
    cached (`cache_below` = 0): a query runs the whole model, whose parameters are all tunable.
    Same interface as `PromptClassifier` (encode / logits / loss / correct / accuracy / subset)."""

    cache_below = 0

    def __init__(self, tokenizer, model, template: str = "{x} It was", verbalizers: Sequence[str] = (" terrible", " great"),
                 max_length: int = 128):
        self.tok, self.model = tokenizer, model.eval()
        self.template, self.max_length = template, int(max_length)
        ids = [tokenizer(v, add_special_tokens=False)["input_ids"] for v in verbalizers]
        if any(not i for i in ids):
            raise ValueError(f"a verbalizer of {list(verbalizers)} has no token")
        self.label_ids = torch.tensor([i[0] for i in ids])
        if len(set(self.label_ids.tolist())) != len(ids):
            raise ValueError(f"the verbalizers {list(verbalizers)} share their first token")

    def top_parameters(self) -> list[tuple[str, torch.nn.Parameter]]:
        return list(self.model.named_parameters())

    def encode(self, items: Sequence[dict]) -> dict:
        enc = self.tok([self.template.format(x=it["text"]) for it in items], return_tensors="pt", padding=True,
                       truncation=True, max_length=self.max_length)
        return {"input_ids": enc["input_ids"], "mask": enc["attention_mask"],
                "labels": torch.tensor([int(it["label"]) for it in items])}

    @staticmethod
    def subset(batch: dict, idx) -> dict:
        idx = torch.as_tensor(idx)
        mask = batch["mask"][idx]
        n = int(mask.sum(1).max())
        return {"input_ids": batch["input_ids"][idx, :n], "mask": mask[:, :n], "labels": batch["labels"][idx]}

    @torch.no_grad()
    def logits(self, batch: dict) -> torch.Tensor:
        dev = next(self.model.parameters()).device
        out = self.model(input_ids=batch["input_ids"].to(dev), attention_mask=batch["mask"].to(dev)).logits
        last = batch["mask"].sum(1) - 1  # right padding: the last real token of each row
        logp = torch.log_softmax(out[torch.arange(len(last)), last.to(dev)].float(), -1).cpu()
        return logp[:, self.label_ids]

    def loss(self, batch: dict) -> float:
        return float(torch.nn.functional.cross_entropy(self.logits(batch), batch["labels"]))

    def correct(self, batch: dict) -> list[int]:
        return (self.logits(batch).argmax(-1) == batch["labels"]).int().tolist()

    def accuracy(self, batch: dict) -> float:
        c = self.correct(batch)
        return sum(c) / max(1, len(c))
