"""write_atomic: the one way files are replaced (results, snapshots, volume files, cassettes, reports)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reference_agent.executor.files import write_atomic


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "deep" / "result.json"
    write_atomic(target, b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in target.parent.iterdir()] == ["result.json"]


def test_parents_are_created_and_the_mode_is_set(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "report.md"
    write_atomic(target, "ünïcode".encode(), mode=0o644, durable=True)
    assert target.read_text(encoding="utf-8") == "ünïcode"
    assert target.stat().st_mode & 0o777 == 0o644
