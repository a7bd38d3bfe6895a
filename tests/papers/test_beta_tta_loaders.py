"""beta_tta's paper-scale path, offline: tiny random transformers ViT / CLIP checkpoints saved in
tmp folders and tiny JPEG folders in the ImageNet-C / ImageNet-R layouts.

References: the HF models' own logits (ViT) and logits_per_image (CLIP); for the prompt, the same
HF model with the prompt folded into its position embeddings of the patch tokens (an additive
offset before the positions is an offset of the positions); the HF modules' own LayerNorms;
hand-made images for the readers; and the train -> adapt steps end to end."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")
from PIL import Image  # noqa: E402
from transformers import CLIPConfig, CLIPModel, CLIPTokenizer, ViTConfig, ViTForImageClassification  # noqa: E402

from neurips26.papers.beta_tta import loaders, models, steps  # noqa: E402

WNIDS = ["n01440764", "n01443537", "n01484850"]
NAMES = {"n01440764": "tench", "n01443537": "goldfish", "n01484850": "great white shark"}
BETA = {"adapt_steering": True, "harmonise": True, "consistency": True, "filtering": True, "api_weight": 0.6,
        "temperature": 1.0, "lr": 0.01, "steps_per_batch": 1, "entropy_margin": 1.0, "views": 2, "view_select": 0.5,
        "consistency_weight": 1.0, "min_crop_scale": 0.6, "tune_norms": True}


# ---------------------------------------------------------------- tiny checkpoints and folders
def _vit(path, labels=3, hidden=32, layers=2, seed=0, mean_std=None):
    torch.manual_seed(seed)
    cfg = ViTConfig(image_size=32, patch_size=8, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                    intermediate_size=64, num_labels=labels)
    model = ViTForImageClassification(cfg).eval()
    model.save_pretrained(path)
    if mean_std is not None:
        (path / "preprocessor_config.json").write_text(json.dumps({"image_mean": mean_std[0], "image_std": mean_std[1]}))
    return model


def _tokenizer():
    from tokenizers.pre_tokenizers import ByteLevel

    chars = sorted(ByteLevel.alphabet())  # one token per byte (and per word-final byte): no merges needed
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"], vocab["<|endoftext|>"] = len(vocab), len(vocab) + 1
    return CLIPTokenizer(vocab=vocab, merges=[])


def _clip(path, seed=0):
    tok = _tokenizer()
    torch.manual_seed(seed)
    cfg = CLIPConfig(text_config=dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=2, max_position_embeddings=64, eos_token_id=tok.eos_token_id,
                                      bos_token_id=tok.bos_token_id, pad_token_id=tok.pad_token_id),
                     vision_config=dict(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=2, num_attention_heads=2),
                     projection_dim=16)
    model = CLIPModel(cfg).eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return model, tok


def _jpegs(folder, wnids, per_class, seed=0):
    rng = np.random.default_rng(seed)
    for w in wnids:
        (folder / w).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            h, wd = rng.integers(36, 60, size=2)
            Image.fromarray(rng.integers(0, 256, (h, wd, 3), dtype=np.uint8)).save(folder / w / f"img_{i:03d}.JPEG")


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    vit = _vit(root / "vit", mean_std=([0.4, 0.5, 0.6], [0.2, 0.25, 0.3]))
    clip, tok = _clip(root / "clip")
    return {"root": root, "vit": vit, "clip": clip, "tok": tok}


def _x(b=3, seed=1):
    return torch.rand(b, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


def _prompt(tokens, dim, b=1, seed=2):
    return 0.5 * torch.randn(b, tokens, dim, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- ViT wrapper
def test_vit_wrapper_is_the_hf_model_and_its_prompt_offsets_the_patch_tokens(ckpt):
    path, hf = ckpt["root"] / "vit", ckpt["vit"]
    net = loaders.HFViTClassifier(path).eval()
    assert (net.tokens, net.dim, net.outputs) == (16, 32, 3)
    x = _x()
    mean = torch.tensor([0.4, 0.5, 0.6]).view(1, 3, 1, 1)  # read from preprocessor_config.json
    std = torch.tensor([0.2, 0.25, 0.3]).view(1, 3, 1, 1)
    with torch.no_grad():
        ref = hf(pixel_values=(x - mean) / std).logits
        out = net(x)
        torch.testing.assert_close(out, ref, rtol=0, atol=1e-6)
        torch.testing.assert_close(net(x, torch.zeros(1, 16, 32)), out, rtol=0, atol=0)
        p = _prompt(16, 32)
        prompted = net(x, p)
        assert (prompted - out).abs().max() > 1e-3
        # reference: the prompt folded into the position embeddings of the patch tokens
        folded = copy.deepcopy(hf)
        folded.vit.embeddings.position_embeddings.data[:, 1:] += p[0]
        torch.testing.assert_close(prompted, folded(pixel_values=(x - mean) / std).logits, rtol=1e-5, atol=1e-5)
        # one prompt per sample (TPT) is each sample's own prompt
        pb = _prompt(16, 32, b=3, seed=5)
        each = torch.cat([net(x[i:i + 1], pb[i:i + 1]) for i in range(3)])
        torch.testing.assert_close(net(x, pb), each, rtol=1e-5, atol=1e-5)
    # the prompt gets a gradient, and the checkpoint's columns can be subset
    q = torch.zeros(1, 16, 32, requires_grad=True)
    net(x, q).logsumexp(-1).sum().backward()
    assert q.grad is not None and q.grad.abs().sum() > 0
    sub = loaders.HFViTClassifier(path, class_index=[2, 0])
    with torch.no_grad():
        torch.testing.assert_close(sub(x), out[:, [2, 0]], rtol=0, atol=1e-6)
    assert "class_index" not in sub.state_dict()  # the columns are the data's, not the weights'


def test_vit_wrapper_default_normalisation_and_weights_through_the_state_dict(tmp_path):
    hf = _vit(tmp_path / "plain", seed=3)  # no preprocessor_config.json: ViT's 0.5 / 0.5
    net = loaders.HFViTClassifier(tmp_path / "plain")
    x = _x()
    with torch.no_grad():
        torch.testing.assert_close(net(x), hf(pixel_values=(x - 0.5) / 0.5).logits, rtol=0, atol=1e-6)
        skeleton = loaders.HFViTClassifier(tmp_path / "plain", pretrained=False)
        assert (skeleton(x) - net(x)).abs().max() > 1e-4  # random weights until loaded
        skeleton.load_state_dict(net.state_dict())
        torch.testing.assert_close(skeleton(x), net(x), rtol=0, atol=0)


def test_norm_parameters_are_exactly_the_hf_layernorms(ckpt):
    net = loaders.HFViTClassifier(ckpt["root"] / "vit")
    hf_norms = [m for m in net.model.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert len(hf_norms) == 2 * 2 + 1  # before / after attention in each of 2 layers, and the final one
    assert [id(p) for p in models.norm_parameters(net)] == [id(p) for m in hf_norms for p in (m.weight, m.bias)]
    clip = loaders.CLIPZeroShotClassifier(ckpt["root"] / "clip", list(NAMES.values()))
    names = [n for n, m in clip.named_modules() if isinstance(m, torch.nn.LayerNorm)]
    assert len(names) == 2 * 2 + 2 and all(n.startswith("vision.") for n in names), names  # no text tower kept
    vision = [m for m in clip.vision.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert [id(p) for p in models.norm_parameters(clip)] == [id(p) for m in vision for p in (m.weight, m.bias)]
    # deep copies (TENT, TPT, BETA) carry their own prompt hook, on their own patch embedding
    twin = copy.deepcopy(net)
    assert twin._patch[0] is twin.model.vit.embeddings.patch_embeddings
    x, p = _x(), _prompt(16, 32)
    with torch.no_grad():
        torch.testing.assert_close(twin(x, p), net(x, p), rtol=0, atol=0)


# ---------------------------------------------------------------- CLIP wrapper
def test_clip_wrapper_is_logits_per_image_of_the_class_prompts(ckpt):
    path, hf, tok = ckpt["root"] / "clip", ckpt["clip"], ckpt["tok"]
    names = list(NAMES.values())
    net = loaders.CLIPZeroShotClassifier(path, names).eval()
    assert (net.tokens, net.dim, net.outputs) == (16, 32, 3)
    x = _x(4)
    mean, std = torch.tensor(loaders.CLIP_MEAN).view(1, 3, 1, 1), torch.tensor(loaders.CLIP_STD).view(1, 3, 1, 1)
    enc = tok([f"a photo of a {n}." for n in names], padding=True, return_tensors="pt")
    with torch.no_grad():
        ref = hf(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                 pixel_values=(x - mean) / std).logits_per_image
        out = net(x)
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(net(x, torch.zeros(1, 16, 32)), out, rtol=0, atol=0)
        p = _prompt(16, 32)
        prompted = net(x, p)
        assert (prompted - out).abs().max() > 1e-3
        folded = copy.deepcopy(hf)
        folded.vision_model.embeddings.position_embedding.weight.data[1:] += p[0]
        ref_p = folded(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                       pixel_values=(x - mean) / std).logits_per_image
        torch.testing.assert_close(prompted, ref_p, rtol=1e-5, atol=1e-5)
        sub = loaders.CLIPZeroShotClassifier(path, names, class_index=[1, 2])
        torch.testing.assert_close(sub(x), out[:, [1, 2]], rtol=0, atol=1e-6)
        skeleton = loaders.CLIPZeroShotClassifier(path, names, pretrained=False)
        skeleton.load_state_dict(net.state_dict())
        torch.testing.assert_close(skeleton(x), out, rtol=0, atol=0)
    assert {"text_embeds", "logit_scale", "mean", "std"} <= set(net.state_dict())
    assert not any(k.startswith("text_model") for k in net.state_dict())


def test_wrong_checkpoint_kind_is_named(ckpt):
    with pytest.raises(ValueError, match="model_type 'clip', expected 'vit'"):
        loaders.HFViTClassifier(ckpt["root"] / "clip")
    with pytest.raises(FileNotFoundError, match="nowhere"):
        loaders.HFViTClassifier(ckpt["root"] / "nowhere")


# ---------------------------------------------------------------- folder readers
def test_readers_labels_order_and_seeded_subset(tmp_path):
    root = tmp_path / "imagenet-c"
    cell = root / "gaussian_noise" / "3"
    _jpegs(cell, ["n02", "n01", "n03"], per_class=4)
    assert loaders.class_wnids(cell) == ["n01", "n02", "n03"]
    x, y = loaders.imagenet_c_cell(root, "gaussian_noise", 3, 12, seed=0, image_size=32)
    assert x.shape == (12, 3, 32, 32) and x.dtype == torch.float32 and 0 <= x.min() and x.max() <= 1
    assert y.dtype == torch.long and y.tolist() == [0] * 4 + [1] * 4 + [2] * 4  # all of them, in sorted file order
    a = loaders.imagenet_c_cell(root, "gaussian_noise", 3, 5, seed=7, image_size=32)
    b = loaders.imagenet_c_cell(root, "gaussian_noise", 3, 5, seed=7, image_size=32)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert a[1].tolist() == sorted(a[1].tolist())
    # the picked images are the ones with those labels: each row is one of x's rows
    assert all(any(torch.equal(r, s) for s in x) for r in a[0])
    picks = {tuple(loaders.imagenet_c_cell(root, "gaussian_noise", 3, 5, seed=s, image_size=32)[1].tolist())
             for s in range(6)}
    assert len(picks) > 1  # the subset moves with the seed
    # shuffled: the same subset in a seeded stream order
    xs, ys = loaders.imagenet_c_cell(root, "gaussian_noise", 3, 5, seed=7, image_size=32, shuffled=True)
    key = lambda t: t.flatten().sum().item()  # noqa: E731
    assert sorted(map(key, xs)) == pytest.approx(sorted(map(key, a[0])))
    assert sorted(ys.tolist()) == a[1].tolist()
    # ImageNet-R's *.jpg layout, through class_folder
    r = tmp_path / "imagenet-r"
    for w in ("n09", "n05"):
        (r / w).mkdir(parents=True)
        Image.fromarray(np.full((40, 50, 3), 100, np.uint8)).save(r / w / "a.jpg")
    xr, yr = loaders.class_folder(r, 2, seed=0, image_size=32)
    assert yr.tolist() == [0, 1] and xr.shape == (2, 3, 32, 32)


def test_image_transform_resizes_the_short_side_and_centre_crops(tmp_path):
    # portrait 40 x 64 (w x h): short side 40 -> 37 (= 256 * 32 / 224), then the central 32 x 32
    img = np.zeros((64, 40, 3), np.uint8)
    img[:32] = (255, 0, 128)  # top half coloured, bottom half black
    Image.fromarray(img).save(tmp_path / "p.png")
    x = loaders.load_image(tmp_path / "p.png", 32)
    assert x.shape == (3, 32, 32)
    torch.testing.assert_close(x[:, :8], torch.tensor([1.0, 0.0, 128 / 255]).view(3, 1, 1).expand(3, 8, 32))
    assert x[:, -8:].abs().max() == 0
    # the crop is centred: the colour edge (row 29.6 of 59 after resizing) sits near the middle
    edge = int((x[0, :, 16] > 0.5).sum())
    assert abs(edge - 16) <= 2


def test_missing_or_empty_folders_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "imagenet-c" / "snow" / "5")):
        loaders.imagenet_c_cell(tmp_path / "imagenet-c", "snow", 5, 4, 0, 32)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no class folders"):
        loaders.class_folder(tmp_path / "empty", 4, 0, 32)
    (tmp_path / "noimg" / "n01").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "noimg" / "n01")):
        loaders.class_folder(tmp_path / "noimg", 4, 0, 32)
    _jpegs(tmp_path / "few", ["n01"], per_class=2)
    with pytest.raises(ValueError, match="holds 2 images, fewer than the 3"):
        loaders.class_folder(tmp_path / "few", 3, 0, 32)
    (tmp_path / "few" / "n01" / "broken.JPEG").write_bytes(b"not a jpeg")
    with pytest.raises(OSError, match="broken.JPEG"):
        loaders.class_folder(tmp_path / "few", 3, 0, 32)


def test_class_names_and_columns(tmp_path):
    f = tmp_path / "names.json"
    f.write_text(json.dumps({"n03": "c", "n01": "a", "n02": "b"}))
    assert list(loaders.read_class_names(f).items()) == [("n01", "a"), ("n02", "b"), ("n03", "c")]
    keras = tmp_path / "keras.json"
    keras.write_text(json.dumps({"0": ["n01", "a"], "1": ["n02", "b"]}))
    assert loaders.read_class_names(keras) == {"n01": "a", "n02": "b"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"n01": 3}))
    with pytest.raises(ValueError, match="bad.json"):
        loaders.read_class_names(bad)
    with pytest.raises(FileNotFoundError, match="absent.json"):
        loaders.read_class_names(tmp_path / "absent.json")
    cols = ["n01", "n02", "n03"]
    assert loaders.column_index(["n01", "n03"], cols, 3, "m") == [0, 2]
    assert loaders.column_index(cols, cols, 3, "m") is None
    assert loaders.column_index(["a", "b"], None, 2, "m") is None
    with pytest.raises(ValueError, match="class_names"):
        loaders.column_index(["a", "b"], None, 3, "m")
    with pytest.raises(ValueError, match="not in the class-name file"):
        loaders.column_index(["n09"], cols, 3, "m")


# ---------------------------------------------------------------- train -> adapt end to end
def _params(variant, settings, methods, seed=0):
    return {"paper": "beta_tta", "scale": "smoke", "variant": variant, "variant_settings": settings, "seed": seed,
            "methods": methods,
            "shift": {"corruptions": ["gaussian_noise"], "severities": [2], "batch_size": 2, "order": "shuffled"},
            "api": {"latency_per_call_s": 0.2, "latency_per_image_s": 0.002, "price_per_1k_queries": 1.0},
            "beta": BETA, "beta_ablations": {"frozen": {"adapt_steering": False}},
            "tent": {"lr": 0.001, "steps_per_batch": 1},
            "tpt": {"views": 3, "select": 0.5, "lr": 0.005, "steps": 1, "min_crop_scale": 0.6},
            "lame": {"knn": 1, "iterations": 10},
            "zoo": {"optimizers": ["spsa"], "budgets": [3], "grid": 2, "max_delta": 0.5, "spsa_lr": 0.5,
                    "spsa_stability": 10, "spsa_alpha": 0.602, "spsa_perturbation": 0.05, "spsa_gamma": 0.101,
                    "cma_sigma0": 0.05, "cma_popsize": 4, "cma_diagonal": True}}


METHODS = ["source", "lame", "tent", "tpt", "zoo", "beta", "beta_frozen"]


def _check_metrics(m, cells, n, batch):
    assert list(m["cells"]) == cells
    assert m["methods"] == ["source", "lame", "tent", "tpt", "beta", "beta_frozen", "zoo_spsa_3"]
    for cell in m["cells"].values():
        for name, r in cell.items():
            assert len(r["correct"]) == n and 0 <= r["accuracy"] <= 1, name
        for name in ("beta", "beta_frozen", "source", "lame"):
            assert cell[name]["api_queries_per_sample"] == 1 and cell[name]["api_calls"] == math.ceil(n / batch), name
        assert cell["zoo_spsa_3"]["api_queries_per_sample"] == 3
        assert cell["tent"]["api_queries_per_sample"] == 0 and cell["tent"]["whitebox_evaluations_per_sample"] == 1


def test_train_then_adapt_on_a_tiny_imagenet_c(tmp_path):
    _vit(tmp_path / "vit-b", labels=3, hidden=32, layers=2, seed=1)
    _vit(tmp_path / "vit-tiny", labels=3, hidden=16, layers=1, seed=2)
    data = tmp_path / "imagenet-c"
    _jpegs(data / "gaussian_noise" / "2", [WNIDS[0], WNIDS[2]], per_class=3)  # 2 of the model's 3 classes
    (tmp_path / "names.json").write_text(json.dumps(NAMES))
    settings = {"kind": "imagenet_c",
                "data": {"image_size": 32, "test_size": 5, "data_dir": str(data), "class_names": str(tmp_path / "names.json")},
                "source_checkpoint": str(tmp_path / "vit-b"), "steering_checkpoint": str(tmp_path / "vit-tiny")}
    params = _params("tiny_c", settings, METHODS)
    steps.train(params, {}, tmp_path / "train")
    info = json.loads((tmp_path / "train" / "train.json").read_text())
    assert info["source_outputs"] == 3 and info["source_parameters"] > info["steering_parameters"] > 0
    assert {"source.safetensors", "steering.safetensors"} <= {p.name for p in (tmp_path / "train").iterdir()}
    steps.adapt(params, {"train": tmp_path / "train"}, tmp_path / "adapt")
    m = json.loads((tmp_path / "adapt" / "metrics.json").read_text())
    _check_metrics(m, ["gaussian_noise/2"], 5, 2)
    # the source column subset is the released model's on those classes: check source's answers
    x, y = loaders.imagenet_c_cell(data, "gaussian_noise", 2, 5, seed=steps._seeds(0)["test"], image_size=32, shuffled=True)
    ref = loaders.HFViTClassifier(tmp_path / "vit-b", class_index=[0, 2])
    with torch.no_grad():
        correct = "".join(str(int(c)) for c in (ref(x).argmax(1) == y).tolist())
    assert m["cells"]["gaussian_noise/2"]["source"]["correct"] == correct
    # same config -> byte-identical metrics.json
    steps.adapt(params, {"train": tmp_path / "train"}, tmp_path / "again")
    assert (tmp_path / "again" / "metrics.json").read_bytes() == (tmp_path / "adapt" / "metrics.json").read_bytes()


def test_train_then_adapt_with_clip_on_a_tiny_imagenet_r(tmp_path):
    _clip(tmp_path / "clip", seed=4)
    _vit(tmp_path / "vit-tiny", labels=3, hidden=16, layers=1, seed=2)
    data = tmp_path / "imagenet-r"
    _jpegs(data, [WNIDS[1], WNIDS[2]], per_class=2)
    (tmp_path / "names.json").write_text(json.dumps(NAMES))
    settings = {"kind": "clip",
                "data": {"image_size": 32, "test_size": 4, "data_dir": str(data), "class_names": str(tmp_path / "names.json")},
                "source_checkpoint": str(tmp_path / "clip"), "steering_checkpoint": str(tmp_path / "vit-tiny")}
    params = _params("tiny_r", settings, METHODS)
    steps.train(params, {}, tmp_path / "train")
    steps.adapt(params, {"train": tmp_path / "train"}, tmp_path / "adapt")
    m = json.loads((tmp_path / "adapt" / "metrics.json").read_text())
    _check_metrics(m, ["imagenet-r"], 4, 2)


def test_released_kinds_name_the_missing_config_key(tmp_path):
    _vit(tmp_path / "vit", seed=1)
    settings = {"kind": "clip", "data": {"image_size": 32, "test_size": 2, "data_dir": str(tmp_path), "class_names": ""},
                "source_checkpoint": str(tmp_path / "vit"), "steering_checkpoint": str(tmp_path / "vit")}
    with pytest.raises(ValueError, match=r"beta_tta.variants.v.data.class_names"):
        steps.train(_params("v", settings, ["source"]), {}, tmp_path / "t1")
    settings = {**settings, "kind": "imagenet_c", "source_checkpoint": str(tmp_path / "absent")}
    with pytest.raises(FileNotFoundError, match=r"beta_tta.variants.v.source_checkpoint"):
        steps.train(_params("v", settings, ["source"]), {}, tmp_path / "t2")
    settings = {**settings, "source_checkpoint": str(tmp_path / "vit"), "data": {**settings["data"], "image_size": 64}}
    with pytest.raises(ValueError, match=r"beta_tta.variants.v.data.image_size"):
        steps.train(_params("v", settings, ["source"]), {}, tmp_path / "t3")
