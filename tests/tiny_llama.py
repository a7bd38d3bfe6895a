"""A tiny Llama and its BPE tokenizer, trained on nonsense words in a test's temporary folder
(tests of the harnesses that fine-tune causal LMs)."""

import numpy as np
import torch


def tiny_llama(folder):
    from neurips26.core import lm

    rng = np.random.default_rng(0)
    syll = ["ka", "lo", "mi", "nu", "pe", "ro", "sa", "ti", "vu", "ze"]
    words = sorted({"".join(rng.choice(syll, size=3)) for _ in range(120)})
    texts = [" ".join(rng.choice(words, size=8)) for _ in range(600)]
    lm.train_tokenizer(texts, vocab_size=300, out=folder)
    tok = lm.load_tokenizer(folder)
    torch.manual_seed(0)
    model = lm.build_model("llama", len(tok), 32, 2, 2, 64, 128, tokenizer=tok)
    for p in model.parameters():
        p.requires_grad_(False)
    return tok, model
