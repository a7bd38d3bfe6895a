"""Anchor PCA: robust PCA across domains (anchor_pca)."""

TITLE = "Anchor PCA: robust PCA across domains"
STEPS = ("evaluate", "figures")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    gammas = block.get("gammas", [])
    if 0 not in gammas and 0.0 not in gammas:
        problems.append("gammas: must include 0 (pooled PCA, the anchor of the trade-off)")
    if "simulated" not in block.get("run_variants", ["simulated"]):
        problems.append("run_variants: must include 'simulated' (the planted-subspace experiment)")
    if "gas_sensor" in block.get("run_variants", []) and not block.get("data", {}).get("gas_dir"):
        problems.append("data.gas_dir: must name the folder of batch*.dat files when gas_sensor runs")
    for name in block.get("run_variants", []):
        if name not in block.get("variants", {}):
            problems.append(f"run_variants: '{name}' is not defined under anchor_pca.variants")
    needed = {"simulated": ("p", "invariant_variances", "spurious_pool", "inflated_per_domain", "inflation",
                            "train_domains", "test_domains", "samples_per_domain"),
              "wine": ("subsample",), "digits": ("train_classes", "subsample"), "gas_sensor": ("train_batches", "test_batches")}
    for name, v in block.get("variants", {}).items():
        missing = [key for key in needed.get(v.get("kind"), ()) if key not in v]
        if missing:
            problems.append(f"variants.{name}: kind {v.get('kind')} needs {', '.join(missing)}")
            continue
        k = v.get("k", 1)
        if v.get("kind") == "simulated":
            if len(v.get("invariant_variances", [])) != k:
                problems.append(f"variants.{name}.invariant_variances: need k = {k} values")
            if k + v.get("spurious_pool", 0) > v.get("p", 0):
                problems.append(f"variants.{name}.p: must be at least k + spurious_pool")
            if v.get("inflated_per_domain", 0) > v.get("spurious_pool", 0):
                problems.append(f"variants.{name}.inflated_per_domain: at most spurious_pool")
            low, high = (v.get("inflation") or [0, 0])[:2]
            if low > high:
                problems.append(f"variants.{name}.inflation: [low, high] with low <= high, got {v.get('inflation')}")
        if v.get("kind") == "wine" and k >= 13:
            problems.append(f"variants.{name}.k: wine has 13 features, k must be below that")
        if v.get("kind") == "simulated" and v.get("train_domains", 3) < 3:
            problems.append(f"variants.{name}.train_domains: at least 3, so that held-out-domain validation "
                            "of gamma fits on two or more domains")
        if v.get("kind") == "digits" and not 3 <= v.get("train_classes", 3) <= 9:
            problems.append(f"variants.{name}.train_classes: between 3 and 9 (the others are unseen)")
        if v.get("kind") == "gas_sensor":
            if not v.get("train_batches") or not v.get("test_batches"):
                problems.append(f"variants.{name}: train_batches and test_batches must be non-empty")
            elif set(v["train_batches"]) & set(v["test_batches"]):
                problems.append(f"variants.{name}: train_batches and test_batches overlap")
    return problems
