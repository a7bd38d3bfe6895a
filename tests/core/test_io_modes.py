"""Atomic writes leave files with the mode a plain `open` would give them under the umask."""

import os
import stat

import pytest

from neurips26.core import io


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_writes_follow_the_umask(tmp_path, umask, mask, expected):
    umask(mask)
    assert io.umask() == mask
    io.write_text(tmp_path / "a.txt", "x\n")
    io.write_csv(tmp_path / "t.csv", [{"a": 1}])
    io.write_json(tmp_path / "d" / "m.json", {"a": 1})
    plain = tmp_path / "plain.txt"
    plain.write_text("x\n")
    assert _mode(plain) == expected
    for name in ("a.txt", "t.csv", "d/m.json"):
        assert _mode(tmp_path / name) == expected, name
    # no temp file is left beside them
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "d", "plain.txt", "t.csv"]


def test_overwrite_takes_the_umask_mode_too(tmp_path, umask):
    target = tmp_path / "summary.md"
    target.write_text("old\n")
    target.chmod(0o600)  # a file an earlier version wrote
    io.write_text(target, "new\n")
    assert target.read_text() == "new\n" and _mode(target) == 0o644


def test_figures_are_readable(tmp_path, umask):
    from neurips26.core import plotting

    fig, axes = plotting.figure()
    axes[0, 0].plot([0, 1], [0, 1])
    plotting.save(fig, tmp_path / "f.png")
    assert _mode(tmp_path / "f.png") == 0o644
