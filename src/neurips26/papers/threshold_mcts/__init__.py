"""Thresholding Monte Carlo Tree Search by Track-and-Stop (threshold_mcts)."""

TITLE = "Thresholding Monte Carlo Tree Search (Track-and-Stop)"
STEPS = ("simulate", "timing", "figures")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    for name in block.get("run_variants", []):
        if name not in block.get("variants", {}):
            problems.append(f"run_variants: '{name}' is not defined under threshold_mcts.variants")
    for name, v in block.get("variants", {}).items():
        low, high = v.get("mean_range", [0, 1])
        if low >= high:
            problems.append(f"variants.{name}.mean_range: need low < high, got {v.get('mean_range')}")
        if v.get("family") == "bernoulli" and not (0 <= low and high <= 1 and 0 < v.get("theta", 0.5) < 1):
            problems.append(f"variants.{name}: Bernoulli means and theta must lie in [0, 1] and (0, 1)")
        t_low, t_high = v.get("t_star_range", [1, 2])
        if t_low >= t_high:
            problems.append(f"variants.{name}.t_star_range: need low < high, got {v.get('t_star_range')}")
    if any(not 0 < d < 1 for d in block.get("deltas", [])):
        problems.append("deltas: every delta must lie in (0, 1)")
    asym = block.get("asymptotics", {})
    if len(asym.get("runs", [])) != len(asym.get("deltas", [])):
        problems.append("asymptotics.runs: need one run count per entry of asymptotics.deltas")
    if any(not 0 < d < 1 for d in asym.get("deltas", [])):
        problems.append("asymptotics.deltas: every delta must lie in (0, 1)")
    if "ratio" not in block.get("algorithms", ["ratio"]):
        problems.append("algorithms: must include 'ratio' (the paper's method)")
    return problems
