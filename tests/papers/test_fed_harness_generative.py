"""The federated harness's generative task and causal-LM clients (fed_harness.generative and
the LM path of fed_harness.simulation), on a tiny Llama built in the test."""

import json

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from neurips26.papers.fed_harness import aggregators as agg
from neurips26.papers.fed_harness import generative, simulation, split
from tiny_llama import tiny_llama


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    tok, model = tiny_llama(tmp_path_factory.mktemp("tok"))
    model.eval()
    return tok, model


def _task(tok, n_train=48, n_test=24, seed=0):
    return generative.data_to_text(tok, n_train, n_test, seed, 48)


def test_field_count_label_is_the_number_of_fields(tiny):
    tok, _ = tiny
    tr, te, classes = _task(tok)
    assert classes == 3 and len(tr) == 48 and len(te) == 24
    for prompt, y in zip(tr.lm.prompts, tr.label.tolist()):
        assert len(prompt.split()) == 2 * (y + 2) + 1  # key value pairs and the separator
    assert set(tr.label.tolist()) == {0, 1, 2}


def test_lm_loss_masks_the_prompt(tiny):
    tok, model = tiny
    tr, _, _ = _task(tok)
    idx = [0, 3, 5, 9]
    got = generative.loss(model, tr, idx)
    total, count = 0.0, 0
    for i in idx:
        ids = tr.lm.input_ids[i][tr.lm.attention_mask[i].bool()]
        lab = tr.lm.labels[i][: len(ids)]
        logits = model(input_ids=ids[None]).logits[0]
        for j in range(1, len(ids)):
            if lab[j] != -100:  # the target and eos tokens only
                total += -F.log_softmax(logits[j - 1].double(), -1)[lab[j]]
                count += 1
    n_prompt = int((tr.lm.labels[idx] == -100).logical_and(tr.lm.attention_mask[idx].bool()).sum())
    assert n_prompt > 0 and count == int((tr.lm.labels[idx] != -100).sum())
    torch.testing.assert_close(got.double(), total / count, atol=1e-5, rtol=1e-5)


# one torch thread: beside the other test worker and the smoke DAG, torch's two-thread pool waited on
# the busy cores (3 s alone, over 2 minutes inside the suite)
@pytest.mark.usefixtures("one_torch_thread")
def test_teacher_forced_exact_match_equals_greedy_decoding(tiny):
    from neurips26.papers.lora_harness.train import decode

    tok, base = tiny
    net = simulation.build_clients(base, [8], tuple(generative.lora_targets(base)), seed=0)[0]
    for p in net.parameters():  # train the whole copy: exact matches within a few hundred steps
        p.requires_grad_(True)
    tr, te, _ = _task(tok, 120, 60, seed=3)
    opt = torch.optim.AdamW([p for p in net.parameters()], lr=1e-2)
    exact = None
    for step in range(600):
        idx = simulation.minibatch(len(tr), 32, 0, step, 0)
        loss = generative.loss(net, tr, idx)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 99:
            exact, _ = generative.evaluate(net, te)
            if 0.2 < exact.mean() < 0.9:
                break
    assert 0 < exact.mean() < 1, "the test needs items of both outcomes"
    net.eval()
    with torch.no_grad():
        preds = decode(net, tok, te.lm.prompts, 24)
    greedy = np.asarray([float(p.strip() == t.strip()) for p, t in zip(preds, te.lm.targets)])
    np.testing.assert_array_equal(exact, greedy)


def _lm_clients(base, ranks, seed=0):
    targets = tuple(generative.lora_targets(base))
    return simulation.build_clients(base, ranks, targets, seed), targets


def test_base_weights_are_one_tensor_shared_by_the_clients(tiny):
    import copy

    _, model = tiny
    base = copy.deepcopy(model)
    nets, targets = _lm_clients(base, [2, 4, 2])
    for t in targets:
        ws = [n.get_submodule(t).base_layer.weight for n in nets]
        assert all(w is ws[0] for w in ws) and ws[0] is base.get_submodule(t).weight
    emb = [n.get_input_embeddings().weight for n in nets]
    assert all(e.data_ptr() == emb[0].data_ptr() for e in emb)
    # the adapters are per client (own tensors, own ranks)
    a = [n.get_submodule(targets[0]).lora_A["default"].weight for n in nets]
    assert a[0].data_ptr() != a[2].data_ptr() and [x.shape[0] for x in a] == [2, 4, 2]
    # a base delta applied once reaches every client
    tr, _, _ = _task(tiny[0])
    engine = simulation.Engine(nets, tr, [np.arange(16), np.arange(16, 32), np.arange(32, 48)], [2, 4, 2],
                               agg.make("flora"), simulation.FedSettings(1, 1, 4, 1e-2, targets=targets))
    before = nets[1].get_submodule(targets[0]).base_layer.weight.clone()
    with torch.no_grad():
        for n in nets:
            n.get_submodule(targets[0]).lora_B["default"].weight.normal_()
    engine.server_round(0)
    delta = engine.base_delta[targets[0]]
    torch.testing.assert_close(nets[2].get_submodule(targets[0]).base_layer.weight.double() - before.double(), delta,
                               atol=1e-5, rtol=1e-5)


def _registered():
    from neurips26.papers.fedaba import baselines as _b1, method as _m1  # noqa: F401
    from neurips26.papers.fedlora_align import baselines as _b2, method as _m2  # noqa: F401

    return sorted(agg.AGGREGATORS)


@pytest.mark.parametrize("name", _registered())
def test_identical_lm_clients_aggregate_to_themselves(tiny, name):
    import copy

    tok, model = tiny
    base = copy.deepcopy(model)
    nets, targets = _lm_clients(base, [3, 3, 3])
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for t in targets:
            B = torch.randn(nets[0].get_submodule(t).lora_B["default"].weight.shape, generator=g)
            A = torch.randn(nets[0].get_submodule(t).lora_A["default"].weight.shape, generator=g)
            for n in nets:
                n.get_submodule(t).lora_B["default"].weight.copy_(B)
                n.get_submodule(t).lora_A["default"].weight.copy_(A)
    want = {t: (nets[0].get_submodule(t).base_layer.weight.double()
                + nets[0].get_submodule(t).lora_B["default"].weight.double()
                @ nets[0].get_submodule(t).lora_A["default"].weight.double()).clone() for t in targets}
    tr, _, _ = _task(tok)
    engine = simulation.Engine(nets, tr, [np.arange(10), np.arange(10, 30), np.arange(30, 48)], [3, 3, 3],
                               agg.make(name), simulation.FedSettings(1, 1, 4, 1e-2, targets=targets))
    engine.server_round(0)
    for t in targets:
        for n in nets:
            m = n.get_submodule(t)
            got = m.base_layer.weight.double() + m.lora_B["default"].weight.double() @ m.lora_A["default"].weight.double()
            torch.testing.assert_close(got, want[t], atol=1e-4, rtol=1e-4)


def _lm_federation(tiny, tmp_path, name, out):
    import copy

    tok, model = tiny
    tr, te, classes = _task(tok, 60, 30, seed=1)
    parts = split.dirichlet_split(tr.label.numpy(), 2, 1.0, np.random.default_rng(0), min_size=4)
    targets = tuple(generative.lora_targets(model))
    settings = simulation.FedSettings(rounds=2, local_steps=2, batch_size=4, lr=1e-2, targets=targets, seed=0)
    return simulation.run_federation(copy.deepcopy(model), tr, te, parts, [2, 4], agg.make(name), settings,
                                     tmp_path / out, {"test": name}, classes)


def test_lm_federation_reruns_bit_for_bit_and_reuses_its_checkpoint(tiny, tmp_path):
    a = _lm_federation(tiny, tmp_path, "flora", "a")
    b = _lm_federation(tiny, tmp_path, "flora", "b")
    c = _lm_federation(tiny, tmp_path, "flora", "a")  # the finished checkpoint is reused
    assert (tmp_path / "a").exists()
    for other in (b, c):
        assert other.rounds == a.rounds
        np.testing.assert_array_equal(other.per_class_acc, a.per_class_acc)
        np.testing.assert_array_equal(other.per_class_token_acc, a.per_class_token_acc)
        for t in a.B:
            for x, y in zip(a.B[t] + a.A[t], other.B[t] + other.A[t]):
                assert torch.equal(x, y)
            assert torch.equal(a.base_delta[t], other.base_delta[t])
    assert len(a.rounds) == 2 * 4  # rounds x modules (q_proj, v_proj of 2 layers)
    assert a.per_class_acc.shape == (2, 3) and np.isfinite(a.per_class_token_acc).all()


def test_a_saved_tiny_llama_loads_as_a_7b_would(tiny, tmp_path):
    tok, model = tiny
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    loaded, tok2 = generative.load_base(tmp_path / "m")
    assert loaded.config.model_type == "llama" and not any(p.requires_grad for p in loaded.parameters())
    assert generative.lora_targets(loaded) == [f"model.layers.{i}.self_attn.{n}" for i in range(2) for n in ("q_proj", "v_proj")]
    x = torch.tensor([tok("kalomi")["input_ids"]])
    torch.testing.assert_close(loaded(input_ids=x).logits, model(input_ids=x).logits)
    assert tok2("kalomi")["input_ids"] == tok("kalomi")["input_ids"]
    with pytest.raises(FileNotFoundError, match="config key 'k'"):
        generative.load_base(tmp_path / "absent", key="k")


def _dolly(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_dolly_reader(tiny, tmp_path):
    tok, _ = tiny
    rows = [{"instruction": f"kalomi {i}", "context": "" if i % 2 else "nupero", "response": "sati vuze",
             "category": ["open_qa", "brainstorming", "summarization"][i % 3]} for i in range(20)]
    rows[4]["response"] = " ".join(["kalomi"] * 80)  # too long for max_length: dropped and counted
    path = _dolly(tmp_path / "dolly.jsonl", rows)
    items, names = generative.read_dolly(path)
    assert names == ["brainstorming", "open_qa", "summarization"] and len(items) == 20
    assert items[0]["prompt"] == "Instruction: kalomi 0\nContext: nupero\nResponse:" and items[0]["category"] == 1
    assert items[1]["prompt"] == "Instruction: kalomi 1\nResponse:"
    tr, te, classes, report = generative.dolly(tok, path, 12, 5, seed=0, max_length=64)
    assert classes == 3 and report["dropped_too_long"] == 1 and report["records"] == 20
    assert len(tr) == 12 and len(te) == 5 and set(tr.lm.prompts).isdisjoint(te.lm.prompts)
    assert (tr.lm.attention_mask.sum(1) <= 64).all()
    bad = [dict(r) for r in rows[:3]]
    del bad[1]["category"]
    with pytest.raises(ValueError, match=r"config key 'lm.dataset_file'.*line 2 lacks the field\(s\) category"):
        generative.read_dolly(_dolly(tmp_path / "bad.jsonl", bad))
    with pytest.raises(FileNotFoundError, match=r"config key 'x.dataset': .*missing.jsonl does not exist"):
        generative.read_dolly(tmp_path / "missing.jsonl", key="x.dataset")


def test_flower_engine_refuses_the_lm_task(tiny, tmp_path):
    from neurips26.papers.fed_harness import flower

    tr, _, _ = _task(tiny[0])
    with pytest.raises(ValueError, match="classification clients only"):
        flower.write_app(tmp_path / "app", tr, [np.arange(24), np.arange(24, 48)], [2, 2], "fedit",
                         simulation.FedSettings(1, 1, 4, 1e-2), 3)
