"""write_atomic: the one way files are replaced (results, snapshots, volume files, cassettes, reports).

The agent's (Job_B, the volume) and the harness's own copy (cassettes, snapshots, reports, the workspace
fake) behave the same: every test runs on both.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import files as harness_files
from reference_agent.executor import files as agent_files

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent


@pytest.fixture(params=[agent_files, harness_files], ids=["reference_agent", "harness"])
def write_atomic(request):
    return request.param.write_atomic


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path, monkeypatch, write_atomic) -> None:
    target = tmp_path / "deep" / "result.json"
    write_atomic(target, b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in target.parent.iterdir()] == ["result.json"]


def test_parents_are_created_and_the_mode_is_set(tmp_path: Path, write_atomic) -> None:
    target = tmp_path / "a" / "b" / "report.md"
    write_atomic(target, "ünïcode".encode(), mode=0o644, durable=True)
    assert target.read_text(encoding="utf-8") == "ünïcode"
    assert target.stat().st_mode & 0o777 == 0o644
