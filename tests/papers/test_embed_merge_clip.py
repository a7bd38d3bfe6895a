"""embed_merge at paper scale: the open_clip -> transformers converter on a tiny checkpoint built
by hand with open_clip's published state-dict names, checked against a forward pass written
here from open_clip's VisionTransformer; the zero-shot head and evaluation tensor builders."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from neurips26.core import io
from neurips26.papers.embed_merge import clip

WIDTH, LAYERS, HEADS, PATCH, GRID, EMBED, MLP = 16, 2, 2, 4, 2, 8, 32


def _open_clip_state(prefix: str = "visual.") -> dict:
    """A tiny open_clip ViT image tower (head width 8), named as open_clip's VisionTransformer
    names it: conv1, class_embedding, positional_embedding, ln_pre, transformer.resblocks.<i>
    .{ln_1, attn.in_proj_weight/bias, attn.out_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_post, proj."""
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g) * 0.2  # noqa: E731
    st = {"conv1.weight": r(WIDTH, 3, PATCH, PATCH), "class_embedding": r(WIDTH),
          "positional_embedding": r(GRID * GRID + 1, WIDTH), "ln_pre.weight": 1 + r(WIDTH), "ln_pre.bias": r(WIDTH),
          "ln_post.weight": 1 + r(WIDTH), "ln_post.bias": r(WIDTH), "proj": r(WIDTH, EMBED)}
    for i in range(LAYERS):
        b = f"transformer.resblocks.{i}."
        st |= {b + "ln_1.weight": 1 + r(WIDTH), b + "ln_1.bias": r(WIDTH),
               b + "attn.in_proj_weight": r(3 * WIDTH, WIDTH), b + "attn.in_proj_bias": r(3 * WIDTH),
               b + "attn.out_proj.weight": r(WIDTH, WIDTH), b + "attn.out_proj.bias": r(WIDTH),
               b + "ln_2.weight": 1 + r(WIDTH), b + "ln_2.bias": r(WIDTH),
               b + "mlp.c_fc.weight": r(MLP, WIDTH), b + "mlp.c_fc.bias": r(MLP),
               b + "mlp.c_proj.weight": r(WIDTH, MLP), b + "mlp.c_proj.bias": r(WIDTH)}
    out = {prefix + k: v for k, v in st.items()}
    out["logit_scale"] = torch.tensor(4.6)  # text-tower and other keys are ignored
    out["token_embedding.weight"] = r(10, WIDTH)
    return out


def _reference_forward(st: dict, images: torch.Tensor) -> torch.Tensor:
    """open_clip's VisionTransformer.forward (global token pool, QuickGELU), written out."""
    v = {k[len("visual."):]: t for k, t in st.items() if k.startswith("visual.")}
    x = F.conv2d(images, v["conv1.weight"], stride=PATCH)  # (b, width, grid, grid)
    x = x.reshape(x.shape[0], WIDTH, -1).permute(0, 2, 1)
    cls = v["class_embedding"].expand(x.shape[0], 1, WIDTH)
    x = torch.cat([cls, x], 1) + v["positional_embedding"]
    x = F.layer_norm(x, (WIDTH,), v["ln_pre.weight"], v["ln_pre.bias"])
    for i in range(LAYERS):
        p = lambda n: v[f"transformer.resblocks.{i}.{n}"]  # noqa: E731
        h = F.layer_norm(x, (WIDTH,), p("ln_1.weight"), p("ln_1.bias"))
        qkv = h @ p("attn.in_proj_weight").T + p("attn.in_proj_bias")
        q, k, val = qkv.split(WIDTH, -1)
        split = lambda t: t.reshape(t.shape[0], t.shape[1], HEADS, WIDTH // HEADS).transpose(1, 2)  # noqa: E731
        att = torch.softmax(split(q) @ split(k).transpose(-1, -2) / (WIDTH // HEADS) ** 0.5, -1) @ split(val)
        att = att.transpose(1, 2).reshape(x.shape)
        x = x + att @ p("attn.out_proj.weight").T + p("attn.out_proj.bias")
        h = F.layer_norm(x, (WIDTH,), p("ln_2.weight"), p("ln_2.bias"))
        h = h @ p("mlp.c_fc.weight").T + p("mlp.c_fc.bias")
        h = h * torch.sigmoid(1.702 * h)  # QuickGELU
        x = x + h @ p("mlp.c_proj.weight").T + p("mlp.c_proj.bias")
    return F.layer_norm(x[:, 0], (WIDTH,), v["ln_post.weight"], v["ln_post.bias"]) @ v["proj"]


@pytest.mark.parametrize("prefix", ["visual.", "model.visual."])
def test_open_clip_checkpoint_converts_to_a_transformers_folder_with_the_same_outputs(tmp_path, prefix):
    st = _open_clip_state(prefix)
    cfg = clip.open_clip_config(st, head_width=WIDTH // HEADS)
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.patch_size, cfg.image_size,
            cfg.intermediate_size, cfg.projection_dim) == (WIDTH, LAYERS, HEADS, PATCH, PATCH * GRID, MLP, EMBED)
    clip.convert_open_clip(st, tmp_path / "hf", head_width=WIDTH // HEADS)
    model = clip.load_vision(tmp_path / "hf")
    images = torch.randn(3, 3, PATCH * GRID, PATCH * GRID, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        got = model(pixel_values=images).image_embeds
    ref = _reference_forward({k[len(prefix) - len("visual."):]: t for k, t in st.items() if prefix in k}, images)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)
    # the ClipDomain backbone on the converted folder is the normalised embedding
    with torch.no_grad():
        torch.testing.assert_close(clip.ClipBackbone(model)(images), F.normalize(ref, dim=-1), rtol=1e-4, atol=1e-5)


def test_converter_refuses_a_state_dict_without_an_image_tower():
    with pytest.raises(KeyError, match="visual.conv1.weight"):
        clip.open_clip_to_hf({"token_embedding.weight": torch.zeros(3, 3)})


def test_zero_shot_head_matches_the_task_vector_recipe_in_numpy():
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((5, 3, 8))  # classes x templates x dim
    unit = emb / np.linalg.norm(emb, axis=-1, keepdims=True)
    mean = unit.mean(1)
    ref = 100.0 * mean / np.linalg.norm(mean, axis=-1, keepdims=True)
    got = clip.zero_shot_head(torch.from_numpy(emb), 100.0)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5)
    assert torch.equal(clip.head_from_state({"classification_head.weight": got}), got)


def test_evaluation_tensors_follow_clips_transform(tmp_path):
    from PIL import Image

    # a 12 x 8 image: left third red, the rest blue; resized to 12 x 8 -> crop the central 8 x 8
    arr = np.zeros((8, 12, 3), dtype=np.uint8)
    arr[:, :4] = (255, 0, 0)
    arr[:, 4:] = (0, 0, 255)
    for c, name in enumerate(("a", "b")):
        (tmp_path / "split" / name).mkdir(parents=True)
        Image.fromarray(arr if c == 0 else np.full((8, 8, 3), 128, np.uint8)).save(tmp_path / "split" / name / "0.png")
    classes = clip.image_folder_split(tmp_path / "split", tmp_path / "out.safetensors", size=8)
    t = io.load_tensors(tmp_path / "out.safetensors")
    assert classes == ["a", "b"] and t["labels"].tolist() == [0, 1] and t["images"].shape == (2, 3, 8, 8)
    mean, std = torch.tensor(clip.CLIP_MEAN), torch.tensor(clip.CLIP_STD)
    x = t["images"].float()
    # no resize (shorter side already 8); the crop keeps columns 2-9: red at 0-1, blue at 2-7
    torch.testing.assert_close(x[0, :, 4, 0], (torch.tensor([1.0, 0, 0]) - mean) / std, atol=2e-2, rtol=0)
    torch.testing.assert_close(x[0, :, 4, 6], (torch.tensor([0, 0, 1.0]) - mean) / std, atol=2e-2, rtol=0)
    torch.testing.assert_close(x[1], ((128 / 255 - mean) / std)[:, None, None].expand(3, 8, 8), atol=2e-3, rtol=0)
