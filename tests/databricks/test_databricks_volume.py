"""UcVolumeStore against the fake workspace's Files API, through the real SDK client."""

from __future__ import annotations

import pytest

from reference_agent.backends.databricks.volume import UcVolumeStore
from reference_agent.backends.volume import VolumeStore

VOLUME_ROOT = "/Volumes/main/rlm/vol/rlm"  # conftest's volume fixture


def test_paths_are_volume_strings(volume: UcVolumeStore) -> None:
    assert isinstance(volume, VolumeStore)
    assert volume.root == VOLUME_ROOT
    assert volume.path("artifacts", "x.py") == f"{VOLUME_ROOT}/artifacts/x.py"
    assert volume.local_path(volume.path("x")) is None
    with pytest.raises(ValueError, match="outside the volume root"):
        volume.exists(volume.path("..", "..", "other", "x"))
    with pytest.raises(ValueError, match="/Volumes/<catalog>/<schema>/<volume>"):
        UcVolumeStore(volume._client, "/tmp/not-a-volume")


def test_round_trip_exists_overwrite_delete(volume: UcVolumeStore, fake) -> None:
    path = volume.path("a", "b", "c.json")
    assert not volume.exists(path)
    volume.write_text(path, "héllo 🚀\n")
    assert volume.exists(path)
    assert volume.read_text(path) == "héllo 🚀\n"
    assert fake.local_path(path).read_bytes() == "héllo 🚀\n".encode()  # parents created, bytes as sent
    volume.write_text(path, "new")  # overwrite=true
    assert volume.read_text("a/b/c.json") == "new"  # relative paths resolve under root
    assert volume.delete(path) is True and volume.delete(path) is False
    assert not volume.exists(path)
    methods = {m for m, target in fake.requests if target.startswith("/api/2.0/fs/files/Volumes/main/rlm/vol/rlm/a/b")}
    assert methods == {"PUT", "GET", "HEAD", "DELETE"}


def test_missing_file_reads_as_file_not_found(volume: UcVolumeStore) -> None:
    with pytest.raises(FileNotFoundError, match="not in the volume"):
        volume.read_text(volume.path("nope.json"))
