import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Tests never write into the project's own MLflow store.
os.environ.setdefault("NEURIPS26_PROGRESS", "0")


@pytest.fixture
def root() -> Path:
    return ROOT
