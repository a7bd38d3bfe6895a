"""The steps the CLI calls for bdc_merge: tune -> run (one job per calibration seed) -> figures.

tune chooses every merge's fusion strength alpha per task through the tuning protocol
(core.tuning.search) on the tuning seed: calibrated on the tuning seed's draw of the task's
training text and scored on held-out text of the task that no test seed evaluates (`tuning_text`).

run loads the source and target LMs (the shared tiny pretrained ones, or Hugging Face ids or
local folders from the config), and for every task (each low-resource language and knowledge
set) draws calibration sets of several sizes, builds BDC-Merge's, Transport and Merge's and the
naive fusion, fuses at several strengths and measures task perplexity, cloze accuracy and the
held-out high-resource perplexity (general ability). figures plots them over seeds and writes
summary.csv and claims.csv.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking
from neurips26.core.io import significant

from .claims import claim_rows

P = "bdc_merge"
METHOD_LABELS = {"target": "target alone", "source": "source alone (reference)", "naive": "truncate-and-average",
                 "transport": "Transport and Merge", "transport_lora": "Transport and Merge + LoRA",
                 "bdc": "BDC-Merge (ours)", "bdc_attn": "BDC-Merge, attention only",
                 "transport_all": "Transport and Merge, all matrices"}


def _model_location(params: dict, inputs: dict, which: str) -> str:
    given = params["models"][which]
    if given:
        return str(given)
    if which not in inputs:
        raise ValueError(f"config key 'bdc_merge.models.{which}': neither a model id/path nor the shared "
                         f"pretrained model (input '{which}') is given")
    return str(inputs[which])


def _scores(model, tok, texts: list[str], batch: int) -> tuple[float, list[float], list[int]]:
    """Perplexity over `texts`, and per text its summed negative log-likelihood and token count."""
    from neurips26.core import lm

    sums, counts = lm.sequence_logprobs(model, tok, texts, batch)
    return float(np.exp(-sum(sums) / max(1, sum(counts)))), [significant(-x, 8) for x in sums], counts


def _evaluate(model, tok, task_data: dict, general: list[str], batch: int, tasks: list[str]) -> dict:
    """Perplexities and cloze accuracy, with the per-item scores they come from (`items`)."""
    from neurips26.core import lm

    ppl, nll, tokens = _scores(model, tok, general, batch)
    out = {"general_ppl": significant(ppl, 8), "general_items": {"general_nll": nll, "general_tokens": tokens}}
    for t in tasks:
        ppl, nll, tokens = _scores(model, tok, task_data[t]["valid"], batch)
        correct = lm.cloze_correct(model, tok, task_data[t]["cloze"], batch)
        out[t] = {"ppl": significant(ppl, 8), "cloze": significant(sum(correct) / max(1, len(correct)), 8),
                  "items": {"cloze": correct, "nll": nll, "tokens": tokens}}
    return out


def cloze_chance(items: list[dict]) -> float:
    """Expected accuracy of a uniform guess over each question's choices (the cloze's floor)."""
    return float(np.mean([1.0 / len(it["choices"]) for it in items])) if items else float("nan")


def _subset(items: list, n: int, rng: np.random.Generator) -> list:
    """n of `items`, drawn without replacement in their file order: each seed evaluates its own subset."""
    if n >= len(items):
        return list(items)
    return [items[i] for i in np.sort(rng.choice(len(items), n, replace=False))]


def _task_data(folder, task: str, kind: str, ev: dict, rng: np.random.Generator) -> dict:
    """A task's evaluation subsets and calibration pool. For a knowledge set, whose training text
    repeats its fact statements, a fraction `evaluate.knowledge_heldout` of the statements is held
    out: perplexity and cloze are measured on those facts only, and calibration (and LoRA) draw
    only from training lines stating the other facts."""
    from neurips26.data import lm_corpora

    valid, cloze = lm_corpora.read_lines(folder, task, "valid"), lm_corpora.read_cloze(folder, task)
    train = lm_corpora.read_lines(folder, task, "train")
    frac = ev["knowledge_heldout"]
    if kind == "knowledge" and frac > 0:
        n_held = max(1, int(round(frac * len(valid))))
        held = {valid[i] for i in rng.choice(len(valid), n_held, replace=False)}
        valid = [v for v in valid if v in held]
        cloze = [c for c in cloze if c["prefix"] + c["choices"][c["answer"]] + c["suffix"] in held]
        train = [x for x in train if x not in held]
        if not cloze or not train:
            raise ValueError(f"config key 'bdc_merge.evaluate.knowledge_heldout': task {task} leaves "
                             f"{len(cloze)} cloze questions and {len(train)} calibration lines")
    return {"valid": _subset(valid, ev["valid_sentences"], rng), "cloze": _subset(cloze, ev["cloze_questions"], rng),
            "train": train, "kind": kind}


def _evaluated_lines(folder, tasks: list[str], manifest: dict, params: dict) -> dict[str, set[str]]:
    """Per task, every line a test seed evaluates: its held-out perplexity sentences and the full
    sentences of its cloze questions (the same draws `run` makes for each seed in `params["seeds"]`)."""
    out = {t: set() for t in tasks}
    for seed in params["seeds"]:
        rng = np.random.default_rng([int(seed), 11])
        for t in tasks:
            data = _task_data(folder, t, manifest[t]["kind"], params["evaluate"], rng)
            out[t] |= set(data["valid"]) | {c["prefix"] + c["choices"][c["answer"]] + c["suffix"] for c in data["cloze"]}
    return out


def tuning_text(train: list[str], evaluated: set[str], n_valid: int, size: int, rng: np.random.Generator) -> dict:
    """The tuning seed's held-out text of one task and its calibration set. Validation: up to
    `n_valid` distinct training lines that no test seed evaluates (`evaluated`); calibration:
    `size` training lines whose text is not a validation line (a knowledge set's training text
    repeats its fact statements, so a validation fact is never calibrated on)."""
    clean = sorted({x for x in train if x not in evaluated})
    if not clean:
        raise ValueError("config key 'bdc_merge.tune': every training line of the task is an evaluation item "
                         "of a test seed; no held-out text is left for tuning")
    valid = [clean[i] for i in np.sort(rng.choice(len(clean), min(n_valid, len(clean)), replace=False))]
    held = set(valid)
    pool = [x for x in train if x not in held]
    if not pool:
        raise ValueError("config key 'bdc_merge.tune.valid_sentences': no training line is left to calibrate on")
    order = rng.permutation(len(pool))
    return {"valid": valid, "calibration": [pool[i] for i in order[:size]]}


TUNED = ("naive", "transport", "bdc", "bdc_attn", "transport_all")
# alpha = 1 replaces the fused matrices by the source's lifted ones: nothing lies beyond it
STRENGTH_END = (1.0, "alpha = 1 is the end of the knob's domain (the fused matrices replaced by the source's)")


def _plans(source, target, s_tok, t_tok, texts, params, shared_vocab, rng, naive_plan, timing=None):
    """Every merge's fusion plan from one calibration set: BDC-Merge, Transport and Merge, and
    (when `matched`) each on the other's matrix set; truncate-and-average needs no calibration."""
    from . import activations as act
    from . import baselines, method

    cal, bdc, tr = params["calibration"], params["bdc"], params["transport"]
    bdc_matrices = [m for m in bdc["matrices"] if shared_vocab or m not in ("embed_tokens", "lm_head")]
    n_words = act.count_words(texts)
    keep = np.sort(rng.choice(n_words, cal["max_words"], replace=False)) if n_words > cal["max_words"] else None
    acts_s, acts_t = act.capture(source, s_tok, texts, keep=keep), act.capture(target, t_tok, texts, keep=keep)
    t0 = time.perf_counter()
    plans = {"bdc": method.plan(acts_s, acts_t, bdc_matrices, bdc["layer_top_k"], bdc["neuron_top_k"],
                                bdc["memory_mb"] * 2**20, shared_vocab, bdc["neuron_weight"])}
    t1 = time.perf_counter()
    plans["transport"] = baselines.transport_plan(acts_s, acts_t, tr["matrices"], tr["reg_inner"], tr["reg_outer"],
                                                  tr["iterations"], tr["layer_top_k"], shared_vocab)
    t2 = time.perf_counter()
    plans["naive"] = naive_plan
    if params["matched"]:
        plans["bdc_attn"] = method.restrict(plans["bdc"], tr["matrices"])
        plans["transport_all"] = baselines.transport_plan(acts_s, acts_t, bdc_matrices, tr["reg_inner"],
                                                          tr["reg_outer"], tr["iterations"], tr["layer_top_k"],
                                                          shared_vocab)
    if timing is not None:
        timing["bdc"] = t1 - t0
        timing["transport"] = t2 - t1
        timing["transport_all"] = time.perf_counter() - t2
    return plans


def _load(params, inputs):
    import torch

    from neurips26.core import lm
    from neurips26.data import lm_corpora

    from . import baselines

    src_loc, tgt_loc = _model_location(params, inputs, "source"), _model_location(params, inputs, "target")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    source, s_tok = lm.load_model(src_loc).to(device), lm.load_tokenizer(src_loc)
    target, t_tok = lm.load_model(tgt_loc).to(device), lm.load_tokenizer(tgt_loc)
    shared_vocab = s_tok.get_vocab() == t_tok.get_vocab()
    folder = inputs["corpora"]
    manifest = lm_corpora.read_manifest(folder)["corpora"]
    tasks = params["data"]["tasks"] or sorted(n for n, i in manifest.items() if i["kind"] in ("low", "knowledge"))
    missing = [t for t in tasks + [params["data"]["general_task"]] if t not in manifest]
    if missing:
        raise ValueError(f"config key 'bdc_merge.data.tasks': {missing} not in {folder}/manifest.json")
    naive = params["naive"]
    naive_matrices = [m for m in naive["matrices"] if shared_vocab or m not in ("embed_tokens", "lm_head")]
    naive_plan = baselines.truncation_plan(source, target, naive_matrices)
    return source, s_tok, target, t_tok, shared_vocab, folder, manifest, tasks, naive_plan


def tune(params, inputs, out: Path):
    """Each merge's fusion strength alpha, per task, through the tuning protocol: the tuning seed
    (disjoint from the test seeds) draws a calibration set and a held-out validation text of the
    task that no test seed evaluates (`tuning_text`); the score is the merged model's log
    perplexity on that text, over a log-spaced grid extended while the best sits on an edge
    (alpha = 1, the knob's end, is a natural end, not a cap)."""
    from neurips26.core import tuning
    from neurips26.data import lm_corpora

    from . import method

    started = time.perf_counter()
    tp = params["tune"]
    seed = int(tp["seed"])
    if seed in [int(s) for s in params["seeds"]]:
        raise ValueError(f"config key 'bdc_merge.tune.seed': {seed} is also a test seed {params['seeds']}")
    extensions = tuning.settings(params)["extensions"]
    source, s_tok, target, t_tok, shared_vocab, folder, manifest, tasks, naive_plan = _load(params, inputs)
    evaluated = _evaluated_lines(folder, tasks, manifest, params)
    batch = params["evaluate"]["batch_size"]
    names = [m for m in TUNED if params["matched"] or m not in ("bdc_attn", "transport_all")]
    chosen, records, texts_used = {m: {} for m in names}, [], {}
    for k, t in enumerate(tasks):
        rng = np.random.default_rng([seed, 7, k])
        text = tuning_text(lm_corpora.read_lines(folder, t, "train"), evaluated[t], tp["valid_sentences"],
                           params["calibration"]["size"], rng)
        texts_used[t] = {"valid_sentences": len(text["valid"]), "calibration_sentences": len(text["calibration"])}
        plans = _plans(source, target, s_tok, t_tok, text["calibration"], params, shared_vocab, rng, naive_plan)
        for name in names:
            def evaluate(strength, name=name):
                merged = method.fuse(source, target, plans[name], strength)
                return float(np.log(_scores(merged, t_tok, text["valid"], batch)[0]))

            alpha, recs = search_strength(evaluate, tp["strength_grid"], extensions, name, t, seed,
                                          f"{len(text['valid'])} held-out lines of the task's training text that "
                                          "no test seed evaluates")
            chosen[name][t] = alpha
            records += recs
        print(f"bdc_merge tune: task {k + 1}/{len(tasks)} ({t}) done after {time.perf_counter() - started:.0f} s",
              flush=True)
    io.write_json(out / "tune.json", {"seed": seed, "strength": chosen, "text": texts_used,
                                      "records": [r.to_json() for r in records]})
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started})
    return [out / "tune.json", out / "timing.json"]


def search_strength(evaluate, grid: list[float], extensions: int, name: str, task: str, seed: int, split: str):
    """One merge's strength on one task: the validation log perplexity `evaluate(strength)`
    minimised over the log-spaced `grid`, extended while the best sits on an edge (never past
    alpha = 1, the knob's natural end). Returns (alpha, records)."""
    from neurips26.core import tuning

    point, recs = tuning.search(evaluate, {"strength": grid}, method=name, setting=task,
                                metric="log perplexity on held-out task text", maximize=False, extensions=extensions,
                                bounds={"strength": (None, 1.0)}, natural_ends={"strength": STRENGTH_END}, seed=seed,
                                split=split, progress=lambda line: print(f"tune {line}", flush=True))
    return point["strength"], recs


def tuned_strengths(tune: dict, names: list[str], tasks: list[str]) -> dict[str, dict[str, float]]:
    """The alpha the tune step chose for each merge and task; a missing one is an error naming it."""
    missing = [f"{m}/{t}" for m in names for t in tasks if t not in tune.get("strength", {}).get(m, {})]
    if missing:
        raise ValueError(f"the tune step's tune.json has no strength for {', '.join(missing)}; rerun bdc_merge_tune")
    return {m: {t: float(tune["strength"][m][t]) for t in tasks} for m in names}


def run(params, inputs, out: Path):
    from neurips26.data import lm_corpora

    from . import baselines, method

    import ot  # noqa: F401  (imported before any coupling is timed)

    started = time.perf_counter()
    seed = int(params["seed"])
    ev, cal = params["evaluate"], params["calibration"]
    source, s_tok, target, t_tok, shared_vocab, folder, manifest, tasks, naive_plan = _load(params, inputs)
    eval_rng = np.random.default_rng([seed, 11])  # the evaluation subsets, one draw per seed
    task_data = {t: _task_data(folder, t, manifest[t]["kind"], ev, eval_rng) for t in tasks}
    general = _subset(lm_corpora.read_lines(folder, params["data"]["general_task"], "valid"), ev["valid_sentences"],
                      eval_rng)
    batch = ev["batch_size"]
    merges = [m for m in TUNED if params["matched"] or m not in ("bdc_attn", "transport_all")]
    tuned = tuned_strengths(io.read_json(Path(inputs["tune"]) / "tune.json"), merges, tasks)

    records = []

    def record(name, task, size, strength, res, items=False, is_tuned=False):
        """One evaluation; per-item scores only at the settings the claims compare (the tuned
        strength and the fixed sensitivity strength at the default calibration size)."""
        records.append({"method": name, "task": task, "calibration_size": size, "strength": strength,
                        "tuned": is_tuned,
                        "ppl": res[task]["ppl"], "cloze": res[task]["cloze"], "general_ppl": res["general_ppl"],
                        **({"items": {**res[task]["items"], **res["general_items"]}} if items else {})})

    # the unmerged models: the target's numbers are what strength 0 gives every method
    reference = {"target": _evaluate(target, t_tok, task_data, general, batch, tasks),
                 "source": _evaluate(source, s_tok, task_data, general, batch, tasks)}
    for name, res in reference.items():
        for t in tasks:
            record(name, t, 0, 0.0, res, items=True, is_tuned=True)

    lora = params["lora"]
    sweeps = params.get("sweeps", True)
    sizes = cal["sizes"] if sweeps else [cal["size"]]
    dependence = {}
    timing = {"coupling_seconds": {"bdc": 0.0, "transport": 0.0, "transport_all": 0.0}, "coupling_calls": {}}
    for k, t in enumerate(tasks):
        rng = np.random.default_rng([seed, 7, k])
        pool = task_data[t]["train"]
        order = rng.permutation(len(pool))
        for size in sizes:
            texts = [pool[i] for i in order[:size]]          # nested draws: larger sets extend smaller ones
            default_size = size == cal["size"]
            secs = {}
            plans = _plans(source, target, s_tok, t_tok, texts, {**params, "matched": params["matched"] and default_size},
                           shared_vocab, rng, naive_plan, secs)
            for name in secs:
                if name in plans:
                    timing["coupling_seconds"][name] += secs[name]
                    timing["coupling_calls"][name] = timing["coupling_calls"].get(name, 0) + 1
            if default_size:
                dependence[t] = {"bdc_layer_dcor2_u": plans["bdc"].layer_dependence.tolist(),
                                 "bdc_layer_weights": plans["bdc"].layer_weights.tolist(),
                                 "transport_layer_weights": plans["transport"].layer_weights.tolist()}
            # the strength sweep (bdc, transport, naive) and, at the default size, every merge at
            # its tuned strength; one evaluation serves both when the tuned strength is in the sweep
            sweep = params["strengths"] if default_size and sweeps else [params["strength"]]
            for name in (merges if default_size else ["bdc", "transport"]):
                alphas = list(sweep) if name in ("bdc", "transport", "naive") else []
                if default_size and tuned[name][t] not in alphas:
                    alphas.append(tuned[name][t])
                for alpha in alphas:
                    is_tuned = default_size and alpha == tuned[name][t]
                    items = default_size and (is_tuned or alpha == params["strength"])
                    if alpha == 0:  # fuse(..., 0) is the target itself (tested), so reuse its numbers
                        record(name, t, size, alpha, reference["target"], items, is_tuned)
                        continue
                    merged = method.fuse(source, target, plans[name], alpha)
                    record(name, t, size, alpha, _evaluate(merged, t_tok, task_data, general, batch, [t]), items,
                           is_tuned)
                    if is_tuned and name in ("bdc", "transport"):
                        tracking.active().log_metrics({f"{t}_{name}_cloze": records[-1]["cloze"]})
            if default_size and lora["steps"] > 0:
                # LoRA after Transport and Merge at its tuned strength
                alpha = tuned["transport"][t]
                merged = method.fuse(source, target, plans["transport"], alpha)
                work = out / "lora_work" / t
                adapted = baselines.lora_adapt(merged, t_tok, texts, work, {**params, "lora_task": t}, lora["rank"],
                                               lora["alpha"], lora["steps"], lora["lr"], lora["batch_size"], seed)
                shutil.rmtree(work, ignore_errors=True)
                record("transport_lora", t, size, alpha,
                       _evaluate(adapted, t_tok, task_data, general, batch, [t]), items=True, is_tuned=True)
        print(f"bdc_merge seed {seed}: task {k + 1}/{len(tasks)} ({t}) done after "
              f"{time.perf_counter() - started:.0f} s", flush=True)
    shutil.rmtree(out / "lora_work", ignore_errors=True)
    metrics = {"seed": seed, "tasks": {t: task_data[t]["kind"] for t in tasks}, "records": records,
               "tuned_strength": tuned,
               "cloze_chance": {t: cloze_chance(task_data[t]["cloze"]) for t in tasks},
               "shared_vocabulary": shared_vocab, "layer_coupling": dependence,
               "general_task": params["data"]["general_task"]}
    io.write_json(out / "metrics.json", metrics)
    io.write_json(out / "timing.json", {"seconds": time.perf_counter() - started,
                                        "coupling_seconds": {m: round(v, 3) for m, v in timing["coupling_seconds"].items()},
                                        "coupling_calls": timing["coupling_calls"]})
    return [out / "metrics.json", out / "timing.json"]


def cross_source(params, inputs, out: Path):
    """A source with its own tokenizer: a second BPE tokenizer (another vocabulary size, so other
    merges, another vocabulary and another segmentation of the same words) trained on the corpora,
    and the source model (the shared source's spec, `cross_tokenizer.train` overriding its training)
    pretrained with it through the shared pretraining step. Merging it into the target exercises
    the cross-tokenizer path: activations paired by words, vocabulary matrices not fused."""
    from neurips26.core import lm
    from neurips26.papers.lm_assets import steps as lm_assets
    from neurips26.data import lm_corpora

    ct = params["cross_tokenizer"]
    folder = inputs["corpora"]
    manifest = lm_corpora.read_manifest(folder)
    texts = [line for name in sorted(manifest["corpora"]) for line in lm_corpora.read_lines(folder, name, "train")]
    tok = lm.train_tokenizer(texts, ct["vocab_size"], out / "tokenizer", ct["min_frequency"])
    shared = lm.load_tokenizer(inputs["shared_tokenizer"])
    sample = texts[:200]
    differ = sum(tok(t)["input_ids"] != shared(t)["input_ids"] for t in sample)
    spec = dict(params["source_spec"])
    spec["train"] = {**spec["train"], **(ct.get("train") or {})}
    lm_assets.pretrain({"paper": "bdc_merge", "scale": params["scale"], "model": "source_cross",
                        "models": {"source_cross": spec}}, {"corpora": folder, "tokenizer": out / "tokenizer"}, out)
    io.write_json(out / "cross_tokenizer.json", {
        "vocab_size": len(tok), "shared_vocab_size": len(shared),
        "shared_tokens": len(set(tok.get_vocab()) & set(shared.get_vocab())),
        "sentences_segmented_differently": f"{differ} of {len(sample)}",
        "tokens_per_word": significant(sum(len(tok(t)["input_ids"]) - 1 for t in sample) / act_words(sample), 4),
        "shared_tokens_per_word": significant(sum(len(shared(t)["input_ids"]) - 1 for t in sample) / act_words(sample), 4)})
    return [out / "model" / "model.safetensors", out / "cross_tokenizer.json"]


def act_words(texts: list[str]) -> int:
    return max(1, sum(len(t.split()) for t in texts))


# ---- figures -----------------------------------------------------------------------------------

def _select(runs, **where):
    return [[r for r in run["records"] if all(r.get(k) == v for k, v in where.items())] for run in runs]


def _value(runs, metric, tasks, **where):
    """Per seed: mean over `tasks` of the metric for records matching `where`."""
    out = []
    for recs in _select(runs, **where):
        vals = [r[metric] for r in recs if r["task"] in tasks]
        out.append(float(np.mean(vals)) if vals else float("nan"))
    return out


def _setting(method: str, p: dict, reading: str = "tuned") -> dict:
    """The records a reading compares: each merge at its tuned strength (per task), or every merge
    at the strength fixed in advance (`strength`, the sensitivity reading)."""
    if method in ("target", "source"):
        return {"method": method}
    if reading == "tuned":
        return {"method": method, "calibration_size": p["calibration"]["size"], "tuned": True}
    return {"method": method, "calibration_size": p["calibration"]["size"], "strength": p["strength"]}


def _group_items(records: list[dict], key: str, tokens: str | None) -> list[float] | None:
    """Per-item scores of one seed over the tasks of a group, weighted so that their mean is the
    mean over tasks of the task's value: cloze correctness (tokens None), or a sentence's negative
    log-likelihood over the task's tokens (mean: the mean over tasks of log perplexity)."""
    if not records or any("items" not in r for r in records):
        return None
    total = sum(len(r["items"][key]) for r in records)
    out = []
    for r in records:
        vals = r["items"][key]
        per = total / (len(records) * (sum(r["items"][tokens]) if tokens else len(vals)))
        out += [x * per for x in vals]
    return out


def claims_summary(runs: list[dict], params: dict, tune: dict | None = None) -> dict:
    """Per method and seed at the default setting (each merge at its tuned strength): cloze
    accuracy and log perplexity averaged over each group of tasks (low-resource, knowledge),
    general log perplexity averaged over all tasks, and the per-item scores behind each (None for
    runs that did not save them); under "fixed", the same at the strength fixed in advance for
    the merges measured there (the sensitivity reading), and under "capped" each merge's capped
    tuning notes per group (from the tune step's records)."""
    kinds = runs[0]["tasks"]
    groups = {"low": [t for t in kinds if kinds[t] == "low"], "knowledge": [t for t in kinds if kinds[t] == "knowledge"]}
    out = {"methods": _method_entries(runs, params, groups, "tuned"),
           "fixed": _method_entries(runs, params, groups, "fixed"), "groups": groups,
           "general_tolerance": params["general_tolerance"], "strength": params["strength"]}
    # chance per seed and group: the mean over the group's tasks of the drawn questions' guess rate
    out["cloze_chance"] = {g: [float(np.mean([r["cloze_chance"][t] for t in tasks])) if "cloze_chance" in r else None
                               for r in runs] for g, tasks in groups.items()}
    out["holds_fixed"] = "the source and target models (one pretrained pair: n_pairs = 1)"
    from neurips26.core import tuning

    recs = [tuning.Record.from_json(r) for r in (tune or {}).get("records", [])]
    out["capped"] = {m: {g: "; ".join(x for x in (tuning.capped_note(recs, m, t) for t in tasks) if x)
                         for g, tasks in groups.items()} for m in TUNED}
    out["capped"]["transport_lora"] = out["capped"]["transport"]
    return out


def _method_entries(runs: list[dict], params: dict, groups: dict, reading: str) -> dict:
    methods = {}
    present = {r["method"] for r in runs[0]["records"]}
    names = ("target", "source", "naive", "transport", "transport_lora", "bdc", "bdc_attn", "transport_all")
    if reading == "fixed":  # the strength sweep's merges
        names = ("target", "source", "naive", "transport", "bdc")
    for m in [m for m in names if m in present]:
        seeds = _select(runs, **_setting(m, params, reading))
        if any(not recs for recs in seeds):
            continue  # not measured under this reading
        entry = {"cloze": {}, "log_ppl": {}, "cloze_items": {}, "nll_items": {}}
        for g, tasks in groups.items():
            picked = [[r for r in recs if r["task"] in tasks] for recs in seeds]
            entry["cloze"][g] = [float(np.mean([r["cloze"] for r in p])) for p in picked]
            entry["log_ppl"][g] = [float(np.mean([np.log(r["ppl"]) for r in p])) for p in picked]
            for key, field, tokens in (("cloze_items", "cloze", None), ("nll_items", "nll", "tokens")):
                items = [_group_items(p, field, tokens) for p in picked]
                entry[key][g] = None if any(i is None for i in items) else items
        entry["general_log_ppl"] = [float(np.mean([np.log(r["general_ppl"]) for r in recs])) for recs in seeds]
        items = [_group_items(recs, "general_nll", "general_tokens") for recs in seeds]
        entry["general_items"] = None if any(i is None for i in items) else items
        methods[m] = entry
    return methods


def figures(params, inputs, out: Path):
    runs = [io.read_json(path) for path in sorted(Path(inputs["runs"]).glob("seed*/metrics.json"))]
    if not runs:
        raise FileNotFoundError(f"no seed*/metrics.json under {inputs['runs']}")
    kinds = runs[0]["tasks"]
    tasks = list(kinds)
    low = [t for t in tasks if kinds[t] == "low"]
    know = [t for t in tasks if kinds[t] == "knowledge"]
    present = {r["method"] for r in runs[0]["records"]}
    methods = [m for m in METHOD_LABELS if m in present]
    fig_dir = out / "figures"
    n = len(runs)
    tune = io.read_json(Path(inputs["tune"]) / "tune.json")

    # 1. per task, cloze accuracy and perplexity of every method at the default setting
    fig, axes = plotting.figure(ncols=2, width=6.4, height=4.0)
    x = np.arange(len(tasks))
    width = 0.8 / len(methods)
    for k, m in enumerate(methods):
        for ax, metric in zip(axes[0], ("cloze", "ppl")):
            vals = np.array([[v for v in _value(runs, metric, [t], **_setting(m, params))] for t in tasks])
            ax.bar(x + (k - len(methods) / 2 + 0.5) * width, vals.mean(1), width, yerr=vals.std(1, ddof=1) if n > 1 else None,
                   label=METHOD_LABELS[m], capsize=2)
    axes[0][0].set(title=f"Cloze accuracy per task, each merge at its tuned alpha (mean ± sd, {n} seeds)",
                   ylabel="accuracy (fraction, 4 choices)")
    axes[0][0].axhline(0.25, color="grey", lw=0.8, ls=":")
    axes[0][1].set(title="Task perplexity (lower is better)", ylabel="perplexity (per token)", yscale="log")
    for ax in axes[0]:
        ax.set_xticks(x, tasks, rotation=30, ha="right", fontsize=7)
        ax.set_xlabel("task (4 low-resource languages, 2 knowledge sets)")
    axes[0][0].legend(fontsize=6)
    plotting.save(fig, fig_dir / "tasks.png")

    # 2. fusion strength: low-resource cloze, knowledge cloze and general perplexity
    strengths = params["strengths"]
    size = params["calibration"]["size"]
    fig, axes = plotting.figure(ncols=3, width=4.2, height=3.6)
    panels = [("cloze", low, "low-resource cloze accuracy", "accuracy (fraction)"),
              ("cloze", know, "knowledge cloze accuracy", "accuracy (fraction)"),
              ("general_ppl", tasks, "general ability: high-resource perplexity", "perplexity (per token)")]
    for ax, (metric, group, title, ylabel) in zip(axes[0], panels):
        for m in ("bdc", "transport", "naive"):
            curve = np.array([_value(runs, metric, group, method=m, calibration_size=size, strength=a)
                              for a in strengths]).T
            plotting.mean_band(ax, strengths, curve, METHOD_LABELS[m])
        ax.axhline(np.mean(_value(runs, metric, group, method="source")), color="black", ls="--", lw=0.8,
                   label="source alone")
        ax.set(title=title, xlabel="fusion strength alpha (0 = target)", ylabel=ylabel)
    axes[0][2].set_yscale("log")
    axes[0][0].legend(fontsize=7)
    plotting.save(fig, fig_dir / "strength.png")

    # 3. calibration-set size at the default strength
    sizes = params["calibration"]["sizes"]
    fig, axes = plotting.figure(ncols=2, width=4.6, height=3.6)
    for ax, (metric, group, title, ylabel) in zip(axes[0], [panels[0], panels[1]]):
        for m in ("bdc", "transport"):
            curve = np.array([_value(runs, metric, group, method=m, calibration_size=s, strength=params["strength"])
                              for s in sizes]).T
            plotting.mean_band(ax, sizes, curve, METHOD_LABELS[m])
        ax.axhline(np.mean(_value(runs, metric, group, method="target")), color="grey", ls=":", lw=0.8,
                   label="target alone")
        ax.set(title=title, xlabel="calibration set size (sentences)", ylabel=ylabel, xscale="log")
    axes[0][0].legend(fontsize=7)
    plotting.save(fig, fig_dir / "calibration_size.png")

    # summary table: every method at its default setting, per task
    rows = []
    for m in methods:
        for t in tasks + ["low-resource mean", "knowledge mean"]:
            group = low if t == "low-resource mean" else know if t == "knowledge mean" else [t]
            rows.append({"method": METHOD_LABELS[m], "task": t,
                         "cloze": claims.fmt(_value(runs, "cloze", group, **_setting(m, params))),
                         "ppl": claims.fmt(_value(runs, "ppl", group, **_setting(m, params))),
                         "general_ppl": claims.fmt(_value(runs, "general_ppl", group, **_setting(m, params)))})
    written = claims.write_tables(out, rows, claim_rows(claims_summary(runs, params, tune), params["scale"]), fig_dir)
    from neurips26.core import tuning

    tuning.write_csv(out / "tuning.csv", "bdc_merge", tuning_records(params, methods, tune))
    written.append(out / "tuning.csv")
    timings = [io.read_json(p) for p in sorted(Path(inputs["runs"]).glob("seed*/timing.json"))]
    cross = sorted(Path(inputs["cross"]).glob("seed*/metrics.json")) if inputs.get("cross") else []
    if cross:
        cross_runs = [io.read_json(path) for path in cross]
        io.write_csv(out / "cross_tokenizer.csv", cross_table(cross_runs, params), CROSS_FIELDS)
        written.append(out / "cross_tokenizer.csv")
        timings += [{**io.read_json(p), "pair": "own-tokenizer source"}
                    for p in sorted(Path(inputs["cross"]).glob("seed*/timing.json"))]
    if timings:
        io.write_csv(out / "coupling_cost.csv", coupling_cost(timings), COST_FIELDS)
        written.append(out / "coupling_cost.csv")
    return written


MERGES = ("naive", "transport", "transport_lora", "bdc", "bdc_attn", "transport_all")


def tuning_records(params: dict, methods: list[str], tune: dict | None = None) -> list:
    """Every knob of every merge as the tuning protocol records it: the fusion strength tuned per
    merge and task by the tune step (its records; Transport and Merge + LoRA fuses at Transport
    and Merge's), the calibration size and each method's own knobs fixed in advance at their
    papers' or public code's values."""
    from neurips26.core import tuning

    merges = [m for m in methods if m in MERGES]
    setting = "every task"
    size_why = "the same calibration set for every merge (fixed in advance; the size sweep is a figure, not a selection)"
    records = [tuning.Record.from_json(r) for r in (tune or {}).get("records", []) if r["method"] in merges]
    if "transport_lora" in merges:
        records.append(tuning.fixed("transport_lora", "strength", "Transport and Merge's tuned strength",
                                    "LoRA adapts Transport and Merge fused at the strength tuned for it, per task",
                                    setting=setting))
    for m in merges:
        records.append(tuning.fixed(m, "calibration_size", params["calibration"]["size"], size_why, setting=setting))
    tr, bdc, lora = params.get("transport", {}), params.get("bdc", {}), params.get("lora", {})
    for m in ("transport", "transport_lora", "transport_all"):
        if m in merges:
            for knob in ("reg_inner", "reg_outer", "iterations"):
                if knob in tr:
                    records.append(tuning.fixed(m, knob, tr[knob], "Transport and Merge's Sinkhorn settings, fixed "
                                                "in advance (never tuned on the tasks)", setting=setting))
    for m in ("bdc", "bdc_attn"):
        if m in merges:
            for knob in ("layer_top_k", "neuron_top_k"):
                if knob in bdc:
                    records.append(tuning.fixed(m, knob, bdc[knob], "BDC-Merge's top-k coupling, fixed in advance "
                                                "(never tuned on the tasks)", setting=setting))
    if "transport_lora" in merges:
        for knob in ("rank", "alpha", "steps", "lr"):
            if knob in lora:
                records.append(tuning.fixed("transport_lora", knob, lora[knob], "one LoRA recipe after fusion, fixed "
                                            "in advance (the default run affords no learning-rate grid for it)",
                                            setting=setting))
    return records


COUPLING_MATRICES = {"bdc": "BDC-Merge, its matrices (bdc.matrices)", "transport": "Transport and Merge, transport.matrices",
                     "transport_all": "Transport and Merge, bdc.matrices"}
COST_FIELDS = ["pair", "method", "plans", "seconds_per_plan", "seconds_per_plan_sd"]


def coupling_cost(timings: list[dict]) -> list[dict]:
    """Wall-clock seconds per coupling (one plan from one calibration set), mean and sd over the
    seeds: BDC-Merge's closed-form dependencies against Transport and Merge's iterative Sinkhorn.
    Timings, not results: they vary with the machine's load and never enter metrics.json."""
    rows = []
    for pair in sorted({t.get("pair", "shared-tokenizer source") for t in timings}):
        ts = [t for t in timings if t.get("pair", "shared-tokenizer source") == pair]
        for m, label in COUPLING_MATRICES.items():
            per = [t["coupling_seconds"][m] / t["coupling_calls"][m] for t in ts
                   if t.get("coupling_calls", {}).get(m)]
            if per:
                rows.append({"pair": pair, "method": label, "plans": sum(t["coupling_calls"][m] for t in ts),
                             "seconds_per_plan": round(float(np.mean(per)), 3),
                             "seconds_per_plan_sd": round(float(np.std(per, ddof=1)), 3) if len(per) > 1 else ""})
    return rows


CROSS_FIELDS = ["method", "baseline", "group", "measure", "method_value", "baseline_value", "difference", "interval"]


def cross_table(runs: list[dict], params: dict) -> list[dict]:
    """Merging a source with its own tokenizer: every method's group means at the default setting
    and, against each baseline, the difference with a paired bootstrap interval over the seeds x
    items (positive = the method better)."""
    summary = claims_summary(runs, params)
    ms = summary["methods"]
    pairs = [("bdc", "target"), ("bdc", "transport"), ("bdc_attn", "transport"), ("bdc", "transport_all"),
             ("bdc", "transport_lora"), ("transport", "target")]
    rows = []
    for method, base in [p for p in pairs if p[0] in ms and p[1] in ms]:
        for g in [g for g, tasks in summary["groups"].items() if tasks]:
            for measure, values, items, sign in (("cloze accuracy", "cloze", "cloze_items", 1.0),
                                                 ("log perplexity (nats per token)", "log_ppl", "nll_items", -1.0)):
                mv, bv = float(np.mean(ms[method][values][g])), float(np.mean(ms[base][values][g]))
                mi, bi = ms[method][items][g], ms[base][items][g]
                d, lo, hi = claims.paired_bootstrap_interval(mi, bi) if mi and bi else (mv - bv, float("nan"), float("nan"))
                lo, hi = sorted((sign * lo, sign * hi))
                rows.append({"method": METHOD_LABELS[method], "baseline": METHOD_LABELS[base], "group": g,
                             "measure": measure, "method_value": significant(mv, 4), "baseline_value": significant(bv, 4),
                             "difference": significant(sign * d, 4), "interval": f"[{significant(lo, 3)}, {significant(hi, 3)}]"})
    gm = {m: float(np.exp(np.mean(ms[m]["general_log_ppl"]))) for m in ms}
    for m, v in gm.items():
        rows.append({"method": METHOD_LABELS[m], "baseline": "", "group": "general (high-resource)",
                     "measure": "perplexity", "method_value": significant(v, 4), "baseline_value": "", "difference": "",
                     "interval": ""})
    return rows
