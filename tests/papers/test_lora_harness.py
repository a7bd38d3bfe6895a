"""The LoRA fine-tuning harness (`neurips26.papers.lora_harness`) against independent references:
memory counts against hand counts and against the bytes of the parameters, gradients and optimizer
state counted from the objects, the pair encoding against the full Hugging Face encoder,
the LM loss against a hand-written target-only cross-entropy, peft's adapted Linear against
W0 x + s B A x, and the training loop's determinism and checkpoint reuse."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from neurips26.papers.lora_harness import memory, models, tasks, train
from tiny_llama import tiny_llama


def test_tracker_peak_is_the_largest_live_sum():
    def fn():
        a = torch.ones(1000)          # 4000 B
        b = torch.ones(2000)          # + 8000 B -> 12000 live
        del a
        c = torch.ones(500)           # 8000 + 2000
        return b, c
    peak, kind = memory.peak_step_bytes(fn)
    assert (peak, kind) == (12000, "tracked_tensors")


def test_tracker_sees_backward_and_optimizer_state_is_counted():
    lin = torch.nn.Linear(30, 20)
    x = torch.randn(8, 30)
    opt = torch.optim.AdamW(lin.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        lin(x).square().sum().backward()
        opt.step()
    peak, _ = memory.peak_step_bytes(step)
    params = (20 * 30 + 20) * 4
    # the gradients (one per parameter) and AdamW's two moments are created inside the step
    assert peak >= 3 * params
    # AdamW's state: exp_avg and exp_avg_sq of every parameter and a float32 step count each
    assert memory.optimizer_state_bytes(opt) == 2 * params + 2 * 4


def _resident_bytes(net, opt) -> int:
    """Parameters (frozen and trainable), gradients and optimizer state, counted from the objects."""
    params = sum(p.numel() * p.element_size() for p in net.parameters())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in net.parameters() if p.grad is not None)
    state = sum(v.numel() * v.element_size() for s in opt.state.values() for v in s.values() if torch.is_tensor(v))
    return params + grads + state


def test_peak_holds_the_resident_parameters_gradients_and_state_not_the_data():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(300, 200, bias=False), torch.nn.Linear(200, 100, bias=False))
    net[1].weight.requires_grad_(False)                  # a frozen base matrix: resident, never updated
    data = torch.randn(5000, 300)                        # 6 MB training set, only read by the step
    opt = torch.optim.AdamW([net[0].weight], lr=1e-3)

    def step(i):
        opt.zero_grad()
        net(data[i:i + 1]).square().sum().backward()
        opt.step()
    step(0)
    step(1)                                              # the state exists before the measured step
    peak, kind = memory.peak_step_bytes(lambda: step(2))
    resident = _resident_bytes(net, opt)
    trainable = 300 * 200 * 4
    assert kind == "tracked_tensors"
    # the old count (storages created inside the step) read the gradient and AdamW's temporaries only
    assert peak >= resident
    # above it: the step's transients (AdamW's denominator, one parameter's size; 1-row activations)
    assert peak <= resident + trainable + 8 * 4 * 300
    assert peak < data.numel() * 4


def test_peak_of_a_full_fine_tune_exceeds_a_lora_fine_tune_by_its_w_sized_state():
    def measure(full: bool):
        torch.manual_seed(0)
        net = torch.nn.Linear(256, 256, bias=False)
        net.weight.requires_grad_(full)
        params = [net.weight]
        if not full:
            A = torch.nn.Parameter(torch.randn(4, 256) * 0.01)
            B = torch.nn.Parameter(torch.zeros(256, 4))
            params = [A, B]
        opt = torch.optim.AdamW(params, lr=1e-3)
        x = torch.randn(2, 256)

        def step():
            opt.zero_grad()
            y = net(x) if full else net(x) + x @ A.T @ B.T
            y.square().sum().backward()
            opt.step()
        step()
        return memory.peak_step_bytes(step)[0]
    w = 256 * 256 * 4
    lora, full = measure(False), measure(True)
    # the full fine-tune adds W's gradient and AdamW's two W-sized moments (and a W-sized temporary)
    assert full - lora >= 3 * w - 2 * 256 * 8 * 4
    assert full / lora > 1.1


def test_paraphrase_pairs_are_seeded_and_balanced():
    a1, b1, y1 = tasks.generate_pairs(400, seed=3)
    a2, b2, y2 = tasks.generate_pairs(400, seed=3)
    assert (a1, b1) == (a2, b2) and np.array_equal(y1, y2)
    assert set(y1.tolist()) == {0, 1} and 0.4 < y1.mean() < 0.6
    assert all(x != y for x, y in zip(a1, b1))
    assert tasks.generate_pairs(400, seed=4)[0] != a1


@pytest.fixture(scope="module")
def minilm():
    from neurips26.core import lm

    return lm.load_minilm()


def test_pair_encoding_equals_the_full_encoder_at_cls(minilm):
    tok, enc = minilm
    data = tasks.prepare_classification("paraphrase", 6, 2, seed=1, max_length=48)
    net = models.minilm_classifier(data.classes, seed=0)
    first, second, _ = tasks.generate_pairs(8, seed=1)
    batch = tok(first[:6], second[:6], padding="max_length", truncation=True, max_length=48, return_tensors="pt")
    with torch.no_grad():
        ref = enc(**batch).last_hidden_state[:, 0]
        got = net.features(data.train.hidden, data.train.mask)
    assert torch.allclose(got, ref, atol=1e-4)
    assert (batch["token_type_ids"].sum(1) > 0).all()  # a real pair: second segment present


def test_lora_linear_is_w0_plus_scaled_ba():
    net = models.minilm_classifier(3, seed=0)
    models.add_lora(net, 4, ("query", "value"), alpha=8, seed=0)
    pairs = models.lora_pairs(net)
    assert [p.name for p in pairs] == ["query", "value"] and all(p.scaling == 2.0 for p in pairs)
    trainable = sorted(n for n, p in net.named_parameters() if p.requires_grad)
    assert trainable == ["head.bias", "head.weight", "query.lora_A.default.weight", "query.lora_B.default.weight",
                         "value.lora_A.default.weight", "value.lora_B.default.weight"]
    p = pairs[0]
    with torch.no_grad():
        p.B.copy_(torch.randn_like(p.B))
        x = torch.randn(5, p.A.shape[1])
        ref = x @ (p.base.weight + p.scaling * p.B @ p.A).T + p.base.bias
        assert torch.allclose(net.query(x), ref, atol=1e-5)
    assert models.adapter_parameters(net) == 2 * 4 * (384 + 384)


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    tok, model = tiny_llama(tmp_path_factory.mktemp("tok"))
    return tok, model


def test_data_to_text_items_use_known_words_and_a_fixed_field_order(tiny_lm):
    tok, _ = tiny_lm
    items = tasks.make_data_to_text(50, seed=2, tokenizer=tok)
    assert items == tasks.make_data_to_text(50, seed=2, tokenizer=tok)
    lex = tasks.lexicon(tok, 0)
    for it in items:
        for text in (it["prompt"], it["target"]):
            assert tok.unk_token_id not in tok(text)["input_ids"]
        words = it["prompt"].split()[:-1]
        rec = {lex["keys"].index(k): lex["values"][lex["keys"].index(k)].index(v) for k, v in zip(words[::2], words[1::2])}
        assert it["target"] == tasks.realise(lex, rec)
        pos = [it["target"].split().index(lex["connectives"][k]) for k in sorted(rec)]
        assert pos == sorted(pos)


def test_lm_loss_is_cross_entropy_on_target_tokens_only(tiny_lm):
    tok, model = tiny_lm
    items = tasks.make_data_to_text(12, seed=0, tokenizer=tok)
    data = tasks.lm_task(tok, items[:8], items[8:], max_len=48)
    idx = np.arange(8)
    got = float(train.loss_on(model, data, idx))
    logits = model(input_ids=data.input_ids, attention_mask=data.attention_mask).logits
    total, count = 0.0, 0
    for i, it in enumerate(items[:8]):
        n_prompt = len(tok(it["prompt"])["input_ids"])
        target = tok(" " + it["target"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        for j, t in enumerate(target):  # token t at position n_prompt + j, predicted one position earlier
            total -= float(F.log_softmax(logits[i, n_prompt + j - 1], -1)[t])
            count += 1
    assert got == pytest.approx(total / count, rel=1e-5)


def _fit(net, data, out, key, steps=12, hook=None):
    return train.finetune(net, data, lambda n: torch.optim.AdamW([p for p in n.parameters() if p.requires_grad], lr=1e-2),
                          steps=steps, batch_size=16, seed=0, out=out, key=key, after_step=hook)


def test_finetune_is_deterministic_reuses_finished_runs_and_learns(tmp_path):
    data = tasks.prepare_classification("topic_sentiment", 200, 100, seed=0, max_length=32)
    calls = []
    nets, results = [], []
    for folder in ("a", "b", "a"):
        net = models.add_lora(models.minilm_classifier(data.classes, seed=0), 2, seed=0)
        results.append(_fit(net, data, tmp_path / folder, {"t": 1}, steps=40, hook=lambda n, s: calls.append(s)))
        nets.append(net)
    assert calls == list(range(40)) * 2  # the third fit reused the finished checkpoint of the first
    assert results[0].losses == results[1].losses == results[2].losses
    for a, b in zip(nets[0].state_dict().values(), nets[2].state_dict().values()):
        assert torch.equal(a, b)
    assert np.mean(results[0].losses[-5:]) < np.mean(results[0].losses[:5])
    assert results[0].peak_kind == "tracked_tensors" and results[0].peak_bytes > 0
    assert results[0].state_bytes == results[2].state_bytes > 0
    ev = train.evaluate(nets[0], data)
    assert ev["accuracy"] == pytest.approx(np.mean(ev["correct"])) and len(ev["correct"]) == 100


def test_validation_split_holds_out_training_rows_only():
    data = tasks.prepare_classification("intent", 120, 40, seed=0, max_length=32)
    tune = tasks.split_validation(data, 30, seed=0)
    assert len(tune.train.labels) == 90 and len(tune.test.labels) == 30
    rows = torch.cat([tune.train.hidden, tune.test.hidden])
    assert torch.equal(rows.sort(0).values, data.train.hidden.sort(0).values)


def test_linear_schedule_warms_up_and_decays_to_zero():
    f = train._schedule("linear", 10, 2)
    assert [f(s) for s in (0, 1)] == [0.5, 1.0] and f(9) == pytest.approx(1 / 8) and f(10) == 0.0
    with pytest.raises(ValueError, match="schedule"):
        train._schedule("cosine", 10, 0)


def test_decoding_stops_at_eos_and_scores_exact_matches(tiny_lm):
    tok, model = tiny_lm
    items = tasks.make_data_to_text(6, seed=1, tokenizer=tok)
    data = tasks.lm_task(tok, items, items, max_len=48)
    outs = train.decode(model, tok, data.test.prompts, max_new_tokens=5)
    assert len(outs) == 6 and all(len(o.split()) <= 5 for o in outs)
    data.test.targets = outs  # the model's own greedy outputs as references score 1
    ev = train.evaluate(model, data, max_new_tokens=5)
    assert ev["exact_match"] == 1.0 and ev["rouge_l"] == pytest.approx(1.0)


def test_default_max_lengths_hold_every_generated_sentence(minilm, root):
    """The default configs pad the generated classification tasks to short lengths: no sentence a
    default run draws may lose tokens to the truncation in `fed_tasks.encode`."""
    import yaml

    from neurips26.papers.fed_harness import tasks as fed_tasks

    cfg = yaml.safe_load((root / "config" / "config.yaml").read_text())
    fla = cfg["fedlora_align"]
    lengths = {"adapad": (cfg["adapad"]["data"]["max_length"], cfg["adapad"]["data"]["tasks"]),
               "adaprelora": (cfg["adaprelora"]["classification"]["max_length"], cfg["adaprelora"]["tasks"]),
               "fedaba": (cfg["fedaba"]["data"]["max_length"], [cfg["fedaba"]["data"]["task"]]),
               "fedlora_align": (fla["data"]["max_length"], [fla["variants"][v]["task"] for v in fla["run_variants"]])}
    tok = minilm[0]
    for paper, (max_length, names) in lengths.items():
        for task in (t for t in names if t in tasks.CLS_TASKS):
            for seed in range(3):
                if task in tasks.PAIR_TASKS:
                    first, second, _ = tasks.generate_pairs(1000, seed)
                    ids = tok(first, second)["input_ids"]
                else:
                    ids = tok(fed_tasks.generate(task, 1000, seed)[0])["input_ids"]
                longest = max(len(i) for i in ids)
                assert longest <= max_length, f"{paper}: a {task} sentence has {longest} tokens > max_length {max_length}"
