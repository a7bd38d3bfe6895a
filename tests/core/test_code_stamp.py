"""A paper's code stamp covers its own package, the shared code and the harnesses it USES, and
nothing else: a harness change reruns exactly the papers that name it."""

import types

import pytest

import neurips26.papers as papers
from neurips26.core import job


@pytest.fixture
def fake_tree(tmp_path, monkeypatch):
    root = tmp_path / "neurips26"
    for folder in ("core", "data", "papers/lm_assets", "papers/a", "papers/b", "papers/zz_harness"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text(f"# {folder}\n")
    (root / "core" / "job.py").write_text("")
    monkeypatch.setattr(job, "__file__", str(root / "core" / "job.py"))
    monkeypatch.setattr(papers, "info", lambda p: types.SimpleNamespace(
        USES=("zz_harness",) if p == "a" else ()))
    monkeypatch.setattr(papers, "__file__", str(root / "papers" / "__init__.py"))
    return root


def test_harness_change_reruns_only_its_users(fake_tree):
    before = {p: job.code_stamp(p) for p in ("a", "b")}
    (fake_tree / "papers/zz_harness/__init__.py").write_text("# changed\n")
    after = {p: job.code_stamp(p) for p in ("a", "b")}
    assert after["a"] != before["a"]
    assert after["b"] == before["b"]
    (fake_tree / "core/__init__.py").write_text("# core changed\n")
    assert job.code_stamp("a") != after["a"] and job.code_stamp("b") != after["b"]


def test_uses_names_a_harness_or_fails(fake_tree, monkeypatch):
    assert papers.uses("a") == ("zz_harness",)
    monkeypatch.setattr(papers, "info", lambda p: types.SimpleNamespace(USES=("b",)))
    (fake_tree / "papers/b/steps.py").write_text("")
    with pytest.raises(KeyError, match="not a harness package"):
        papers.uses("a")
