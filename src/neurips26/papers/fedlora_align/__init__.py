"""ALIGN: subspace alignment for federated LoRA (fedlora_align)."""

TITLE = "ALIGN: subspace alignment for federated LoRA"
STEPS = ("data", "tune", "train", "figures")

METHODS = ("fedit", "ffa_lora", "flora", "fedex_lora", "fedsa_lora", "ideal", "align", "align_no_drift")
TASKS = ("topic", "topic_sentiment", "intent", "data_to_text")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    for name in block.get("run_variants", []):
        if name not in block.get("variants", {}):
            problems.append(f"run_variants: '{name}' is not defined under fedlora_align.variants")
    for name, v in block.get("variants", {}).items():
        if v.get("task") not in TASKS:
            problems.append(f"variants.{name}.task: unknown task '{v.get('task')}'; known: {', '.join(TASKS)}")
        for m in v.get("methods", []):
            if m not in METHODS:
                problems.append(f"variants.{name}.methods: unknown method '{m}'; known: {', '.join(METHODS)}")
    for m in block.get("methods", []):
        if m not in METHODS:
            problems.append(f"methods: unknown method '{m}'; known: {', '.join(METHODS)}")
    fed, data = block.get("federation", {}), block.get("data", {})
    if fed and data and fed.get("clients", 1) * fed.get("min_client_size", 1) > data.get("n_train", 0):
        problems.append("federation.clients: clients x min_client_size exceeds data.n_train")
    tune = block.get("tune", {})
    if tune and tune.get("seed") in block.get("seeds", []):
        problems.append(f"tune.seed: {tune['seed']} is one of the test seeds; the tuning seed must be disjoint from them")
    for a in fed.get("report_alphas", []):
        if a not in fed.get("alphas", []):
            problems.append(f"federation.report_alphas: {a} is not one of federation.alphas")
    return problems
