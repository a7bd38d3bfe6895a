"""AR1-ZO against independent references: the peft adapter's forward against W0 x + s B A x
(s = gamma / r = alpha for AR1-ZO, alpha / r canonical), the atom query touching exactly one
atom of every adapter, the active signal against its closed form on a linear loss (and the 1/r^2
ratio of the two scalings), LoZO's perturbation (rank k, lazy V), the matched forward-pass budget
of every method, and the config checks."""

from __future__ import annotations

import copy

import pytest
import torch

from neurips26.papers import ar1_zo
from neurips26.papers.ar1_zo import baselines, method, runner
from neurips26.papers.zo_harness import zo


class Toy(torch.nn.Module):
    """Two 'layers' with query/value linears, in the module layout peft's layer pattern expects."""

    def __init__(self, d_in=6, d_out=5):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.layer = torch.nn.ModuleList()
        for _ in range(2):
            blk = torch.nn.Module()
            blk.query = torch.nn.Linear(d_in, d_out)
            blk.value = torch.nn.Linear(d_in, d_out)
            with torch.no_grad():
                for lin in (blk.query, blk.value):
                    lin.weight.copy_(torch.randn(d_out, d_in, generator=g))
                    lin.bias.copy_(torch.randn(d_out, generator=g))
            self.layer.append(blk)


def _adapted(rank, scheme, alpha=4.0, seed=1):
    model = Toy()
    mods = method.add_lora(model, rank, method.lora_alpha_for(scheme, alpha, rank), [0, 1], ["query", "value"], seed)
    return model, mods


@pytest.mark.parametrize("rank", [1, 3, 8])
def test_scalings_and_peft_forward_match_the_lora_formula(rank):
    alpha = 4.0
    for scheme, s in (("ar1", alpha), ("canonical", alpha / rank)):
        _, mods = _adapted(rank, scheme, alpha)
        assert len(mods) == 4
        assert method.lora_alpha_for(scheme, alpha, rank) == (alpha * rank if scheme == "ar1" else alpha)
        for m in mods:
            assert method.scaling(m) == pytest.approx(s)
            b, a = method.factors(m)
            assert b.shape[1] == a.shape[0] == rank
            with torch.no_grad():
                b.copy_(torch.randn_like(b))
            x = torch.randn(3, a.shape[1])
            ref = x @ m.base_layer.weight.T + m.base_layer.bias + s * x @ a.T @ b.T
            assert torch.allclose(m(x), ref, atol=1e-5)
    with pytest.raises(ValueError):
        method.lora_alpha_for("other", alpha, 2)


@pytest.mark.parametrize("rank", [2, 5])
def test_atom_query_touches_exactly_one_atom_of_every_adapter(rank):
    _, mods = _adapted(rank, "ar1")
    opt = method.AtomwiseZO(mods, rank)
    for step in range(2 * rank):
        before = [t.clone() for t in method.all_factors(mods)]
        opt.perturb_(step, zo.step_seed(0, step), 0.1)
        i = step % rank
        assert opt.atom(step) == i
        for k, (old, new) in enumerate(zip(before, method.all_factors(mods))):
            changed = (old != new)
            if k % 2 == 0:  # B: only column i
                assert changed[:, i].all() and not changed[:, [j for j in range(rank) if j != i]].any()
            else:  # A: only row i
                assert changed[i, :].all() and not changed[[j for j in range(rank) if j != i], :].any()
        opt.perturb_(step, zo.step_seed(0, step), -0.1)
        for old, new in zip(before, method.all_factors(mods)):
            assert torch.allclose(old, new, atol=1e-6)


def test_active_signal_matches_its_closed_form_and_falls_as_one_over_r_squared_in_snr():
    """Linear loss L = sum_m <C_m, s B_m A_m>: the central difference along atom i's (u, v) is exactly
    eps s sum_m (u^T C_m a_i + b_i^T C_m v) + 0 (the eps^2 u v^T term cancels)."""
    torch.manual_seed(0)
    rank, eps, alpha = 4, 1e-2, 3.0
    for scheme in ("canonical", "ar1"):
        _, mods = _adapted(rank, scheme, alpha, seed=7)
        cs = [torch.randn(m.base_layer.weight.shape, generator=torch.Generator().manual_seed(k)) for k, m in enumerate(mods)]
        for m in mods:  # a non-zero B so both terms are active
            with torch.no_grad():
                method.factors(m)[0].copy_(torch.randn_like(method.factors(m)[0]))

        def loss():
            return float(sum((c * (method.scaling(m) * method.factors(m)[0] @ method.factors(m)[1])).sum()
                             for c, m in zip(cs, mods)))

        i, seed = 2, 99
        got = method.atom_signal(loss, mods, i, seed, eps)
        z = zo.gaussian(method.atom_views(mods, i), seed)
        ref = 0.0
        for k, (c, m) in enumerate(zip(cs, mods)):
            b, a = method.factors(m)
            u, v = z[2 * k].double(), z[2 * k + 1].double()
            ref += eps * method.scaling(m) * float(u @ c.double() @ a[i].double() + b[:, i].double() @ c.double() @ v)
        assert got == pytest.approx(ref, rel=1e-3)
        assert got != pytest.approx(2 * ref, rel=1e-3)


def test_naive_signal_is_ar1_signal_over_r_at_the_lora_initialisation():
    """With B = 0 (peft's initialisation) and the same A, the two scalings differ only by s: the
    naive signal is exactly 1/r of AR1-ZO's (FD-SNR 1/r^2)."""
    rank, eps = 8, 1e-3
    out = {}
    for scheme in ("canonical", "ar1"):
        model, mods = _adapted(rank, scheme, 2.0, seed=3)
        x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))

        def loss():
            h = sum(blk.query(x).pow(2).sum() + blk.value(x).sin().sum() for blk in model.layer)
            return float(h)

        out[scheme] = [method.atom_signal(loss, mods, q % rank, zo.step_seed(0, q), eps) for q in range(6)]
    for a, n in zip(out["ar1"], out["canonical"]):
        assert n == pytest.approx(a / rank, rel=2e-2, abs=1e-9)


def test_lozo_perturbation_is_low_rank_with_a_lazy_v():
    w = torch.zeros(12, 10)
    bvec = torch.zeros(12)
    opt = baselines.LoZO([w, bvec], rank=2, nu=5, run_seed=0)
    d0 = opt.direction(0, zo.step_seed(0, 0))
    d1 = opt.direction(1, zo.step_seed(0, 1))
    d5 = opt.direction(5, zo.step_seed(0, 5))
    assert int(torch.linalg.matrix_rank(d0[0])) == 2 and d0[1].shape == (12,)
    # V is shared inside a window of nu steps: the row spaces of d0 and d1 coincide, not with d5's
    both = torch.cat([d0[0], d1[0]], 0)
    assert int(torch.linalg.matrix_rank(both)) == 2
    assert int(torch.linalg.matrix_rank(torch.cat([d0[0], d5[0]], 0))) == 4
    opt.perturb_(0, zo.step_seed(0, 0), 0.5)
    assert torch.allclose(w, 0.5 * d0[0]) and torch.allclose(bvec, 0.5 * d0[1])
    opt.perturb_(0, zo.step_seed(0, 0), -0.5)
    assert torch.allclose(w, torch.zeros_like(w), atol=1e-6)


@pytest.fixture(scope="module")
def setup():
    from neurips26.core.lm import load_minilm
    from neurips26.papers.zo_harness import tasks

    tok, enc = load_minilm()
    data = tasks.sentiment_splits({"train": 16, "val": 8, "test": 8}, 0)
    return runner.Setup(tok, enc, data, {"tuned_layers": 1, "temperature": 0.05, "max_length": 32,
                                          "lora_targets": ["query", "value"]})


def test_every_method_spends_the_same_budget_and_leaves_the_frozen_layers(setup):
    frozen = {k: v.clone() for k, v in setup.base.state_dict().items()}
    accs = {}
    for name in runner.METHODS:
        r = runner.train(setup, name, 2, 4.0, {"rank": 1, "nu": 2}, 1e-3, 1e-3, steps=3, batch_size=4,
                         noise_floor=1e-3, run_seed=0, log_every=1)
        assert r["forwards"] == 6 and not r["diverged"] and len(r["train_curve"]) == 3
        accs[name] = r["test_accuracy"]
    # the base encoder is never touched (every run works on a copy)
    for k, v in setup.base.state_dict().items():
        assert torch.equal(v, frozen[k])
    # the LoRA methods adapt only the tuned layer
    clf, _, mods = setup.build("ar1_zo", 4, 4.0, {}, 0)
    assert len(mods) == 2 and all(".5." in n for n, m in clf.enc.named_modules() if m in mods)
    assert method.scaling(mods[0]) == 4.0


def test_mechanism_signals_follow_the_scalings(setup):
    res = runner.signal_vs_rank(setup, [1, 4], 4.0, 1e-3, 4, 4, 1e-3, 0)
    n, a = res["naive_atom"], res["ar1_zo"]
    assert n["1"]["signal"] == a["1"]["signal"]  # same adapter at r = 1
    assert n["4"]["scaling"] == 1.0 and a["4"]["scaling"] == 4.0
    assert n["4"]["fd_snr"] == pytest.approx(n["4"]["signal"] ** 2 / (1e-3 ** 2 / 2))


def test_cells_and_check_config():
    import yaml

    block = copy.deepcopy(yaml.safe_load(open("config/config.yaml"))["ar1_zo"])
    assert ar1_zo.check_config(block) == []
    cells = ar1_zo.cells(block)
    assert ("ar1_zo", 64) in cells and ("naive_atom", 1) in cells and ("mezo_full", 8) in cells
    assert len(cells) == len(set(cells)) == 5 + 2 * 2
    bad = copy.deepcopy(block)
    del bad["grid"]["centre"]["ar1_zo"]
    bad["methods"].append("sgd")
    bad["tune"]["seed"] = 0
    problems = ar1_zo.check_config(bad)
    assert any(p.startswith("grid.centre.ar1_zo: missing") for p in problems)
    assert any("unknown method 'sgd'" in p for p in problems)
    assert any(p.startswith("tune.seed") for p in problems)


def test_causal_lm_path_adapts_every_layer_and_trains(tmp_path):
    """Paper scale reads a causal LM (OPT, Qwen3): LoRA on q_proj / v_proj of every layer,
    MeZO-full on every parameter, the same budget."""
    from neurips26.core import lm
    from neurips26.papers.zo_harness import tasks

    items = tasks.make_sentiment(40, seed=2)
    texts = [f"{it['text']} It was great" for it in items] + [f"{it['text']} It was terrible" for it in items]
    lm.train_tokenizer(texts, vocab_size=300, out=tmp_path)
    tok = lm.load_tokenizer(tmp_path)
    torch.manual_seed(0)
    model = lm.build_model("llama", len(tok), 32, 2, 2, 64, 128, tokenizer=tok).eval()
    s = runner.Setup(tok, model, {"train": items[:16], "val": items[16:24], "test": items[24:]},
                     {"kind": "causal", "max_length": 64, "lora_targets": ["q_proj", "v_proj"]})
    clf, opt, mods = s.build("ar1_zo", 4, 2.0, {}, 0)
    assert len(mods) == 4 and method.scaling(mods[0]) == 2.0
    clf_full, _, _ = s.build("mezo_full", 4, 2.0, {}, 0)
    assert len(clf_full.top_parameters()) == len(list(model.parameters()))
    for name in ("ar1_zo", "lozo"):
        r = runner.train(s, name, 4, 2.0, {"rank": 1, "nu": 2}, 1e-3, 1e-3, steps=2, batch_size=4,
                         noise_floor=0.0, run_seed=0, log_every=1)
        assert r["forwards"] == 4 and len(r["test_correct"]) == 16


def test_every_method_gets_the_same_number_of_lr_points_over_the_same_span():
    import math

    import yaml

    block = yaml.safe_load(open("config/config.yaml"))["ar1_zo"]
    spans = set()
    for m in block["methods"]:
        grid = ar1_zo.lr_grid(block, m)
        assert len(grid) == block["grid"]["points"]
        steps = [math.log10(b / a) for a, b in zip(grid, grid[1:])]
        assert max(steps) - min(steps) < 1e-4  # log-spaced
        spans.add(round(math.log10(grid[-1] / grid[0]), 4))
        assert math.sqrt(grid[0] * grid[-1]) == pytest.approx(block["grid"]["centre"][m], rel=1e-4)
    assert spans == {block["grid"]["decades"]}


def test_tuning_extends_the_lr_grid_while_the_best_rate_sits_on_an_edge():
    """The tune step's search, its scoring run replaced: validation accuracy peaks at lr = 0.1, past
    the top of naive_atom's grid (0.00316 ... 0.0316), and at 1e-6, past the bottom of AR1-ZO's with
    one extension allowed (capped)."""
    from neurips26.papers.ar1_zo import steps

    block = {"methods": ["naive_atom", "ar1_zo"], "lora": {"rank": 8, "ranks": [8]}, "tuning": {"extensions": 3},
             "grid": {"points": 3, "decades": 1.0, "eps": 0.001, "centre": {"naive_atom": 0.01, "ar1_zo": 0.000316228}}}
    peak = {"naive_atom": 0.1, "ar1_zo": 1e-6}

    def fake_run(setup, params, method, rank, lr, eps, seed, label):
        import math

        return {"val_accuracy": 0.9 - 0.1 * abs(math.log10(lr / peak[method])), "val_loss": 0.5, "diverged": False}

    chosen, records = steps.tune_cells(None, block, 100, run=fake_run)
    lr = {(r.method, r.knob): r for r in records}
    naive, ar1 = lr[("naive_atom", "lr")], lr[("ar1_zo", "lr")]
    assert chosen["naive_atom@r8"]["lr"] == pytest.approx(0.1) and naive.status == "tuned"
    assert naive.extensions == 2 and len(naive.grid) == 5 and max(naive.grid) > 0.1
    assert len(chosen["naive_atom@r8"]["trials"]) == 5
    # the same cap for every method: AR1-ZO's best lies 2 decades below its grid, 3 steps of half a decade
    # reach 3.16e-6, still the low edge -> capped, and the note reaches the claims
    assert ar1.status == "capped" and ar1.edge == "low" and ar1.extensions == 3
    assert chosen["ar1_zo@r8"]["capped"] and "ar1_zo" in chosen["ar1_zo@r8"]["capped"]
    assert lr[("ar1_zo", "eps")].status == "fixed" and lr[("naive_atom", "eps")].chosen == 0.001
    # a diverged run is never chosen
    def diverging(setup, params, method, rank, lr, eps, seed, label):
        r = fake_run(setup, params, method, rank, lr, eps, seed, label)
        return {**r, "diverged": lr > 0.05, "val_loss": float("nan") if lr > 0.05 else 0.5}

    chosen, _ = steps.tune_cells(None, block, 100, run=diverging)
    assert chosen["naive_atom@r8"]["lr"] < 0.05
