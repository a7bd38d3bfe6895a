"""Config loading and validation against workflow/schemas.

The schema is one top-level file (`config.schema.yaml`) plus one file per paper
(`workflow/schemas/papers/<paper>.schema.yaml`) that becomes the paper's block. Errors name
the key as a dotted path (`nar_dit.train.steps`) and stop before any job runs.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any


# What a variant, model or other name that becomes part of a path may be (the Snakefile's
# wildcard_constraints use the same pattern).
NAME_PATTERN = "[A-Za-z0-9_]+"


class ConfigError(ValueError):
    """A config value or key that the schema or a paper's own checks reject."""


def _yaml_load(path: Path) -> Any:
    import yaml

    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    with path.open() as f:
        # libyaml's loader where PyYAML has it: the schemas are read on every validation
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}


_SCHEMAS: dict = {}


def load_schema(workflow_dir: str | Path) -> dict:
    """The config schema with every paper's block schema under its slug (read again only
    when a schema file changes)."""
    schema_dir = Path(workflow_dir).resolve() / "workflow" / "schemas"
    files = [schema_dir / "config.schema.yaml", *sorted((schema_dir / "papers").glob("*.schema.yaml"))]
    key = tuple((str(f), f.stat().st_mtime_ns) for f in files if f.exists())
    if key not in _SCHEMAS:
        _SCHEMAS.clear()
        _SCHEMAS[key] = _read_schema(schema_dir)
    return copy.deepcopy(_SCHEMAS[key])


def _read_schema(schema_dir: Path) -> dict:
    schema = _yaml_load(schema_dir / "config.schema.yaml")
    papers = []
    for path in sorted((schema_dir / "papers").glob("*.schema.yaml")):
        slug = path.name.removesuffix(".schema.yaml")
        schema["properties"][slug] = _yaml_load(path)
        papers.append(slug)
    schema["properties"]["papers"]["items"]["enum"] = papers
    return schema


def deep_merge(base: dict, override: dict) -> dict:
    """Recursive dict merge; lists and scalars in `override` replace those in `base`."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_config(workflow_dir: str | Path = ".", configfiles: list[str | Path] = (), checks=None) -> dict:
    """config/config.yaml, then each extra config file on top, validated (`checks` as in
    `validate_config`)."""
    workflow_dir = Path(workflow_dir)
    config = _yaml_load(workflow_dir / "config" / "config.yaml")
    for extra in configfiles:
        config = deep_merge(config, _yaml_load(Path(extra)))
    return validate_config(config, workflow_dir, checks)


def _fill_defaults(schema: dict, value: Any) -> None:
    if not isinstance(value, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        if key not in value and "default" in sub:
            value[key] = copy.deepcopy(sub["default"])
        if key in value:
            _fill_defaults(sub, value[key])
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key, sub in value.items():
            if key not in schema.get("properties", {}):
                _fill_defaults(extra, sub)


def _key(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def _describe(error) -> str:
    key = _key(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        where = f"{key}." if error.absolute_path else ""
        names = ", ".join(f"'{where}{u}'" for u in unknown)
        return f"unknown config key {names}; allowed under '{key}': {', '.join(allowed)}"
    if error.validator == "enum" and list(error.absolute_path)[:1] == ["papers"]:
        return (f"config key '{key}': unknown paper {error.instance!r}; "
                f"known papers: {', '.join(error.validator_value)}")
    if error.validator == "required":
        return f"config key '{key}': {error.message}"
    return f"config key '{key}': {error.message}"


def _validator_class():
    """Draft 2020-12, except that an integer is an int: JSON Schema counts 10.0 as an
    integer, but a float where a count is meant is a config mistake."""
    import jsonschema

    def is_integer(checker, instance) -> bool:
        return isinstance(instance, int) and not isinstance(instance, bool)

    base = jsonschema.Draft202012Validator
    return jsonschema.validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", is_integer))


def validate_config(config: dict, workflow_dir: str | Path = ".", checks=None) -> dict:
    """Fill schema defaults, validate against the schema, then run `checks(paper, block)` (the
    problems a paper's schema cannot express, as 'key: problem' strings; the papers' own
    checks are `neurips26.papers.check_config`) on each enabled paper; return the config."""
    schema = load_schema(workflow_dir)
    config = copy.deepcopy(config)
    _fill_defaults(schema, config)
    validator = _validator_class()(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), _key(e.absolute_path)))
    if errors:
        lines = [_describe(e) for e in errors[:5]]
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise ConfigError("invalid config: " + "; ".join(lines) + more)
    for paper in config["papers"]:
        if paper not in config:
            raise ConfigError(f"config key '{paper}' is missing: paper '{paper}' is enabled in 'papers' but has no block")
        problems = checks(paper, config[paper]) if checks else []
        if problems:
            raise ConfigError("invalid config: " + "; ".join(f"config key '{paper}.{p}'" for p in problems))
    return config
