"""AdaPaD: adaptive parallel deflation for LoRA (adapad)."""

TITLE = "AdaPaD: adaptive parallel deflation for LoRA"
STEPS = ("mechanism", "tune", "train", "figures")

METHODS = ("lora_r1", "lora_r2", "lora_r4", "lora_r8", "lora_r16", "adalora", "sequential", "adapad", "adapad_max")
MAPS = ("query", "key", "value", "attn_out", "ffn_in", "ffn_out")


def growth_every_max(a: dict, steps: int, maps: int) -> int:
    """adapad_max's growth interval: the largest (at most adapad.grow_every) whose window still has
    one growth step per activation needed to take every map from init_rank to max_rank, so that
    the schedule does not bound its size (1 when even that is too few)."""
    start, end = round(a.get("grow_start", 0) * steps), round(a.get("grow_end", 1) * steps)
    needed = maps * (a.get("max_rank", 1) - a.get("init_rank", 1))
    return max(1, min(int(a.get("grow_every", 1)), (end - start) // max(needed - 1, 1)))


def growth_steps_short(a: dict, steps: int, maps: int) -> int:
    """How many growth steps adapad_max's window lacks to take every map from init_rank to max_rank
    (one activation per growth step, at growth_every_max; <= 0 when the window can reach the cap)."""
    start, end = round(a.get("grow_start", 0) * steps), round(a.get("grow_end", 1) * steps)
    every = growth_every_max(a, steps, maps)
    available = (end - start) // every + 1 if end >= start else 0
    return maps * (a.get("max_rank", 1) - a.get("init_rank", 1)) - available


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    methods = block.get("methods", [])
    for m in methods:
        if m not in METHODS:
            problems.append(f"methods: unknown method '{m}'; known: {', '.join(METHODS)}")
        elif m not in block.get("grid", {}):
            problems.append(f"grid.{m}: missing (the learning-rate grid of a listed method)")
    sizes = {len(v) for k, v in block.get("grid", {}).items() if k in methods}
    if len(sizes) > 1:
        problems.append(f"grid: every method needs a grid of the same size (same tuning budget), got {sorted(sizes)}")
    ref = f"lora_r{block.get('compare', {}).get('reference_rank', 4)}"
    if ref not in methods:
        problems.append(f"compare.reference_rank: the fixed-rank LoRA it names ({ref}) is not in methods")
    for m in block.get("finetune", {}).get("modules", []):
        if m not in MAPS:
            problems.append(f"finetune.modules: unknown map '{m}'; known: {', '.join(MAPS)}")
    f = block.get("finetune", {})
    if f.get("tune_seed") in block.get("seeds", []):
        problems.append(f"finetune.tune_seed: {f.get('tune_seed')} is one of seeds; tune on a seed that is not reported")
    d = block.get("data", {})
    if d.get("val_size", 1) >= d.get("train_size", 2):
        problems.append("data.val_size: must be below data.train_size (the validation split is cut from train)")
    a = block.get("adapad", {})
    top = f"lora_r{a.get('max_rank', 1)}"
    if "adapad_max" in methods and top not in methods:
        problems.append(f"methods: adapad_max is compared with fixed-rank LoRA at adapad.max_rank ({top}), which is not listed")
    if "adapad_max" in methods and growth_steps_short(a, f.get("steps", 0), len(f.get("modules", []))) > 0:
        problems.append("adapad.grow_end: adapad_max's growth window has fewer steps than the activations needed to "
                        "reach max_rank on every map; its size would be bounded by the schedule, not the stop")
    if a.get("init_rank", 1) > a.get("max_rank", 1):
        problems.append("adapad.init_rank: above adapad.max_rank")
    if not 0 <= a.get("grow_start", 0) < a.get("grow_end", 1) <= 1:
        problems.append("adapad.grow_start: the growth window needs 0 <= grow_start < grow_end <= 1")
    al = block.get("adalora", {})
    if al.get("target_r", 1) > al.get("init_r", 1):
        problems.append("adalora.target_r: above adalora.init_r (AdaLoRA prunes from init_r down to target_r)")
    if al.get("tinit", 0) + al.get("tfinal", 0) >= 1:
        problems.append("adalora.tfinal: tinit + tfinal must leave a budgeting phase (below 1)")
    s = block.get("sequential", {})
    if s.get("rank", 1) > f.get("steps", 1):
        problems.append("sequential.rank: more components than steps")
    mech = block.get("mechanism", {})
    r = len(mech.get("spectrum", []))
    if r and min(mech.get("rows", r), mech.get("cols", r)) <= r:
        problems.append("mechanism.spectrum: the planted rank must be below rows and cols")
    if r and list(mech.get("spectrum", [])) != sorted(mech.get("spectrum", []), reverse=True):
        problems.append("mechanism.spectrum: singular values must be given in decreasing order")
    if mech.get("advance", 0) not in mech.get("advance_sweep", [0]):
        problems.append("mechanism.advance: must be one of mechanism.advance_sweep")
    if 0 not in mech.get("advance_sweep", [0]):
        problems.append("mechanism.advance_sweep: must contain 0 (no advance learning, the comparison's baseline)")
    if mech.get("tune_seed") in mech.get("seeds", []):
        problems.append("mechanism.tune_seed: one of mechanism.seeds; tune on a seed that is not reported")
    if r and mech.get("interval", 0) * (r - 1) >= mech.get("rounds", 1):
        problems.append("mechanism.interval: the last component would be activated after the last round")
    return problems
