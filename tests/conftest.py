import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Tests never write into the project's own MLflow store.
os.environ.setdefault("NEURIPS26_PROGRESS", "0")


@pytest.fixture
def root() -> Path:
    return ROOT


def pytest_collection_finish(session):
    """Start the shared smoke DAGs right after collection when a selected test needs one, so they
    run beside the unit tests (see tests/smoke_runs.py)."""
    if session.config.option.collectonly:
        return
    import smoke_runs

    wanted = [name for name in smoke_runs.SHARED_RUNS
              if any(name in getattr(item, "fixturenames", ()) for item in session.items)]
    smoke_runs.start(wanted)


def pytest_sessionfinish(session, exitstatus):
    import sys

    if "smoke_runs" in sys.modules:
        sys.modules["smoke_runs"].stop_all()
