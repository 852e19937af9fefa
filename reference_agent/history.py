"""The user's history across sessions (``user:rlm:history``) and the per-turn log it is folded from.

During a turn, ``delegate_code_results`` and ``job_builder`` append small records
to ``temp:rlm:turn_log`` through their ordinary state deltas (temp: scope: never
persisted). At the end of the turn ``run_conversation`` folds that log, the
question and the outcome into one history entry and appends it with an event
(``fold_turn`` builds the new list; nothing mutates a fetched session). The list
is bounded by a count here (oldest out); the analyst's prompt is bounded again
by a token budget when it is assembled (``context_assembly``).

Everything in an entry is cut, so one entry stays a few hundred bytes::

    {"session": "s1", "question": "Total sales?", "termination": "exit_loop",
     "answer": "The total is 200.", "artifacts": [{"id": "3f2a…", "status": "success"}]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import state_contract as keys

QUESTION_CHARS = 200
ANSWER_CHARS = 280
MAX_ARTIFACTS = 8


def cut(text: str | None, limit: int) -> str | None:
    """``text`` stripped and cut to ``limit`` characters (an ellipsis marks the cut); None stays None."""
    if text is None:
        return None
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- temp:rlm:turn_log ------------------------------------------------------------------------------


def logged(state: Mapping[str, Any], record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The turn log with ``record`` appended: the value a writer puts under ``temp:rlm:turn_log``."""
    return [*(state.get(keys.TURN_LOG) or []), dict(record)]


def delegated(artifact_id: str, iteration: int) -> dict[str, Any]:
    return {"step": "delegated", "artifact_id": artifact_id, "iteration": iteration}


def executed(artifact_id: str, status: str | None) -> dict[str, Any]:
    return {"step": "executed", "artifact_id": artifact_id, "status": status}


def artifacts_of(turn_log: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each delegated artifact once, in order, with the status of its last run (``pending`` if it never ran)."""
    status: dict[str, str] = {}
    for record in turn_log:
        artifact = record.get("artifact_id")
        if not artifact:
            continue
        if record.get("step") == "executed":
            status[artifact] = str(record.get("status") or "unknown")
        else:
            status.setdefault(artifact, "pending")
    return [{"id": artifact, "status": value} for artifact, value in list(status.items())[-MAX_ARTIFACTS:]]


# --- user:rlm:history -------------------------------------------------------------------------------


def history_entry(*, session_id: str, question: str, termination: str, answer: str | None,
                  turn_log: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"session": session_id, "question": cut(question, QUESTION_CHARS), "termination": termination,
            "answer": cut(answer, ANSWER_CHARS), "artifacts": artifacts_of(turn_log)}


def fold_turn(history: Sequence[Mapping[str, Any]] | None, entry: Mapping[str, Any], *,
              max_entries: int) -> list[dict[str, Any]]:
    """The new history: ``entry`` appended, then only the newest ``max_entries`` kept."""
    kept = [dict(item) for item in (history or []) if isinstance(item, Mapping)]
    return [*kept, dict(entry)][-max(1, max_entries):]


def render_entry(entry: Mapping[str, Any]) -> str:
    """One history entry as a prompt line."""
    artifacts = ", ".join(f"{a.get('id')} {a.get('status')}" for a in entry.get("artifacts") or [])
    answer = entry.get("answer")
    line = f"- [session {entry.get('session')}] Q: {entry.get('question')}\n  -> {entry.get('termination')}"
    if answer:
        line += f": {answer}"
    if artifacts:
        line += f" (artifacts: {artifacts})"
    return line
