"""Attribute-efficient PAC learning of sparse halfspaces under malicious noise (sparse_halfspace)."""

TITLE = "Attribute-efficient learning of sparse halfspaces under malicious noise"
STEPS = ("train", "evaluate", "figures")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    p = block.get("problem", {})
    s = p.get("sparsity", 1)
    dims = list(p.get("dims", [])) + [block.get("noise_sweep", {}).get("d", 2 * s)]
    if dims and min(dims) < 2 * s:
        problems.append(f"problem.dims: every d (and noise_sweep.d) must be at least 2 * sparsity = {2 * s} "
                        f"(the decoy needs a disjoint support), got {min(dims)}")
    c = block.get("complexity", {})
    if c.get("dims") and c.get("sparsities") and min(c["dims"]) < 2 * max(c["sparsities"]):
        problems.append(f"complexity.dims: every d must be at least 2 * max(complexity.sparsities) = "
                        f"{2 * max(c['sparsities'])} (the decoy needs a disjoint support)")
    if c.get("n_low") is not None and c.get("n_high") is not None and c["n_low"] >= c["n_high"]:
        problems.append(f"complexity.n_low: must be below n_high, got {c['n_low']} >= {c['n_high']}")
    if p.get("dims") and sorted(p["dims"]) != list(p["dims"]):
        problems.append(f"problem.dims: must increase, got {p['dims']}")
    if p.get("sample_sizes") and sorted(p["sample_sizes"]) != list(p["sample_sizes"]):
        problems.append(f"problem.sample_sizes: must increase, got {p['sample_sizes']}")
    return problems
