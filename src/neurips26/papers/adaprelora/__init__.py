"""AdaPreLoRA: preconditioned LoRA optimizer (adaprelora)."""

TITLE = "AdaPreLoRA: preconditioned LoRA optimizer"
STEPS = ("tune", "train", "figures")

METHODS = ("adamw", "loraplus", "scaled_adamw", "lora_pro", "adafactor_proj", "adaprelora", "full_adafactor")
TASKS = ("topic_sentiment", "intent", "paraphrase", "data_to_text")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    methods, grid = block.get("methods", []), block.get("grid", {})
    if "adaprelora" not in methods:
        problems.append("methods: 'adaprelora' must be listed (the method of the paper)")
    for m in methods:
        if m not in METHODS:
            problems.append(f"methods: unknown method '{m}'; known: {', '.join(METHODS)}")
        elif m not in grid:
            problems.append(f"grid.{m}: missing (the learning-rate grid of a listed method)")
    sizes = {len(grid[m]) for m in methods if m in grid}
    if len(sizes) > 1:
        problems.append(f"grid: every method needs a grid of the same size (same tuning budget), got sizes {sorted(sizes)}")
    damped = block.get("damping_grid") or {}
    for m in damped:
        if m not in ("scaled_adamw", "lora_pro", "adafactor_proj", "adaprelora"):
            problems.append(f"damping_grid.{m}: {m} has no damping of r x r Gram matrices")
    dsizes = {len(damped[m]) for m in methods if m in damped}
    if len(dsizes) > 1:
        problems.append(f"damping_grid: every listed method needs a grid of the same size (same tuning budget), "
                        f"got sizes {sorted(dsizes)}")
    for t in block.get("tasks", []):
        if t not in TASKS:
            problems.append(f"tasks: unknown task '{t}'; known: {', '.join(TASKS)}")
    if block.get("tune", {}).get("seed") in block.get("seeds", []):
        problems.append(f"tune.seed: {block['tune']['seed']} is one of seeds; tune on a seed that is not reported")
    for part in ("classification", "lm"):
        c = block.get(part, {})
        if c.get("n_val", 0) >= c.get("n_train", 1):
            problems.append(f"{part}.n_val: the validation split must be smaller than {part}.n_train")
        if c.get("steps", 3) < 3:
            problems.append(f"{part}.steps: at least 3 steps (the memory of step 2 is measured)")
    c = block.get("classification", {})
    horizon = c.get("horizon", 0)
    if horizon:
        if horizon < c.get("steps", 3):
            problems.append(f"classification.horizon: {horizon} is below classification.steps ({c.get('steps')}); "
                            "the long horizon runs at least the short budget")
        bad = [s for s in c.get("horizon_at", []) if s > horizon]
        if bad:
            problems.append(f"classification.horizon_at: {bad} lie past classification.horizon ({horizon})")
        if "adaprelora" not in c.get("horizon_methods", ["adaprelora"]):
            problems.append("classification.horizon_methods: 'adaprelora' must be listed (the method of the paper)")
        missing = [m for m in c.get("horizon_methods", []) if m not in methods]
        if missing:
            problems.append(f"classification.horizon_methods: {missing} are not in methods (tuned and trained at the short budget first)")
    return problems
