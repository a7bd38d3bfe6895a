"""One package per paper, named by its slug in papers.md.

A paper package's `__init__` stays light (no torch): it defines TITLE, STEPS (the step
names its `steps.py` implements, in DAG order) and optionally `check_config(block)`, which
returns a list of 'key: problem' strings for values the schema cannot express.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path


def available() -> list[str]:
    """Slugs of the implemented papers: the sub-packages of this package that have steps."""
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)])
                  if m.ispkg and (here / m.name / "steps.py").exists())


# Step groups that are not papers: assets several papers share (rules in workflow/rules/shared.smk).
# Each module defines TITLE, STEPS and the step functions itself (no separate steps.py).
SHARED = {"lm_assets": "neurips26.core.lm_assets"}


def info(paper: str):
    """The package of a paper, or the module of a shared step group (TITLE, STEPS)."""
    if paper in SHARED:
        return importlib.import_module(SHARED[paper])
    if paper not in available():
        raise KeyError(f"unknown paper '{paper}'; known papers: {', '.join(available())}")
    return importlib.import_module(f"{__name__}.{paper}")


def steps_module(paper: str):
    """The module holding the step functions of a paper (its steps.py) or of a shared group."""
    mod = info(paper)
    return mod if paper in SHARED else importlib.import_module(f"{mod.__name__}.steps")
