"""BDC-Merge: model merging across architectures with Brownian distance correlation (bdc_merge)."""

TITLE = "BDC-Merge: cross-architecture model merging with Brownian distance correlation"
STEPS = ("tune", "run", "cross_source", "figures")

LAYER_MATRICES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
ALL_MATRICES = LAYER_MATRICES + ("embed_tokens", "lm_head")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    cal = block.get("calibration", {})
    if cal.get("size") not in cal.get("sizes", []):
        problems.append(f"calibration.size: {cal.get('size')} must be one of calibration.sizes {cal.get('sizes')}")
    if block.get("strength") not in block.get("strengths", []):
        problems.append(f"strength: {block.get('strength')} must be one of strengths {block.get('strengths')}")
    tune = block.get("tune", {})
    if tune.get("seed") in block.get("seeds", []):
        problems.append(f"tune.seed: {tune.get('seed')} must not be one of the test seeds {block.get('seeds')}")
    grid = tune.get("strength_grid", [])
    if any(not 0 < a <= 1 for a in grid):
        problems.append(f"tune.strength_grid: {grid} must lie in (0, 1] (a log-spaced grid of fusion strengths)")
    for section in ("bdc", "naive"):
        bad = [m for m in block.get(section, {}).get("matrices", []) if m not in ALL_MATRICES]
        if bad:
            problems.append(f"{section}.matrices: unknown {bad}; known {list(ALL_MATRICES)}")
    bad = [m for m in block.get("transport", {}).get("matrices", []) if m not in LAYER_MATRICES]
    if bad:
        problems.append(f"transport.matrices: unknown {bad}; known {list(LAYER_MATRICES)}")
    return problems
