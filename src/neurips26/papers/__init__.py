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


def info(paper: str):
    if paper not in available():
        raise KeyError(f"unknown paper '{paper}'; known papers: {', '.join(available())}")
    return importlib.import_module(f"{__name__}.{paper}")
