"""The shared language-model assets' steps (rules in workflow/rules/shared.smk), called as
`neurips26 lm_assets <step>`: corpora -> tokenizer -> pretrain (one job per model).

    corpora     generated corpora (data.lm_corpora format) under results/lm_assets/corpora
    tokenizer   BPE tokenizer trained on every corpus, Hugging Face folder
    pretrain    one tiny causal LM of the config's `lm_assets.models.<name>`, save_pretrained folder

A paper uses them by naming the outputs as inputs of its own rules, so they only run when a
paper that needs them is enabled.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ...core import io

def corpora(params: dict, inputs: dict, out: Path):
    from ...data import lm_corpora

    manifest = lm_corpora.generate(out, params["corpora"])
    io.write_json(out / "manifest.json", manifest)
    return None


def tokenizer(params: dict, inputs: dict, out: Path):
    from ...data import lm_corpora
    from ...core import lm

    folder = inputs["corpora"]
    manifest = lm_corpora.read_manifest(folder)
    texts = [line for name in sorted(manifest["corpora"]) for line in lm_corpora.read_lines(folder, name, "train")]
    tok = lm.train_tokenizer(texts, params["tokenizer"]["vocab_size"], out, params["tokenizer"]["min_frequency"])
    io.write_json(out / "tokenizer_info.json", {"vocab_size": len(tok), "train_sentences": len(texts)})
    return None


def pretrain(params: dict, inputs: dict, out: Path):
    """Pretrain the model named by params['model'] on its corpus mixture and save it."""
    import torch

    from ...data import lm_corpora
    from ...core import lm, tracking

    name = params["model"]
    if name not in params["models"]:
        raise ValueError(f"config key 'lm_assets.models' has no model '{name}'")
    spec = params["models"][name]
    folder = inputs["corpora"]
    manifest = lm_corpora.read_manifest(folder)
    unknown = set(spec["mixture"]) - set(manifest["corpora"])
    if unknown:
        raise ValueError(f"config key 'lm_assets.models.{name}.mixture': unknown corpora {sorted(unknown)}; "
                         f"the corpus folder has {sorted(manifest['corpora'])}")
    tok = lm.load_tokenizer(inputs["tokenizer"])
    corpora_text = {n: lm_corpora.read_lines(folder, n, "train") for n in spec["mixture"]}
    seed = int(spec["seed"])
    train = spec["train"]
    n_sentences = train["steps"] * train["batch_size"] * train["seq_len"] // 6 + 1000
    texts = lm.mixture_stream(corpora_text, spec["mixture"], n_sentences, seed)
    data = lm.pack_sequences(tok, texts, train["seq_len"])
    torch.manual_seed(seed)
    model = lm.build_model(spec["arch"], len(tok), spec["hidden"], spec["layers"], spec["heads"],
                           spec["intermediate"], max(train["seq_len"], 256), spec.get("tie_embeddings", False), tok)
    # a checkpoint resumes only a run on the same corpora and tokenizer, not just the same params
    digest = hashlib.sha256()
    for path in (Path(folder) / "manifest.json", Path(inputs["tokenizer"]) / "tokenizer.json"):
        digest.update(path.read_bytes())
    lm.pretrain(model, data, out, {**params, "inputs_sha256": digest.hexdigest()}, train["steps"], train["batch_size"], train["lr"],
                train["weight_decay"], train["warmup_steps"], seed)
    model.save_pretrained(str(out / "model"), safe_serialization=True)
    tok.save_pretrained(str(out / "model"))
    valid = {n: lm_corpora.read_lines(folder, n, "valid")[:64] for n in sorted(manifest["corpora"])}
    ppl = {n: lm.perplexity(model, tok, v) for n, v in valid.items()}
    tracking.active().log_metrics({f"valid_ppl_{n}": v for n, v in ppl.items()})
    io.write_json(out / "pretrain_metrics.json", {"parameters": lm.count_parameters(model), "valid_perplexity": ppl,
                                                  "sequences": int(data.shape[0])})
    return [p for p in out.rglob("*") if p.is_file() and "checkpoints" not in p.parts]
