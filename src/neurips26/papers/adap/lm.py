"""The real-generator instance: a tiny character-level transformer trained here on addition.

Problems "ab+cd=" with zero-padded two-digit operands, answers as three zero-padded digits written
least significant digit first ("07+15=220" for 22), the order in which carries are computed, which a
small model learns in a few hundred steps. The model is a small causal transformer (torch), trained with the cross-entropy of
the answer digits through the Lightning trainer. At test time it samples answers (temperature 1);
the verifier checks the exact answer. Two cheap scores are compared: the generator's own
log-probability of the answer, and a reward model separate from the generator (an MLP on the one-hot
digits of problem and answer, trained on the generator's answers to training problems labelled by
the verifier), as in the paper's generator + reward-model pipelines.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

VOCAB = "0123456789+="
STOI = {c: i for i, c in enumerate(VOCAB)}
PROMPT_LEN, ANSWER_LEN = 6, 3
SEQ_LEN = PROMPT_LEN + ANSWER_LEN


def encode(a: int, b: int) -> list[int]:
    return [STOI[c] for c in f"{a:02d}+{b:02d}={str(a + b).zfill(3)[::-1]}"]


def split_problems(max_operand: int, n_test: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """All (a, b) pairs with operands < max_operand, split into training pairs and held-out test pairs."""
    pairs = np.array([(a, b) for a in range(max_operand) for b in range(max_operand)])
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(pairs))
    return pairs[perm[n_test:]], pairs[perm[:n_test]]


def build_model(settings: dict):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x, mask):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class TinyLM(nn.Module):
        def __init__(self, dim, depth, heads):
            super().__init__()
            self.tok = nn.Embedding(len(VOCAB), dim)
            self.pos = nn.Parameter(torch.zeros(SEQ_LEN, dim))
            self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
            self.ln = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, len(VOCAB))
            nn.init.normal_(self.pos, std=0.02)

        def forward(self, idx):
            T = idx.shape[1]
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=idx.device), 1)
            x = self.tok(idx) + self.pos[:T]
            for blk in self.blocks:
                x = blk(x, mask)
            return self.head(self.ln(x))

    return TinyLM(settings["dim"], settings["depth"], settings["heads"])


def make_module(model, settings: dict):
    import lightning as L
    import torch
    import torch.nn.functional as F

    class AdditionLM(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = model

        def training_step(self, batch, _):
            (seq,) = batch
            logits = self.model(seq[:, :-1])
            # loss on the answer digits only (positions PROMPT_LEN .. SEQ_LEN-1 of the target)
            target = seq[:, PROMPT_LEN:]
            pred = logits[:, PROMPT_LEN - 1:]
            loss = F.cross_entropy(pred.reshape(-1, pred.shape[-1]), target.reshape(-1))
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def configure_optimizers(self):
            opt = torch.optim.AdamW(self.parameters(), lr=settings["lr"], weight_decay=0.01)
            # linear warm-up, then constant: a decaying rate stalls the short run before the model
            # has found the carry rule
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / settings["warmup_steps"]))
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    return AdditionLM()


def train(settings: dict, train_pairs: np.ndarray, out, seed: int):
    """Train the tiny LM for settings['steps'] steps through core.trainer; returns the model."""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from neurips26.core.trainer import fit, make_trainer

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    n = settings["steps"] * settings["batch_size"]
    idx = rng.integers(0, len(train_pairs), n)
    seqs = torch.tensor([encode(int(a), int(b)) for a, b in train_pairs[idx]], dtype=torch.long)
    loader = DataLoader(TensorDataset(seqs), batch_size=settings["batch_size"], shuffle=False)
    model = build_model(settings)
    module = make_module(model, settings)
    # the checkpoint key includes this file's code, so a changed data format never resumes an old model
    code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    trainer, ckpt = make_trainer(out, {"lm": settings, "seed": seed, "code": code}, settings["steps"],
                                 log_every_n_steps=50)
    fit(trainer, module, loader, ckpt_path=ckpt)
    return model.eval()


def sample_pool(model, test_pairs: np.ndarray, samples: int, temperature: float, seed: int) -> dict:
    """`samples` sampled answers per test prompt: answer value, log-probability score, correctness."""
    import torch

    g = torch.Generator().manual_seed(seed)
    prompts = torch.tensor([encode(int(a), int(b))[:PROMPT_LEN] for a, b in test_pairs], dtype=torch.long)
    seq = prompts.repeat_interleave(samples, 0)
    logp = torch.zeros(seq.shape[0])
    with torch.no_grad():
        for _ in range(ANSWER_LEN):
            logits = model(seq)[:, -1, :10] / temperature  # digits only
            lp = torch.log_softmax(logits, -1)
            nxt = torch.multinomial(lp.exp(), 1, generator=g)
            logp += lp.gather(1, nxt)[:, 0]
            seq = torch.cat([seq, nxt], 1)
    digits = seq[:, PROMPT_LEN:].numpy()
    answers = digits[:, 2] * 100 + digits[:, 1] * 10 + digits[:, 0]  # least significant digit first
    truth = np.repeat(test_pairs.sum(1), samples)
    return {"answers": answers.reshape(len(test_pairs), samples), "scores": logp.numpy().reshape(len(test_pairs), samples),
            "correct": (answers == truth).reshape(len(test_pairs), samples)}


def pool_instance(answers: np.ndarray, scores: np.ndarray, correct: np.ndarray):
    """The empirical generator of one prompt: each distinct answer is an atom with its sample
    frequency, its log-probability score and success 1 if it is the exact answer."""
    from .method import Instance

    values, first, counts = np.unique(answers, return_index=True, return_counts=True)
    return Instance(scores[first], counts.astype(float), correct[first].astype(float))


# ---------------------------------------------------------------- reward model (separate from the generator)
def rm_features(pairs: np.ndarray, answers: np.ndarray, max_operand: int) -> np.ndarray:
    """One-hot digits of the two operands and the answer: (rows, 4 x 10 + 3 x 10). `pairs` (rows, 2)."""
    del max_operand  # operands are always written with two digits
    digits = np.stack([pairs[:, 0] // 10, pairs[:, 0] % 10, pairs[:, 1] // 10, pairs[:, 1] % 10,
                       answers // 100, (answers // 10) % 10, answers % 10], 1).astype(int)
    out = np.zeros((len(pairs), digits.shape[1] * 10))
    out[np.arange(len(pairs))[:, None], np.arange(digits.shape[1])[None, :] * 10 + digits] = 1.0
    return out


def train_reward_model(model, train_pairs: np.ndarray, settings: dict, seed: int):
    """A reward model that is not the generator: an MLP classifier P(correct | problem, answer) on the
    one-hot digits, trained on answers the generator sampled for `rm_problems` training problems
    (never the held-out ones), labelled by the exact verifier. Returns (model, info)."""
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng([seed, 31])
    pick = train_pairs[rng.choice(len(train_pairs), min(int(settings["rm_problems"]), len(train_pairs)), replace=False)]
    pool = sample_pool(model, pick, int(settings["rm_samples"]), settings["temperature"], seed + 1)
    x = rm_features(np.repeat(pick, int(settings["rm_samples"]), 0), pool["answers"].ravel(), settings["max_operand"])
    y = pool["correct"].ravel().astype(int)
    if y.min() == y.max():
        raise ValueError("config keys 'adap.lm.rm_problems' / 'adap.lm.rm_samples': the reward model's training "
                         "answers are all correct or all wrong; sample more")
    rm = MLPClassifier(hidden_layer_sizes=(int(settings["rm_hidden"]),), max_iter=int(settings["rm_max_iter"]),
                       random_state=seed, early_stopping=False, alpha=1e-4)
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        rm.fit(x, y)
    return rm, {"rm_train_answers": int(len(y)), "rm_train_positive_rate": float(y.mean()),
                "rm_train_accuracy": float((rm.predict(x) == y).mean())}


def reward_scores(rm, test_pairs: np.ndarray, answers: np.ndarray, max_operand: int) -> np.ndarray:
    """log P(correct) of every sampled answer under the reward model, shaped like `answers`."""
    per = answers.shape[1]
    x = rm_features(np.repeat(test_pairs, per, 0), answers.ravel(), max_operand)
    p = rm.predict_proba(x)[:, 1]
    return np.log(np.clip(p, 1e-300, None)).reshape(answers.shape)
