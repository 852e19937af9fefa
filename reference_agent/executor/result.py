"""The result JSON Job_B leaves next to the artifact: its name, shape and atomic write.

Shared by the executor (which writes it) and the job runners (which write one
themselves when the executor died before it could).
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import Any, Literal

from .files import write_atomic

Status = Literal["success", "error", "timeout", "exit", "killed"]
STATUSES: tuple[str, ...] = ("success", "error", "timeout", "exit", "killed")

# The executor's second-stage timeout fires this long after the soft one; a runner's
# hard wall-clock grace must be longer, so the executor gets to write its own result.
EXECUTOR_TIMEOUT_GRACE_S = 1.0
TRACEBACK_CAP_CHARS = 8_000


def result_filename(run_id: str, iteration: int) -> str:
    return f"result_{run_id}_iter{iteration}.json"


def result_volume_path(artifact_path: str, run_id: str, iteration: int) -> str:
    """The result's volume path: the artifact's directory, ``result_{run_id}_iter{n}.json``."""
    return posixpath.join(posixpath.dirname(artifact_path), result_filename(run_id, iteration))


def new_result(*, run_id: str, iteration: int, artifact_path: str) -> dict[str, Any]:
    """A result with every key present, as if nothing ran; callers fill in what happened."""
    return {
        "run_id": run_id,
        "iteration": iteration,
        "artifact_path": artifact_path,
        "status": "error",
        "exit_code": None,
        "signal": None,
        "error": None,
        "stdout": "",
        "stderr": "",
        "stdout_bytes": 0,
        "stderr_bytes": 0,
        "stdout_truncated": False,
        "stderr_truncated": False,
        "duration_s": 0.0,
        "final_answer": None,
        "final_var": None,
        "final_error": None,
        "sublm_calls": [],
        "code_blocks": 1,
        "has_final_call": False,
        # Variables kept for the next run, and those that could not be (name -> why).
        "namespace": {"kept": [], "unpicklable": {}, "restored": [], "restore_error": None},
        # "executor" when Job_B wrote it, "runner" when the job runner had to.
        "written_by": "executor",
        # {"mode": "one-shot" | "warm", "blocks": blocks the process has run, this one included}.
        "executor_process": None,
    }


def bound_traceback(text: str, cap: int = TRACEBACK_CAP_CHARS) -> str:
    """Keep the tail: the frames nearest the error and the error line matter most."""
    if len(text) <= cap:
        return text
    return f"... [{len(text) - cap} characters of traceback omitted] ...\n" + text[-cap:]


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Readers never see half a result."""
    # ensure_ascii: lone surrogates in user strings stay representable.
    write_atomic(path, json.dumps(payload, ensure_ascii=True, indent=1).encode("utf-8"))
