"""beta_tta against independent references: the API wrapper's privacy and exact query count,
the ImageNet-C ports against the reference definitions (closed forms, monotone severities),
LAME against its closed form on a graph without edges and a brute-force fixed point, TENT's
parameter set, TPT's per-image independence, BETA's one call per image and its harmonisation's
closed form, SPSA's unbiasedness on a linear function, and ZOO's query accounting."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neurips26.data.images import shapes
from neurips26.papers.beta_tta import baselines, check_config, corruptions, method, models
from neurips26.papers.beta_tta.api import BlackBoxAPI

ARCH = {"patch": 8, "dim": 16, "depth": 1, "heads": 2, "mlp_ratio": 2.0}
BETA = {"adapt_steering": True, "harmonise": True, "consistency": True, "filtering": True, "api_weight": 0.6,
        "temperature": 1.0, "lr": 0.01, "steps_per_batch": 1, "entropy_margin": 1.0, "views": 3, "view_select": 0.5,
        "consistency_weight": 1.0, "min_crop_scale": 0.6, "tune_norms": True}
ZOO = {"grid": 4, "max_delta": 0.5, "spsa_lr": 0.5, "spsa_stability": 10, "spsa_alpha": 0.602, "spsa_perturbation": 0.05,
       "spsa_gamma": 0.101, "cma_sigma0": 0.05, "cma_popsize": 4, "cma_diagonal": True}


def _net(seed=0):
    torch.manual_seed(seed)
    return models.build(ARCH, 32, 10).eval()


@pytest.fixture(scope="module")
def images():
    x, y = shapes(40, 32, seed=3)
    return x, y


# ---------------------------------------------------------------- API wrapper
def test_api_exposes_no_parameters_or_gradients_and_counts_queries(images):
    net = _net()
    api = BlackBoxAPI(net, latency_per_call_s=0.5, latency_per_image_s=0.01, price_per_1k_queries=2.0)
    assert not isinstance(api, torch.nn.Module)
    for name in ("parameters", "state_dict", "named_parameters", "model", "net", "__dict__"):
        assert not hasattr(api, name), name
    for slot in type(api).__slots__:
        value = getattr(api, slot)
        assert not isinstance(value, (torch.nn.Module, torch.Tensor)), slot
    x = torch.tensor(images[0][:7], requires_grad=True)
    p = api.predict(x)
    assert isinstance(p, np.ndarray) and not isinstance(p, torch.Tensor)
    assert p.shape == (7, 10) and np.allclose(p.sum(1), 1)
    with torch.no_grad():
        ref = torch.softmax(net(torch.as_tensor(images[0][:7])), -1).numpy()
    np.testing.assert_allclose(p, ref, atol=1e-6)
    assert all(not q.requires_grad for q in net.parameters())  # the held model cannot be trained through
    api.predict(images[0][:3])
    assert (api.queries, api.calls) == (10, 2)
    assert api.simulated_latency_s == pytest.approx(2 * 0.5 + 10 * 0.01)
    assert api.cost == pytest.approx(10 * 2.0 / 1000)
    p[:] = 0  # the answer is a copy: changing it changes nothing behind the API
    np.testing.assert_allclose(api.predict(images[0][:7]), ref, atol=1e-6)
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(api)


# ---------------------------------------------------------------- corruptions
def _distortion(x, name, severity):
    return float(np.abs(corruptions.corrupt(x, name, severity, seed=11) - x).mean())


@pytest.mark.parametrize("name", corruptions.CORRUPTIONS)
def test_each_corruption_grows_with_severity_and_its_weakest_stays_close(images, name):
    x = images[0][:16]
    d = [_distortion(x, name, s) for s in range(6)]
    assert d[0] == 0
    out = corruptions.corrupt(x, name, 5, seed=1)
    assert out.shape == x.shape and out.min() >= 0 and out.max() <= 1
    # the weakest severity stays near the clean images (the reference's fog, contrast, frost and
    # snow move pixels by ~0.1-0.2 already at severity 1; severity 0 is the identity)
    assert d[1] < 0.25 and (d[1] <= d[5] or name == "elastic_transform"), d
    # the reference constants of elastic_transform put its large affine jitter in severities
    # 1-2 (not ordered by one magnitude); snow and fog rise by steps within the noise of 16 images
    ordered = range(3, 6) if name == "elastic_transform" else range(1, 6)
    tol = 0.012
    for a, b in zip(list(ordered)[:-1], list(ordered)[1:]):
        assert d[b] >= d[a] - tol, (name, d)
    assert d[5] > d[1] or name == "elastic_transform", (name, d)


def test_corruptions_against_reference_closed_forms():
    rng = np.random.default_rng(0)
    x = rng.random((32, 32, 3))
    # contrast: (x - mean) c + mean with c = 0.05 at severity 5
    m = x.mean(axis=(0, 1), keepdims=True)
    np.testing.assert_allclose(corruptions.contrast(x, 5, rng), np.clip((x - m) * 0.05 + m, 0, 1))
    # brightness: HSV value + 0.1 keeps hue and saturation (against colorsys)
    import colorsys

    out = corruptions.brightness(x, 1, rng)
    for i, j in [(0, 0), (5, 7), (31, 2)]:
        h, s, v = colorsys.rgb_to_hsv(*x[i, j])
        np.testing.assert_allclose(out[i, j], colorsys.hsv_to_rgb(h, s, min(1.0, v + 0.1)), atol=1e-9)
    # pixelate at 0.5 of an even size: 2 x 2 block means
    px = corruptions.pixelate(x, 2, rng)
    np.testing.assert_allclose(px[:2, :2], np.broadcast_to(x[:2, :2].mean(axis=(0, 1)), (2, 2, 3)), atol=1e-12)
    # the disk kernel is normalised and radially symmetric
    k = corruptions.disk_kernel(2.3, 0.1)
    assert k.sum() == pytest.approx(1) and np.allclose(k, k.T) and np.allclose(k, k[::-1])
    # gaussian noise at severity 1 has the reference's sigma 0.08 (away from the clip)
    flat = np.full((64, 64, 3), 0.5)
    assert np.std(corruptions.gaussian_noise(flat, 1, np.random.default_rng(1)) - flat) == pytest.approx(0.08, rel=0.05)
    # shot noise: Poisson(x c) / c keeps the mean
    assert np.mean(corruptions.shot_noise(flat * 0.6, 5, np.random.default_rng(2))) == pytest.approx(0.3, rel=0.05)
    # impulse noise: a share c of values set to 0 or 1
    imp = corruptions.impulse_noise(flat, 5, np.random.default_rng(3))
    assert np.mean(imp != 0.5) == pytest.approx(0.27, abs=0.02)


def test_corruption_is_seeded():
    x = shapes(4, 32, seed=1)[0]
    for name in ("snow", "glass_blur", "frost"):
        np.testing.assert_array_equal(corruptions.corrupt(x, name, 3, 5), corruptions.corrupt(x, name, 3, 5))


# ---------------------------------------------------------------- LAME
def test_lame_without_edges_returns_the_api_probabilities_and_matches_a_brute_force_fixed_point():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(5), size=12)
    np.testing.assert_allclose(baselines.lame(p, np.zeros((12, 12))), p, atol=1e-12)
    w = baselines.knn_affinity(np.sqrt(p), 3)
    assert np.allclose(w, w.T) and np.all(np.diag(w) == 0)
    z = baselines.lame(p, w, iterations=500, tol=1e-14)
    # fixed point: z_i = softmax(log p_i + sum_j W_ij z_j)
    logits = np.log(p) + w @ z
    ref = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(z, ref / ref.sum(1, keepdims=True), atol=1e-9)


def test_lame_window_refines_the_last_batch_with_the_cached_answers_before_it():
    """One batch: LAME on that batch. Several: the last batch's rows of LAME on their concatenation,
    checked against a brute-force fixed point on the joint graph (brute-force kNN by sorting)."""
    rng = np.random.default_rng(1)
    batches = [rng.dirichlet(np.ones(4), size=6) for _ in range(3)]
    alone = baselines.lame(batches[-1], baselines.knn_affinity(np.sqrt(batches[-1]), 2))
    np.testing.assert_allclose(baselines.lame_window(batches[-1:], 2), alone, atol=1e-12)
    p = np.concatenate(batches)
    f = np.sqrt(p) / np.linalg.norm(np.sqrt(p), axis=1, keepdims=True)
    w = np.zeros((18, 18))
    for i in range(18):
        order = [j for j in np.argsort(-(f @ f[i]), kind="stable") if j != i]
        w[i, order[:2]] = 1
    w = np.maximum(w, w.T)
    z = baselines.lame_window(batches, 2, iterations=500)
    assert z.shape == (6, 4)
    zz = baselines.lame(p, baselines.knn_affinity(np.sqrt(p), 2), iterations=500, tol=1e-14)
    logits = np.log(p) + w @ zz
    ref = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(z, (ref / ref.sum(1, keepdims=True))[12:], atol=1e-6)


def test_lame_window_in_the_stream_uses_no_extra_query_and_window_one_is_plain_lame(images):
    from neurips26.papers.beta_tta import steps

    net = _net()
    x = torch.as_tensor(images[0][:32])
    params = {"shift": {"batch_size": 8}, "api": {"latency_per_call_s": 0, "latency_per_image_s": 0,
                                                 "price_per_1k_queries": 0},
              "lame": {"knn": 3, "iterations": 50}}
    api = BlackBoxAPI(net)
    probs = [api.predict(x[i:i + 8]) for i in range(0, 32, 8)]
    plain = np.concatenate([baselines.lame(q, baselines.knn_affinity(np.sqrt(q), 3), 50).argmax(1) for q in probs])
    r1 = steps.run_method("lame", params, net, None, x, 0, tuned={"lame": {"window": 1}})
    np.testing.assert_array_equal(r1["pred"].numpy(), plain)
    r4 = steps.run_method("lame", params, net, None, x, 0, tuned={"lame": {"window": 4}})
    joint = np.concatenate([baselines.lame_window(probs[max(0, k - 3):k + 1], 3, 50).argmax(1) for k in range(4)])
    np.testing.assert_array_equal(r4["pred"].numpy(), joint)
    assert r4["api_queries"] == 32 and r4["api_calls"] == 4
    assert "window" in steps.knobs({"tune": {"knn": [1, 2]}, "shift": {"batch_size": 8}}, "lame")


def test_the_api_measures_its_model_forward_time_and_the_client_time_excludes_it(images):
    """The API's model time is CPU time inside its forward pass: it grows with the images sent and
    resets with the counters; a method's client time is the rest of the job's CPU time."""
    import time

    from neurips26.papers.beta_tta import steps

    torch.manual_seed(0)
    big = models.build({"patch": 4, "dim": 64, "depth": 2, "heads": 2, "mlp_ratio": 2.0}, 32, 10).eval()
    api = BlackBoxAPI(big)
    x = torch.as_tensor(images[0])
    start = time.process_time()
    for _ in range(5):
        api.predict(x)
    total = time.process_time() - start
    assert 0 < api.model_seconds <= total + 1e-6
    api.reset_counters()
    assert api.model_seconds == 0.0
    params = {"shift": {"batch_size": 8}, "api": {"latency_per_call_s": 0, "latency_per_image_s": 0,
                                                 "price_per_1k_queries": 0}}
    r = steps.run_method("source", params, big, None, x, 0)
    assert r["api_model_seconds"] > 0 and r["client_seconds"] >= 0
    # the source method does nothing but call the API: its client time is a small part
    assert r["client_seconds"] < r["api_model_seconds"]


def test_summarise_counts_the_updates_a_stream_allows():
    """7 batches of 16 in a 112-image stream: 7 optimiser updates (the rows need 100)."""
    from neurips26.papers.beta_tta import steps

    net = _net()
    x = torch.as_tensor(shapes(112, 32, seed=5)[0])
    params = {"shift": {"batch_size": 16}, "api": {"latency_per_call_s": 0, "latency_per_image_s": 0,
                                                  "price_per_1k_queries": 0},
              "zoo": {"budgets": [5], "optimizers": ["spsa"], "cma_popsize": 10}}
    for batch, updates in ((16, 7), (8, 14)):
        params["shift"]["batch_size"] = batch
        r = steps.run_method("source", params, net, None, x, 0)
        cell = {"accuracy": 0.5, "correct": "1" * 56 + "0" * 56, "api_queries_per_sample": r["api_queries"] / 112,
                "api_calls": r["api_calls"], "simulated_api_latency_per_sample_s": 0.0,
                "whitebox_evaluations_per_sample": 0.0}
        tent = {**cell, "api_queries_per_sample": 0, "api_calls": 0}
        run = {"methods": ["tent", "source"], "cells": {"c/5": {"source": cell, "tent": tent}}, "train": {}}
        timing = {m: {"client_seconds_per_sample": 1e-4, "api_model_seconds_per_sample": 2e-3} for m in ("source", "tent")}
        dom = steps.summarise({"v": [run]}, {"v": [timing]}, {"api": {}, "zoo": params["zoo"]})["v"]
        assert (dom["stream_length"], dom["updates_per_stream"]) == (112, updates)
        assert dom["methods"]["source"]["api_model_seconds_per_sample_seeds"] == [2e-3]


# ---------------------------------------------------------------- TENT
def test_tent_updates_only_normalisation_parameters(images):
    net = _net()
    tent = baselines.Tent(net, {"lr": 0.05, "steps_per_batch": 1})
    before = {k: v.clone() for k, v in tent.net.state_dict().items()}
    tent.step(torch.as_tensor(images[0][:16]))
    norm_keys = {k for k, m in tent.net.named_modules() if isinstance(m, torch.nn.LayerNorm)}
    changed = {k for k, v in tent.net.state_dict().items() if not torch.equal(v, before[k])}
    assert changed, "TENT changed nothing"
    assert all(k.rsplit(".", 1)[0] in norm_keys for k in changed), changed
    # the source model it copied is untouched
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in _net().state_dict().items())


# ---------------------------------------------------------------- TPT
def test_tpt_prompts_are_per_image_episodic(images):
    """An image's TPT prediction does not depend on the other images of its batch."""
    net = _net()
    cfg = {"views": 4, "select": 0.5, "lr": 0.5, "steps": 1, "min_crop_scale": 0.6}
    x = torch.as_tensor(images[0][:6])
    a = baselines.Tpt(net, cfg, seed=0)
    together = a.step(x)
    # the same views for image 0 alone: augment draws per (view, image), so replay the generator
    b = baselines.Tpt(net, cfg, seed=0)
    prompt_logits = []
    gen = torch.Generator().manual_seed(0)
    views = torch.cat([x[None], method.augment(x, 3, gen, 0.6)], 0)[:, :1]
    p = torch.zeros(1, net.tokens, net.dim, requires_grad=True)
    opt = torch.optim.AdamW([p], lr=0.5, weight_decay=0.0)
    logp = torch.log_softmax(b.net(views.flatten(0, 1), p.repeat(4, 1, 1)).reshape(4, 1, -1), -1)
    idx = method.entropy(logp).detach().topk(2, dim=0, largest=False).indices
    sel = logp.gather(0, idx[..., None].expand(-1, -1, 10))
    loss = method.entropy(torch.logsumexp(sel, 0) - np.log(2)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        prompt_logits = b.net(x[:1], p)
    assert together[0] == prompt_logits.argmax(-1)[0]
    assert a.evaluations == 4 * 6 + 6


# ---------------------------------------------------------------- BETA
def test_harmonisation_is_the_normalised_geometric_mixture():
    rng = np.random.default_rng(0)
    pa = rng.dirichlet(np.ones(4), size=3)
    s = rng.normal(size=(3, 4))
    ps = np.exp(s) / np.exp(s).sum(1, keepdims=True)
    ref = pa ** 0.3 * ps ** 0.7
    ref /= ref.sum(1, keepdims=True)
    out = method.harmonise(torch.log(torch.tensor(pa)), torch.tensor(s), 0.3, 1.0).exp().numpy()
    np.testing.assert_allclose(out, ref, atol=1e-12)


@pytest.mark.parametrize("ablation", [{}, {"harmonise": False}, {"filtering": False}, {"consistency": False},
                                      {"adapt_steering": False}])
def test_beta_calls_the_api_once_per_image_and_adapts_only_the_steering_model(images, ablation):
    source, steering = _net(0), _net(1)
    api = BlackBoxAPI(source)
    beta = method.Beta(api, steering, {**BETA, **ablation}, 10, seed=0)
    before = {k: v.clone() for k, v in beta.net.state_dict().items()}
    x = torch.as_tensor(images[0][:24])
    preds = torch.cat([beta.step(x[i:i + 8]) for i in range(0, 24, 8)])
    assert preds.shape == (24,)
    assert api.queries == 24 and api.calls == 3
    cfg = {**BETA, **ablation}
    per_image = 1 + (1 + cfg["views"] * cfg["consistency"] if cfg["adapt_steering"] else 0)
    assert beta.evaluations == 24 * per_image  # steering-model passes: client compute, no API call
    changed = any(not torch.equal(v, before[k]) for k, v in beta.net.state_dict().items())
    moved = bool(beta.prompt.abs().sum() > 0)
    assert (changed and moved) == bool(ablation != {"adapt_steering": False})
    # the client's copy is adapted, not the steering model it was given
    assert all(torch.equal(v, _net(1).state_dict()[k]) for k, v in steering.state_dict().items())


def test_frozen_beta_is_the_ensemble_of_api_and_steering(images):
    source, steering = _net(0), _net(1)
    beta = method.Beta(BlackBoxAPI(source), steering, {**BETA, "adapt_steering": False}, 10, seed=0)
    x = torch.as_tensor(images[0][:8])
    with torch.no_grad():
        la, ls = torch.log_softmax(source(x), -1), torch.log_softmax(steering(x), -1)
    ref = (0.6 * la + 0.4 * ls).argmax(-1)
    assert torch.equal(beta.step(x), ref)


# ---------------------------------------------------------------- ZOO
def test_spsa_is_unbiased_for_a_linear_function():
    rng = np.random.default_rng(0)
    g = rng.normal(size=6)
    d = rng.normal(size=6)
    est = np.mean([baselines.spsa_gradient(lambda v: float(g @ v + 3.0), d, 0.1, rng) for _ in range(20000)], 0)
    np.testing.assert_allclose(est, g, atol=0.06)
    # each estimate is (g . u) u for its Rademacher direction u: the finite difference is exact
    one = baselines.spsa_gradient(lambda v: float(g @ v), d, 0.1, np.random.default_rng(1))
    u = np.random.default_rng(1).choice([-1.0, 1.0], size=6)
    np.testing.assert_allclose(one, (g @ u) * u, atol=1e-9)


@pytest.mark.parametrize("optimizer, budget, expected", [("spsa", 11, 11), ("spsa", 10, 9), ("cma", 13, 13),
                                                         ("cma", 12, 9), ("spsa", 1, 1)])
def test_zoo_spends_exactly_its_query_budget(images, optimizer, budget, expected):
    api = BlackBoxAPI(_net())
    zoo = baselines.Zoo(api, ZOO, optimizer, budget, 32, seed=0)
    x = torch.as_tensor(images[0][:10])
    zoo.step(x[:5])
    zoo.step(x[5:])
    assert api.queries == expected * 10
    assert np.abs(zoo.d).max() <= ZOO["max_delta"]


def test_zoo_with_no_steps_is_the_source_model(images):
    net = _net()
    zoo = baselines.Zoo(BlackBoxAPI(net), ZOO, "spsa", 1, 32, seed=0)
    x = torch.as_tensor(images[0][:10])
    with torch.no_grad():
        assert torch.equal(zoo.step(x), net(x).argmax(-1))


# ---------------------------------------------------------------- config
def test_check_config_names_the_key():
    block = {"run_variants": ["a", "b"], "variants": {"a": {"kind": "vision", "data": {"image_size": 30},
                                                            "source": {"patch": 8, "dim": 10, "heads": 4}}},
             "methods": ["beta", "beta_nothing", "warp"], "beta": {"lr": 1}, "beta_ablations": {"x": {"nope": 1}},
             "shift": {"corruptions": ["rain"]}, "zoo": {"budgets": [0]}}
    problems = "\n".join(check_config(block))
    for key in ("run_variants", "methods: unknown method 'beta_nothing'", "methods: unknown method 'warp'",
                "beta_ablations.x", "shift.corruptions", "zoo.budgets", "variants.a.source.patch", "variants.a.source.dim"):
        assert key in problems, key


def test_lames_window_at_one_is_its_natural_lower_end_not_a_cap():
    from neurips26.core import tuning
    from neurips26.papers.beta_tta import steps

    # the window's grid starts at plain LAME, and the tune step declares it the natural end
    assert steps.LAME_WINDOWS[0] == steps.LAME_PLAIN[0] == 1
    _, (rec,) = tuning.search(lambda window: -window, {"window": steps.LAME_WINDOWS}, method="lame",
                              integer=["window"], bounds={"window": (1, None)}, natural_ends={"window": steps.LAME_PLAIN})
    assert rec.status == "tuned" and rec.edge == "low" and "natural lower end" in rec.note
    assert tuning.capped_note([rec], "lame") == ""
