"""The REPL namespace persists across separate Job_B processes through the snapshot in the volume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent

REPO = Path(__file__).resolve().parents[2]


def run_block(tmp_path: Path, iteration: int, code: str) -> dict[str, Any]:
    folder = tmp_path / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    artifact = folder / f"code_{iteration}.py"
    artifact.write_text(code, encoding="utf-8")
    argv = [sys.executable, "-m", "reference_agent.executor", "--artifact-path", str(artifact), "--run-id", "s1",
            "--iteration", str(iteration), "--timeout", "10", "--namespace-path", str(folder / "namespace_s1.pkl")]
    proc = subprocess.run(argv, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path, capture_output=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return json.loads((folder / f"result_s1_iter{iteration}.json").read_text(encoding="utf-8"))


def test_a_variable_built_over_three_runs_answers_with_final_var(tmp_path: Path) -> None:
    run_block(tmp_path, 1, "import math\nparts = ['a']\n")
    second = run_block(tmp_path, 2, "parts.append('b')\nroot = math.sqrt(16)\n")
    assert second["namespace"]["restored"] == ["math", "parts"]
    third = run_block(tmp_path, 3, "parts.append(str(int(root)))\nanswer = '-'.join(parts)\nFINAL_VAR('answer')\n")
    assert third["status"] == "success"
    assert third["final_answer"] == "a-b-4"
    assert third["final_var"] == "answer"


def test_unpicklable_values_are_named_not_fatal(tmp_path: Path) -> None:
    first = run_block(tmp_path, 1, "import socket\nf = lambda x: x\ns = socket.socket()\nkept = 1\n")
    assert first["status"] == "success"
    assert set(first["namespace"]["unpicklable"]) == {"f", "s"}
    assert "kept" in first["namespace"]["kept"]
    second = run_block(tmp_path, 2, "print(kept, 'f' in globals())\n")
    assert second["stdout"] == "1 False\n"


def test_reserved_names_are_restored_after_a_block_overwrites_them(tmp_path: Path) -> None:
    run_block(tmp_path, 1, "context = 'mine'\nFINAL = None\nx = 5\n")
    second = run_block(tmp_path, 2, "print(context)\nFINAL(x)\n")
    assert second["stdout"] == "None\n"
    assert second["final_answer"] == "5"


def test_final_var_of_a_name_never_defined_is_reported(tmp_path: Path) -> None:
    result = run_block(tmp_path, 1, "FINAL_VAR('nowhere')\n")
    assert result["status"] == "success"
    assert result["final_answer"] is None
    assert "variable 'nowhere' is not defined" in result["final_error"]


def test_a_corrupt_snapshot_is_reported_and_the_block_still_runs(tmp_path: Path) -> None:
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "namespace_s1.pkl").write_bytes(b"not a pickle")
    result = run_block(tmp_path, 1, "print('ran')\n")
    assert result["stdout"] == "ran\n"
    assert "could not be loaded" in result["namespace"]["restore_error"]
