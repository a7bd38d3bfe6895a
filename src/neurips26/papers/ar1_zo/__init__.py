"""AR1-ZO: rank-1 atom zeroth-order LoRA fine-tuning (ar1_zo)."""

from neurips26.core import tuning

TITLE = "AR1-ZO: rank-1 atom zeroth-order LoRA fine-tuning"
STEPS = ("mechanism", "tune", "train", "figures")

METHODS = ("mezo_full", "mezo_lora", "lozo", "naive_atom", "ar1_zo")
RANKED = ("naive_atom", "ar1_zo")  # the methods of the accuracy-against-rank sweep


def cells(block: dict) -> list[tuple[str, int]]:
    """(method, LoRA rank) of every trained configuration: every method at the default rank, and
    the atomwise methods at each rank of lora.ranks."""
    rank = block["lora"]["rank"]
    out = [(m, rank) for m in block["methods"]]
    for m in block["methods"]:
        if m in RANKED:
            out += [(m, r) for r in block["lora"]["ranks"] if r != rank]
    return out


def lr_grid(block: dict, method: str) -> list[float]:
    """The learning-rate grid of `method` by the one rule every method shares: grid.points values
    log-spaced over grid.decades decades, centred (geometrically) on grid.centre[method]."""
    g = block["grid"]
    return tuning.log_grid(g["centre"][method], g["points"], g["decades"])


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    for m in block.get("methods", []):
        if m not in METHODS:
            problems.append(f"methods: unknown method '{m}'; known: {', '.join(METHODS)}")
        elif m not in block.get("grid", {}).get("centre", {}):
            problems.append(f"grid.centre.{m}: missing (the centre of the learning-rate grid of a listed method)")
    for m in block.get("grid", {}).get("centre", {}):
        if m not in METHODS:
            problems.append(f"grid.centre.{m}: unknown method; known: {', '.join(METHODS)}")
    lora = block.get("lora", {})
    if "ar1_zo" in block.get("methods", []) and lora.get("rank") not in lora.get("ranks", []):
        problems.append(f"lora.rank: {lora.get('rank')} must be one of lora.ranks {lora.get('ranks')}")
    if min(lora.get("ranks", [1]) or [1]) < 1:
        problems.append("lora.ranks: ranks must be >= 1")
    mech = block.get("mechanism", {})
    if len(mech.get("ranks", [])) < 3:
        problems.append("mechanism.ranks: at least 3 ranks are needed to fit a slope")
    if block.get("tune", {}).get("seed") in block.get("seeds", []):
        problems.append(f"tune.seed: {block['tune']['seed']} is one of seeds; tune on a seed that is not reported")
    return problems
