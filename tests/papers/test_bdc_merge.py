"""BDC-Merge against independent references: dcor's distance correlation (plain and bias-corrected),
independence, the strength-0 identity of fusion, and Hugging Face round trips of merged models;
the shared corpora, tokenizer and LM helpers on tiny sizes."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from neurips26.core import lm
from neurips26.data import lm_corpora
from neurips26.papers.bdc_merge import activations as act
from neurips26.papers.bdc_merge import baselines, bdcorr, check_config, method

dcor = pytest.importorskip("dcor")


def _pair(seed, n, p, q, dependent=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p))
    y = rng.standard_normal((n, q))
    if dependent:
        y[:, 0] += np.sin(2 * x[:, 0]) + x[:, -1] ** 2
    return x, y


@pytest.mark.parametrize("n, p, q", [(30, 1, 1), (40, 3, 5), (25, 6, 2)])
def test_distance_correlation_equals_dcor(n, p, q):
    x, y = _pair(n, n, p, q)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    assert float(bdcorr.distance_correlation(tx, ty)) == pytest.approx(dcor.distance_correlation(x, y), abs=1e-10)
    assert float(bdcorr.distance_correlation_sqr(tx, ty)) == pytest.approx(
        dcor.distance_correlation_sqr(x, y), abs=1e-10)
    assert float(bdcorr.distance_covariance_sqr(tx, ty)) == pytest.approx(dcor.distance_covariance_sqr(x, y), abs=1e-10)


@pytest.mark.parametrize("n, p, q", [(30, 1, 1), (40, 3, 5), (25, 6, 2)])
def test_bias_corrected_distance_correlation_equals_dcor(n, p, q):
    x, y = _pair(n + 1, n, p, q)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    ours = float(bdcorr.distance_correlation_sqr(tx, ty, bias_corrected=True))
    assert ours == pytest.approx(dcor.u_distance_correlation_sqr(x, y), abs=1e-10)
    assert float(bdcorr.distance_covariance_sqr(tx, ty, bias_corrected=True)) == pytest.approx(
        dcor.u_distance_covariance_sqr(x, y), abs=1e-10)


@pytest.mark.parametrize("memory_bytes", [2_000, 60_000, 256 * 2**20])
def test_neuron_level_matches_a_loop_over_dcor_for_every_chunking(memory_bytes):
    x, y = _pair(5, 36, 7, 5)
    ours = bdcorr.neuron_distance_correlation(torch.from_numpy(x), torch.from_numpy(y), memory_bytes=memory_bytes)
    ref = np.array([[dcor.distance_correlation(x[:, i], y[:, j]) for j in range(5)] for i in range(7)])
    np.testing.assert_allclose(ours.numpy(), ref, atol=1e-10)


def test_neuron_level_in_float32_matches_dcor_to_1e_6():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    y = (np.tanh(x[:, :4]) + 0.3 * rng.standard_normal((64, 4))).astype(np.float32)
    ours = bdcorr.neuron_distance_correlation(torch.from_numpy(x), torch.from_numpy(y)).numpy()
    ref = np.array([[dcor.distance_correlation(x[:, i].astype(float), y[:, j].astype(float)) for j in range(4)]
                    for i in range(6)])
    np.testing.assert_allclose(ours, ref, atol=1e-6)


def test_independence_gives_bias_corrected_values_near_zero():
    vals = []
    for seed in range(20):
        x, y = _pair(100 + seed, 200, 3, 4, dependent=False)
        vals.append(float(bdcorr.distance_correlation_sqr(torch.from_numpy(x), torch.from_numpy(y), bias_corrected=True)))
    plain = float(bdcorr.distance_correlation_sqr(*map(torch.from_numpy, _pair(7, 200, 3, 4, False))))
    assert abs(np.mean(vals)) < 0.003             # unbiased: centred on zero
    assert min(vals) < 0 < max(vals)
    assert plain > 5 * abs(np.mean(vals))          # the plain estimator is biased upwards
    x, y = _pair(9, 200, 3, 4, dependent=False)
    y[:, :3] = 0.2 * y[:, :3] + np.abs(x)        # dependent but uncorrelated
    assert float(bdcorr.distance_correlation_sqr(torch.from_numpy(x), torch.from_numpy(y), bias_corrected=True)) > 3 * max(vals)


def test_lift_recovers_a_signed_scaled_permutation():
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((80, 5))).float()
    perm, signs, scales = [3, 0, 4, 1, 2], torch.tensor([1.0, -1, 1, -1, 1]), torch.tensor([2.0, 0.5, 1, 3, 1.5])
    y = x[:, perm] * signs * scales
    D = bdcorr.neuron_distance_correlation(x, y)
    op = method.lift(D, act.pearson(x, y), x.std(0), y.std(0), top_k=1)
    torch.testing.assert_close(x @ op.T, y, atol=1e-4, rtol=1e-4)


def _tiny_models(vocab=40):
    torch.manual_seed(0)
    source = lm.build_model("llama", vocab, 24, 3, 2, 48, 64)
    target = lm.build_model("qwen2", vocab, 16, 2, 2, 32, 64)
    return source, target


def _fake_acts(model, n=30, seed=0, ids=None):
    if ids is None:
        ids = torch.randint(4, 40, (3, 10), generator=torch.Generator().manual_seed(seed))
    layers = act.decoder_layers(model)
    store = {}
    hooks = []
    for i, layer in enumerate(layers):
        for name, (path, s_in, s_out) in act.MATRICES.items():
            mod = act.submodule(layer, path)
            hooks.append(mod.register_forward_hook(lambda m, a, o, i=i, s_in=s_in, s_out=s_out: store.update(
                {(i, s_in): a[0].reshape(-1, a[0].shape[-1])[:n], (i, s_out): o.reshape(-1, o.shape[-1])[:n]})))
    hooks.append(model.get_input_embeddings().register_forward_hook(
        lambda m, a, o: store.update({("model", "embed_out"): o.reshape(-1, o.shape[-1])[:n]})))
    hooks.append(model.get_output_embeddings().register_forward_hook(
        lambda m, a, o: store.update({("model", "head_in"): a[0].reshape(-1, a[0].shape[-1])[:n]})))
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
    for h in hooks:
        h.remove()
    layers_acts = [{k[1]: v.detach().float() for k, v in store.items() if k[0] == i} for i in range(len(layers))]
    for i in range(len(layers)):
        layers_acts[i]["hidden"] = out.hidden_states[i + 1].reshape(-1, out.hidden_states[i + 1].shape[-1])[:n].float()
    return act.Activations(layers_acts, {k[1]: v.detach().float() for k, v in store.items() if k[0] == "model"}), ids


def test_strength_zero_leaves_the_target_unchanged_and_merged_models_round_trip(tmp_path):
    from transformers import AutoModelForCausalLM

    source, target = _tiny_models()
    acts_s, ids = _fake_acts(source)
    acts_t, _ = _fake_acts(target)
    plans = {"bdc": method.plan(acts_s, acts_t, list(act.MATRICES) + ["embed_tokens", "lm_head"], 1, 3, 10**6, True),
             "transport": baselines.transport_plan(acts_s, acts_t, ["q_proj", "k_proj", "v_proj", "o_proj"], 0.05, 0.05, 2000),
             "naive": baselines.truncation_plan(source, target, list(act.MATRICES) + ["embed_tokens", "lm_head"])}
    with torch.no_grad():
        reference = target(input_ids=ids).logits
    for name, fusion in plans.items():
        same = method.fuse(source, target, fusion, 0.0)
        with torch.no_grad():
            assert torch.equal(same(input_ids=ids).logits, reference), name
        merged = method.fuse(source, target, fusion, 0.4)
        with torch.no_grad():
            logits = merged(input_ids=ids).logits
        assert not torch.allclose(logits, reference), name     # fusion changed the function
        merged.save_pretrained(tmp_path / name, safe_serialization=True)
        loaded = AutoModelForCausalLM.from_pretrained(tmp_path / name)
        assert type(loaded).__name__ == "Qwen2ForCausalLM"
        with torch.no_grad():
            torch.testing.assert_close(loaded(input_ids=ids).logits, logits)
    # the target itself is untouched by fusing
    with torch.no_grad():
        assert torch.equal(target(input_ids=ids).logits, reference)


def test_fusion_is_affine_in_the_strength():
    source, target = _tiny_models()
    acts_s, _ = _fake_acts(source)
    acts_t, _ = _fake_acts(target)
    fusion = method.plan(acts_s, acts_t, ["v_proj", "down_proj"], 2, 2, 10**6, True)
    w = [act.submodule(act.decoder_layers(method.fuse(source, target, fusion, a))[1], "mlp.down_proj").weight
         for a in (0.0, 0.5, 1.0)]
    torch.testing.assert_close(w[1], 0.5 * (w[0] + w[2]))
    assert torch.allclose(fusion.layer_weights.sum(0).float(), torch.ones(2))


def test_transport_maps_are_barycentric_and_match_pot():
    import ot

    x, y = _pair(2, 50, 6, 4)
    tx, ty = torch.from_numpy(x).float(), torch.from_numpy(y).float()
    out, inn, cost = baselines.transport_maps(tx, ty, 0.1, 2000)
    C = 1 - np.corrcoef(x.T, y.T)[:6, 6:]
    Q = ot.sinkhorn(np.full(6, 1 / 6), np.full(4, 1 / 4), C, 0.1, numItermax=2000)
    np.testing.assert_allclose(out.numpy(), (Q.T / Q.sum(0)[:, None]), atol=1e-4)
    np.testing.assert_allclose(out.sum(1).numpy(), 1, atol=1e-5)
    np.testing.assert_allclose(inn.sum(1).numpy(), 1, atol=1e-5)
    assert cost == pytest.approx(float((C * Q).sum()), abs=1e-4)


def test_corpora_tokenizer_and_cloze_scoring(tmp_path):
    cfg = {"seed": 0, "lexicon": {"nouns_per_class": 5, "verbs_per_frame": 2, "intransitive": 2, "adjectives": 3,
                                  "prepositions": 2},
           "high_resource_sentences": 200, "low_resource_sentences": 60, "valid_sentences": 10, "cloze_questions": 6,
           "low_resource": {"lr_a": {"consonants": "ptkmn", "vowels": "aiu", "order": "SOV", "adjective_after": True,
                                     "determiners": False, "plural": "particle", "agreement": "none",
                                     "object_case": "suffix", "postpositions": True}},
           "knowledge": {"sets": ["kb"], "entities": 5, "attributes": 2, "values": 4, "repeats": 2}}
    manifest = lm_corpora.generate(tmp_path / "c", cfg)
    assert {k: v["kind"] for k, v in manifest["corpora"].items()} == {"high": "high", "lr_a": "low", "kb": "knowledge"}
    high = lm_corpora.read_lines(tmp_path / "c", "high", "train")
    low = lm_corpora.read_lines(tmp_path / "c", "lr_a", "train")
    assert not set(" ".join(high).split()) & set(" ".join(low).split()) - {"."}    # own vocabulary
    # not a token cipher: sentence lengths differ between the languages for the same grammar
    assert abs(np.mean([len(s.split()) for s in high]) - np.mean([len(s.split()) for s in low])) > 0.2
    for item in lm_corpora.read_cloze(tmp_path / "c", "lr_a") + lm_corpora.read_cloze(tmp_path / "c", "kb"):
        assert len(set(item["choices"])) == 4 and 0 <= item["answer"] < 4
    tok = lm.train_tokenizer(high + low, 120, tmp_path / "tok")
    lm.train_tokenizer(high + low, 120, tmp_path / "tok_again")
    assert (tmp_path / "tok" / "tokenizer.json").read_bytes() == (tmp_path / "tok_again" / "tokenizer.json").read_bytes()
    tok2 = lm.load_tokenizer(tmp_path / "tok")
    assert tok2("a b")["input_ids"][0] == tok2.bos_token_id and len(tok2) == len(tok)
    model = lm.build_model("qwen2", len(tok2), 16, 1, 2, 32, 64, tokenizer=tok2).eval()
    items = lm_corpora.read_cloze(tmp_path / "c", "kb")
    # brute force: score each completed text by hand, summing log p of the tokens from the choice on
    correct = 0
    for it in items:
        scores = []
        for c in it["choices"]:
            text = it["prefix"] + c + it["suffix"]
            enc = tok2(text, return_offsets_mapping=True)
            ids = torch.tensor([enc["input_ids"]])
            with torch.no_grad():
                logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1], -1)
            s = sum(float(logp[t - 1, ids[0, t]]) for t in range(1, ids.shape[1])
                    if enc["offset_mapping"][t][1] > len(it["prefix"]))
            scores.append(s)
        correct += int(np.argmax(scores) == it["answer"])
    assert lm.cloze_accuracy(model, tok2, items, batch_size=5) == pytest.approx(correct / len(items))
    texts = lm_corpora.read_lines(tmp_path / "c", "high", "valid")
    sums, counts = lm.sequence_logprobs(model, tok2, texts, batch_size=3)
    with torch.no_grad():
        ids = torch.tensor([tok2(texts[0])["input_ids"]])
        loss = model(input_ids=ids, labels=ids).loss
    assert -sums[0] / counts[0] == pytest.approx(float(loss), rel=1e-5)


def test_word_positions_and_config_checks():
    assert act.word_positions("ab cd", [(0, 0), (0, 1), (1, 2), (3, 5)]) == [2, 3]
    with pytest.raises(ValueError, match="word boundary"):
        act.word_positions("ab cd", [(0, 0), (0, 1), (3, 4)])
    block = {"calibration": {"sizes": [8], "size": 16}, "strengths": [0.1], "strength": 0.3,
             "transport": {"matrices": ["embed_tokens"]}, "bdc": {"matrices": ["q_proj"]}}
    problems = check_config(block)
    assert any(p.startswith("calibration.size") for p in problems)
    assert any(p.startswith("strength") for p in problems)
    assert any(p.startswith("transport.matrices") for p in problems)
    assert json.dumps(problems)


# ---- bias-corrected neuron dependence ------------------------------------------------------------

def _u_dcor2_direct(x, y):
    """dCor^2_u of two samples from the O(n^2) U-centred formula written out with loops over sums."""
    n = len(x)

    def u(v):
        a = np.abs(v[:, None] - v[None, :]) if v.ndim == 1 else np.linalg.norm(v[:, None] - v[None, :], axis=-1)
        r = a.sum(1)
        out = np.empty_like(a)
        for k in range(n):
            for l in range(n):
                out[k, l] = 0.0 if k == l else a[k, l] - r[k] / (n - 2) - r[l] / (n - 2) + a.sum() / ((n - 1) * (n - 2))
        return out

    A, B = u(x), u(y)
    xy, xx, yy = (A * B).sum(), (A * A).sum(), (B * B).sum()
    return xy / np.sqrt(xx * yy)


@pytest.mark.parametrize("memory_bytes", [2_000, 60_000, 256 * 2**20])
def test_neuron_level_bias_corrected_matches_dcor_and_a_direct_formula(memory_bytes):
    x, y = _pair(6, 30, 5, 4)
    ours = bdcorr.neuron_distance_correlation_sqr(torch.from_numpy(x), torch.from_numpy(y), memory_bytes=memory_bytes,
                                                  bias_corrected=True).numpy()
    ref = np.array([[dcor.u_distance_correlation_sqr(x[:, i], y[:, j]) for j in range(4)] for i in range(5)])
    np.testing.assert_allclose(ours, ref, atol=1e-10)
    assert ours.min() < 0                                          # unclamped: negative under independence
    direct = np.array([[_u_dcor2_direct(x[:, i], y[:, j]) for j in range(4)] for i in range(5)])
    np.testing.assert_allclose(ours, direct, atol=1e-10)


def test_independent_neurons_take_almost_no_weight_from_an_exact_match():
    """n = 256, independent neurons and one exact (permuted) match per target neuron: the plain
    dCor scores unrelated pairs at about 0.11, so top-4 lifting gives the match only ~0.75 of the
    weight; the clamped bias-corrected dCor^2_u gives it more than 0.9."""
    rng = np.random.default_rng(4)
    x = torch.from_numpy(rng.standard_normal((256, 32)))
    perm = torch.from_numpy(rng.permutation(32))
    y = x[:, perm]
    share = {}
    for weight in method.NEURON_WEIGHTS:
        D = method.neuron_dependence(x, y, weight, 2**26, "cpu")
        op = method.lift(D, act.pearson(x, y), x.std(0), y.std(0), top_k=4)
        share[weight] = float(op[torch.arange(32), perm].mean())
    plain = bdcorr.neuron_distance_correlation(x, y)
    off = ~torch.eye(32, dtype=torch.bool)[:, torch.argsort(perm)]
    assert 0.08 < float(plain[off].mean()) < 0.14
    assert share["dcor"] < 0.8
    assert share["dcor2_u"] > 0.9


def _permuted_copy(model, seed=1):
    """The same function with the residual stream and every MLP's hidden neurons permuted."""
    import copy

    g = torch.Generator().manual_seed(seed)
    src = copy.deepcopy(model)
    pi = torch.randperm(model.config.hidden_size, generator=g)
    with torch.no_grad():
        src.get_input_embeddings().weight.copy_(model.get_input_embeddings().weight[:, pi])
        src.get_output_embeddings().weight.copy_(model.get_output_embeddings().weight[:, pi])
        src.model.norm.weight.copy_(model.model.norm.weight[pi])
        for ls, lt in zip(act.decoder_layers(src), act.decoder_layers(model)):
            sig = torch.randperm(lt.mlp.gate_proj.weight.shape[0], generator=g)
            ls.input_layernorm.weight.copy_(lt.input_layernorm.weight[pi])
            ls.post_attention_layernorm.weight.copy_(lt.post_attention_layernorm.weight[pi])
            for n in ("q_proj", "k_proj", "v_proj"):
                getattr(ls.self_attn, n).weight.copy_(getattr(lt.self_attn, n).weight[:, pi])
            ls.self_attn.o_proj.weight.copy_(lt.self_attn.o_proj.weight[pi])
            ls.mlp.gate_proj.weight.copy_(lt.mlp.gate_proj.weight[sig][:, pi])
            ls.mlp.up_proj.weight.copy_(lt.mlp.up_proj.weight[sig][:, pi])
            ls.mlp.down_proj.weight.copy_(lt.mlp.down_proj.weight[pi][:, sig])
    return src


def test_fusing_a_permuted_copy_at_strength_one_reproduces_the_source_function():
    torch.manual_seed(0)
    target = lm.build_model("qwen2", 50, 24, 2, 2, 48, 64)
    with torch.no_grad():  # non-trivial norm gains, so a wrongly permuted gain would show
        for n, p in target.named_parameters():
            if "norm" in n:
                p.copy_(1 + 0.3 * torch.randn_like(p))
    source = _permuted_copy(target)
    ids = torch.randint(4, 50, (16, 16), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        want = source(input_ids=ids).logits
        other = lm.build_model("qwen2", 50, 24, 2, 2, 48, 64)(input_ids=ids).logits
    acts_s, _ = _fake_acts(source, n=256, ids=ids)
    acts_t, _ = _fake_acts(target, n=256, ids=ids)
    mats = list(act.MATRICES) + ["embed_tokens", "lm_head"]
    kl = {}
    for weight in method.NEURON_WEIGHTS:
        for k in (1, 4):
            fusion = method.plan(acts_s, acts_t, mats, 1, k, 10**7, True, neuron_weight=weight)
            assert torch.equal(fusion.layer_weights, torch.eye(2, dtype=fusion.layer_weights.dtype))
            with torch.no_grad():
                got = method.fuse(source, target, fusion, 1.0)(input_ids=ids).logits
            kl[weight, k] = float(torch.nn.functional.kl_div(got.log_softmax(-1), want.log_softmax(-1), log_target=True,
                                                             reduction="batchmean"))
            if k == 1:  # an exact permutation is recovered: the merged model is the source's function
                torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    unrelated = float(torch.nn.functional.kl_div(other.log_softmax(-1), want.log_softmax(-1), log_target=True,
                                                 reduction="batchmean"))
    # top-4: the bias-corrected weights stay closer to the source than the plain dCor's
    assert kl["dcor2_u", 4] < 0.6 * kl["dcor", 4] and kl["dcor2_u", 4] < 0.1 * unrelated


def test_belebele_converter_keeps_questions_on_held_out_passages_only(tmp_path):
    from neurips26.papers.bdc_merge import convert

    src = tmp_path / "belebele"
    src.mkdir()
    for lang, word in (("eng_Latn", "the"), ("swh_Latn", "na")):
        lines = []
        for p in range(6):
            for q in range(2):
                lines.append(json.dumps({"link": f"x{p}", "question_number": q + 1,
                                         "flores_passage": f"{word} passage {p}\nsecond  line .",
                                         "question": f"{word} q{q}?", "mc_answer1": "a", "mc_answer2": "b",
                                         "mc_answer3": "c", "mc_answer4": f"d{p}", "correct_answer_num": str(1 + (p + q) % 4),
                                         "dialect": lang, "ds": "2023"}))
        (src / f"{lang}.jsonl").write_text("\n".join(lines) + "\n")
    manifest = convert.convert_belebele(src, tmp_path / "tasks", heldout=0.5, seed=0)
    assert {k: v["kind"] for k, v in manifest["corpora"].items()} == {"general": "high", "swh_Latn": "low"}
    folder = tmp_path / "tasks"
    train = lm_corpora.read_lines(folder, "swh_Latn", "train")
    valid = lm_corpora.read_lines(folder, "swh_Latn", "valid")
    cloze = lm_corpora.read_cloze(folder, "swh_Latn")
    assert len(train) == len(valid) == 3 and not set(train) & set(valid)
    assert all("\n" not in t and "  " not in t for t in train + valid)
    assert len(cloze) == 6 and all(any(c["prefix"].startswith(v + " ") for v in valid) for c in cloze)
    assert not any(c["prefix"].startswith(t + " ") for c in cloze for t in train)
    for c in cloze:   # the answer index follows correct_answer_num
        p, q = int(c["prefix"].split()[2]), int(c["prefix"].split("q")[-1].split("?")[0])
        assert c["answer"] == (p + q) % 4 and c["choices"][3] == f"d{p}"
    with pytest.raises(ValueError, match="correct_answer_num"):
        (src / "bad").mkdir()
        (src / "bad" / "eng_Latn.jsonl").write_text(json.dumps({f: "5" for f in convert.FIELDS}) + "\n")
        convert.convert_belebele(src / "bad", tmp_path / "bad_out")


def test_capture_subsamples_while_capturing_and_aligns_two_tokenizers_by_words(tmp_path):
    rng = np.random.default_rng(0)
    words = ["ka", "lomi", "tesura", "pa", "nivoka", "ro", "semilat", "du"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(3, 8)))) + " ." for _ in range(60)]
    tok_a = lm.train_tokenizer(texts, 60, tmp_path / "a")
    tok_b = lm.train_tokenizer(texts, 36, tmp_path / "b")
    tok_a, tok_b = lm.load_tokenizer(tmp_path / "a"), lm.load_tokenizer(tmp_path / "b")
    assert tok_a.get_vocab() != tok_b.get_vocab()
    assert any(tok_a(t)["input_ids"] != tok_b(t)["input_ids"] for t in texts)      # other segmentation
    torch.manual_seed(0)
    source = lm.build_model("llama", len(tok_a), 24, 2, 2, 48, 64, tokenizer=tok_a).eval()
    target = lm.build_model("qwen2", len(tok_b), 16, 2, 2, 32, 64, tokenizer=tok_b).eval()
    n_words = act.count_words(texts)
    full_s, full_t = act.capture(source, tok_a, texts, batch_size=7), act.capture(target, tok_b, texts, batch_size=7)
    assert full_s.layers[0]["hidden"].shape[0] == full_t.layers[0]["hidden"].shape[0] == n_words
    keep = np.sort(rng.choice(n_words, 50, replace=False))
    part = act.capture(source, tok_a, texts, batch_size=7, keep=keep)
    after = act.subsample(full_s, torch.from_numpy(keep))
    for site, val in after.layers[1].items():
        torch.testing.assert_close(part.layers[1][site], val)
    torch.testing.assert_close(part.model["embed_out"], after.model["embed_out"])
    acts_t = act.capture(target, tok_b, texts, batch_size=7, keep=keep)
    fusion = method.plan(part, acts_t, list(act.MATRICES), 1, 2, 10**7, shared_vocabulary=False)
    assert not fusion.model_operators                              # different vocabularies: not fused
    merged = method.fuse(source, target, fusion, 0.5)
    with torch.no_grad():
        assert torch.isfinite(merged(input_ids=torch.tensor([tok_b(texts[0])["input_ids"]])).logits).all()


def test_tuning_csv_holds_the_tune_steps_strength_records_and_the_fixed_knobs(tmp_path):
    """tuning.csv: each merge's strength as the tune step recorded it (per task), Transport and
    Merge + LoRA at Transport and Merge's, and the calibration size and each method's own knobs
    fixed with a reason (the targets and the source have none)."""
    from neurips26.core import tuning
    from neurips26.papers.bdc_merge import steps

    params = {"strength": 0.3, "calibration": {"size": 32}, "transport": {"reg_inner": 0.05, "reg_outer": 0.05,
              "iterations": 500}, "bdc": {"layer_top_k": 1, "neuron_top_k": 4}, "lora": {"rank": 4, "alpha": 8,
              "steps": 40, "lr": 0.003}}
    tuned = [tuning.Record(m, "strength", "tuned", [0.03, 0.1, 0.3, 1.0], [3.0, 2.0, 2.5, 4.0], 0.1, 2.0,
                           "log perplexity on held-out task text", "lower", setting="lr_a", seed=100)
             for m in ("naive", "transport", "bdc")]
    records = steps.tuning_records(params, ["target", "source", "naive", "transport", "transport_lora", "bdc"],
                                   {"records": [r.to_json() for r in tuned]})
    assert {(r.method, r.setting) for r in records if r.knob == "strength" and r.status == "tuned"} == {
        (m, "lr_a") for m in ("naive", "transport", "bdc")}
    assert [r.chosen for r in records if r.method == "transport_lora" and r.knob == "strength"] == [
        "Transport and Merge's tuned strength"]
    assert all(r.note for r in records if r.status == "fixed")
    assert {r.method for r in records if r.knob == "calibration_size"} == {"naive", "transport", "transport_lora", "bdc"}
    assert {r.method for r in records if r.knob == "lr"} == {"transport_lora"}
    path = tuning.write_csv(tmp_path / "tuning.csv", "bdc_merge", records)
    assert len(tuning.read_csv([path])) == len(records)


def _knowledge_folder(tmp_path):
    """A knowledge set as lm_corpora writes one (training text repeats every fact statement, the
    valid text is the statements) and a low-resource task whose train and valid text differ."""
    import json

    facts = [f"the colour of ent{i} is val{i % 5} ." for i in range(40)]
    rng = np.random.default_rng(0)
    train = [facts[i] for i in rng.permutation(np.repeat(np.arange(40), 3))]
    (tmp_path / "kb.train.txt").write_text("\n".join(train) + "\n")
    (tmp_path / "kb.valid.txt").write_text("\n".join(facts) + "\n")
    (tmp_path / "kb.cloze.jsonl").write_text("".join(json.dumps(
        {"prefix": f"the colour of ent{i} is ", "suffix": " .", "choices": [f"val{i % 5}", "valx", "valy", "valz"],
         "answer": 0}) + "\n" for i in range(40)))
    low_train = [f"low sentence {i} ." for i in range(200)]
    low_valid = [f"low held sentence {i} ." for i in range(30)]
    (tmp_path / "lr.train.txt").write_text("\n".join(low_train) + "\n")
    (tmp_path / "lr.valid.txt").write_text("\n".join(low_valid) + "\n")
    (tmp_path / "lr.cloze.jsonl").write_text("".join(json.dumps(
        {"prefix": "low held sentence ", "suffix": " .", "choices": [str(i), "x", "y", "z"], "answer": 0}) + "\n"
        for i in range(30)))
    manifest = {"kb": {"kind": "knowledge"}, "lr": {"kind": "low"}}
    return train, facts, manifest


def test_the_tuning_text_holds_no_line_any_test_seed_evaluates(tmp_path):
    """The tune step's validation lines are training lines no test seed evaluates (neither its
    held-out perplexity sentences nor its cloze sentences, drawn exactly as run draws them), never
    in its calibration set; evaluation items of the test seeds never change what it scores on
    beyond being left out, and a test seed's items are left out however the seeds are drawn."""
    from neurips26.papers.bdc_merge import steps

    train, facts, manifest = _knowledge_folder(tmp_path)
    params = {"seeds": [0, 1, 2], "evaluate": {"knowledge_heldout": 0.5, "valid_sentences": 12, "cloze_questions": 10}}
    evaluated = steps._evaluated_lines(tmp_path, ["kb", "lr"], manifest, params)
    # the same draws run makes, seed by seed
    expected = set()
    for seed in params["seeds"]:
        rng = np.random.default_rng([seed, 11])
        for t in ("kb", "lr"):
            d = steps._task_data(tmp_path, t, manifest[t]["kind"], params["evaluate"], rng)
            if t == "kb":
                expected |= set(d["valid"]) | {c["prefix"] + c["choices"][c["answer"]] + c["suffix"] for c in d["cloze"]}
    assert evaluated["kb"] == expected and 0 < len(expected) < len(facts)
    text = steps.tuning_text(train, evaluated["kb"], 32, 16, np.random.default_rng([100, 7, 0]))
    assert text["valid"] and not set(text["valid"]) & evaluated["kb"]
    assert set(text["valid"]) == set(facts) - evaluated["kb"]          # every clean fact, fewer than 32
    assert len(text["calibration"]) == 16 and not set(text["calibration"]) & set(text["valid"])
    # the low-resource task: validation from the training text only, none of it evaluated
    low_train = (tmp_path / "lr.train.txt").read_text().splitlines()
    low = steps.tuning_text(low_train, evaluated["lr"], 8, 16, np.random.default_rng([100, 7, 1]))
    assert len(low["valid"]) == 8 and set(low["valid"]) <= set(low_train)
    assert not set(low["valid"]) & evaluated["lr"] and not set(low["calibration"]) & set(low["valid"])
    # a line made an evaluation item leaves the validation text; nothing else of the draw depends on it
    moved = steps.tuning_text(train, evaluated["kb"] | {text["valid"][0]}, 32, 16, np.random.default_rng([100, 7, 0]))
    assert text["valid"][0] not in moved["valid"]
    with pytest.raises(ValueError, match="no held-out text"):
        steps.tuning_text(train, set(facts), 32, 16, np.random.default_rng(0))


def test_the_strength_search_extends_at_an_edge_and_stops_at_alpha_one():
    """The strength grid grows past its low edge while the best sits there (capped after the
    protocol's extensions), and a best at alpha = 1 is the knob's natural end (tuned, not capped)."""
    from neurips26.papers.bdc_merge import steps

    calls = []

    def toward_zero(strength):       # the merge only hurts: the smaller the better
        calls.append(strength)
        return float(strength)

    alpha, recs = steps.search_strength(toward_zero, [0.03, 0.1, 0.3, 1.0], 3, "bdc", "lr_a", 100, "held-out")
    assert recs[0].status == "capped" and recs[0].edge == "low" and recs[0].extensions == 3
    assert alpha == pytest.approx(0.03 / 3.218 ** 3, rel=0.01) and min(calls) == alpha
    alpha, recs = steps.search_strength(lambda strength: -strength, [0.03, 0.1, 0.3, 1.0], 3, "bdc", "lr_a", 100, "x")
    assert alpha == 1.0 and recs[0].status == "tuned" and "end of the knob" in recs[0].note
    alpha, recs = steps.search_strength(lambda strength: (np.log(strength) - np.log(0.1)) ** 2, [0.03, 0.1, 0.3, 1.0],
                                        3, "bdc", "lr_a", 100, "x")
    assert alpha == 0.1 and recs[0].status == "tuned" and recs[0].grid == [0.03, 0.1, 0.3, 1.0]


def test_claims_compare_each_merge_at_its_tuned_strength_and_the_sensitivity_rows_at_alpha03():
    """claims_summary reads the records flagged tuned (one per merge and task, at whatever strength
    the tune step chose) for the main rows and the records at the fixed strength for the _alpha03
    rows; the tune step's capped notes reach the group they belong to."""
    from neurips26.core import tuning
    from neurips26.papers.bdc_merge import steps

    def rec(method, task, strength, ppl, tuned, size=32):
        items = {"cloze": [1, 0], "nll": [1.0, 1.0], "tokens": [1, 1], "general_nll": [2.0], "general_tokens": [1]}
        return {"method": method, "task": task, "calibration_size": size, "strength": strength, "tuned": tuned,
                "ppl": ppl, "cloze": 0.5, "general_ppl": ppl + 1, "items": items}

    runs = []
    for seed in range(3):
        records = [rec(m, t, 0.0, 10.0, True, 0) for m in ("target", "source") for t in ("lr_a", "kb")]
        records += [rec("bdc", "lr_a", 0.3, 20.0, False), rec("bdc", "lr_a", 0.03, 5.0, True),
                    rec("bdc", "kb", 0.3, 7.0, True)]                      # kb's tuned strength is 0.3 itself
        runs.append({"seed": seed, "tasks": {"lr_a": "low", "kb": "knowledge"}, "records": records,
                     "cloze_chance": {"lr_a": 0.25, "kb": 0.25}})
    cap = tuning.Record("bdc", "strength", "capped", [0.01, 0.03], [1.0, 2.0], 0.01, 1.0, edge="low", setting="lr_a")
    summary = steps.claims_summary(runs, {"calibration": {"size": 32}, "strength": 0.3, "general_tolerance": 0.05},
                                   {"records": [cap.to_json()]})
    assert summary["methods"]["bdc"]["log_ppl"]["low"] == pytest.approx([np.log(5.0)] * 3)
    assert summary["fixed"]["bdc"]["log_ppl"]["low"] == pytest.approx([np.log(20.0)] * 3)
    assert summary["methods"]["bdc"]["log_ppl"]["knowledge"] == summary["fixed"]["bdc"]["log_ppl"]["knowledge"]
    assert "lr_a" in summary["capped"]["bdc"]["low"] and not summary["capped"]["bdc"]["knowledge"]
