"""``explore --example-timeout S`` (issue 51): a target whose turn hangs is a finding, target_hung, naming where
it was stuck — not an explore that hangs silently. The target (tests/broken_targets.py ``deadlocked_executor``)
deadlocks its job_builder on every delegation, as upstream's local executor did on ~200 KB of output."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.explore.hang import where

pytestmark = pytest.mark.slow


def test_a_hanging_turn_is_a_finding_naming_where_the_target_was_stuck(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    code = main(["explore", "--target", "tests.broken_targets:deadlocked_executor", "--seed", "0", "--no-database",
                 "--no-progress", "--fail-on-find", "-j", "1", "--max-examples", "1", "--shrink-runs", "4",
                 "--example-timeout", "10", "--check", "minimal_deltas", "--out", str(tmp_path / "found")])
    out = capsys.readouterr().out
    assert code == 1, out
    assert time.monotonic() - started < 300, out  # two hangs of 10 s, a worker restarted, on a loaded machine
    (path,) = (tmp_path / "found").glob("*target_hung.yaml")
    text = path.read_text(encoding="utf-8")
    assert "within --example-timeout 10s; stuck in tests/broken_targets.py:" in text and "(_stuck_on_a_full_pipe)" in text
    assert yaml.safe_load(text)["sessions"]


def test_where_names_the_innermost_frame_outside_the_standard_library() -> None:
    import threading

    dump = (f'Timeout (0:00:04)!\nThread 0x1 (most recent call first):\n'
            f'  File "{threading.__file__}", line 320 in wait\n'
            f'  File "/srv/agent/executor.py", line 88 in read_all\n'
            f'  File "/srv/agent/loop.py", line 12 in run\n\n'
            f'Current thread 0x2 (most recent call first):\n  File "{threading.__file__}", line 1 in join\n'
            f'  File "<frozen importlib._bootstrap>", line 241 in _call_with_frames_removed\n')
    assert where(dump) == "/srv/agent/executor.py:88 (read_all)"
