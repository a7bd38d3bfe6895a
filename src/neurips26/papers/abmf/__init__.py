"""Exact penalty for asymmetric Burer-Monteiro factorisation (abmf)."""

TITLE = "Exact penalty for asymmetric Burer-Monteiro factorisation"
STEPS = ("evaluate", "figures")
PROBLEMS = ("psd_approximation", "matrix_sensing", "maxcut")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    ratios = block.get("gamma_ratios", [])
    if not any(r < 1 for r in ratios) or not any(r > 1 for r in ratios):
        problems.append(f"gamma_ratios: need ratios on both sides of 1 (the threshold), got {ratios}")
    for name in block.get("run_variants", []):
        if name not in block.get("variants", {}):
            problems.append(f"run_variants: '{name}' is not defined under abmf.variants")
    needed = {"psd_approximation": ("rank", "negative"),
              "matrix_sensing": ("planted_rank", "factor_rank", "measurements", "negative", "noise"),
              "maxcut": ("rank", "edge_prob", "penalty")}
    for name, v in block.get("variants", {}).items():
        missing = [key for key in needed.get(v.get("kind"), ()) if key not in v]
        if missing:
            problems.append(f"variants.{name}: kind {v.get('kind')} needs {', '.join(missing)}")
            continue
        n = v.get("n", 0)
        rank = v.get("factor_rank", v.get("rank", 0))
        if not 0 < rank <= n:
            problems.append(f"variants.{name}: the factor rank must be in 1..n, got {rank} with n {n}")
        if v.get("kind") == "psd_approximation" and v.get("rank", 0) >= n - 1:
            problems.append(f"variants.{name}.rank: must be below n - 1 so M keeps a negative eigenvalue")
        if v.get("kind") == "matrix_sensing" and v.get("planted_rank", 0) >= n:
            problems.append(f"variants.{name}.planted_rank: must be below n")
    return problems
