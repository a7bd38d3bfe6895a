"""One package per paper, named by its slug in papers.md.

A paper package's `__init__` stays light (no torch): it defines TITLE, STEPS (the step
names its `steps.py` implements, in DAG order) and optionally `check_config(block)`, which
returns a list of 'key: problem' strings for values the schema cannot express.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path


# Step groups that are not papers: assets several papers share (rules in workflow/rules/shared.smk),
# packaged like a paper (TITLE and STEPS in the package, the steps in steps.py).
SHARED = ("lm_assets",)


def available() -> list[str]:
    """Slugs of the implemented papers: the sub-packages of this package that have steps."""
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)])
                  if m.ispkg and m.name not in SHARED and (here / m.name / "steps.py").exists())


def info(paper: str):
    """The package of a paper or of a shared step group (TITLE, STEPS)."""
    if paper not in SHARED and paper not in available():
        raise KeyError(f"unknown paper '{paper}'; known papers: {', '.join(available())}")
    return importlib.import_module(f"{__name__}.{paper}")


def steps_module(paper: str):
    """The module holding the step functions of a paper or a shared group (its steps.py)."""
    return importlib.import_module(f"{info(paper).__name__}.steps")


def check_config(paper: str, block: dict) -> list[str]:
    """The paper's own checks of its config block (`check_config` of its package, if any):
    'key: problem' strings for what its schema cannot express."""
    check = getattr(info(paper), "check_config", None)
    return check(block) if check else []


def load_config(workflow_dir=".", configfiles=()) -> dict:
    """The validated config with every enabled paper's own checks (core.config.load_config)."""
    from ..core.config import load_config as load

    return load(workflow_dir, configfiles, checks=check_config)


def validate_config(config: dict, workflow_dir=".") -> dict:
    """core.config.validate_config with every enabled paper's own checks."""
    from ..core.config import validate_config as validate

    return validate(config, workflow_dir, checks=check_config)
