"""Dynamics of Z-score evolution strategies for LLM fine-tuning (es_dynamics)."""

TITLE = "Dynamics of Z-score evolution strategies for LLM fine-tuning"
STEPS = ("synthetic", "lm", "figures")

SHAPINGS = ("zscore", "centered_ranks", "plain")
REWARDS = ("logprob", "teacher_forced")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    s = block.get("synthetic", {})
    if s.get("rank", 0) + s.get("off_dim", 0) > s.get("dim", 0):
        problems.append(f"synthetic.off_dim: rank + off_dim = {s.get('rank', 0) + s.get('off_dim', 0)} exceeds synthetic.dim = {s.get('dim')}")
    if s.get("population", 2) >= s.get("dim", 0):
        problems.append("synthetic.population: the point is N << d; population must be below dim")
    grids = s.get("alpha_grid", {})
    for name in SHAPINGS:
        if name not in grids:
            problems.append(f"synthetic.alpha_grid.{name}: missing (the step sizes tuned for this fitness shaping)")
    sizes = {len(v) for v in grids.values()}
    if len(sizes) > 1:
        problems.append(f"synthetic.alpha_grid: every shaping needs a grid of the same size (same tuning budget), got {sorted(sizes)}")
    if s.get("tune_seed") in s.get("seeds", []):
        problems.append(f"synthetic.tune_seed: {s.get('tune_seed')} is one of synthetic.seeds; tune on a seed that is not reported")
    if s.get("window", 1) * 3 > s.get("generations", 0):
        problems.append("synthetic.window: at least three windows of generations are needed to see three regimes")
    lm = block.get("lm", {})
    if lm.get("eval_every", 1) > lm.get("generations", 0):
        problems.append("lm.eval_every: larger than lm.generations (no evaluation after the start)")
    return problems
