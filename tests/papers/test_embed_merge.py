"""embed_merge against independent references: hand-worked TIES and DARE examples, numpy and
scipy projections, polar factors and spectra, brute-force rank choice, Monte Carlo chance
shares, the text tasks' labels re-derived from the sentences, and the CLIP loader on small
checkpoints in the real format."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

from neurips26.core import io
from neurips26.papers.embed_merge import baselines, check_config, method, tasks

SHAPES = {"a.weight": (12, 8), "a.bias": (12,), "b.weight": (6, 12), "norm.weight": (6,)}
# at full rank the pre-trained singular vectors span the whole space only for square matrices
SQUARE = {"a.weight": (8, 8), "a.bias": (8,), "b.weight": (8, 8), "norm.weight": (8,)}


def _state(seed, scale=1.0, shapes=None):
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(s, generator=g, dtype=torch.float64) * scale for k, s in (shapes or SHAPES).items()}


def _finetuned(pre, seed, scale=0.1):
    d = _state(seed, scale, {k: tuple(v.shape) for k, v in pre.items()})
    return {k: pre[k] + d[k] for k in pre}


FULL = {"rank_mode": "fraction", "rank_fraction": 1.0}


@pytest.mark.parametrize("name, settings, scale", [
    ("weight_averaging", {}, 1.0),
    ("task_arithmetic", {}, 1.0),
    ("ties", {"keep": 1.0}, 1.0),
    ("dare", {"drop": 0.0}, 1.0),
    ("tsv_merge", {}, 1.0),
    ("embed_mean", FULL, 1.0),
    ("embed_mean", {**FULL, "basis": "left"}, 1.0),
    ("embed_aligned", {**FULL, "aligned_energy": 1.0}, 1.0),
    ("embed_mean_posthoc", FULL, 1.0),
    ("embed_aligned_posthoc", {**FULL, "aligned_energy": 1.0}, 1.0),
])
def test_merging_one_model_returns_that_model(name, settings, scale):
    pre = _state(0, shapes=SQUARE if name.startswith("embed") else SHAPES)
    ft = _finetuned(pre, 1)
    merged = baselines.make(name, settings).merge(pre, [ft], scale)
    for k in pre:
        torch.testing.assert_close(merged[k], ft[k], rtol=0, atol=1e-10)


def test_iso_c_returns_one_model_whose_update_has_a_flat_spectrum():
    pre = _state(0)
    ft = dict(pre)
    for k in ("a.weight", "b.weight"):
        q = torch.from_numpy(scipy.linalg.polar(np.random.default_rng(3).standard_normal(SHAPES[k]))[0])
        ft[k] = pre[k] + 0.3 * q
    merged = baselines.make("iso_c", {}).merge(pre, [ft], 1.0)
    for k in pre:
        torch.testing.assert_close(merged[k], ft[k], rtol=0, atol=1e-10)


def test_task_arithmetic_scale_one_on_one_task_is_the_finetuned_model():
    pre = _state(4)
    ft = _finetuned(pre, 5, scale=2.0)
    merged = baselines.make("task_arithmetic", {}).merge(pre, [ft], 1.0)
    assert all(torch.equal(merged[k], pre[k] + (ft[k] - pre[k])) for k in pre)
    for k in pre:
        torch.testing.assert_close(merged[k], ft[k], rtol=0, atol=1e-12)


@pytest.mark.parametrize("basis", ["two_sided", "left"])
def test_update_inside_the_subspace_survives_the_round_trip_and_outside_vanishes(basis):
    rng = np.random.default_rng(0)
    w0 = torch.from_numpy(rng.standard_normal((20, 14)))
    space = method.EmbeddingSpace(basis=basis, rank_mode="fixed", rank=5)
    u, s, vt = np.linalg.svd(w0.numpy())
    ur, vr = u[:, :5], vt[:5].T
    a = rng.standard_normal((5, 5 if basis == "two_sided" else 14))
    inside = torch.from_numpy(ur @ a @ vr.T if basis == "two_sided" else ur @ a)
    torch.testing.assert_close(method.round_trip(inside, w0, space), inside, rtol=0, atol=1e-12)
    outside = torch.from_numpy((np.eye(20) - ur @ ur.T) @ rng.standard_normal((20, 14)))
    assert float(method.round_trip(outside, w0, space).abs().max()) < 1e-12


def test_embedding_mean_is_the_projected_average_computed_with_numpy():
    pre = _state(7)
    fts = [_finetuned(pre, s) for s in (8, 9, 10)]
    space = method.EmbeddingSpace(rank_mode="fixed", rank=4)
    merged = method.embedding_merge(pre, fts, 1.7, space)
    for k in ("a.weight", "b.weight"):
        u, _, vt = np.linalg.svd(pre[k].numpy())
        pu, pv = u[:, :4] @ u[:, :4].T, vt[:4].T @ vt[:4]
        mean = np.mean([f[k].numpy() - pre[k].numpy() for f in fts], axis=0)
        np.testing.assert_allclose(merged[k].numpy(), pre[k].numpy() + 1.7 * pu @ mean @ pv, atol=1e-10)
    mean_bias = np.mean([f["a.bias"].numpy() for f in fts], axis=0) - pre["a.bias"].numpy()
    np.testing.assert_allclose(merged["a.bias"].numpy(), pre["a.bias"].numpy() + 1.7 * mean_bias, atol=1e-12)


def test_aligned_subspace_is_the_top_eigenspace_of_the_summed_embedding_gram():
    rng = np.random.default_rng(1)
    embs = [torch.from_numpy(rng.standard_normal((6, 6)) @ np.diag([5, 4, 1, 0.1, 0.01, 0.001])) for _ in range(3)]
    p = method.energy_basis(torch.cat(embs, 1), 0.9)
    gram = sum(e.numpy() @ e.numpy().T for e in embs)
    vals, vecs = np.linalg.eigh(gram)
    vals, vecs = vals[::-1], vecs[:, ::-1]
    k = int(np.searchsorted(np.cumsum(vals) / vals.sum(), 0.9) + 1)
    assert p.shape[1] == k
    assert np.degrees(scipy.linalg.subspace_angles(p.numpy(), vecs[:, :k]).max()) < 1e-6
    merged = method.aligned_mean(embs, 0.9, "left", rescale=True)
    np.testing.assert_allclose(np.linalg.norm(merged.numpy()), np.mean([np.linalg.norm(e.numpy()) for e in embs]))


def test_ties_matches_a_hand_worked_example():
    tvs = [torch.tensor([3.0, -1.0, 0.5, -4.0, 2.0]), torch.tensor([-2.0, 1.0, 1.0, -3.0, -0.2]),
           torch.tensor([1.0, -5.0, 0.1, 2.0, 0.3])]
    # keep 2 of 5: [3,0,0,-4,0], [-2,0,0,-3,0], [0,-5,0,2,0]; sum [1,-5,0,-5,0]; elected [+,-,0,-,0]
    # disjoint means: 3 (task 1), -5 (task 3), 0, (-4 - 3) / 2, 0
    torch.testing.assert_close(baselines.ties_vector(tvs, 0.4), torch.tensor([3.0, -5.0, 0.0, -3.5, 0.0]))
    pre = {"w": torch.zeros(5, dtype=torch.float64)}
    merged = baselines.make("ties", {"keep": 0.4}).merge(pre, [{"w": t.double()} for t in tvs], 0.5)
    torch.testing.assert_close(merged["w"], torch.tensor([1.5, -2.5, 0.0, -1.75, 0.0], dtype=torch.float64))


def test_dare_matches_a_hand_worked_example_and_is_unbiased():
    tv = torch.tensor([2.0, -4.0, 6.0, 8.0])
    torch.testing.assert_close(baselines.dare(tv, torch.tensor([1.0, 0.0, 1.0, 0.0]), 0.5),
                               torch.tensor([4.0, 0.0, 12.0, 0.0]))
    pre = {"w": torch.zeros(4, 50, dtype=torch.float64)}
    ft = {"w": tv.double()[:, None].expand(4, 50).contiguous()}
    draws = torch.stack([baselines.make("dare", {"drop": 0.7, "seed": s}).merge(pre, [ft], 1.0)["w"]
                         for s in range(200)])
    kept = (draws != 0).double().mean()
    assert abs(float(kept) - 0.3) < 0.02
    torch.testing.assert_close(draws.mean((0, 2)), tv.double(), rtol=0.08, atol=0.0)
    values = torch.unique(draws[:, 0])
    assert all(float(x) == 0.0 or abs(float(x) - 2.0 / 0.3) < 1e-12 for x in values)


def test_tsv_merge_matches_scipy_polar_reference():
    rng = np.random.default_rng(2)
    deltas = [rng.standard_normal((10, 8)) for _ in range(3)]
    k = 8 // 3
    us, ss, vs = [], [], []
    for d in deltas:
        u, s, vt = np.linalg.svd(d, full_matrices=False)
        us.append(u[:, :k]), ss.append(s[:k]), vs.append(vt[:k].T)
    u_perp = scipy.linalg.polar(np.concatenate(us, 1))[0]
    v_perp = scipy.linalg.polar(np.concatenate(vs, 1))[0]
    ref = u_perp @ np.diag(np.concatenate(ss)) @ v_perp.T
    got = baselines.tsv_matrix([torch.from_numpy(d) for d in deltas]).numpy()
    np.testing.assert_allclose(got, ref, atol=1e-10)


def test_iso_c_flattens_the_spectrum_of_the_summed_update():
    rng = np.random.default_rng(3)
    deltas = [rng.standard_normal((9, 7)) for _ in range(4)]
    total = sum(deltas)
    got = baselines.iso_c_matrix([torch.from_numpy(d) for d in deltas]).numpy()
    sv = scipy.linalg.svdvals(total)
    np.testing.assert_allclose(scipy.linalg.svdvals(got), np.full(7, sv.mean()), atol=1e-10)
    np.testing.assert_allclose(got, sv.mean() * scipy.linalg.polar(total)[0], atol=1e-10)


def test_rank_choice_matches_brute_force():
    s = torch.tensor([5.0, 3.0, 2.0, 1.0, 0.5, 0.1], dtype=torch.float64)
    for energy in (0.3, 0.6, 0.9, 0.99, 1.0):
        brute = min(r for r in range(1, 7) if float((s[:r] ** 2).sum() / (s ** 2).sum()) >= energy - 1e-12)
        assert method.choose_rank(s, method.EmbeddingSpace(rank_energy=energy)) == brute
    assert method.choose_rank(s, method.EmbeddingSpace(rank_mode="fraction", rank_fraction=0.4)) == 3
    assert method.choose_rank(s, method.EmbeddingSpace(rank_mode="fixed", rank=50)) == 6


def test_subspace_share_of_random_updates_matches_its_chance_level():
    pre = {"w.weight": torch.from_numpy(np.random.default_rng(5).standard_normal((30, 20)))}
    space = method.EmbeddingSpace(rank_mode="fixed", rank=6)
    shares = [method.subspace_share(pre, {"w.weight": pre["w.weight"] + torch.from_numpy(
        np.random.default_rng(100 + i).standard_normal((30, 20)))}, space) for i in range(200)]
    assert shares[0]["chance"] == pytest.approx((6 / 30) * (6 / 20))
    assert np.mean([s["share"] for s in shares]) == pytest.approx(shares[0]["chance"], rel=0.05)
    u = torch.linalg.svd(pre["w.weight"])[0][:, :6]
    v = torch.linalg.svd(pre["w.weight"])[2][:6].T
    inside = {"w.weight": pre["w.weight"] + u @ torch.ones(6, 6, dtype=torch.float64) @ v.T}
    assert method.subspace_share(pre, inside, space)["share"] == pytest.approx(1.0)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else tasks.NUMBERS.index(word) + 1


def test_text_task_labels_follow_from_the_sentences():
    data, classes = tasks.text_task("more_or_fewer", {"train": 300}, 3)
    close = 0
    for s, y in zip(*data["train"]):
        parts = s.split()
        a, b = _number(parts[2]), _number(parts[5])
        assert int(a > b) == int(y)
        close += abs(a - b) == 1
    assert close > 100  # about half of the pairs are one apart (plus the random pairs that are)
    data, _ = tasks.text_task("sentiment", {"train": 300}, 4)
    for s, y in zip(*data["train"]):
        last = s.rstrip(".").split(",")[-1].split()  # the sentiment of the last clause decides
        adj = last[-1]
        positive = adj in tasks.POSITIVE
        assert positive != (adj in tasks.NEGATIVE)
        assert int(positive != ("not" in last)) == int(y), s
    data, _ = tasks.text_task("tense", {"train": 300}, 5)
    for s, y in zip(*data["train"]):
        future = " will " in s or " going to " in s
        past = any(f" {w} " in s for w in ("was", "had")) or any(w.endswith("ed") for w in s.split()[2:3])
        assert future == (int(y) == 2), s
        assert past == (int(y) == 0), s
    data, _ = tasks.text_task("negation", {"train": 300}, 6)
    for s, y in zip(*data["train"]):
        negations = sum(s.count(w) for w in (" not ", "n't ", " never ", " failed ", " refused ", " forgot "))
        negations += s.count(" fail ") + s.count(" forget ")
        assert int(negations % 2 == 1) == int(y), s
    data, _ = tasks.text_task("topic", {"train": 300}, 7)
    for s, y in zip(*data["train"]):
        found = [(s.rfind(n), t) for t, (name, nouns) in enumerate(tasks.TOPICS.items()) for n in nouns if n in s]
        assert max(found)[1] == int(y), s  # the labelled noun is the last one named


def test_vision_tasks_are_balanced_and_the_digit_labels_are_derived_correctly():
    sizes = {"train": 300, "val": 100, "test": 200}
    base, _ = tasks.vision_task("digits", 16, sizes, 11)
    parity, c = tasks.vision_task("digit_parity", 16, sizes, 11)
    assert c == 2
    torch.testing.assert_close(parity["test"][1], base["test"][1] % 2)
    inv, c = tasks.vision_task("digits_inverted_mod3", 16, sizes, 11)
    torch.testing.assert_close(inv["test"][0], 1 - base["test"][0])
    fam, c = tasks.vision_task("shape_families", 16, sizes, 12)
    assert c == 4 and set(fam["train"][1].tolist()) == {0, 1, 2, 3}


def test_check_config_names_the_bad_keys():
    block = {"run_variants": ["vision", "nope"], "merge": {"methods": ["ties", "magic"]},
             "variants": {"vision": {"kind": "vision", "tasks": ["a", "b"], "task_counts": [2, 3],
                                     "model": {"patch": 3, "dim": 64, "heads": 4}, "data": {"image_size": 16}}}}
    problems = "\n".join(check_config(block))
    for key in ("run_variants", "variants.vision.task_counts", "variants.vision.model.patch", "merge.methods"):
        assert key in problems


def test_clip_loader_reads_small_checkpoints_in_the_real_format(tmp_path):
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

    from neurips26.papers.embed_merge import clip, models

    cfg = CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                           image_size=8, patch_size=4, projection_dim=8)
    torch.manual_seed(0)
    CLIPVisionModelWithProjection(cfg).save_pretrained(tmp_path / "pre")
    for i, task in enumerate(("MNIST", "DTD")):
        torch.manual_seed(i + 1)
        CLIPVisionModelWithProjection(cfg).save_pretrained(tmp_path / "ft" / task)
        io.save_tensors(tmp_path / "heads" / f"{task}.safetensors", {"weight": torch.randn(3 + i, 8)})
        for split in ("val", "test"):
            io.save_tensors(tmp_path / "data" / task / f"{split}.safetensors",
                            {"images": torch.randn(5, 3, 8, 8), "labels": torch.arange(5) % (3 + i)})
    v = {"kind": "clip", "tasks": ["MNIST", "DTD"], "pretrained_dir": str(tmp_path / "pre"),
         "finetuned_dir": str(tmp_path / "ft"), "heads_dir": str(tmp_path / "heads"), "data_dir": str(tmp_path / "data")}
    clip.index_checkpoints(v, tmp_path / "out")
    pre = io.load_tensors(tmp_path / "out" / "pretrained.safetensors")
    ft = io.load_tensors(tmp_path / "out" / "finetuned" / "DTD.safetensors")
    assert ft["head.weight"].shape == (4, 8) and set(pre) == {k[len("backbone."):] for k in ft if k.startswith("backbone.")}
    dom = clip.ClipDomain(v, 0)
    data, classes = dom.task(1, "DTD")
    assert classes == 4 and data["test"][0].shape == (5, 3, 8, 8)
    net = models.Classifier(dom.new_backbone(), dom.features(), classes)
    assert net(data["test"][0]).shape == (5, 4)
    with pytest.raises(FileNotFoundError, match="finetuned_dir"):
        clip.index_checkpoints({**v, "finetuned_dir": str(tmp_path / "missing")}, tmp_path / "out2")
