"""Offline text classification tasks for the federated clients, and the frozen MiniLM part.

Sentences are written from word lists and templates with a seeded generator:
- `topic` (6 classes): which topic a sentence is about; half of the sentences first name a
  noun of another topic that the sentence sets aside ("instead of the tennis final, ...").
- `topic_sentiment` (8 classes = 4 topics x 2 sentiments): topic and sentiment of the last
  clause; half of the sentences open with a clause of another topic and the opposite sentiment
  ("the bakery was lovely, but the software update was awful"), and "not" flips an adjective.
- `intent` (5 classes): what a request asks for (book, cancel, complain, ask for a price,
  thank), with polite frames and a negated decoy verb half of the time.

The clients fine-tune LoRA adapters in the last transformer layer of all-MiniLM-L6-v2, read
out at the [CLS] position by a linear head; the layers below are frozen and identical for every
client and round, so their output is computed once per sentence (`encode`), and the last layer
is evaluated at the [CLS] position only (`CLSLayerClassifier`), which keeps local training cheap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

TOPICS = {
    "sports": ["the football match", "the tennis final", "the marathon", "the basketball team", "the swimming race",
               "the goalkeeper", "the league table"],
    "food": ["the pasta recipe", "the chocolate cake", "the vegetable soup", "the bakery", "the spicy curry",
             "the breakfast menu", "the fresh bread"],
    "technology": ["the new laptop", "the software update", "the smartphone app", "the computer chip",
                   "the wireless network", "the programming language", "the robot"],
    "weather": ["the heavy rain", "the snow storm", "the sunny afternoon", "the strong wind", "the cold front",
                "the thunderstorm", "the forecast for tomorrow"],
    "music": ["the jazz concert", "the new album", "the piano lesson", "the guitar solo", "the choir",
              "the opera singer", "the rock band"],
    "travel": ["the train journey", "the flight to rome", "the beach resort", "the mountain hike", "the city tour",
               "the cruise ship", "the road trip"],
}
PEOPLE = ["my sister", "the teacher", "our neighbour", "a student", "the doctor", "my friend", "the driver",
          "his uncle", "the manager", "a farmer"]
TIMES = ["yesterday", "this morning", "last night", "today", "at lunch", "on the radio"]
POSITIVE = ["wonderful", "excellent", "delightful", "fantastic", "great", "lovely", "superb", "brilliant"]
NEGATIVE = ["terrible", "awful", "boring", "disappointing", "horrible", "dreadful", "poor", "annoying"]
INTENTS = {
    "book": ["book", "reserve", "schedule"],
    "cancel": ["cancel", "call off", "drop"],
    "complain": ["complain about", "report a problem with", "object to"],
    "price": ["know the price of", "find out the cost of", "ask how much is"],
    "thank": ["thank you for", "say thanks for", "express my gratitude for"],
}
SERVICES = ["the table for two", "my dentist appointment", "the hotel room", "the taxi", "the delivery", "the repair",
            "the yoga class", "the flight"]
TASKS = {"topic": 6, "topic_sentiment": 8, "intent": 5}


def _pick(rng, xs):
    return xs[int(rng.integers(len(xs)))]


def _sentence(task: str, rng: np.random.Generator) -> tuple[str, int]:
    names = list(TOPICS)
    if task == "topic":
        label = int(rng.integers(6))
        noun, person, time = _pick(rng, TOPICS[names[label]]), _pick(rng, PEOPLE), _pick(rng, TIMES)
        if rng.random() < 0.5:
            other = _pick(rng, TOPICS[names[(label + 1 + int(rng.integers(5))) % 6]])
            frame = _pick(rng, ["{p} ignored {d} and talked about {n} {t}.", "instead of {d}, {p} asked me about {n}.",
                                "not {d} but {n} was in the news {t}.", "{p} stopped reading about {d} and read about {n}."])
            return frame.format(p=person, d=other, n=noun, t=time), label
        frame = _pick(rng, ["{p} talked about {n} {t}.", "{p} read an article on {n}.", "everyone was discussing {n} {t}.",
                            "there was news about {n} {t}."])
        return frame.format(p=person, n=noun, t=time), label
    if task == "topic_sentiment":
        topic, positive = int(rng.integers(4)), int(rng.integers(2))
        label = 2 * topic + positive
        negate = rng.random() < 0.3
        adj = _pick(rng, POSITIVE if positive != negate else NEGATIVE)
        last = f"{_pick(rng, TOPICS[names[topic]])} was {'not ' if negate else ''}{adj}"
        if rng.random() < 0.5:
            other = (topic + 1 + int(rng.integers(3))) % 4
            first = f"{_pick(rng, TOPICS[names[other]])} was {_pick(rng, NEGATIVE if positive else POSITIVE)}"
            joint = _pick(rng, ["{f}, but {l}.", "although {f}, {l}.", "{f}; however {l}."])
            return joint.format(f=first, l=last), label
        return _pick(rng, ["{l}.", "i thought {l}.", "{p} said {l}."]).format(l=last, p=_pick(rng, PEOPLE)), label
    if task == "intent":
        label = int(rng.integers(5))
        keys = list(INTENTS)
        verb, what = _pick(rng, INTENTS[keys[label]]), _pick(rng, SERVICES)
        lead = _pick(rng, ["i would like to", "please help me", "can i", "i want to", "i need to"])
        if rng.random() < 0.5:
            decoy = _pick(rng, INTENTS[keys[(label + 1 + int(rng.integers(4))) % 5]])
            return f"i do not want to {decoy} {what}, {lead} {verb} it.", label
        return f"{lead} {verb} {what}.", label
    raise KeyError(f"unknown task '{task}'; known: {', '.join(TASKS)}")


def generate(task: str, n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """n (sentence, label) pairs of `task` from a generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    pairs = [_sentence(task, rng) for _ in range(n)]
    return [s for s, _ in pairs], np.asarray([y for _, y in pairs], dtype=np.int64)


@dataclass
class Encoded:
    """The hidden states entering the first trained layer, the attention masks and labels."""
    hidden: torch.Tensor   # (n, length, d) float32
    mask: torch.Tensor     # (n, length) int64
    labels: torch.Tensor   # (n,) int64


def _extended(mask: torch.Tensor) -> torch.Tensor:
    return (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min


@torch.no_grad()
def encode(tok, model, sentences: list[str], labels, lora_layers: int, max_length: int, batch_size: int = 256) -> Encoded:
    """Run the frozen embeddings and lower layers of the encoder once (all but the top
    `lora_layers`), padding to `max_length` tokens."""
    enc = tok(sentences, padding="max_length", truncation=True, max_length=max_length, return_tensors="pt")
    first = len(model.encoder.layer) - lora_layers
    hs = []
    for i in range(0, len(sentences), batch_size):
        ids = enc["input_ids"][i:i + batch_size]
        types = enc["token_type_ids"][i:i + batch_size] if "token_type_ids" in enc else None
        h = model.embeddings(input_ids=ids, token_type_ids=types)
        ext = _extended(enc["attention_mask"][i:i + batch_size])
        for layer in model.encoder.layer[:first]:
            h = layer(h, attention_mask=ext)
            h = h[0] if isinstance(h, tuple) else h
        hs.append(h)
    return Encoded(torch.cat(hs).contiguous(), enc["attention_mask"].contiguous(), torch.as_tensor(labels))


class CLSLayerClassifier(torch.nn.Module):
    """The last transformer layer of the encoder evaluated at the first ([CLS]) position only,
    and a linear head on it: input (hidden, mask) as cached by `encode` (lora_layers = 1).

    Exactly the layer's output at position 0 (test: against the full BertLayer): the query of
    the [CLS] token attends to the keys and values of every token, then the attention output
    projection, residual and LayerNorm, the feed-forward block, residual and LayerNorm. The
    linear maps are the submodules `query`, `key`, `value`, `attn_out`, `ffn_in`, `ffn_out`
    (the names LoRA targets use); the frozen ones may be shared by several clients' copies."""

    LINEARS = ("query", "key", "value", "attn_out", "ffn_in", "ffn_out")

    def __init__(self, layer=None, classes: int = 2, *, shared: "CLSLayerClassifier | None" = None):
        super().__init__()
        if shared is not None:  # same frozen modules, own head
            for name in self.LINEARS + ("ln1", "ln2"):
                setattr(self, name, getattr(shared, name))
            self.heads, self.act = shared.heads, shared.act
            self.head = torch.nn.Linear(shared.head.in_features, shared.head.out_features)
            self.head.load_state_dict(shared.head.state_dict())
            return
        att = layer.attention
        self.query, self.key, self.value = att.self.query, att.self.key, att.self.value
        self.heads = att.self.num_attention_heads
        self.attn_out, self.ln1 = att.output.dense, att.output.LayerNorm
        self.ffn_in, self.act = layer.intermediate.dense, layer.intermediate.intermediate_act_fn
        self.ffn_out, self.ln2 = layer.output.dense, layer.output.LayerNorm
        for p in self.parameters():
            p.requires_grad_(False)
        self.head = torch.nn.Linear(self.query.in_features, classes)

    def features(self, h, mask):
        b, n, d = h.shape
        hd = d // self.heads
        q = self.query(h[:, :1]).view(b, 1, self.heads, hd).transpose(1, 2)
        k = self.key(h).view(b, n, self.heads, hd).transpose(1, 2)
        v = self.value(h).view(b, n, self.heads, hd).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / hd ** 0.5 + _extended(mask)
        ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, d)
        x = self.ln1(self.attn_out(ctx) + h[:, 0])
        return self.ln2(self.ffn_out(self.act(self.ffn_in(x))) + x)

    def forward(self, h, mask):
        return self.head(self.features(h, mask))


def read_csv_task(data_dir, n_train: int, n_test: int, seed: int, key: str = "data_dir") -> tuple[list, np.ndarray, int, int]:
    """A real dataset instead of a generated task: `data_dir`/train.csv and test.csv with columns
    sentence, label (0..C-1); a seeded subsample of n_train and n_test rows (all when fewer).
    Returns the sentences (train first), labels, class count and the number of train rows."""
    from pathlib import Path

    from neurips26.core import io

    rng = np.random.default_rng(seed)
    sents, labels, counts = [], [], []
    for name, n in (("train.csv", n_train), ("test.csv", n_test)):
        path = Path(data_dir) / name
        if not path.exists():
            raise FileNotFoundError(f"config key '{key}': {path} does not exist")
        rows = io.read_csv(path)
        if rows and not {"sentence", "label"} <= set(rows[0]):
            raise ValueError(f"config key '{key}': {path} needs the columns sentence, label")
        take = np.sort(rng.permutation(len(rows))[:n])
        sents += [rows[i]["sentence"] for i in take]
        labels += [int(rows[i]["label"]) for i in take]
        counts.append(len(take))
    return sents, np.asarray(labels, dtype=np.int64), int(max(labels)) + 1, counts[0]


def prepare(task: str, n_train: int, n_test: int, seed: int, max_length: int, encoder_dir=None,
            key: str = "encoder", data_dir=None, data_key: str = "data_dir") -> tuple[Encoded, Encoded, int]:
    """Train and test sets of `task` drawn with `seed` (disjoint draws; or read from `data_dir`),
    encoded by the frozen lower layers of the packaged all-MiniLM-L6-v2 (or `encoder_dir`, any
    BERT-style encoder such as RoBERTa), and the class count."""
    from neurips26.core import lm

    tok, model = lm.load_minilm(encoder_dir, key=key)
    if data_dir:
        s, y, classes, n_train = read_csv_task(data_dir, n_train, n_test, seed, data_key)
        enc = encode(tok, model, s, y, 1, max_length)
        cut = lambda a, b: Encoded(enc.hidden[a:b].contiguous(), enc.mask[a:b].contiguous(), enc.labels[a:b].contiguous())  # noqa: E731
        return cut(0, n_train), cut(n_train, len(y)), classes
    s, y = generate(task, n_train + n_test, seed)
    enc = encode(tok, model, s, y, 1, max_length)
    cut = lambda a, b: Encoded(enc.hidden[a:b].contiguous(), enc.mask[a:b].contiguous(), enc.labels[a:b].contiguous())  # noqa: E731
    return cut(0, n_train), cut(n_train, n_train + n_test), TASKS[task]


def save(path, train: Encoded, test: Encoded, classes: int, task: str) -> None:
    from neurips26.core import io

    tensors = {f"{part}_{name}": getattr(data, name) for part, data in (("train", train), ("test", test))
               for name in ("hidden", "mask", "labels")}
    io.save_tensors(path, tensors, {"classes": str(classes), "task": task})


def load(path) -> tuple[Encoded, Encoded, int]:
    from neurips26.core import io

    t = io.load_tensors(path)
    meta = io.load_tensor_metadata(path)
    part = lambda p: Encoded(t[f"{p}_hidden"], t[f"{p}_mask"], t[f"{p}_labels"])  # noqa: E731
    return part("train"), part("test"), int(meta["classes"])


def last_layer(encoder_dir=None, classes: int = 2, key: str = "encoder") -> CLSLayerClassifier:
    """The frozen last layer of the encoder as a [CLS] classifier (the clients' base model)."""
    from neurips26.core import lm

    _, model = lm.load_minilm(encoder_dir, key=key)
    return CLSLayerClassifier(model.encoder.layer[-1], classes)
