"""LocalVolumeStore: volume path strings over a local folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from reference_agent.backends.volume import LocalVolumeStore, VolumeStore

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent


def test_paths_are_strings_under_root(tmp_path: Path) -> None:
    volume = LocalVolumeStore(tmp_path / "vol")
    assert isinstance(volume, VolumeStore)
    assert volume.root == (tmp_path / "vol").resolve().as_posix()
    assert volume.path("artifacts", "x.py") == f"{volume.root}/artifacts/x.py"


def test_write_read_exists_local_path(tmp_path: Path) -> None:
    volume = LocalVolumeStore(tmp_path / "vol")
    path = volume.path("a", "b", "c.txt")
    assert not volume.exists(path)
    volume.write_text(path, "héllo\n")
    assert volume.exists(path)
    assert volume.read_text(path) == "héllo\n"
    local = volume.local_path(path)
    assert local == (tmp_path / "vol" / "a" / "b" / "c.txt").resolve()
    assert local.read_bytes() == "héllo\n".encode()


def test_write_replaces_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    volume = LocalVolumeStore(tmp_path)
    path = volume.path("f.json")
    volume.write_text(path, "old")
    volume.write_text(path, "new")
    assert volume.read_text(path) == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_relative_paths_resolve_under_root(tmp_path: Path) -> None:
    volume = LocalVolumeStore(tmp_path)
    volume.write_text("rel/x.txt", "1")
    assert volume.read_text(volume.path("rel", "x.txt")) == "1"


@pytest.mark.parametrize("bad", ["../escape.txt", "/etc/passwd", "a/../../b"])
def test_paths_outside_root_are_refused(tmp_path: Path, bad: str) -> None:
    volume = LocalVolumeStore(tmp_path / "vol")
    with pytest.raises(ValueError, match="outside the volume root"):
        volume.write_text(bad, "x")
