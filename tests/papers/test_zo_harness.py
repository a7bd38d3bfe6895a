"""The zeroth-order harness against independent references: seed replay of perturbations
(against a fresh generator's draw), restoration, the two-point estimate on a quadratic
(Monte Carlo against the analytic gradient and directional derivative), the MeZO step, the
query counter, the prompt classifier's layer cache (against the uncached encoder) and the
addition task's rendering, parsing and rewards (against an oracle model)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from neurips26.papers.zo_harness import tasks, zo


def _params(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(3, 4, generator=g), torch.randn(5, generator=g), torch.randn(2, 2, 2, generator=g)]


def test_seed_replay_regenerates_the_exact_perturbation():
    params = _params()
    theta0 = [p.clone() for p in params]
    seed = zo.step_seed(7, 3)
    zo.perturb_(params, seed, 0.5)
    # an independent draw: a fresh generator with the same seed, in list order
    g = torch.Generator().manual_seed(seed)
    z_ref = [torch.randn(tuple(p.shape), generator=g) for p in theta0]
    for p, p0, z in zip(params, theta0, z_ref):
        assert torch.equal(p - p0, (p0 + 0.5 * z) - p0)
    # the same seed regenerates the same z; another seed does not
    z1, z2 = zo.gaussian(params, seed), zo.gaussian(params, seed)
    assert all(torch.equal(a, b) for a, b in zip(z1, z2))
    z3 = zo.gaussian(params, zo.step_seed(7, 4))
    assert not torch.equal(z1[0], z3[0])
    # perturbing back restores theta (to rounding)
    zo.perturb_(params, seed, -0.5)
    for p, p0 in zip(params, theta0):
        assert torch.allclose(p, p0, atol=1e-6)


def test_perturb_acts_on_views_of_parameters_only():
    w = torch.zeros(4, 3)
    zo.perturb_([w[:, 1]], 11, 1.0)  # one column, as for one LoRA atom
    assert torch.count_nonzero(w[:, [0, 2]]) == 0
    assert torch.equal(w[:, 1], zo.gaussian([(4,)], 11)[0])


def test_step_seeds_are_deterministic_and_distinct():
    seeds = {zo.step_seed(s, t) for s in range(3) for t in range(200)}
    assert len(seeds) == 600
    assert zo.step_seed(1, 2) == zo.step_seed(1, 2)


def _quadratic(dim=6, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((dim, dim))
    h = torch.tensor(m @ m.T / dim + np.eye(dim), dtype=torch.float64)
    b = torch.tensor(rng.standard_normal(dim), dtype=torch.float64)
    return h, b


def test_two_point_is_unbiased_for_the_directional_derivative_on_a_quadratic():
    h, b = _quadratic()
    theta = torch.tensor(np.linspace(-1, 1, 6), dtype=torch.float64)
    grad = h @ theta + b  # analytic gradient of 1/2 t'Ht + b't
    gen = torch.Generator().manual_seed(5)
    sigma = 0.05  # evaluation noise
    counter = zo.QueryCounter()

    def loss():
        return float(0.5 * theta @ h @ theta + b @ theta + sigma * torch.randn((), generator=gen, dtype=torch.float64))

    # fixed direction: the noisy two-point estimates average to <grad, z> (central differences are exact on a quadratic)
    seed = 123
    z = zo.gaussian([theta], seed, dtype=torch.float64)[0].float().double()
    draws = [zo.two_point(loss, [theta], seed, eps=1e-2, counter=counter)[0] for _ in range(4000)]
    se = np.std(draws) / math.sqrt(len(draws))
    assert abs(np.mean(draws) - float(grad @ z)) < 4 * se
    assert counter.forwards == 8000
    # over directions: E[g_hat z] = grad (Monte Carlo against the analytic gradient)
    n = 6000
    est = torch.zeros_like(theta)
    sq = torch.zeros_like(theta)
    for i in range(n):
        s = zo.step_seed(1, i)
        g_hat = zo.two_point(loss, [theta], s, eps=1e-2)[0]
        v = g_hat * zo.gaussian([theta], s)[0].double()
        est += v
        sq += v * v
    mean = est / n
    se = torch.sqrt((sq / n - mean ** 2) / n)
    assert torch.all((mean - grad).abs() < 4 * se), (mean, grad, se)
    # and a wrong reference (half the gradient) is rejected
    assert torch.any((mean - 0.5 * grad).abs() > 4 * se)


def test_two_point_without_noise_equals_the_directional_derivative():
    h, b = _quadratic(seed=2)
    theta = torch.ones(6, dtype=torch.float64)
    g_hat, lp, lm = zo.two_point(lambda: float(0.5 * theta @ h @ theta + b @ theta), [theta], 9, eps=0.3)
    z = zo.gaussian([theta], 9)[0].double()
    assert g_hat == pytest.approx(float((h @ theta + b) @ z), rel=1e-5)  # z in float32, theta in float64
    assert torch.allclose(theta, torch.ones(6, dtype=torch.float64), atol=1e-12)  # restored


def test_mezo_step_moves_along_minus_g_hat_z():
    params = _params(3)
    theta0 = [p.clone() for p in params]
    counter = zo.QueryCounter(budget=4)

    def loss():
        return float(sum((p ** 2).sum() for p in params))

    out = zo.mezo_step(loss, params, 42, eps=1e-3, lr=0.1, counter=counter)
    z = zo.gaussian(params, 42)
    for p, p0, zi in zip(params, theta0, z):
        assert torch.allclose(p, p0 - 0.1 * out["g_hat"] * zi, atol=1e-5)
    # g_hat matches the analytic directional derivative 2 <theta, z>
    assert out["g_hat"] == pytest.approx(sum(float(2 * (p0 * zi).sum()) for p0, zi in zip(theta0, z)), rel=1e-2)
    assert counter.forwards == 2 and counter.left == 2 and not counter.exhausted
    zo.mezo_step(loss, params, 43, eps=1e-3, lr=0.1, counter=counter)
    assert counter.exhausted


def test_sentiment_labels_follow_the_last_clause():
    items = tasks.make_sentiment(400, seed=1)
    assert items == tasks.make_sentiment(400, seed=1)
    pos, neg = set(tasks.POSITIVE), set(tasks.NEGATIVE)
    for it in items:
        last = it["text"].split(" , but ")[-1].split(" and ")[-1].rstrip(" .").split()
        polarity = 1 if last[-1] in pos else 0
        assert last[-1] in pos | neg
        assert it["label"] == (1 - polarity if "not" in last else polarity), it
    assert 0.4 < np.mean([it["label"] for it in items]) < 0.6
    splits = tasks.sentiment_splits({"train": 30, "test": 30}, seed=0)
    assert {it["text"] for it in splits["train"]} != {it["text"] for it in splits["test"]}


def test_prompt_classifier_cache_equals_the_full_encoder():
    from neurips26.core.lm import load_minilm

    tok, enc = load_minilm()
    items = tasks.make_sentiment(6, seed=2)
    full = tasks.PromptClassifier(tok, enc, cache_below=0)
    cached = tasks.PromptClassifier(tok, enc, cache_below=4)
    assert torch.allclose(full.logits(full.encode(items)), cached.logits(cached.encode(items)), atol=1e-4)
    # the mean-pooled output of the Hugging Face encoder itself
    texts = [tasks.prompt(it["text"]) for it in items]
    e = tok(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        h = enc(**e).last_hidden_state
    m = e["attention_mask"][..., None].float()
    with torch.no_grad():
        assert torch.allclose(cached._pooled(cached.encode(items)), (h * m).sum(1) / m.sum(1), atol=1e-4)
    assert len(cached.top_parameters()) == 2 * len(list(enc.encoder.layer[0].parameters()))
    assert isinstance(cached.loss(cached.encode(items)), float)


def test_addition_render_parse_and_rewards():
    items = tasks.make_addition(50, digits=3, seed=0)
    for it in items:
        assert it["answer"] == it["a"] + it["b"]
        assert tasks.parse_number(it["target"]) == it["answer"]
        assert tasks.addition_reward(it["target"], it) == 1.0
        assert tasks.addition_reward(it["target"], it, dense=True) == 1.0
    it = {"answer": 579, "target": tasks.render_number(579, 4) + " ."}
    wrong = tasks.render_number(578, 4) + " ."
    assert tasks.addition_reward(wrong, it) == 0.0
    assert tasks.addition_reward(wrong, it, dense=True) == pytest.approx(4 / 5)
    assert tasks.parse_number("r x g") is None
    assert len({len(i["prompt"].split()) for i in items}) == 1


class _Oracle(torch.nn.Module):
    """Predicts the right next token of every addition item it was given (a lookup by prefix)."""

    def __init__(self, tokenizer, items, vocab):
        super().__init__()
        self.table = {}
        for it in items:
            ids = tokenizer(it["prompt"] + it["target"])["input_ids"]
            for t in range(1, len(ids)):
                self.table[tuple(ids[:t])] = ids[t]
        self.vocab = vocab
        self.device = torch.device("cpu")

    def forward(self, input_ids):
        b, s = input_ids.shape
        logits = torch.zeros(b, s, self.vocab)
        for i in range(b):
            for t in range(s):
                logits[i, t, self.table.get(tuple(input_ids[i, :t + 1].tolist()), 0)] = 1.0
        return type("Out", (), {"logits": logits})()


def test_addition_scorers_against_an_oracle(tmp_path):
    from neurips26.core import lm

    items = tasks.make_addition(12, digits=2, seed=3)
    texts = [it["prompt"] + it["target"] for it in items] * 3
    tok = lm.train_tokenizer(texts + [" ".join(tasks.DIGIT_SYMBOLS)] * 3, vocab_size=64, out=tmp_path)
    tasks.check_tokens(tok, texts)
    oracle = _Oracle(tok, items, len(tok))
    assert tasks.teacher_forced_reward(oracle, tok, items, batch_size=5) == [1.0] * len(items)
    assert tasks.greedy_rewards(oracle, tok, items, batch_size=5) == [1.0] * len(items)
    lp = tasks.answer_logprob(oracle, tok, items)
    assert all(v == pytest.approx(1.0 - math.log(math.e + len(tok) - 1)) for v in lp)
    # an oracle for other items gets them wrong
    other = _Oracle(tok, tasks.make_addition(12, digits=2, seed=4), len(tok))
    assert np.mean(tasks.teacher_forced_reward(other, tok, items)) < 1.0
    with pytest.raises(ValueError):
        tasks.check_tokens(tok, ["z q"])


@pytest.fixture(scope="module")
def tiny_causal(tmp_path_factory):
    """A word-level BPE tokenizer on the sentiment sentences and a tiny random Llama."""
    from neurips26.core import lm

    items = tasks.make_sentiment(200, seed=5)
    texts = [f"{it['text']} It was great" for it in items]
    texts += [t.replace(" great", " terrible") for t in texts]
    folder = tmp_path_factory.mktemp("tok")
    lm.train_tokenizer(texts, vocab_size=400, out=folder)
    tok = lm.load_tokenizer(folder)  # with the pad token and right padding every model here reads
    torch.manual_seed(0)
    model = lm.build_model("llama", len(tok), 32, 2, 2, 64, 128, tokenizer=tok)
    return tok, model.eval(), items


def test_causal_prompt_classifier_reads_the_verbalizer_log_probs(tiny_causal):
    tok, model, items = tiny_causal
    clf = tasks.CausalPromptClassifier(tok, model)
    batch = clf.encode(items[:6])
    got = clf.logits(batch)
    # reference: each prompt alone (no padding), log-softmax of the last position
    great = tok("great", add_special_tokens=False)["input_ids"][0]
    terrible = tok("terrible", add_special_tokens=False)["input_ids"][0]
    for i, it in enumerate(items[:6]):
        ids = torch.tensor([tok(f"{it['text']} It was")["input_ids"]])
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0, -1], -1)
        assert torch.allclose(got[i], torch.stack([logp[terrible], logp[great]]), atol=1e-4)
    # a subset of rows, trimmed, scores the same
    sub = clf.subset(batch, [4, 1])
    assert torch.allclose(clf.logits(sub), got[[4, 1]], atol=1e-4)
    assert isinstance(clf.loss(batch), float) and 0 <= clf.accuracy(batch) <= 1
    assert len(clf.top_parameters()) == len(list(model.parameters()))
