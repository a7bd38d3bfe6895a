"""ADAP: generative active search (generate, rank, verify) (adap)."""

TITLE = "ADAP: generative active search (generate, rank, verify)"
STEPS = ("synthetic", "lm", "figures")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    for name in block.get("run_variants", []):
        if name not in block.get("variants", {}):
            problems.append(f"run_variants: '{name}' is not defined under adap.variants")
    ev = block.get("evaluation", {})
    if any(r < 1 for r in ev.get("cost_ratios", [1])):
        problems.append("evaluation.cost_ratios: every ratio c_v / c_g must be >= 1")
    lm = block.get("lm", {})
    if lm and lm.get("dim", 64) % lm.get("heads", 4):
        problems.append("lm.dim: must be divisible by lm.heads")
    if lm and lm.get("test_problems", 1) >= lm.get("max_operand", 100) ** 2:
        problems.append("lm.test_problems: must be below max_operand^2 (the number of distinct problems)")
    return problems
