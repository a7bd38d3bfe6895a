"""Model merging in a low-rank model embedding space (embed_merge)."""

TITLE = "Model merging in a low-rank model embedding space"
STEPS = ("pretrain", "tune_lr", "train", "merge", "figures")

_KNOWN_METHODS = ("weight_averaging", "task_arithmetic", "ties", "dare", "tsv_merge", "iso_c",
                  "embed_mean", "embed_aligned", "embed_mean_posthoc", "embed_aligned_posthoc",
                  "random_subspace_mean", "lora_mean")
_CONTROLS = {"random_subspace_mean": "random_subspace", "lora_mean": "lora"}  # merge -> the fine-tunes it needs
_IN_SPACE = ("embed_mean", "embed_aligned")  # merge models fine-tuned inside the pre-trained space


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    for name in block.get("run_variants", []):
        if name not in block.get("variants", {}):
            problems.append(f"run_variants: '{name}' is not defined under embed_merge.variants")
    for name, v in block.get("variants", {}).items():
        counts, task_list = v.get("task_counts", []), v.get("tasks", [])
        if counts and (max(counts) > len(task_list) or min(counts) < 1):
            problems.append(f"variants.{name}.task_counts: each must be in 1..{len(task_list)} (the tasks listed)")
        if counts != sorted(counts):
            problems.append(f"variants.{name}.task_counts: must increase, got {counts}")
        if v.get("kind") in ("vision", "language") and "subspace_finetune" not in v:
            problems.append(f"variants.{name}.subspace_finetune: missing (the fine-tuning inside the pre-trained "
                            f"space that {', '.join(_IN_SPACE)} merge)")
        if v.get("kind") in ("vision", "language") and "finetune" not in v:
            problems.append(f"variants.{name}.finetune: missing")
        if v.get("kind") == "clip" and name in block.get("run_variants", []):
            used = [m for m in block.get("merge", {}).get("methods", _KNOWN_METHODS) if m in _IN_SPACE]
            if used:
                problems.append(f"merge.methods: {', '.join(used)} merge models fine-tuned inside the pre-trained space, "
                                f"which the clip variant '{name}' does not have (use the *_posthoc ablations)")
        lt = v.get("lr_tuning")
        if lt:
            for m in lt.get("modes", []):
                if m not in ("subspace", *v.get("controls", [])):
                    problems.append(f"variants.{name}.lr_tuning.modes: '{m}' is neither 'subspace' nor one of controls")
                if m not in lt.get("grids", {}):
                    problems.append(f"variants.{name}.lr_tuning.grids: no grid for '{m}'")
            if lt.get("seed") in block.get("seeds", []):
                problems.append(f"variants.{name}.lr_tuning.seed: {lt.get('seed')} is one of the test seeds")
        if v.get("kind") == "vision":
            if "pretrain" not in v:
                problems.append(f"variants.{name}.pretrain: missing")
            m, d = v.get("model", {}), v.get("data", {})
            if d.get("image_size", 0) % max(1, m.get("patch", 1)):
                problems.append(f"variants.{name}.model.patch: image_size {d.get('image_size')} is not divisible "
                                f"by patch {m.get('patch')}")
            if m.get("dim", 0) % max(1, m.get("heads", 1)):
                problems.append(f"variants.{name}.model.dim: {m.get('dim')} is not divisible by heads {m.get('heads')}")
    merge = block.get("merge", {})
    trained = {c for n in block.get("run_variants", []) for c in block.get("variants", {}).get(n, {}).get("controls", [])}
    for m, mode in _CONTROLS.items():  # a domain without the control's fine-tunes skips its merge
        if m in merge.get("methods", []) and block.get("run_variants") and mode not in trained:
            problems.append(f"merge.methods: {m} merges the '{mode}' fine-tunes, which no domain of run_variants "
                            f"lists under controls")
    for m in merge.get("methods", []):
        if m not in _KNOWN_METHODS:
            problems.append(f"merge.methods: unknown method '{m}'; known: {', '.join(_KNOWN_METHODS)}")
    for m in merge.get("scales", {}):
        if m not in _KNOWN_METHODS:
            problems.append(f"merge.scales: unknown method '{m}'")
    return problems
