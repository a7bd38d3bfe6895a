"""embed_merge's main mode, fine-tuning inside the pre-trained space: only the model embeddings
E train, the weights stay in W0 + U_r E V_r^T (checked with numpy's SVD), the gradient of E
matches finite differences and the closed form U_r^T dL/dW V_r; merging the in-space fine-tunes
averages their E; every scaled method is tuned on the same grid."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from neurips26.papers.embed_merge import baselines, method, steps

ROOT = Path(__file__).resolve().parents[2]


def _layer(seed=0, d_in=7, d_out=6):
    torch.manual_seed(seed)
    layer = torch.nn.Linear(d_in, d_out).double()
    return layer


@pytest.mark.parametrize("basis", ["two_sided", "left"])
def test_only_the_embedding_trains_and_the_weight_stays_in_the_pretrained_space(basis):
    layer = _layer()
    w0, b0 = layer.weight.detach().clone(), layer.bias.detach().clone()
    space = method.EmbeddingSpace(basis=basis, rank_mode="fixed", rank=3)
    embeddings = method.confine_to_subspace(layer, space)
    trainable = [p for p in layer.parameters() if p.requires_grad]
    assert len(embeddings) == 1 and len(trainable) == 1 and trainable[0] is embeddings[0]
    assert tuple(embeddings[0].shape) == ((3, 3) if basis == "two_sided" else (3, 7))
    opt = torch.optim.SGD(trainable, lr=0.1)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(32, 7, generator=g, dtype=torch.float64), torch.randn(32, 6, generator=g, dtype=torch.float64)
    for _ in range(5):
        opt.zero_grad()
        ((layer(x) - y) ** 2).mean().backward()
        opt.step()
    method.release_subspace(layer)
    assert set(layer.state_dict()) == {"weight", "bias"}
    delta = (layer.weight.detach() - w0).numpy()
    assert np.linalg.norm(delta) > 1e-3  # it did train
    u, _, vt = np.linalg.svd(w0.numpy())
    ur, vr = u[:, :3], vt[:3].T
    np.testing.assert_allclose((np.eye(6) - ur @ ur.T) @ delta, 0, atol=1e-12)
    if basis == "two_sided":
        np.testing.assert_allclose(delta @ (np.eye(7) - vr @ vr.T), 0, atol=1e-12)
    assert torch.equal(layer.bias.detach(), b0)  # everything but the embedding is frozen


def test_embedding_gradient_matches_finite_differences_and_the_closed_form():
    layer = _layer(2)
    w0 = layer.weight.detach().clone()
    space = method.EmbeddingSpace(rank_mode="fixed", rank=4)
    (e,) = method.confine_to_subspace(layer, space)
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(16, 7, generator=g, dtype=torch.float64), torch.randn(16, 6, generator=g, dtype=torch.float64)
    with torch.no_grad():
        e.copy_(torch.randn(e.shape, generator=g, dtype=torch.float64) * 0.3)

    def loss():
        return torch.tanh(layer(x) - y).pow(2).sum()

    layer.zero_grad()
    loss().backward()
    grad = e.grad.clone()
    fd = torch.zeros_like(e)
    h = 1e-6
    with torch.no_grad():
        for i in range(e.shape[0]):
            for j in range(e.shape[1]):
                e[i, j] += h
                up = float(loss())
                e[i, j] -= 2 * h
                down = float(loss())
                e[i, j] += h
                fd[i, j] = (up - down) / (2 * h)
    torch.testing.assert_close(grad, fd, rtol=1e-6, atol=1e-8)
    # closed form: dL/dE = U_r^T (dL/dW) V_r, with dL/dW from a plain layer at the same weight
    u, s, vt = np.linalg.svd(w0.numpy())
    plain = torch.nn.Linear(7, 6).double()
    with torch.no_grad():
        plain.weight.copy_(layer.weight)
        plain.bias.copy_(layer.bias)
    torch.tanh(plain(x) - y).pow(2).sum().backward()
    closed = u[:, :4].T @ plain.weight.grad.numpy() @ vt[:4].T
    np.testing.assert_allclose(grad.numpy(), closed, rtol=1e-8, atol=1e-10)


def test_merging_in_space_fine_tunes_averages_their_embeddings():
    pre = {"a.weight": torch.randn(8, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(4)),
           "a.bias": torch.zeros(8, dtype=torch.float64)}
    space = method.EmbeddingSpace(rank_mode="fixed", rank=3)
    u, v = method.pretrained_basis(pre["a.weight"], space)
    es = [torch.randn(3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(10 + t)) for t in range(3)]
    fts = [{"a.weight": pre["a.weight"] + u @ e @ v.T, "a.bias": pre["a.bias"]} for e in es]
    merged = baselines.make("embed_mean", {"rank_mode": "fixed", "rank": 3}).merge(pre, fts, 2.0)
    torch.testing.assert_close(merged["a.weight"], pre["a.weight"] + 2.0 * u @ torch.stack(es).mean(0) @ v.T,
                               rtol=0, atol=1e-12)


def test_a_tiny_vit_fine_tuned_in_space_keeps_every_matrix_in_its_pretrained_space():
    from neurips26.papers.embed_merge import models

    torch.manual_seed(0)
    vit = models.TinyViT(8, 4, 3, 16, 1, 2, 2.0)
    pre = {k: t.detach().clone() for k, t in vit.state_dict().items()}
    space = method.EmbeddingSpace(rank_mode="energy", rank_energy=0.6)
    method.confine_to_subspace(vit, space)
    net = models.Classifier(vit, 16, 3)
    opt = torch.optim.Adam([p for p in net.parameters() if p.requires_grad], lr=0.05)
    x, y = torch.rand(12, 3, 8, 8), torch.arange(12) % 3
    for _ in range(3):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    method.release_subspace(vit)
    after = vit.state_dict()
    assert set(after) == set(pre)
    moved = 0
    for k, w0 in pre.items():
        if method.is_matrix(k, w0):
            share = method.subspace_share({k: w0}, {k: after[k]}, space)["share"]
            moved += float((after[k] - w0).norm()) > 0
            assert share == pytest.approx(1.0, abs=1e-4) or float((after[k] - w0).norm()) == 0
        else:
            assert torch.equal(after[k], w0), k
    assert moved >= 4


def test_task_arithmetic_is_tuned_on_the_same_grid_as_the_embedding_methods():
    block = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["embed_merge"]
    g = block["merge"]
    grid = steps.scale_grid("task_arithmetic", g)
    for m in ("embed_mean", "embed_aligned", "embed_mean_posthoc", "embed_aligned_posthoc", "ties", "dare",
              "tsv_merge", "iso_c"):
        assert steps.scale_grid(m, g) == grid, m
    assert len(grid) >= 4 and grid == sorted(grid)
    assert steps.scale_grid("ties", {**g, "scales": {"ties": [1.0]}}) == [1.0]  # an override is per method
    assert {steps.source_of(m) for m in ("embed_mean", "embed_aligned")} == {"subspace"}
    assert {steps.source_of(m) for m in g["methods"]
            if m not in ("embed_mean", "embed_aligned", "random_subspace_mean", "lora_mean")} == {"full"}


def test_merge_memory_check_names_the_config_key():
    pre = {"w": torch.zeros(4000, 1000)}  # 16 MB in float32; x 34 copies + 1 GB for the process
    with pytest.raises(MemoryError, match="embed_merge.resources.merge_mem_mb"):
        steps.check_memory(pre, 16, 1200)
    steps.check_memory(pre, 16, 4000)


def test_task_vectors_are_float32_for_float32_weights():
    pre = {"w.weight": torch.zeros(3, 3), "w.bias": torch.zeros(3, dtype=torch.bfloat16)}
    ft = {"w.weight": torch.ones(3, 3), "w.bias": torch.ones(3, dtype=torch.bfloat16)}
    tv = baselines.task_vectors(pre, [ft])[0]
    assert tv["w.weight"].dtype == torch.float32 and tv["w.bias"].dtype == torch.float32
    for name in ("task_arithmetic", "tsv_merge", "embed_mean_posthoc"):
        update = baselines.make(name, {}).update(pre, [ft, ft])
        assert {u.dtype for u in update.values()} == {torch.float32}, name


def test_the_scale_grid_extends_past_an_edge_holding_the_best_validation_score():
    """Validation scores that peak above the grid's top scale: the grid grows by its own factor
    until the best is interior; with the cap reached first the record says capped, and a row
    comparing against that method cannot say yes."""
    import math

    from neurips26.core import tuning

    tried = []

    def evaluate(scale):
        tried.append(scale)
        return 1.0 - abs(math.log2(scale) - math.log2(64.0)) / 10

    grid = [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    scale, score, grown, recs = steps.tune_scale(evaluate, grid, method="task_arithmetic", uses_scale=True,
                                                 setting="vision, 8 tasks", seed=0, extensions=3)
    assert scale == 64.0 and grown == grid + [64.0, 128.0] and sorted(tried) == grown
    assert recs[0].status == "tuned" and recs[0].extensions == 2 and score == 1.0
    scale, _, grown, recs = steps.tune_scale(evaluate, grid, method="task_arithmetic", uses_scale=True,
                                             setting="vision, 8 tasks", seed=0, extensions=0)
    assert scale == 32.0 and grown == grid and recs[0].status == "capped" and recs[0].edge == "high"
    assert "task_arithmetic's scale = 32" in tuning.capped_note(recs, "task_arithmetic", "vision, 8 tasks")
    scale, _, grown, recs = steps.tune_scale(evaluate, grid, method="weight_averaging", uses_scale=False,
                                             setting="vision, 8 tasks", seed=0, extensions=3)
    assert scale == 1.0 and grown == [1.0] and recs[0].status == "fixed"


# ---------------------------------------------------------------- the controls of the pre-trained subspace
def _vit(seed=0):
    from neurips26.papers.embed_merge import models

    torch.manual_seed(seed)
    return models.TinyViT(8, 4, 3, 16, 1, 2, 2.0).double()


def test_random_subspace_fine_tunes_stay_in_one_random_basis_of_the_pretrained_rank_shared_by_the_tasks():
    space = method.EmbeddingSpace(rank_mode="fixed", rank=5)
    vits, pre = [], _vit().state_dict()
    for task in range(2):  # two tasks of one seed: the same bases
        vit = _vit()
        method.confine_to_subspace(vit, space, "random_subspace", seed=11)
        torch.manual_seed(task)
        for p in vit.parameters():
            if p.requires_grad:
                p.data.normal_()
        method.release_subspace(vit)
        vits.append(vit.state_dict())
    gen = torch.Generator().manual_seed(11)
    for name, w0 in pre.items():
        if not method.is_matrix(name, w0):
            assert all(torch.equal(v[name], w0) for v in vits), name  # frozen
            continue
        ru, rv = method.random_basis(w0, space, gen)  # drawn matrix by matrix in the same order
        r = min(5, *w0.shape)
        assert ru.shape == (w0.shape[0], r) and rv.shape == (w0.shape[1], r)
        np.testing.assert_allclose((ru.T @ ru).numpy(), np.eye(r), atol=1e-10)
        for v in vits:
            d = (v[name] - w0).numpy()
            pu, pv = ru.numpy() @ ru.numpy().T, rv.numpy() @ rv.numpy().T
            np.testing.assert_allclose(pu @ d @ pv, d, atol=1e-8)  # inside the random subspace
        # not the pre-trained subspace: the random basis holds about r/d of U_r, not all of it
        u, _ = method.pretrained_basis(w0, space)
        if r < min(w0.shape):
            assert np.linalg.norm(u.numpy().T @ ru.numpy()) ** 2 < 0.9 * r


def test_lora_control_has_the_in_space_parameter_count_and_starts_at_the_pretrained_weights():
    # brute force: the k whose k (d_out + d_in) entries come closest to r^2
    for r, d_out, d_in in [(5, 16, 16), (12, 48, 16), (35, 64, 64), (3, 6, 7)]:
        best = min(range(1, 50), key=lambda k: (abs(k * (d_out + d_in) - r * r), k))
        assert method.lora_rank(r, d_out, d_in) == best
    space = method.EmbeddingSpace(rank_mode="fixed", rank=8)
    vit, pre = _vit(), _vit().state_dict()
    sub = _vit()
    n_sub = sum(p.numel() for p in method.confine_to_subspace(sub, space, "subspace"))
    trainable = method.confine_to_subspace(vit, space, "lora", seed=3)
    n_lora = sum(p.numel() for p in trainable)
    assert abs(n_lora - n_sub) <= 0.25 * n_sub
    for name, w in vit.state_dict().items():  # B = 0 at start: the pre-trained model
        if name in pre:
            assert torch.allclose(w, pre[name])
    for p in trainable:
        p.data.normal_()
    method.release_subspace(vit)
    for name, w0 in pre.items():
        if method.is_matrix(name, w0):
            k = method.lora_rank(min(8, *w0.shape), *w0.shape)
            assert np.linalg.matrix_rank((vit.state_dict()[name] - w0).numpy(), tol=1e-8) == min(k, *w0.shape)


def test_the_control_merges_average_their_own_fine_tunes():
    rng = np.random.default_rng(0)
    pre = {"w.weight": torch.from_numpy(rng.standard_normal((4, 3))), "w.bias": torch.zeros(4, dtype=torch.float64)}
    fts = [{k: v + torch.from_numpy(rng.standard_normal(v.shape)) for k, v in pre.items()} for _ in range(3)]
    for name, source in (("random_subspace_mean", "random_subspace"), ("lora_mean", "lora")):
        assert steps.source_of(name) == source
        merged = baselines.make(name, {}).merge(pre, fts, scale=0.5)
        for k in pre:
            ref = pre[k].numpy() + 0.5 * np.mean([f[k].numpy() - pre[k].numpy() for f in fts], axis=0)
            np.testing.assert_allclose(merged[k].numpy(), ref, atol=1e-12)
    assert steps.source_of("embed_mean") == "subspace" and steps.source_of("tsv_merge") == "full"


def test_tuned_learning_rates_replace_the_recipes_and_the_default_config_tunes_them():
    v = {"kind": "vision", "finetune": {"lr": 5e-4, "steps": 3}, "subspace_finetune": {"lr": 1e-3, "steps": 3},
         "controls": ["random_subspace", "lora"], "lr_tuning": {"seed": 100, "modes": ["subspace", "lora"], "grids": {}}}
    assert steps.modes(v) == ["full", "subspace", "random_subspace", "lora"]
    lrs = {"subspace": 4e-3, "lora": 8e-3}
    assert [steps.recipe(v, m, lrs)["lr"] for m in steps.modes(v)] == [5e-4, 4e-3, 1e-3, 8e-3]
    assert steps.recipe(v, "random_subspace", lrs)["steps"] == 3  # the controls share the in-space recipe
    with pytest.raises(ValueError, match="lr_tuning.modes"):
        steps.recipe(v, "subspace", {})
    block = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["embed_merge"]
    lang, vision = block["variants"]["language"], block["variants"]["vision"]
    # the review: the in-space lr of language was untuned and its scale chosen on 24 sentences per task
    assert "subspace" in lang["lr_tuning"]["modes"] and lang["data"]["val_size"] >= 100
    assert set(vision["lr_tuning"]["modes"]) == {"subspace", "random_subspace", "lora"}
    assert {"random_subspace_mean", "lora_mean"} <= set(block["merge"]["methods"])
    for v in (lang, vision):
        assert v["lr_tuning"]["seed"] not in block["seeds"]


def test_check_config_refuses_a_tuning_seed_among_the_test_seeds_and_a_control_not_trained():
    from neurips26.papers.embed_merge import check_config

    block = {"seeds": [0, 1], "run_variants": ["v"], "merge": {"methods": ["lora_mean"]},
             "variants": {"v": {"kind": "vision", "tasks": ["a"], "task_counts": [1], "finetune": {}, "subspace_finetune": {},
                                "pretrain": {}, "lr_tuning": {"seed": 1, "modes": ["subspace"], "grids": {"subspace": [1e-3]}}}}}
    problems = check_config(block)
    assert any("lr_tuning.seed" in p for p in problems)
    assert any(p.startswith("merge.methods: lora_mean") and "controls" in p for p in problems)
