"""How checks name what they talk about: one spelling for events, requests, rows and values.

Every evidence string starts with the thing it is about, spelled by these
helpers, so a reader can find it in the trace (``event #12``, ``request #3``,
``persisted row seq 7 of session s1``) whichever check reported it.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ..trace.model import EventRecord, LlmRequestRecord, PersistedEventRow, PersistedSnapshot

MAX_EVIDENCE = 30
"""Evidence lines a check reports before summarising the rest as '... and N more'."""


def short_id(value: str, keep: int = 12) -> str:
    """An id cut to ``keep`` characters (invocation ids are uuids: the head is enough to find them)."""
    return value if len(value) <= keep + 1 else value[:keep] + "…"


def name_event(event: EventRecord) -> str:
    return (f"event #{event.index} (author {event.author}, invocation {short_id(event.invocation_id)}, "
            f"turn {event.turn})")


def name_request(request: LlmRequestRecord) -> str:
    return (f"request #{request.index} (agent {request.agent}, invocation {short_id(request.invocation_id)}, "
            f"turn {request.turn})")


def name_row(snapshot: PersistedSnapshot, row: PersistedEventRow) -> str:
    return (f"persisted row seq {row.seq} (author {row.author}, invocation {short_id(row.invocation_id)}) "
            f"of session {snapshot.session_id}")


def name_snapshot(snapshot: PersistedSnapshot) -> str:
    return f"persisted snapshot of session {snapshot.session_id} after turn {snapshot.turn}"


def show(value: Any, limit: int = 80) -> str:
    """``repr`` of a value, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def keys_list(keys: Iterable[str], limit: int = 8) -> str:
    keys = list(keys)
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f", … ({len(keys) - limit} more)" if len(keys) > limit else "")


def json_bytes(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (what a JSON column holds)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8"))


def capped(evidence: list[str], limit: int = MAX_EVIDENCE) -> list[str]:
    """``evidence`` with at most ``limit`` lines; the rest is counted, not dropped silently."""
    if len(evidence) <= limit:
        return evidence
    return [*evidence[:limit], f"... and {len(evidence) - limit} more"]
