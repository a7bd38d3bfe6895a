import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Tests never write into the project's own MLflow store.
os.environ.setdefault("NEURIPS26_PROGRESS", "0")


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def one_torch_thread():
    """The test on one torch thread, the thread count restored after it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config):
    """Under pytest-xdist the controller makes the shared runs' folder before its workers
    start, so they all find the same one (tests/smoke_runs.py)."""
    if not _is_worker(config) and getattr(config.option, "numprocesses", None):
        import smoke_runs

        smoke_runs.base()


# Tests that must share one xdist worker: the cluster tests
# share one SLURM cluster (a module fixture) and install daemons with apt-get, which takes a lock;
# the smoke DAG's tests rerun Snakemake in its one folder. `make test` runs `--dist loadfile`, which keeps
# each group together as each is one file (test_cluster.py; the smoke tests are in test_workflow.py): with
# pytest 9.2, xdist 3.8's `--dist loadgroup` no longer puts the group into the test ids and spreads these
# marks' groups over the workers. The marks stay for a --dist loadgroup that works again.
GROUPS = {"cluster": lambda item: item.path.name == "test_cluster.py",
          "smoke": lambda item: "smoke" in getattr(item, "fixturenames", ())}


# Files whose tests each run Snakemake or other processes for minutes: they go first, so that the
# longest chains (the cluster group runs one test after another) start at once and the short
# unit tests fill the gaps; the smoke DAG's tests go last, when their run is likely done.
SLOW_FIRST = ("test_cluster.py", "test_reruns.py", "test_fed_harness_flower.py")


def _order(item) -> int:
    if item.path.name in SLOW_FIRST:
        return SLOW_FIRST.index(item.path.name)
    return len(SLOW_FIRST) + 1 if GROUPS["smoke"](item) else len(SLOW_FIRST)


def pytest_collection_modifyitems(config, items):
    for item in items:
        for group, member in GROUPS.items():
            if member(item):
                item.add_marker(pytest.mark.xdist_group(group))
                break
    items.sort(key=_order)  # stable: collection order within each class


def pytest_collection_finish(session):
    """Start the shared smoke DAGs right after collection when a selected test needs one, so they
    run beside the unit tests (see tests/smoke_runs.py). Every xdist worker collects every test;
    the first to get here starts the run."""
    if session.config.option.collectonly:
        return
    import smoke_runs

    wanted = [name for name in smoke_runs.SHARED_RUNS
              if any(name in getattr(item, "fixturenames", ()) for item in session.items)]
    smoke_runs.start(wanted)


def pytest_sessionfinish(session, exitstatus):
    """The process that made the shared runs' folder (the controller, or the only process)
    stops the runs and removes it once every test has ended."""
    if not _is_worker(session.config):
        import smoke_runs

        smoke_runs.stop_all()
