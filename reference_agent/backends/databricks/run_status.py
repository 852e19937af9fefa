"""How a Job_B run stands and how it ended, from ``runs/get``: ``status`` first, the deprecated ``state`` else.

Jobs API 2.2 answers ``status`` (``state``: QUEUED, PENDING, RUNNING, TERMINATING,
TERMINATED, BLOCKED, WAITING_FOR_RETRY; ``termination_details``: ``code`` such as
SUCCESS, RUN_EXECUTION_ERROR, USER_CANCELED, CANCELED, SKIPPED, INTERNAL_ERROR,
LIBRARY_INSTALLATION_ERROR, ``type`` SUCCESS, CLIENT_ERROR, INTERNAL_ERROR or
CLOUD_FAILURE, and a ``message``) and still the deprecated ``state``
(``life_cycle_state`` / ``result_state`` / ``state_message``). An answer without
``status`` (an older API or a recording from before) is read from ``state``,
its result mapped onto the termination codes.
"""

from __future__ import annotations

from dataclasses import dataclass

from databricks.sdk.service import jobs as jobs_api

_LEGACY_TERMINAL = {"TERMINATED", "SKIPPED", "INTERNAL_ERROR"}
# Deprecated result_state -> the termination code that replaced it.
_LEGACY_CODES = {"SUCCESS": "SUCCESS", "FAILED": "RUN_EXECUTION_ERROR", "TIMEDOUT": "CANCELED",
                 "CANCELED": "CANCELED", "EXCLUDED": "SKIPPED", "UPSTREAM_FAILED": "SKIPPED",
                 "UPSTREAM_CANCELED": "SKIPPED", "SUCCESS_WITH_FAILURES": "SUCCESS_WITH_FAILURES"}
_PLATFORM_TYPES = {"INTERNAL_ERROR", "CLOUD_FAILURE"}


@dataclass(frozen=True)
class RunEnding:
    code: str  # the termination code, e.g. SUCCESS, RUN_EXECUTION_ERROR, CANCELED
    type: str | None  # SUCCESS, CLIENT_ERROR, INTERNAL_ERROR, CLOUD_FAILURE (None from a legacy answer)
    message: str
    legacy_result: str | None = None  # the deprecated result_state, e.g. TIMEDOUT, when the answer had one


def _value(enum: object) -> str | None:
    return getattr(enum, "value", None)


def state_of(run: jobs_api.Run) -> tuple[str, str]:
    """The run's current state name and what explains it (``status`` first; a waiting run's reason, such as
    "Waiting for cluster to start.", is only in the deprecated ``state_message`` or in ``queue_details``)."""
    status, legacy = run.status, run.state
    legacy_message = (legacy.state_message if legacy else None) or ""
    if status is not None and status.state is not None:
        details, queued = status.termination_details, status.queue_details
        message = (details.message if details else None) or (queued.message if queued else None) or legacy_message
        return status.state.value, message
    if legacy is not None and legacy.life_cycle_state is not None:
        return legacy.life_cycle_state.value, legacy_message
    return "UNKNOWN", ""


def is_terminal(run: jobs_api.Run) -> bool:
    status = run.status
    if status is not None and status.state is not None:
        return status.state is jobs_api.RunLifecycleStateV2State.TERMINATED
    life = _value(run.state.life_cycle_state) if run.state else None
    return life in _LEGACY_TERMINAL


def ending_of(run: jobs_api.Run) -> RunEnding:
    """How a terminal run ended."""
    legacy = run.state or jobs_api.RunState()
    legacy_result = _value(legacy.result_state)
    details = run.status.termination_details if run.status else None
    if details is not None and details.code is not None:
        return RunEnding(details.code.value, _value(details.type), details.message or "", legacy_result)
    life = _value(legacy.life_cycle_state)
    if life in ("INTERNAL_ERROR", "SKIPPED"):
        code = life
    else:
        code = _LEGACY_CODES.get(legacy_result or "", legacy_result or life or "UNKNOWN")
    return RunEnding(code, None, legacy.state_message or "", legacy_result)


def describe_failure(ending: RunEnding, result_path: str) -> str:
    """Why a run left no result JSON, in words that say whose fault it was (a sentence tail after 'Job_B run N')."""
    code = ending.code
    if code == "SUCCESS":
        return f"succeeded but its result JSON {result_path} is not in the volume (Files API 404)"
    if code == "RUN_EXECUTION_ERROR":
        return ("failed (RUN_EXECUTION_ERROR) before writing its result JSON: Job_B itself did not start or "
                "crashed (the analyst code's own errors are results, not task failures)")
    if code == "CANCELED" and (ending.legacy_result == "TIMEDOUT" or "timed out" in ending.message.lower()):
        return "was CANCELED because it hit the run's timeout_seconds (TIMEDOUT) before writing its result JSON"
    if code == "CANCELED":
        return "was CANCELED by the platform before writing its result JSON"
    if code == "USER_CANCELED":
        return "was cancelled by a user (USER_CANCELED) before writing its result JSON"
    if code == "SKIPPED":
        return "was SKIPPED and never ran (e.g. a concurrent-run limit or an upstream failure)"
    if code == "LIBRARY_INSTALLATION_ERROR":
        return ("could not install its library, Job_B's payload wheel (LIBRARY_INSTALLATION_ERROR): check that the "
                "wheel is on the volume and that the compute can install a py3-none-any wheel (Python >= 3.10)")
    if code == "INTERNAL_ERROR" or ending.type in _PLATFORM_TYPES:
        kind = f" ({ending.type})" if ending.type and ending.type != code else ""
        return (f"ended in {code}{kind}: the platform failed (cluster, library install, workspace), "
                "not the analyst code")
    kind = f", {ending.type}" if ending.type else ""
    return f"ended {code}{kind} without a result JSON"
