"""Dynamics of Z-score evolution strategies for LLM fine-tuning (es_dynamics)."""

from neurips26.core import tuning

TITLE = "Dynamics of Z-score evolution strategies for LLM fine-tuning"
STEPS = ("synthetic", "lm", "figures")

SHAPINGS = ("zscore", "centered_ranks", "plain")
REWARDS = ("logprob", "teacher_forced")

# The landscapes over which the three-regimes row counts the sequence, fixed before any of them was
# run: each constant of the planted quadratic halved, kept and doubled around the configured one (the
# task eigenvalues lam_max and lam_min together; the off-task block at most the configured size,
# which already fills most of d), every combination, one landscape and ES noise seed each.
# The ES settings (N, sigma, alpha, T) stay as configured.
LANDSCAPE_GRID = {"factors": {"lam_scale": (0.5, 1.0, 2.0), "lam_off": (0.5, 1.0, 2.0),
                              "off_dim": (0.25, 0.5, 1.0), "dist0": (0.5, 1.0, 2.0)}}


def alpha_grid(synthetic: dict, shaping: str) -> list[float]:
    """The step sizes of `shaping` by the one rule every shaping shares: alpha_grid.points values
    log-spaced over alpha_grid.decades decades, centred (geometrically) on alpha_grid.centre[shaping]."""
    g = synthetic["alpha_grid"]
    return tuning.log_grid(g["centre"][shaping], g["points"], g["decades"])


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    s = block.get("synthetic", {})
    if s.get("rank", 0) + s.get("off_dim", 0) > s.get("dim", 0):
        problems.append(f"synthetic.off_dim: rank + off_dim = {s.get('rank', 0) + s.get('off_dim', 0)} exceeds synthetic.dim = {s.get('dim')}")
    if s.get("population", 2) >= s.get("dim", 0):
        problems.append("synthetic.population: the point is N << d; population must be below dim")
    centres = s.get("alpha_grid", {}).get("centre", {})
    for name in SHAPINGS:
        if name not in centres:
            problems.append(f"synthetic.alpha_grid.centre.{name}: missing (the centre of this fitness shaping's step-size grid)")
    if s.get("tune_seed") in s.get("seeds", []):
        problems.append(f"synthetic.tune_seed: {s.get('tune_seed')} is one of synthetic.seeds; tune on a seed that is not reported")
    if s.get("window", 1) * 3 > s.get("generations", 0):
        problems.append("synthetic.window: at least three windows of generations are needed to see three regimes")
    lm = block.get("lm", {})
    if lm.get("eval_every", 1) > lm.get("generations", 0):
        problems.append("lm.eval_every: larger than lm.generations (no evaluation after the start)")
    return problems
