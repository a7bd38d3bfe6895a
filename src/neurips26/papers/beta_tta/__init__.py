"""BETA: black-box efficient test-time adaptation (beta_tta)."""

TITLE = "BETA: black-box efficient test-time adaptation"
STEPS = ("train", "tune", "adapt", "figures")

_BASE_METHODS = ("source", "lame", "tent", "tpt", "zoo", "beta")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    from .corruptions import CORRUPTIONS

    problems = []
    for name in block.get("run_variants", []):
        if name not in block.get("variants", {}):
            problems.append(f"run_variants: '{name}' is not defined under beta_tta.variants")
    ablations = block.get("beta_ablations", {})
    for m in block.get("methods", []):
        if m in _BASE_METHODS:
            continue
        if not (m.startswith("beta_") and m[len("beta_"):] in ablations):
            problems.append(f"methods: unknown method '{m}' (known: {', '.join(_BASE_METHODS)}, beta_<ablation>)")
    for name, ab in ablations.items():
        unknown = [k for k in ab if k not in block.get("beta", {})]
        if unknown:
            problems.append(f"beta_ablations.{name}: unknown beta settings {unknown}")
    for c in block.get("shift", {}).get("corruptions", []):
        if c not in CORRUPTIONS:
            problems.append(f"shift.corruptions: unknown corruption '{c}'")
    tune_seed = block.get("tune", {}).get("seed")
    if tune_seed is not None and tune_seed in block.get("seeds", []):
        problems.append(f"tune.seed: {tune_seed} is one of the test seeds; the tuning seed must be disjoint from them")
    for q in block.get("zoo", {}).get("budgets", []):
        if q < 1:
            problems.append(f"zoo.budgets: a budget must be at least 1 query per image, got {q}")
    for name, v in block.get("variants", {}).items():
        d = v.get("data", {})
        for net in ("source", "steering"):
            arch = v.get(net, {})
            if arch and d.get("image_size", 0) % max(1, arch.get("patch", 1)):
                problems.append(f"variants.{name}.{net}.patch: image_size {d.get('image_size')} is not divisible by "
                                f"patch {arch.get('patch')}")
            if arch and arch.get("dim", 0) % max(1, arch.get("heads", 1)):
                problems.append(f"variants.{name}.{net}.dim: {arch.get('dim')} is not divisible by heads {arch.get('heads')}")
    return problems
