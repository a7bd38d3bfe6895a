"""Angular Nets: low-precision networks from angular geometry (angular_nets)."""

TITLE = "Angular Nets: low-bit angular layers trained through the cosine geometry"
STEPS = ("tune", "train", "planted", "figures")

IMAGE_SOURCES = {"shapes", "digits", "cifar10", "imagenet"}
TOKEN_SOURCES = {"markers", "glue"}


def check_config(block: dict) -> list[str]:
    """Cross-field checks the schema cannot express; returns 'key: problem' strings."""
    problems = []
    variants, methods = block.get("variants", {}), block.get("methods", {})
    for name in block.get("run_variants", []):
        if name not in variants:
            problems.append(f"run_variants: '{name}' is not defined under angular_nets.variants")
    for name, v in variants.items():
        backbone, source = v.get("backbone"), v.get("data")
        if backbone == "bert" and source not in TOKEN_SOURCES:
            problems.append(f"variants.{name}.data: the bert backbone needs a token source ({sorted(TOKEN_SOURCES)})")
        if backbone in ("resnet", "vit") and source not in IMAGE_SOURCES:
            problems.append(f"variants.{name}.data: the {backbone} backbone needs an image source ({sorted(IMAGE_SOURCES)})")
        for m in v.get("methods") or []:
            if m not in methods:
                problems.append(f"variants.{name}.methods: '{m}' is not defined under angular_nets.methods")
        if v.get("nu_study") and block.get("nu_study_method") not in methods:
            problems.append("nu_study_method: must name an entry of angular_nets.methods")
    for name, m in methods.items():
        if m.get("method") == "lsq" and m.get("bits") not in (2, 3, 4, 8):
            problems.append(f"methods.{name}.bits: LSQ needs integer bits 2, 3, 4 or 8")
    for name in block.get("tune", {}).get("variants", []):
        if name not in variants:
            problems.append(f"tune.variants: '{name}' is not defined under angular_nets.variants")
    for name, m in methods.items():
        if m.get("method") == "angular_ste" and m.get("bits", 1) != 1:
            problems.append(f"methods.{name}.bits: angular_ste is 1-bit only")
    d = block.get("data", {})
    for key, source in (("cifar10_dir", "cifar10"), ("imagenet_dir", "imagenet"), ("glue_dir", "glue")):
        used = any(variants.get(n, {}).get("data") == source for n in block.get("run_variants", []))
        if used and not d.get(key):
            problems.append(f"data.{key}: needed by a variant with data '{source}'")
    arch = block.get("arch", {}).get("vit", {})
    if arch and d.get("image_size", 0) % arch.get("patch", 1):
        problems.append(f"arch.vit.patch: image_size {d.get('image_size')} is not divisible by patch {arch.get('patch')}")
    for bb in ("vit", "bert"):
        a = block.get("arch", {}).get(bb, {})
        if a and a.get("dim", 0) % a.get("heads", 1):
            problems.append(f"arch.{bb}.dim: {a.get('dim')} is not divisible by heads {a.get('heads')}")
    return problems
