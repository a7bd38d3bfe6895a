"""Zeroth-order harness shared by `ar1_zo` and `es_dynamics` (no steps, no config block).

`zo`: seed-replayed perturbations and the MeZO two-point estimate (Malladi et al. 2023).
A perturbation z ~ N(0, I) of a list of tensors is never stored: it is regenerated from its
integer seed, so theta + eps z, theta - eps z, the restore and the update z * g all replay the
same draw,

    g_hat = (L(theta + eps z) - L(theta - eps z)) / (2 eps),   theta <- theta - lr * g_hat * z,

two forward passes per step, counted by `QueryCounter`.

`tasks`: the two generated offline tasks. A prompt-style sentiment task for the packaged
all-MiniLM-L6-v2 ("<sentence> It was [MASK] ." scored against the verbalizer sentences
"It was great ." / "It was terrible .", MeZO's SST-2 prompt read for a sentence encoder), and a
verifiable-reward multi-digit addition task for the tiny causal LMs of `lm_assets` (digits
written with symbols the shared tokenizer knows; reward = exact match, or the dense share of
answer characters right).

API (import from the modules; this `__init__` stays free of torch):

    zo.step_seed(seed, step) -> int
    zo.gaussian(shapes_or_tensors, seed, dtype=torch.float32) -> list[Tensor]
    zo.perturb_(params, seed, scale) -> None
    zo.two_point(loss_fn, params, seed, eps, counter=None) -> (g_hat, loss_plus, loss_minus)
    zo.update_(params, seed, coef) -> None            # theta += coef * z(seed)
    zo.mezo_step(loss_fn, params, seed, eps, lr, counter=None, weight_decay=0.0) -> dict
    zo.QueryCounter(budget=None): .add(n=1), .forwards, .left, .exhausted
    tasks.make_sentiment(n, seed) -> list[dict(text, label)]
    tasks.sentiment_splits(sizes: dict, seed) -> dict[str, list[dict]]
    tasks.prompt(text) -> str;  tasks.VERBALIZERS
    tasks.PromptClassifier(tokenizer, encoder, temperature=..., max_length=...)
        .encode(items) -> batch;  .logits(batch) -> Tensor;  .loss(batch) -> float
        .accuracy(batch) -> float;  .correct(batch) -> list[int];  .subset(batch, idx) -> batch
    tasks.CausalPromptClassifier(tokenizer, causal_lm, template="{x} It was", verbalizers=(" terrible", " great"))
        the same interface for OPT / Qwen3 / the tiny Llama (MeZO's SST-2 prompt for a causal LM)
    tasks.make_addition(n, digits, seed) -> list[dict(a, b, answer, prompt, target)]
    tasks.render_number(x, symbols=DIGIT_SYMBOLS) -> str;  tasks.parse_number(s, symbols) -> int | None
    tasks.addition_reward(completion, item, dense=False) -> float
    tasks.teacher_forced_reward(model, tokenizer, items, batch_size=64) -> list[float]
    tasks.greedy_rewards(model, tokenizer, items, max_new_tokens=None) -> list[float]
    tasks.answer_logprob(model, tokenizer, items, batch_size=64) -> list[float]
"""
