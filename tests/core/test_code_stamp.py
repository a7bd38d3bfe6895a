"""A paper's code stamp follows the import statements of its steps: an edit to one module of a
harness, of data/ or of core/ changes the stamps of exactly the papers whose steps import it
(directly or through other modules), and an edit to the entry point or the lock file changes
every stamp."""

import shutil

import pytest

import neurips26.papers as papers
from neurips26.core import job

ROOT = job._package_root()
GROUPS = [*papers.available(), *papers.SHARED]
LM_USERS = {"adapad", "adaprelora", "ar1_zo", "bdc_merge", "embed_merge", "es_dynamics", "fedaba", "fedlora_align",
            "lm_assets"}
# module edited -> the papers (or shared step groups) whose stamp must change, and no other
EDITS = {
    "papers/fed_harness/simulation.py": {"fedaba", "fedlora_align"},
    "papers/lora_harness/train.py": {"adapad", "adaprelora"},
    "papers/zo_harness/zo.py": {"ar1_zo", "es_dynamics"},
    "papers/zo_harness/es.py": {"es_dynamics"},
    "papers/lm_assets/steps.py": {"lm_assets", "bdc_merge"},
    "data/text_classification.py": {"adapad", "adaprelora", "fedaba", "fedlora_align"},
    "data/data_to_text.py": {"adapad", "adaprelora", "fedaba", "fedlora_align"},
    "core/lm.py": LM_USERS,
    "core/metrics.py": {"nar_dit"},
    "cli.py": set(GROUPS),
    "../../envs/requirements.lock": set(GROUPS),
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the package (and the lock file) that the test may edit."""
    base = tmp_path_factory.mktemp("stamp")
    root = base / "src" / "neurips26"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    lock = ROOT.parents[1] / job.LOCK_FILE
    (base / "envs").mkdir()
    shutil.copy2(lock, base / job.LOCK_FILE)
    return root


def stamps(root):
    return {p: job.code_stamp(p, root) for p in GROUPS}


@pytest.mark.parametrize("module", sorted(EDITS))
def test_an_edit_changes_exactly_its_dependants_stamps(tree, module):
    before = stamps(tree)
    path = tree / module
    original = path.read_bytes()
    try:
        path.write_bytes(original + b"\n# edited\n")
        after = stamps(tree)
    finally:
        path.write_bytes(original)
    assert {p for p in GROUPS if after[p] != before[p]} == EDITS[module]
    assert stamps(tree) == before


def test_the_copy_stamps_like_the_package(tree):
    assert stamps(tree) == {p: job.code_stamp(p) for p in GROUPS}


def test_core_imports_no_paper_and_no_harness_imports_another():
    for path in sorted((ROOT / "core").glob("*.py")):
        found = job.imported_modules(ROOT, path)
        assert not [m for m in found if m.startswith("neurips26.papers")], (path.name, found)
    harnesses = [p.name for p in (ROOT / "papers").iterdir() if p.name.endswith("_harness")]
    for name in harnesses:
        for path in sorted((ROOT / "papers" / name).glob("*.py")):
            others = {m.split(".")[2] for m in job.imported_modules(ROOT, path) if m.startswith("neurips26.papers.")}
            assert others <= {name}, (path, others)


def test_imports_inside_functions_and_relative_imports_count(tmp_path):
    root = tmp_path / "neurips26"
    for folder in ("core", "papers/p"):
        (root / folder).mkdir(parents=True)
    for init in ("__init__.py", "core/__init__.py", "papers/__init__.py", "papers/p/__init__.py"):
        (root / init).write_text("")
    (root / "cli.py").write_text("def _run_step():\n    from .core import a\n\ndef other():\n    from .core import b\n")
    (root / "core" / "a.py").write_text("")
    (root / "core" / "b.py").write_text("")
    (root / "core" / "c.py").write_text("")
    (root / "papers" / "p" / "steps.py").write_text("def train():\n    from ...core import c\n")
    names = {str(f.relative_to(root)) for f in job.code_files("p", root)}
    assert names == {"__init__.py", "cli.py", "core/__init__.py", "core/a.py", "core/c.py", "papers/__init__.py",
                     "papers/p/__init__.py", "papers/p/steps.py"}
