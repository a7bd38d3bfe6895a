"""FedAbA: basis-consistent federated LoRA with heterogeneous ranks (fedaba)."""

TITLE = "FedAbA: basis-consistent federated LoRA with heterogeneous ranks"
STEPS = ("tune", "train", "figures")

_OURS = ("fedaba", "fedaba_svd", "fedaba_proj", "cafd", "hetlora", "flexlora")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    for name in block.get("run_variants", []):
        if name not in block.get("variants", {}):
            problems.append(f"run_variants: '{name}' is not defined under fedaba.variants")
    alpha = float(block.get("claims", {}).get("alpha", 0.1))
    for name in block.get("run_variants", []):
        v = block.get("variants", {}).get(name, {})
        alphas = [float(a) for a in v.get("alphas", block.get("alphas", [0.1]))]
        if alpha not in alphas:
            problems.append(f"claims.alpha: {alpha} is not among the alphas of variant '{name}' ({alphas})")
    for name, v in block.get("variants", {}).items():
        for agg in v.get("aggregators", []):
            if agg not in _OURS + ("zero_padding", "flora", "fedit", "ideal"):
                problems.append(f"variants.{name}.aggregators: unknown '{agg}'")
    tune = block.get("tune", {})
    if tune and tune.get("seed") in block.get("seeds", []):
        problems.append(f"tune.seed: {tune['seed']} is one of the test seeds; the tuning seed must be disjoint from them")
    aggs = block.get("aggregators", [])
    if "fedaba" not in aggs:
        problems.append("aggregators: must include fedaba (the claims compare it)")
    for name in aggs:
        if name not in _OURS + ("zero_padding", "flora", "fedit", "ideal"):
            problems.append(f"aggregators: unknown '{name}'; known: {', '.join(_OURS)}, zero_padding, flora, fedit, ideal")
    return problems
