"""A stored session seen as a run's trace, so the run-time checks that mean the same thing judge it unchanged.

``summary_persisted`` and ``artifacts_consumed`` reason about executions, processor runs and summary writes
over a ``Trace``; a stored session holds the same facts (authors, invocations, deltas, tool names). Building a
trace from it shares their logic exactly instead of copying it. Their evidence names ``event #<position>``;
``name_stored_events`` rewrites that into the stored event's id and seq, and drops the run-only ``turn``.
"""

from __future__ import annotations

import re

from ..trace.model import EventRecord, PersistedEventRow, PersistedSnapshot, Trace
from .model import StoredEvent, StoredSession
from ..checks.evidence import json_bytes

CONTENT_UNKNOWN = "(content not read from the store)"


def _text(event: StoredEvent) -> str:
    # A processor run needs text or a call; a reader that did not say whether the event had content is trusted.
    return "" if event.has_content is False else CONTENT_UNKNOWN


def stored_as_trace(stored: StoredSession) -> Trace:
    events = [EventRecord(index=e.position, session_id=stored.session_id, user_id=stored.user_id, turn=0,
                          invocation_id=e.invocation_id or "", author=e.author or "",
                          emitted_delta=dict(e.state_delta), appended_delta=dict(e.state_delta),
                          function_calls=list(e.function_calls), function_responses=list(e.function_responses),
                          text=_text(e))
              for e in stored.events]
    rows = [PersistedEventRow(seq=e.position + 1, author=e.author or "", invocation_id=e.invocation_id or "",
                              state_delta={k: v for k, v in e.state_delta.items()
                                           if v is not None or not stored.nulls_are_deletes},
                              deleted_keys=[k for k, v in e.state_delta.items()
                                            if v is None and stored.nulls_are_deletes])
            for e in stored.events]
    snapshot = PersistedSnapshot(session_id=stored.session_id, user_id=stored.user_id, turn=0,
                                 session_state=dict(stored.state), app_state=dict(stored.app_state or {}),
                                 user_state=dict(stored.user_state or {}), events=rows, source="rows",
                                 state_bytes=json_bytes(stored.state))
    return Trace(scenario=f"audit {stored.key}", target=stored.app_name, llm_mode="audit",
                 session_service=f"stored ({stored.layout} layout)", events=events, persisted=[snapshot])


def describe_event(event: StoredEvent) -> str:
    seq = f", seq {event.seq}" if event.seq is not None else ""
    return f"event {event.id} (position {event.position}{seq}, author {event.author})"


_EVENT = re.compile(r"event #(\d+) \(author [^,]*, invocation [^,]*, turn \d+\)")
_ROW = re.compile(r"persisted row seq (\d+) \(author [^,]*, invocation [^)]*\) of session [^\s)]+")
_ROW_SEQ = re.compile(r"(?<=before )seq (\d+)|seq (\d+) \(author [^)]*\)")  # rows named by their seq alone


class _First:
    """The first group of a match that matched, as ``group(1)`` (for a pattern of alternatives)."""

    def __init__(self, match: re.Match[str]) -> None:
        self._match = match

    def group(self, index: int) -> str:
        return self._match.group(0) if index == 0 else next(g for g in self._match.groups() if g is not None)


def name_stored_events(line: str, stored: StoredSession) -> str:
    """``line`` of a run-time check's evidence in the stored session's terms."""
    by_position = {e.position: e for e in stored.events}

    def event(match: re.Match[str] | _First, offset: int = 0) -> str:
        found = by_position.get(int(match.group(1)) - offset)
        return describe_event(found) if found is not None else match.group(0)

    line = _EVENT.sub(event, line)
    line = _ROW.sub(lambda m: event(m, 1), line)
    line = _ROW_SEQ.sub(lambda m: event(_First(m), 1), line)
    return f"session {stored.key}: {line}"
