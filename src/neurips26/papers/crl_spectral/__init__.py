"""Contrastive representation learning as spectral approximation of PMI (crl_spectral)."""

TITLE = "Contrastive representation learning as spectral approximation of PMI"
STEPS = ("train", "evaluate", "figures")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    d, c = block.get("discrete", {}), block.get("continuous", {})
    states = d.get("states", 0)
    if d.get("dims") and max(d["dims"]) > states:
        problems.append(f"discrete.dims: the largest D ({max(d['dims'])}) exceeds discrete.states ({states})")
    names = [k.get("name") or f"{k.get('kind')}_{k.get('bandwidth')}" for k in d.get("kernels", [])]
    if len(set(names)) != len(names):
        problems.append(f"discrete.kernels: names must be unique, got {names}")
    if c.get("batch_size", 2) > c.get("train_pairs", 2):
        problems.append("continuous.batch_size: larger than continuous.train_pairs")
    if c.get("candidates", 2) > c.get("eval_points", 2):
        problems.append("continuous.candidates: more than continuous.eval_points")
    return problems
