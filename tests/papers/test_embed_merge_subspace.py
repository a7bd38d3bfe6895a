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
    assert {steps.source_of(m) for m in g["methods"] if m not in ("embed_mean", "embed_aligned")} == {"full"}


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
