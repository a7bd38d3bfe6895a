"""Calibration activations of a decoder-only LM (Llama, Qwen2, Mistral layout) at every site a
fusion operator needs, aligned across two models by words rather than tokens.

Sites of layer i: attn_in (input of q/k/v), q_out, k_out, v_out, o_in, o_out, mlp_in (input of
gate/up), gate_out, up_out, down_in, down_out, and hidden (the layer's output, residual
stream). Model-level sites: embed_out (token embeddings) and head_in (input of the LM head).
One activation row per word (the word's last token), so models with different tokenizers see
the same calibration positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# weight matrix -> (module path inside a decoder layer, input site, output site)
MATRICES = {
    "q_proj": ("self_attn.q_proj", "attn_in", "q_out"),
    "k_proj": ("self_attn.k_proj", "attn_in", "k_out"),
    "v_proj": ("self_attn.v_proj", "attn_in", "v_out"),
    "o_proj": ("self_attn.o_proj", "o_in", "o_out"),
    "gate_proj": ("mlp.gate_proj", "mlp_in", "gate_out"),
    "up_proj": ("mlp.up_proj", "mlp_in", "up_out"),
    "down_proj": ("mlp.down_proj", "down_in", "down_out"),
}
MODEL_MATRICES = ("embed_tokens", "lm_head")


def decoder_layers(model):
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None or not hasattr(layers[0], "self_attn") or not hasattr(layers[0].self_attn, "q_proj"):
        raise ValueError(f"{type(model).__name__}: merging needs a decoder with separate q/k/v/o and "
                         "gate/up/down projections (Llama, Qwen2, Mistral layout)")
    return list(layers)


def submodule(layer, path: str):
    mod = layer
    for part in path.split("."):
        mod = getattr(mod, part)
    return mod


@dataclass
class Activations:
    layers: list[dict[str, torch.Tensor]]     # per layer: site -> (N x d)
    model: dict[str, torch.Tensor]            # embed_out, head_in


def word_positions(text: str, offsets) -> list[int]:
    """Index of the last token of each whitespace-separated word (tokens never cross words here)."""
    ends = set()
    pos = 0
    for word in text.split():
        start = text.index(word, pos)
        pos = start + len(word)
        ends.add(pos)
    keep = {}
    for t, (a, b) in enumerate(offsets):
        if b > a and int(b) in ends:
            keep[int(b)] = t
    if len(keep) != len(ends):
        raise ValueError(f"the tokenizer's tokens do not end at every word boundary of {text[:60]!r}")
    return [keep[e] for e in sorted(ends)]


def count_words(texts: list[str]) -> int:
    return sum(len(t.split()) for t in texts)


@torch.no_grad()
def capture(model, tokenizer, texts: list[str], batch_size: int = 32, keep=None) -> Activations:
    """Activations at every site for every word of `texts` (rows in text order), or only for the
    words whose running index (over all words of `texts`, `count_words` in all) is in `keep`:
    the rows are subsampled while the batches are captured, never stored for every word."""
    layers = decoder_layers(model)
    store: dict = {}
    hooks = []

    def hook(key, which):
        def fn(_mod, inp, out):
            store[key] = (inp[0] if which == "in" else out).detach()
        return fn

    for i, layer in enumerate(layers):
        for name, (path, site_in, site_out) in MATRICES.items():
            mod = submodule(layer, path)
            hooks.append(mod.register_forward_hook(hook((i, site_in), "in")))
            hooks.append(mod.register_forward_hook(hook((i, site_out), "out")))
    hooks.append(model.get_input_embeddings().register_forward_hook(hook(("model", "embed_out"), "out")))
    hooks.append(model.get_output_embeddings().register_forward_hook(hook(("model", "head_in"), "in")))
    rows: dict = {}
    wanted = None if keep is None else torch.zeros(count_words(texts), dtype=torch.bool)
    if wanted is not None:
        wanted[torch.as_tensor(keep, dtype=torch.long)] = True
    seen = 0
    try:
        for b0 in range(0, len(texts), batch_size):
            chunk = texts[b0:b0 + batch_size]
            enc = tokenizer(chunk, return_tensors="pt", padding=True, return_offsets_mapping=True)
            out = model(input_ids=enc["input_ids"].to(model.device), attention_mask=enc["attention_mask"].to(model.device),
                        output_hidden_states=True)
            for i in range(len(layers)):
                store[(i, "hidden")] = out.hidden_states[i + 1]
            for r, text in enumerate(chunk):
                pos = torch.tensor(word_positions(text, enc["offset_mapping"][r].tolist()))
                if wanted is not None:
                    pos, seen = pos[wanted[seen:seen + len(pos)]], seen + len(pos)
                for key, val in store.items():
                    rows.setdefault(key, []).append(val[r, pos.to(val.device)].float().cpu())
            store.clear()  # the batch's full activations are dropped before the next one
    finally:
        for h in hooks:
            h.remove()
    cat = {k: torch.cat(v) for k, v in rows.items()}
    per_layer = [{site: cat[(i, site)] for (j, site) in cat if j == i} for i in range(len(layers))]
    return Activations(per_layer, {site: cat[("model", site)] for (j, site) in cat if j == "model"})


def subsample(acts: Activations, index: torch.Tensor) -> Activations:
    return Activations([{k: v[index] for k, v in layer.items()} for layer in acts.layers],
                       {k: v[index] for k, v in acts.model.items()})


def pearson(x: torch.Tensor, y: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Pearson correlation between every column of x (n x p) and of y (n x q)."""
    x = x.double() - x.double().mean(0)
    y = y.double() - y.double().mean(0)
    sx, sy = x.norm(dim=0).clamp_min(eps), y.norm(dim=0).clamp_min(eps)
    return ((x.T @ y) / (sx[:, None] * sy[None, :])).float()
