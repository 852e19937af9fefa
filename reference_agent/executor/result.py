"""The result JSON Job_B leaves next to the artifact: its name, shape and atomic write.

Shared by the executor (which writes it) and the job runners (which write one
themselves when the executor died before it could).
"""

from __future__ import annotations

import json
import posixpath
import signal
from pathlib import Path
from typing import Any, Literal

from .files import write_atomic
from .final import has_final_call

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
        "sublm_batches": [],
        "code_blocks": 1,
        "has_final_call": False,
        # Variables kept for the next run, and those that could not be (name -> why).
        "namespace": {"kept": [], "unpicklable": {}, "restored": [], "restore_error": None},
        # "executor" when Job_B wrote it, "runner" when the job runner had to.
        "written_by": "executor",
        # {"mode": "one-shot" | "warm", "blocks": blocks the process has run, this one included}.
        "executor_process": None,
        # What apply_confinement() reported ({"applied", "missing", ...}; confine.py); None without --confine.
        "confinement": None,
    }


# Signals a limit of the executor's confinement sends (executor/confine.py): said with the kill.
_SIGNAL_MEANING = {"SIGXCPU": ": it used up its CPU-time limit (RLIMIT_CPU, the executor's confinement)",
                   "SIGXFSZ": ": it wrote past its file-size limit (RLIMIT_FSIZE, the executor's confinement)"}


def runner_result(*, run_id: str, iteration: int, artifact: Path, returncode: int | None, hard_timeout: bool,
                  timeout_s: float, grace_s: float, duration_s: float, stdout: Any, stderr: Any) -> dict[str, Any]:
    """The result a job runner writes when Job_B ended without writing its own: how the process ended.

    ``stdout``/``stderr``: what the runner captured from the pipes (``text()``, ``total``, ``truncated``).
    Shared by ``LocalJobRunner`` and ``jobb_entry`` on Databricks, so both backends name an ending alike.
    """
    result = new_result(run_id=run_id, iteration=iteration, artifact_path=str(artifact))
    result["written_by"] = "runner"
    result["duration_s"] = duration_s
    for name, buffer in (("stdout", stdout), ("stderr", stderr)):
        result[name], result[f"{name}_bytes"], result[f"{name}_truncated"] = buffer.text(), buffer.total, buffer.truncated
    try:
        result["has_final_call"] = has_final_call(artifact.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        pass
    if hard_timeout:
        message = (f"Job_B exceeded the hard limit of {timeout_s + grace_s:g} s (timeout {timeout_s:g} s + grace "
                   f"{grace_s:g} s) and was killed")
        result.update(status="timeout", exit_code=None, signal=int(signal.SIGKILL))
        result["error"] = {"type": "HardTimeout", "message": message, "traceback": None}
    elif returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        result.update(status="killed", exit_code=returncode, signal=-returncode)
        why = _SIGNAL_MEANING.get(name, "")
        result["error"] = {"type": "Killed", "message": f"Job_B was killed by {name} before writing its result{why}",
                           "traceback": None}
    else:
        result.update(status="exit", exit_code=returncode)
        result["error"] = {"type": "Exit", "message": f"Job_B exited with code {returncode} before writing its "
                                                      "result (os._exit or a crash)", "traceback": None}
    return result


def bound_traceback(text: str, cap: int = TRACEBACK_CAP_CHARS) -> str:
    """Keep the tail: the frames nearest the error and the error line matter most."""
    if len(text) <= cap:
        return text
    return f"... [{len(text) - cap} characters of traceback omitted] ...\n" + text[-cap:]


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Readers never see half a result."""
    # ensure_ascii: lone surrogates in user strings stay representable.
    write_atomic(path, json.dumps(payload, ensure_ascii=True, indent=1).encode("utf-8"))
