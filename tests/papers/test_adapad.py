"""adapad's core computations against independent references: parallel deflation recovers the top-r
singular triplets (numpy SVD), sequential deflation's frozen errors stay fixed, the linearised
decay rate, the rank-growth rule never exceeds its budget (random importances), the deflation
passes of the network (stop-gradient structure against a hand-built forward, the summed loss
against the sum of per-pass cross-entropies), sequential stages, AdaLoRA through peft keeping
its rank budget, and deployed-size counting against a hand count."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from neurips26.papers.adapad import method
from neurips26.papers.adapad import model as am


def _problem(seed=0, noise=0.2):
    return method.planted_matrix(20, 16, [3.0, 2.4, 1.8, 1.2], noise, seed)


def test_parallel_deflation_recovers_the_top_singular_triplets():
    p = _problem()
    r = 4
    res = method.run_deflation(p, r, 0.8 / p.s[0], 600, method.component_schedule("parallel", r, 600), 0.01, seed=1)
    u, s, vt = np.linalg.svd(p.observed)
    for k in range(r):
        ref = s[k] * np.outer(u[:, k], vt[k])
        assert res["algorithmic"][-1, k] < 1e-9
        # the same triplet from an independent SVD call (sign-free: the rank-1 product)
        assert np.linalg.norm(p.triplet(k) - ref) < 1e-10
    assert res["deployed"][-1] < 1e-9


def test_sequential_errors_stay_fixed_once_frozen_and_successors_inherit_them():
    p = _problem(seed=2)
    r, rounds = 4, 160  # 40 rounds per component: too few to converge
    sched = method.component_schedule("sequential", r, rounds)
    res = method.run_deflation(p, r, 0.8 / p.s[0], rounds, sched, 0.01, seed=0)
    for k, (start, act, stop) in enumerate(sched):
        tail = res["algorithmic"][stop:, k]
        assert np.all(tail == tail[0]), k  # never changes after freezing
    par = method.run_deflation(p, r, 0.8 / p.s[0], rounds, method.component_schedule("parallel", r, rounds), 0.01, seed=0)
    assert res["algorithmic"][-1].max() > 100 * par["algorithmic"][-1].max()


def test_one_round_matches_a_hand_written_jacobi_step():
    p = _problem(seed=3)
    r, lr = 3, 0.1
    rng = np.random.default_rng(5)
    res0 = method.run_deflation(p, r, lr, 2, method.component_schedule("parallel", r, 2), 0.5, seed=5)
    # rebuild: b = 0, a ~ N(0, 0.25 / n); after round 1 only b moves (grad a = E^T b = 0)
    a = 0.5 / math.sqrt(16) * rng.standard_normal((r, 16))
    b = np.zeros((r, 20))
    for _ in range(2):
        nb, na = b.copy(), a.copy()
        for k in range(r):
            e = p.observed - sum((np.outer(b[j], a[j]) for j in range(k)), np.zeros((20, 16))) - np.outer(b[k], a[k])
            nb[k], na[k] = b[k] + lr * e @ a[k], a[k] + lr * e.T @ b[k]
        b, a = nb, na
    for k in range(r):
        want = np.linalg.norm(np.outer(b[k], a[k]) - p.triplet(k)) / p.s[k]
        assert res0["algorithmic"][-1, k] == pytest.approx(want, rel=1e-12)


def test_fitted_decay_rate_of_the_first_component_matches_the_linearisation():
    p = _problem(seed=4, noise=0.1)
    lr = 0.5 / p.s[0]
    res = method.run_deflation(p, 4, lr, 500, method.component_schedule("parallel", 4, 500), 0.01, seed=0)
    w = method.warmup_round(res["algorithmic"][:, 0], 0, 0.1)
    fit = method.decay_fit(res["algorithmic"][:, 0], w, 1e-11)
    want = -math.log(1 - lr * (p.s[0] - p.s[1]))
    assert fit["rate"] == pytest.approx(want, rel=0.03) and fit["r2"] > 0.999
    assert method.predicted_rates(p.s, lr, 4)[0] == pytest.approx(want)


def test_decay_fit_recovers_a_planted_exponential():
    e = 2.0 * np.exp(-0.07 * np.arange(300))
    fit = method.decay_fit(e, 10, 1e-6)
    assert fit["rate"] == pytest.approx(0.07) and fit["r2"] == pytest.approx(1.0)
    assert fit["last"] == int(np.ceil(math.log(2e6) / 0.07)) - 1


def test_advance_learning_schedule_and_activation():
    sched = method.component_schedule("adapad", 4, 400, interval=50, advance=20)
    assert sched == [(0, 0, 400), (30, 50, 400), (80, 100, 400), (130, 150, 400)]
    assert method.component_schedule("sequential", 4, 400)[2] == (200, 200, 300)


def test_rank_growth_never_exceeds_the_budget():
    rng = np.random.default_rng(0)
    for trial in range(300):
        mods = [f"m{i}" for i in range(int(rng.integers(1, 6)))]
        cost = {m: int(rng.integers(1, 50)) for m in mods}
        ranks = {m: int(rng.integers(0, 3)) for m in mods}
        max_rank = int(rng.integers(3, 8))
        budget = sum(ranks[m] * cost[m] for m in mods) + int(rng.integers(0, 200))
        for _ in range(60):
            imp = {m: float(rng.random()) for m in mods}
            pick = method.grow_choice(ranks, imp, budget, max_rank, cost=cost)
            if pick is None:
                # nothing fits: every module is full or one more rank of it would overspend
                spent = sum(ranks[m] * cost[m] for m in mods)
                assert all(ranks[m] >= max_rank or spent + cost[m] > budget for m in mods)
                break
            assert imp[pick] == max(imp[m] for m in mods if ranks[m] < max_rank and
                                    sum(ranks[x] * cost[x] for x in mods) + cost[m] <= budget)
            ranks[pick] += 1
            assert sum(ranks[m] * cost[m] for m in mods) <= budget
            assert max(ranks.values()) <= max_rank
    assert method.grow_choice({"a": 1, "b": 1}, {"a": 0.01, "b": 0.02}, 10, 4, min_score=0.5) is None


def test_adapter_size_against_a_hand_count():
    shapes = {"query": (384, 384), "ffn_in": (384, 1536), "ffn_out": (1536, 384)}
    ranks = {"query": 3, "ffn_in": 1, "ffn_out": 2}
    hand = 3 * (384 + 384) + 1 * (384 + 1536) + 2 * (1536 + 384)
    assert method.adapter_size(shapes, ranks) == hand == 8064
    assert method.adapter_size(shapes, ranks, per_rank_extra=1) == hand + 6


# ---------------------------------------------------------------- the network passes

class Tiny(torch.nn.Module):
    """Two Linear maps and a head, with the harness classifier's interface (features, head)."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.query = torch.nn.Linear(6, 5)
        self.value = torch.nn.Linear(5, 4)
        self.head = torch.nn.Linear(4, 3)
        for lin in (self.query, self.value, self.head):
            with torch.no_grad():
                lin.weight.copy_(torch.randn(lin.weight.shape, generator=g))

    def features(self, h, mask):
        return torch.tanh(self.value(torch.tanh(self.query(h.mean(1)))))

    def forward(self, h, mask):
        return self.head(self.features(h, mask))


def _tiny(active=2, candidate=True, max_rank=4):
    net = Tiny()
    maps = am.attach(net, ("query", "value"), max_rank, seed=0, active=active, candidate=candidate)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in maps.values():
            for b in m.b:
                b.copy_(0.3 * torch.randn(b.shape, generator=g))
    return net, maps


def test_deflation_pass_uses_frozen_predecessors_and_its_own_component():
    net, maps = _tiny()
    x = torch.randn(7, 6)
    q = maps["query"]
    q.level = 1
    out = q(x)
    W = q.base.weight + q.product(0)
    want = x @ (W + torch.outer(q.b[1], q.a[1])).T + q.base.bias
    assert torch.allclose(out, want, atol=1e-6)
    out.sum().backward()
    assert q.a[0].grad is None and q.b[0].grad is None  # the predecessor is frozen in this pass
    assert q.b[1].grad is not None and q.a[2].grad is None
    # deployed: the two active components, not the candidate
    q.level = None
    assert torch.allclose(q(x), x @ (q.base.weight + q.product(0) + q.product(1)).T + q.base.bias, atol=1e-6)


def test_adapad_objective_equals_the_sum_of_the_passes_cross_entropies():
    net, maps = _tiny()
    model = am.AdaPaDNet(net, maps)
    model.train()
    h, mask, y = torch.randn(9, 3, 6), torch.ones(9, 3), torch.randint(0, 3, (9,))
    loss = F.cross_entropy(model(h, mask), y) + model.correction()
    # by hand: the deployed pass (head trains) + one pass per component index (head frozen)
    want = 0.0
    for m in maps.values():
        m.level = "frozen"
    want = want + F.cross_entropy(net(h, mask), y)
    for level in range(3):  # two active + the candidate
        for m in maps.values():
            m.level = level
        logits = F.linear(net.features(h, mask), net.head.weight.detach(), net.head.bias.detach())
        want = want + F.cross_entropy(logits, y)
    for m in maps.values():
        m.level = None
    assert float(loss.detach()) == pytest.approx(float(want.detach()), rel=1e-6)
    loss.backward()
    g_b1 = maps["value"].b[1].grad.clone()
    model.zero_grad()
    want.backward()
    assert torch.allclose(g_b1, maps["value"].b[1].grad, atol=1e-6)
    model.eval()
    for m in maps.values():
        m.level = None
    assert torch.allclose(model(h, mask), net(h, mask))


def test_sequential_trains_one_component_at_a_time():
    net, maps = _tiny(active=3, candidate=False, max_rank=3)
    model = am.AdaPaDNet(net, maps, "sequential")
    hook = am.sequential_stage_hook(model, 3, 9)
    stages = []
    for step in range(9):
        stages.append(model.stage)
        hook(model, step)
    assert stages == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    model.train()
    model.stage = 1
    F.cross_entropy(model(torch.randn(4, 3, 6), torch.ones(4, 3)), torch.tensor([0, 1, 2, 0])).backward()
    q = maps["query"]
    assert q.b[0].grad is None and q.b[1].grad is not None and q.b[2].grad is None


def test_growth_hook_activates_the_most_important_candidate_within_budget():
    net, maps = _tiny(active=1)
    model = am.AdaPaDNet(net, maps)
    cost = {"query": 11, "value": 9}
    grow = am.RankGrowth(model, budget=11 + 9 + 9 + 9, max_rank=4, start=0, end=10, every=1, beta=0.0, cost=cost)
    maps["query"].b[1].grad = torch.zeros(5)
    maps["value"].b[1].grad = torch.ones(4)
    grow(model, 0)
    assert model.ranks() == {"query": 1, "value": 2} and grow.events[0]["module"] == "value"
    for step in range(1, 6):
        for m in maps.values():
            m.b[m.active].grad = torch.ones_like(m.b[m.active])
        grow(model, step)
    assert sum(model.ranks()[k] * cost[k] for k in cost) <= 38


def test_adalora_through_peft_respects_its_rank_budget():
    torch.manual_seed(0)
    net = Tiny()
    steps = 30
    model, after, extra = am.adalora(net, ("query", "value"), init_r=4, target_r=2, steps=steps, tinit=3, tfinal=8,
                                     delta_t=1, orth_reg_weight=0.1, seed=0)
    assert type(model).__name__ == "AdaLoraModel"
    assert any("lora_E" in n for n, _ in model.named_parameters())
    assert net.head.weight.requires_grad
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.01)
    h, mask, y = torch.randn(16, 3, 6), torch.ones(16, 3), torch.randint(0, 3, (16,))
    for step in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(h, mask), y) + extra(model)
        loss.backward()
        opt.step()
        with torch.no_grad():
            after(model, step)
    ranks = am.adalora_ranks(model)
    assert sum(ranks.values()) <= 2 * 2 and set(ranks) == {"query", "value"}
    # peft's own rank pattern agrees with the count of kept (nonzero) singular values
    pattern = model.peft_config["default"].rank_pattern
    assert sum(sum(v) for v in pattern.values()) == sum(ranks.values())


# ---------------------------------------------------------------- the tuning protocol
def test_tune_extends_the_lr_grid_past_an_edge_that_holds_the_best(monkeypatch, tmp_path):
    """Validation accuracy that peaks beyond the top of the lr grid (lr 0.1 against a grid ending
    at 0.03): the grid grows until the best is interior, for every method alike; a peak beyond
    the cap is recorded capped."""
    from neurips26.core import io
    from neurips26.papers.adapad import steps
    from neurips26.papers.lora_harness import tasks

    monkeypatch.setattr(steps, "_data", lambda *a, **k: None)
    monkeypatch.setattr(tasks, "split_validation", lambda *a, **k: None)
    peak = {"v": -1.0}
    monkeypatch.setattr(steps, "_fit", lambda params, name, lr, *a: (
        {"accuracy": 0.9 - 0.1 * abs(math.log10(lr) - peak["v"]), "final_loss": 0.5}, 0.0))
    params = {"task": "intent", "finetune": {"tune_seed": 100}, "data": {"val_size": 8}, "tuning": {"extensions": 3},
              "methods": ["lora_r4", "adapad"], "grid": {m: [0.003, 0.01, 0.03] for m in ("lora_r4", "adapad")}}
    steps.tune(params, {}, tmp_path)
    out = io.read_json(tmp_path / "tune.json")
    for name in ("lora_r4", "adapad"):
        rec = next(r for r in out["records"] if r["method"] == name)
        assert rec["status"] == "tuned" and rec["extensions"] >= 1 and max(rec["grid"]) > 0.03
        assert abs(math.log10(out["chosen"][name]["lr"]) + 1.0) < 0.05
        assert len(out["chosen"][name]["trials"]) == len(rec["grid"])
    peak["v"] = 2.0
    steps.tune({**params, "tuning": {"extensions": 2}}, {}, tmp_path / "capped")
    rec = io.read_json(tmp_path / "capped" / "tune.json")["records"][0]
    assert rec["status"] == "capped" and rec["edge"] == "high" and len(rec["grid"]) == 5


def test_mechanism_step_sizes_go_through_the_tuning_protocol(monkeypatch, tmp_path):
    """The mechanism's step size eta s_1 is tuned per schedule by the protocol (lower final error
    is better): a best below the grid's low edge extends it."""
    from neurips26.core import io
    from neurips26.papers.adapad import steps

    m = {"seeds": [0], "tune_seed": 100, "rows": 8, "cols": 6, "spectrum": [3.0, 2.0], "noise": 0.1, "rounds": 40,
         "init_scale": 0.01, "lr_grid": [0.2, 0.4, 0.8], "interval": 10, "advance": 5, "advance_sweep": [0, 5],
         "warm_threshold": 0.1, "floor": 1e-10, "record_every": 5}
    real = steps._deflate

    def fake(mm, prob, kind, lr_rel, seed, advance=None):
        res, sched = real(mm, prob, kind, lr_rel, seed, advance)
        if seed == mm["tune_seed"]:   # the tuning score: best at eta s_1 = 0.05, below the grid
            res = {**res, "algorithmic": np.full_like(res["algorithmic"], 10 ** (abs(math.log10(lr_rel / 0.05)) - 3))}
        return res, sched

    monkeypatch.setattr(steps, "_deflate", fake)
    steps.mechanism({"mechanism": m, "tuning": {"extensions": 3}}, {}, tmp_path)
    out = io.read_json(tmp_path / "metrics.json")
    tuned = [r for r in out["records"] if r["status"] in ("tuned", "capped")]
    assert {r["method"] for r in tuned} == {"parallel", "adapad", "sequential"}
    for r in tuned:
        assert r["status"] == "tuned" and min(r["grid"]) < 0.2 and r["direction"] == "lower"
        assert abs(r["chosen"] - 0.05) < 1e-9
    assert all(abs(v - 0.05) < 1e-9 for v in out["tuned_lr"].values())


def test_importance_stop_is_relative_to_the_active_components_current_gains():
    """A candidate is activated only while its EMA gain is at least min_ratio times the mean EMA
    gain of the active components (hand-computed EMAs). The defect: the stop was referenced to the
    first growth step's best gain, near 0 when growth starts (b = 0), so it could never fire."""
    net, maps = _tiny(active=1)
    model = am.AdaPaDNet(net, maps)
    grow = am.RankGrowth(model, budget=10 ** 6, max_rank=4, start=1, end=10, every=1, beta=0.5, min_ratio=0.1)
    q, v = maps["query"], maps["value"]

    def grads(active_scale, cand_scale):
        for m in maps.values():
            for k in range(m.created):
                m.b[k].grad = (active_scale if k < m.active else cand_scale) * torch.sign(m.b[k].detach())

    # step 0 (no growth): candidates' gains near 0, as at the start of training
    grads(1.0, 1e-6)
    grow(model, 0)
    gain_active = {n: float(m.b[0].detach().abs().sum()) for n, m in maps.items()}
    assert float(q.ema_active[0]) == pytest.approx(0.5 * gain_active["query"])
    # step 1 (growth): candidates still ~1e-6 of the active gains: the stop holds growth back
    grads(1.0, 1e-6)
    grow(model, 1)
    want_ref = np.mean([0.75 * gain_active[n] for n in maps])  # EMA after two steps of the same gain
    assert model.ranks() == {"query": 1, "value": 1} and grow.events == []
    assert len(grow.stops) == 1 and grow.stops[0]["reference"] == pytest.approx(want_ref)
    # candidates with gains comparable to the active ones grow
    for step in (2, 3, 4):
        grads(1.0, 1.0)
        grow(model, step)
    assert sum(model.ranks().values()) > 2 and grow.events[0]["reference"] > 0
    # without the stop (min_ratio 0) tiny candidates grow as before
    net2, maps2 = _tiny(active=1)
    model2 = am.AdaPaDNet(net2, maps2)
    grow2 = am.RankGrowth(model2, budget=10 ** 6, max_rank=4, start=0, end=10, every=1, beta=0.5, min_ratio=0.0)
    for m in maps2.values():
        m.b[0].grad, m.b[1].grad = torch.ones_like(m.b[0]), 1e-6 * torch.sign(m.b[1].detach())
    grow2(model2, 0)
    assert sum(model2.ranks().values()) == 3


def test_adapad_max_budget_is_lora_at_the_max_rank():
    from neurips26.papers.adapad import steps

    shapes = {"query": (384, 384), "ffn_in": (384, 1536)}
    params = {"adapad": {"budget_rank": 4, "max_rank": 8}}
    assert steps.budget_params(params, shapes) == 4 * (768 + 1920)
    assert steps.budget_params(params, shapes, 8) == 8 * (768 + 1920)


def test_sequential_deflation_with_long_stages_reaches_the_svd_triplets():
    """Matched steps per component: sequential deflation with stages of T rounds (r T rounds)
    recovers every top singular triplet (numpy SVD) as parallel deflation does in T rounds, so the
    matched-rounds row can fail; with stages of T / r its frozen errors stay far larger."""
    prob = _problem(seed=2)
    r, T, lr = 4, 400, 0.8 / prob.s[0]
    long = method.run_deflation(prob, r, lr, r * T, method.component_schedule("sequential", r, r * T), 0.01, 0)
    par = method.run_deflation(prob, r, lr, T, method.component_schedule("parallel", r, T), 0.01, 0)
    short = method.run_deflation(prob, r, lr, T, method.component_schedule("sequential", r, T), 0.01, 0)
    assert max(long["algorithmic"][-1]) < 1e-8 and max(par["algorithmic"][-1]) < 1e-8
    assert max(short["algorithmic"][-1]) > 100 * max(long["algorithmic"][-1])
    assert sum(b - a for a, _, b in method.component_schedule("sequential", r, r * T)) == r * T


def test_mechanism_records_the_matched_compute_schedules(tmp_path):
    from neurips26.core import io
    from neurips26.papers.adapad import steps

    m = {"seeds": [0], "tune_seed": 100, "rows": 8, "cols": 6, "spectrum": [3.0, 2.0], "noise": 0.1, "rounds": 40,
         "init_scale": 0.01, "lr_grid": [0.4], "interval": 10, "advance": 5, "advance_sweep": [0, 5],
         "warm_threshold": 0.1, "floor": 1e-10, "record_every": 5}
    steps.mechanism({"mechanism": m, "tuning": {"extensions": 0}}, {}, tmp_path)
    got = io.read_json(tmp_path / "metrics.json")["seeds"]["0"]["matched"]
    assert got["sequential"] == {**got["sequential"], "rounds": 80, "worker_steps": 80}
    assert got["parallel"]["rounds"] == 20 and got["parallel"]["worker_steps"] == 40


def test_growth_window_check_counts_the_activations_to_the_cap():
    """adapad_max's size must not be bounded by the schedule: 6 maps from rank 1 to 8 need 42
    activations; the window is steps 4..58 (span 54): every 2 steps gives 28, every step 55
    (hand counts), so adapad_max grows every step; a window of 30 steps cannot reach the cap."""
    from neurips26.papers.adapad import check_config, growth_every_max, growth_steps_short

    a = {"init_rank": 1, "max_rank": 8, "grow_start": 0.05, "grow_end": 0.65, "grow_every": 2}
    assert growth_every_max(a, 90, 6) == 1 and growth_steps_short(a, 90, 6) == 42 - 55
    assert growth_every_max(a, 90, 1) == 2  # one map: 7 activations fit every 2 steps (28 growth steps)
    assert growth_every_max({**a, "grow_every": 9}, 90, 1) == 9  # 54 // 6
    assert growth_every_max({**a, "grow_every": 10}, 90, 1) == 9
    block = {"methods": ["lora_r4", "lora_r8", "adapad_max"], "grid": {m: [0.01] for m in ("lora_r4", "lora_r8", "adapad_max")},
             "finetune": {"steps": 90, "modules": list(am.MODULES)}, "adapad": a}
    assert not any("grow_end" in p for p in check_config(block))
    short = {**a, "grow_end": 0.38}  # steps 4..34: 31 growth steps < 42
    assert growth_steps_short(short, 90, 6) == 42 - 31
    assert any("grow_end" in p for p in check_config({**block, "adapad": short}))
    assert any("lora_r8" in p for p in check_config({**block, "methods": ["lora_r4", "adapad_max"]}))
