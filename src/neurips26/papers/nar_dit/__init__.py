"""Noise-Aware Routing for Diffusion Transformers (nar_dit)."""

TITLE = "Noise-Aware Routing for Diffusion Transformers"
STEPS = ("prepare", "classifier", "train", "evaluate", "size", "figures")


def size_study_variants(study: dict, run_variants) -> list[str]:
    """The regimes the size study runs: its `variants` that are also main runs (the main runs
    are its largest size); none unless 'dit' and at least one routed regime remain."""
    regimes = [v for v in (study or {}).get("variants", []) if v in run_variants]
    return regimes if "dit" in regimes and len(regimes) >= 2 else []


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    model, train = block.get("model", {}), block.get("train", {})
    depth = model.get("depth", 0)
    start, end = train.get("route_start", 0), train.get("route_end", 0)
    end_abs = end % depth if depth else end
    if depth and not (0 <= start <= end_abs < depth):
        problems.append(f"train.route_start/route_end: need 0 <= route_start <= route_end < depth "
                        f"({start}, {end} with depth {depth})")
    if model.get("hidden", 0) % max(1, model.get("heads", 1)):
        problems.append(f"model.hidden: {model.get('hidden')} is not divisible by model.heads {model.get('heads')}")
    size, patch = block.get("data", {}).get("image_size", 0), model.get("patch", 1)
    if patch and size % patch:
        problems.append(f"model.patch: image_size {size} is not divisible by patch {patch}")
    for name, variant in block.get("variants", {}).items():
        if variant.get("kind") == "nar":
            ratios, bounds = variant.get("ratios", []), variant.get("boundaries", [])
            if len(ratios) != len(bounds) + 1:
                problems.append(f"variants.{name}.ratios: {len(bounds) + 1} ratios needed for "
                                f"{len(bounds)} boundaries, got {len(ratios)}")
            if list(bounds) != sorted(bounds):
                problems.append(f"variants.{name}.boundaries: must increase, got {bounds}")
    for name in block.get("run_variants", []):
        if name not in block.get("variants", {}):
            problems.append(f"run_variants: '{name}' is not defined under nar_dit.variants")
    study = block.get("size_study", {})
    if study.get("variants"):
        for name in study["variants"]:
            if name not in block.get("variants", {}):
                problems.append(f"size_study.variants: '{name}' is not defined under nar_dit.variants")
        if "dit" not in study["variants"]:
            problems.append("size_study.variants: must include 'dit', the baseline of the trend")
        if len(study.get("sizes", [])) < 2:
            problems.append("size_study.sizes: at least two extra sizes (three points with the main runs) for a trend")
    for spec in study.get("sizes", []):
        name = spec.get("name")
        d = spec.get("depth", 0)
        if d and not (0 <= start <= end % d < d):
            problems.append(f"size_study.sizes.{name}.depth: {d} blocks leave no routed span for "
                            f"route_start {start}, route_end {end}")
        if spec.get("hidden", 0) % max(1, spec.get("heads", 1)):
            problems.append(f"size_study.sizes.{name}.hidden: {spec.get('hidden')} is not divisible by heads {spec.get('heads')}")
    if "dit" not in block.get("run_variants", ["dit"]):
        problems.append("run_variants: must include 'dit', the baseline every speedup is measured against")
    return problems
