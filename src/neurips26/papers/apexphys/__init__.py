"""ApexPhys: continual remote photoplethysmography over sequential domains (apexphys)."""

TITLE = "ApexPhys: continual remote photoplethysmography"
STEPS = ("generate", "preprocess", "tune", "train", "figures")

METHOD_KINDS = ("finetune", "joint", "ewc", "lwf", "replay", "apexphys")


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    variants = block.get("variants", {})
    for name in block.get("run_variants", []):
        if name not in variants:
            problems.append(f"run_variants: '{name}' is not defined under apexphys.variants")
    for name, v in variants.items():
        if v.get("kind") not in METHOD_KINDS:
            problems.append(f"variants.{name}.kind: '{v.get('kind')}' is not one of {', '.join(METHOD_KINDS)}")
    data = block.get("data", {})
    domains = data.get("domains", [])
    names = [d.get("name") for d in domains]
    if len(set(names)) != len(names):
        problems.append("data.domains: domain names must be unique")
    if data.get("source", "synthetic") == "real":
        names = list(data.get("real", {}))
    order = data.get("order", names)
    unknown = [n for n in order if n not in names]
    if unknown or len(set(order)) != len(order):
        problems.append(f"data.order: must list distinct domains from {names}, got {order}")
    pre = block.get("preprocess", {})
    chunk, frames = pre.get("chunk_length", 128), data.get("frames", 256)
    if data.get("source", "synthetic") == "synthetic" and frames < chunk:
        problems.append(f"data.frames: {frames} frames per clip is shorter than preprocess.chunk_length {chunk}")
    if chunk % 4:
        problems.append(f"preprocess.chunk_length: {chunk} must be divisible by 4 (two temporal poolings)")
    for name, v in variants.items():
        source = v.get("tune_from")
        if source is not None and (source not in variants or not variants[source].get("tune")):
            problems.append(f"variants.{name}.tune_from: '{source}' is not a variant with a 'tune' key")
        if v.get("tune") and source is not None:
            problems.append(f"variants.{name}: set either tune or tune_from, not both")
        if name in block.get("run_variants", []) and v.get("kind") == "replay" \
                and v.get("replay_batch", 0) >= block.get("train", {}).get("batch_size", 4):
            problems.append(f"variants.{name}.replay_batch: must be below train.batch_size, so that every batch "
                            "holds new chunks too")
    tune = block.get("tune", {})
    if tune and tune.get("seed") is not None and data.get("source", "synthetic") == "synthetic" \
            and tune.get("validation_clips", 1) >= data.get("train_clips", 8):
        problems.append(f"tune.validation_clips: must be below data.train_clips ({data.get('train_clips', 8)})")
    if "apexphys" not in block.get("run_variants", ["apexphys"]):
        problems.append("run_variants: must include 'apexphys', the method every claim is about")
    return problems
