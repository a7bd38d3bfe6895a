"""acopula: nested Archimedean copulas with censoring and exact gradients (PyTorch)."""

TITLE = "acopula: nested Archimedean copulas with censoring and exact gradients"
STEPS = ("speed", "simulate", "stocks", "survival", "figures")

_FAMILIES = ("clayton", "gumbel", "frank", "joe", "amh", "nelsen12", "nelsen13", "nelsen14", "nelsen19", "nelsen20")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    sim = block.get("simulate", {})
    if len(sim.get("group_sizes", [])) != len(sim.get("group_thetas", [])):
        problems.append("simulate.group_thetas: one theta per entry of simulate.group_sizes")
    if any(t < sim.get("root_theta", 0) for t in sim.get("group_thetas", [])):
        problems.append("simulate.group_thetas: nesting condition needs every group theta >= simulate.root_theta")
    speed = block.get("speed", {})
    if any(speed.get("speedup_dim") not in speed.get(k, []) for k in ("nacll_dims", "nacll_r_dims", "ours_dims")):
        problems.append("speed.speedup_dim: must be in speed.nacll_dims, speed.nacll_r_dims and speed.ours_dims")
    lo, hi = speed.get("slope_range", [0, 0])
    if "scaling_dims" in speed and sum(lo <= d <= hi for d in speed["scaling_dims"]) < 3:
        problems.append("speed.slope_range: needs at least 3 of speed.scaling_dims inside it")
    for key in ("stocks", "survival"):
        for fam in block.get(key, {}).get("families", []):
            if fam not in _FAMILIES:
                problems.append(f"{key}.families: unknown family '{fam}'")
    if block.get("stocks", {}).get("source") == "prices" and not (
            block["stocks"].get("prices_path") and block["stocks"].get("sectors_path")):
        problems.append("stocks.prices_path/sectors_path: needed when stocks.source is 'prices'")
    if block.get("survival", {}).get("source") == "table" and not block["survival"].get("survival_path"):
        problems.append("survival.survival_path: needed when survival.source is 'table'")
    return problems
