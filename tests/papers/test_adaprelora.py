"""adaprelora: the closed form against generic least squares, Adafactor's factored second moment
against transformers, LoRA-Pro against its defining least-squares problem, ScaledAdamW against
peft's preconditioner, W's gradient from the hooks against autograd, and the O((m + n) r) state."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.papers.adaprelora import baselines, method

torch.set_default_dtype(torch.float32)


def _rand(seed, m=7, n=5, r=2):
    g = torch.Generator().manual_seed(seed)
    f = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    return f(m, n), f(m, r), f(r, n), torch.rand(m, generator=g, dtype=torch.float64) + 0.3, \
        torch.rand(n, generator=g, dtype=torch.float64) + 0.3


def _generic(D, B, A, s, p_r, p_c):
    """torch.linalg.lstsq on the vectorised H-weighted problem, then a second lstsq over the gauge K
    for the least imbalance ||Wt (dB A - B dA)||."""
    m, n = D.shape
    r = B.shape[1]
    w = (p_r[:, None] * p_c[None, :]).sqrt()
    cols = []
    for k in range(m * r + r * n):
        e = torch.zeros(m * r + r * n, dtype=torch.float64)
        e[k] = 1
        dB, dA = e[: m * r].reshape(m, r), e[m * r:].reshape(r, n)
        cols.append((w * s * (dB @ A + B @ dA)).reshape(-1))
    J = torch.stack(cols, 1)
    x = torch.linalg.lstsq(J, (w * D).reshape(-1, 1), driver="gelsd").solution.squeeze(1)
    dB0, dA0 = x[: m * r].reshape(m, r), x[m * r:].reshape(r, n)
    gauge = []
    for k in range(r * r):
        E = torch.zeros(r * r, dtype=torch.float64)
        E[k] = 1
        gauge.append((w * 2 * (B @ E.reshape(r, r) @ A)).reshape(-1))
    K = torch.linalg.lstsq(torch.stack(gauge, 1), -(w * (dB0 @ A - B @ dA0)).reshape(-1, 1), driver="gelsd").solution
    K = K.reshape(r, r)
    return dB0 + B @ K, dA0 - K @ A


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_form_is_the_weighted_least_squares_minimiser_with_least_imbalance(seed):
    D, B, A, p_r, p_c = _rand(seed)
    dB, dA = method.balanced_projection(D, B, A, 0.7, p_r, p_c, damping=0.0)
    gB, gA = _generic(D, B, A, 0.7, p_r, p_c)
    assert torch.allclose(dB, gB, atol=1e-8) and torch.allclose(dA, gA, atol=1e-8)


def test_closed_form_beats_random_gauges_and_random_updates():
    D, B, A, p_r, p_c = _rand(5)
    w = (p_r[:, None] * p_c[None, :]).sqrt()
    dB, dA = method.balanced_projection(D, B, A, 1.3, p_r, p_c, damping=0.0)
    res = float((w * (1.3 * (dB @ A + B @ dA) - D)).norm())
    imb = float((w * (dB @ A - B @ dA)).norm())
    g = torch.Generator().manual_seed(1)
    for _ in range(20):
        K = torch.randn(2, 2, generator=g, dtype=torch.float64)
        b2, a2 = dB + B @ K, dA - K @ A
        assert abs(float((w * (1.3 * (b2 @ A + B @ a2) - D)).norm()) - res) < 1e-9   # same image
        assert float((w * (b2 @ A - B @ a2)).norm()) >= imb - 1e-12
        b3 = dB + 0.1 * torch.randn(dB.shape, generator=g, dtype=torch.float64)
        assert float((w * (1.3 * (b3 @ A + B @ dA) - D)).norm()) >= res - 1e-12


def test_identity_preconditioner_reduces_to_the_balanced_frobenius_projection():
    """H = I: dB = s^-1 (I - P_B / 2) D A^+, dA = s^-1 B^+ D (I - P_A / 2); a constant H gives the same."""
    D, B, A, _, _ = _rand(3)
    s = 0.5
    Bp, Ap = torch.linalg.pinv(B), torch.linalg.pinv(A)
    PB, PA = B @ Bp, Ap @ A
    want_B = (torch.eye(7, dtype=torch.float64) - PB / 2) @ D @ Ap / s
    want_A = Bp @ D @ (torch.eye(5, dtype=torch.float64) - PA / 2) / s
    dB, dA = method.balanced_projection(D, B, A, s, damping=0.0)
    assert torch.allclose(dB, want_B, atol=1e-10) and torch.allclose(dA, want_A, atol=1e-10)
    dB2, dA2 = method.balanced_projection(D, B, A, s, torch.full((7,), 3.0, dtype=torch.float64),
                                          torch.full((5,), 0.2, dtype=torch.float64), damping=0.0)
    assert torch.allclose(dB2, want_B, atol=1e-10) and torch.allclose(dA2, want_A, atol=1e-10)


def test_factored_second_moment_and_direction_match_transformers_adafactor():
    from transformers.optimization import Adafactor

    g = torch.Generator().manual_seed(0)
    p = nn.Parameter(torch.randn(6, 4, generator=g))
    opt = Adafactor([p], lr=0.01, beta1=None, scale_parameter=False, relative_step=False, warmup_init=False, clip_threshold=1.0)
    row, col = torch.zeros(6), torch.zeros(4)
    for t in range(1, 4):
        grad = torch.randn(6, 4, generator=g) * (t + 1)
        before = p.detach().clone()
        p.grad = grad.clone()
        opt.step()
        method.factored_second_moment(row, col, grad, method.decay_beta2(t))
        st = opt.state[p]
        assert torch.allclose(st["exp_avg_sq_row"], row, rtol=1e-5) and torch.allclose(st["exp_avg_sq_col"], col, rtol=1e-5)
        p_r, p_c = method.sqrt_second_moment_factors(row, col)
        want = -0.01 * method.adafactor_direction(grad, p_r, p_c, 1.0)
        assert torch.allclose(p.detach() - before, want, atol=1e-7)


def test_lora_pro_solves_its_least_squares_problem_and_its_sylvester_gauge():
    from scipy.optimize import minimize

    G, B, A, _, _ = _rand(4)
    s = 2.0
    gA, gB = baselines.lora_pro_factor_grads(G, B, A, s, damping=0.0)
    # the equivalent gradient is the Frobenius projection of G onto the tangent space
    dB, dA = method.balanced_projection(G, B, A, s, damping=0.0)
    assert torch.allclose(s * (B @ gA + gB @ A), s * (dB @ A + B @ dA), atol=1e-8)
    # X: the gauge whose factor grads are closest to the plain LoRA grads s B^T G, s G A^T
    gA0, gB0 = baselines.lora_pro_factor_grads(G, B, A, s, damping=0.0, gauge="zero")
    fa, fb = s * B.T @ G, s * G @ A.T

    def obj(x):
        X = torch.from_numpy(x).reshape(2, 2)
        return float((gA0 + X @ A - fa).pow(2).sum() + (gB0 - B @ X - fb).pow(2).sum())
    best = minimize(obj, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).fun
    X = torch.linalg.lstsq(B, gB0 - gB).solution   # gB = gB0 - B X
    assert obj(X.numpy().ravel()) <= best + 1e-8


class _Toy(nn.Module):
    def __init__(self, n_in=6, n_out=5):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out, bias=False)

    def forward(self, x):
        return self.lin(x)


def _toy(rank=2, n_in=6, n_out=5, seed=0):
    from neurips26.papers.lora_harness import models

    torch.manual_seed(seed)
    net = models.add_lora(_Toy(n_in, n_out), rank, targets=("lin",), alpha=3.0, seed=seed, keep_trainable=())
    with torch.no_grad():
        for p in models.lora_pairs(net):
            p.B.normal_()
    return net


def test_scaled_adamw_matches_peft_riemannian_preconditioner_and_the_formula():
    from peft.optimizers.riemannian import _RiemannianPreconditioner

    from neurips26.papers.lora_harness import models

    nets = [_toy(), _toy()]
    x = torch.randn(4, 6)
    for net in nets:
        net(x).pow(2).sum().backward()
    pair = models.lora_pairs(nets[0])[0]
    want_A, want_B = baselines.riemannian_reference(pair.A.grad.double(), pair.B.grad.double(), pair.A.detach().double(),
                                                    pair.B.detach().double(), 1e-3)
    ours = baselines.ScaledAdamW(nets[0], lr=0.1, reg=1e-3)
    p1 = models.lora_pairs(nets[1])[0]
    _RiemannianPreconditioner([(p1.A, p1.B)], reg=1e-3).step()
    assert np.allclose(p1.A.grad.numpy(), want_A, atol=1e-5) and np.allclose(p1.B.grad.numpy(), want_B, atol=1e-5)
    ref = torch.optim.AdamW([p1.A, p1.B], lr=0.1, weight_decay=0.0)
    ours.step(closure=lambda: None)
    ref.step()
    assert torch.allclose(pair.A, p1.A, atol=1e-6) and torch.allclose(pair.B, p1.B, atol=1e-6)


def test_hooks_capture_the_full_weight_gradient():
    from neurips26.papers.lora_harness import models

    net = _toy()
    opt = method.AdaPreLoRA(net, lr=0.01)
    pair = models.lora_pairs(net)[0]
    pair.base.weight.requires_grad_(True)
    x = torch.randn(3, 4, 6)
    net(x).pow(2).sum().backward()
    G = opt.capture.pop(0)
    assert torch.allclose(G, pair.base.weight.grad, atol=1e-5)
    # the factor grads are s G A^T and s B^T G
    assert torch.allclose(pair.B.grad, pair.scaling * G @ pair.A.detach().T, atol=1e-5)
    with torch.no_grad():
        net(x)
    assert opt.capture.pop(0) is None   # nothing captured without grad mode


@pytest.mark.parametrize("shape", [(6, 5, 2), (20, 12, 3)])
def test_state_is_m_plus_n_times_r(shape):
    from neurips26.papers.lora_harness import memory

    n_in, n_out, r = shape[1], shape[0], shape[2]
    net = _toy(r, n_in, n_out)
    opt = method.AdaPreLoRA(net, lr=0.01, beta1=0.9)
    net(torch.randn(4, n_in)).pow(2).sum().backward()
    opt.step()
    assert memory.optimizer_state_bytes(opt) == 4 * (n_out + n_in + r * (n_out + n_in))
    lp = baselines.LoRAPro(_toy(r, n_in, n_out), lr=0.01)
    net2 = lp.pairs[0]
    assert net2.A.shape == (r, n_in)


def test_adaprelora_descends_on_a_low_rank_regression():
    torch.manual_seed(0)
    net = _toy(2, 8, 6)
    target = torch.randn(6, 2) @ torch.randn(2, 8)
    x = torch.randn(64, 8)
    y = x @ (net.lin.base_layer.weight.detach() + target).T
    opt = method.AdaPreLoRA(net, lr=0.05)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = (net(x) - y).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.2 * losses[0]


# ---------------------------------------------------------------- the tuning protocol
def _tune_params(methods=("adamw", "scaled_adamw", "adaprelora")):
    return {"task": "topic_sentiment", "tasks": ["topic_sentiment"], "tune": {"seed": 100}, "tuning": {"extensions": 3},
            "methods": list(methods), "grid": {m: [0.003, 0.01, 0.03] for m in methods},
            "damping_grid": {m: [1e-8, 1e-5, 1e-2] for m in methods if m in ("scaled_adamw", "adaprelora")},
            "classification": {"n_val": 8, "steps": 5}, "lm": {"n_val": 8, "steps": 5},
            "optim": {"damping": 1e-8, "scaled_adamw_reg": 1e-6}}


def test_tune_extends_lr_and_damping_grids_past_an_edge_that_holds_the_best(monkeypatch, tmp_path):
    """Validation accuracy that peaks beyond the top of the lr grid (lr 0.1) and beyond the top
    of the damping grid (10): both grids grow until the best is interior, and the records say so."""
    import math

    from neurips26.core import io
    from neurips26.papers.adaprelora import runner, steps

    calls = []

    def fake_run(task, data, method, lr, block, seed, inputs, out, key, check=False, check_layers=4, damping=None,
                 steps=None):
        calls.append((method, lr, damping))
        score = 0.9 - 0.05 * abs(math.log10(lr) + 1.0)
        if damping is not None:
            score -= 0.02 * abs(math.log10(damping) - 1.0)
        return {"accuracy": score, "losses": [1.0]}

    monkeypatch.setattr(runner, "load_task", lambda *a, **k: None)
    monkeypatch.setattr(runner, "validation_task", lambda *a, **k: None)
    monkeypatch.setattr(runner, "run", fake_run)
    steps.tune(_tune_params(), {}, tmp_path)
    out = io.read_json(tmp_path / "tune.json")
    recs = {(r["method"], r["knob"]): r for r in out["records"]}
    for m in ("adamw", "scaled_adamw", "adaprelora"):
        lr = recs[(m, "lr")]
        assert max(lr["grid"]) > 0.03 and lr["status"] == "tuned" and lr["extensions"] >= 1
        assert abs(math.log10(out["tuned"][m]) + 1.0) < 0.05   # 0.0949, the grid's next point past 0.03
    for m in ("scaled_adamw", "adaprelora"):
        d = recs[(m, "damping")]
        assert max(d["grid"]) >= 10 and d["extensions"] >= 1 and abs(out["damping"][m] - 10) < 1e-3
    assert ("adamw", "damping") not in recs and out["damping"]["adamw"] is None
    # a peak beyond what the cap reaches is recorded capped
    monkeypatch.setattr(runner, "run", lambda *a, damping=None, **k: {"accuracy": a[3], "losses": [1.0]})
    steps.tune({**_tune_params(("adamw",)), "tuning": {"extensions": 1}}, {}, tmp_path / "capped")
    rec = io.read_json(tmp_path / "capped" / "tune.json")["records"][0]
    assert rec["status"] == "capped" and rec["edge"] == "high" and len(rec["grid"]) == 4


def test_the_strongest_baseline_is_named_on_validation_not_on_test(monkeypatch, tmp_path):
    """The tune step names the strongest LoRA optimizer from validation scores; when the test
    scores favour another, the improves row still compares the validation choice."""
    from neurips26.core import io
    from neurips26.papers.adaprelora import runner, steps
    from neurips26.papers.adaprelora.claims import claim_rows

    val = {"adamw": 0.80, "scaled_adamw": 0.90, "adaprelora": 0.85, "full_adafactor": 0.99}
    monkeypatch.setattr(runner, "load_task", lambda *a, **k: None)
    monkeypatch.setattr(runner, "validation_task", lambda *a, **k: None)
    monkeypatch.setattr(runner, "run", lambda task, data, method, lr, *a, damping=None, **k:
                        {"accuracy": val[method] - abs(lr - 0.01), "losses": [1.0]})
    steps.tune(_tune_params(("adamw", "scaled_adamw", "adaprelora", "full_adafactor")), {}, tmp_path)
    tune = io.read_json(tmp_path / "tune.json")
    assert tune["strongest"] == "scaled_adamw"   # full_adafactor is the memory reference, never a candidate
    choice = [r for r in tune["records"] if r["status"] == "choice"][0]
    assert choice["chosen"] == "scaled_adamw" and "full_adafactor" not in choice["grid"]

    test = {"adamw": [0.95, 0.96, 0.97], "scaled_adamw": [0.60, 0.61, 0.62], "adaprelora": [0.70, 0.71, 0.72]}
    seed_runs = [{"metric": "accuracy", "beta1": 0.9, "pairs": [{"m": 4, "n": 4, "r": 1}], "other_trainable": 0,
                  "closed_form_check": None,
                  "methods": {m: {"accuracy": test[m][k], "items": [1, 0] * 5, "state_bytes": 100, "peak_bytes": 100,
                                  "peak_kind": "tracked_tensors", "loss_curve": [1.0] * 10} for m in test}}
                 for k in range(3)]
    summary = steps.claims_summary({"methods": list(test)}, {"topic_sentiment": tune}, {"topic_sentiment": seed_runs})
    row = {r["id"]: r for r in claim_rows(summary, "default")}["cls_improves"]
    assert row["baseline"] == "scaled_adamw"   # not adamw, the best on test
    assert "named by the tune step" in row["criterion"]


# ---------------------------------------------------------------- the long horizon
def test_the_runner_records_accuracy_after_the_stated_steps(root, tmp_path):
    """A 200-step run records the test accuracy after 50, 100 and 200 optimizer steps. With a
    constant schedule (no warm-up) the first 50 steps of a 200-step run are a 50-step run (the
    minibatches come from Generator([seed, step])), so the accuracy and per-item correctness recorded
    after 50 are those of a separate 50-step run; the last is the run's own final score."""
    import yaml

    from neurips26.papers.adaprelora import runner

    block = yaml.safe_load((root / "config" / "config.yaml").read_text())["adaprelora"]
    block["classification"] = {**block["classification"], "n_train": 64, "n_test": 48, "batch_size": 8}
    block["optim"] = {**block["optim"], "schedule": "constant", "warmup": 0}
    data = runner.load_task("topic_sentiment", block, 0, {})
    torch.manual_seed(0)
    long = runner.run("topic_sentiment", data, "adamw", 0.01, block, 0, {}, tmp_path / "long", {"stage": "t"},
                      steps=200, record_at=(100, 50, 200))
    torch.manual_seed(0)
    short = runner.run("topic_sentiment", data, "adamw", 0.01, block, 0, {}, tmp_path / "short", {"stage": "t"}, steps=50)
    assert long["at"] == [50, 100, 200] and len(long["losses"]) == 200
    assert long["losses"][:50] == pytest.approx(short["losses"], rel=1e-5)
    assert long["items_at"][0] == short["items"] and long["accuracy_at"][0] == pytest.approx(short["accuracy"])
    assert long["items_at"][-1] == long["items"] and long["accuracy_at"][-1] == pytest.approx(long["accuracy"])
    assert long["accuracy_at"][-1] > 0.6   # it learned the task
    with pytest.raises(ValueError, match="horizon_at"):
        runner.run("topic_sentiment", data, "adamw", 0.01, block, 0, {}, tmp_path / "bad", {"stage": "t"},
                   steps=20, record_at=(50,))


def test_train_runs_the_long_horizon_at_the_short_budget_knobs(monkeypatch, tmp_path):
    """The train step's long runs: horizon_methods plus the strongest LoRA optimizer on validation, each
    at its lr and damping from tune.json (tuned at the short budget), for `horizon` steps with the
    accuracy recorded after horizon_at (and horizon); metrics.json keeps them apart from the short runs."""
    from neurips26.core import io
    from neurips26.papers.adaprelora import runner, steps

    calls = []

    def fake_run(task, data, method, lr, block, seed, inputs, out, key, check=False, check_layers=4, damping=None,
                 steps=None, record_at=()):
        calls.append((method, lr, damping, steps, tuple(record_at), key["stage"]))
        n = steps or block["classification"]["steps"]
        acc = 0.5 + n / 1000
        res = {"method": method, "lr": lr, "damping": damping, "losses": [1.0 / (s + 1) for s in range(n)],
               "state_bytes": 4, "peak_bytes": 8, "peak_kind": "tracked_tensors", "seconds": 0.1, "accuracy": acc,
               "items": [1, 0]}
        if check:
            res["closed_form_check"] = None
        if record_at:
            res.update(at=list(record_at), accuracy_at=[0.5 + s / 1000 for s in record_at],
                       items_at=[[1, 0]] * len(record_at))
        return res

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(2))

    monkeypatch.setattr(runner, "load_task", lambda *a, **k: None)
    monkeypatch.setattr(runner, "build_net", lambda *a, **k: Net())
    monkeypatch.setattr(runner, "run", fake_run)
    methods = ["adamw", "loraplus", "lora_pro", "adaprelora"]
    tune = {"tuned": {"adamw": 0.01, "loraplus": 0.003, "lora_pro": 0.03, "adaprelora": 0.1},
            "damping": {"adamw": None, "loraplus": None, "lora_pro": 1e-5, "adaprelora": 0.01}, "strongest": "lora_pro"}
    io.write_json(tmp_path / "tune.json", tune)
    params = {"task": "topic_sentiment", "tasks": ["topic_sentiment"], "seed": 0, "methods": methods, "grid": {},
              "check_layers": 1, "lm": {}, "optim": {"beta1": 0.9},
              "classification": {"steps": 50, "horizon": 200, "horizon_at": [50, 100], "horizon_methods": ["adamw", "adaprelora"]}}
    steps.train(params, {"tune": str(tmp_path)}, tmp_path / "out")
    long_calls = [c for c in calls if c[5] == "train_long"]
    assert [c[0] for c in long_calls] == ["adamw", "lora_pro", "adaprelora"]   # methods' order; loraplus not listed
    for m, lr, d, n, at, _ in long_calls:
        assert (lr, d, n, at) == (tune["tuned"][m], tune["damping"][m], 200, (50, 100, 200))
    assert all(c[3] is None for c in calls if c[5] == "train")   # the short runs keep classification.steps
    out = io.read_json(tmp_path / "out" / "metrics.json")
    assert out["methods"]["adaprelora"]["accuracy"] == pytest.approx(0.55)
    L = out["long"]
    assert (L["steps"], L["tuned_at"], L["at"], sorted(L["methods"])) == (200, 50, [50, 100, 200], ["adamw", "adaprelora", "lora_pro"])
    assert L["methods"]["adaprelora"]["accuracy"] == pytest.approx(0.7)
    assert L["methods"]["adaprelora"]["accuracy_at"] == pytest.approx([0.55, 0.6, 0.7])
    # and the summary the claims read takes the long scores from the long runs
    seed_runs = [out] * 3
    summary = steps.claims_summary({"methods": methods}, {"topic_sentiment": {**tune, "val_score": {m: 0.8 for m in methods}}},
                                   {"topic_sentiment": seed_runs})
    t = summary["tasks"]["topic_sentiment"]
    assert t["scores"]["adaprelora"] == pytest.approx([0.55] * 3)
    assert t["long"]["scores"]["adaprelora"] == pytest.approx([0.7] * 3)
    assert t["long"]["late_share"]["adamw"][0] == pytest.approx(steps.late_share(L["methods"]["adamw"]["loss_curve"]))
    # no horizon: no long runs, no long block
    calls.clear()
    params["classification"]["horizon"] = 0
    steps.train(params, {"tune": str(tmp_path)}, tmp_path / "out0")
    assert not [c for c in calls if c[5] == "train_long"] and "long" not in io.read_json(tmp_path / "out0" / "metrics.json")
