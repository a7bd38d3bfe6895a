"""ApexPhys: continual remote photoplethysmography over sequential domains (apexphys)."""

TITLE = "ApexPhys: continual remote photoplethysmography"
STEPS = ("generate", "preprocess", "train", "figures")

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
    if "apexphys" not in block.get("run_variants", ["apexphys"]):
        problems.append("run_variants: must include 'apexphys', the method every claim is about")
    return problems
