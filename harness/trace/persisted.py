"""Reading back what storage holds after a turn: the evidence the checks trust.

A session service that can show its stored rows (``PersistedRowsReader``: the reference agent's does) is read
through them; any other is read back as ADK's ``get_session`` returns it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from google.adk.sessions.base_session_service import BaseSessionService

from .model import PersistedEventRow, PersistedSnapshot


class PersistedEventRows(Protocol):
    seq: int
    author: str | None
    invocation_id: str | None
    state_delta: dict[str, Any]
    deleted_keys: Sequence[str]


class PersistedSessionRows(Protocol):
    state: dict[str, Any]  # the session scope, as stored
    app_state: dict[str, Any]
    user_state: dict[str, Any]
    events: Sequence[PersistedEventRows]


@runtime_checkable
class PersistedRowsReader(Protocol):
    """What a session service offers to show its rows as stored (not as ``get_session`` rebuilds them)."""

    async def persisted_rows(self, *, app_name: str, user_id: str, session_id: str) -> PersistedSessionRows: ...


def _state_bytes(state: dict[str, Any]) -> int:
    return len(json.dumps(state, ensure_ascii=False, default=repr).encode("utf-8"))


async def persisted_snapshot(service: BaseSessionService, *, app_name: str, user_id: str, session_id: str,
                             turn: int) -> PersistedSnapshot:
    """Rows as stored when the service can show them (a ``PersistedRowsReader``), else a fresh reload."""
    if isinstance(service, PersistedRowsReader):
        rows = await service.persisted_rows(app_name=app_name, user_id=user_id, session_id=session_id)
        return PersistedSnapshot(
            session_id=session_id, user_id=user_id, turn=turn, session_state=rows.state,
            app_state=rows.app_state, user_state=rows.user_state, source="rows",
            events=[PersistedEventRow(seq=e.seq, author=e.author or "", invocation_id=e.invocation_id or "",
                                      state_delta=e.state_delta, deleted_keys=list(e.deleted_keys))
                    for e in rows.events],
            state_bytes=_state_bytes(rows.state),
        )
    session = await service.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
    state = dict(session.state) if session else {}
    scoped = {"app:": {}, "user:": {}}
    for key in list(state):
        for prefix, bucket in scoped.items():
            if key.startswith(prefix):
                bucket[key.removeprefix(prefix)] = state.pop(key)
    events = []
    for seq, event in enumerate(session.events if session else []):
        delta = dict(event.actions.state_delta or {}) if event.actions else {}
        events.append(PersistedEventRow(seq=seq, author=event.author or "", invocation_id=event.invocation_id or "",
                                        state_delta=delta))
    return PersistedSnapshot(session_id=session_id, user_id=user_id, turn=turn, session_state=state,
                             app_state=scoped["app:"], user_state=scoped["user:"], events=events,
                             source="reload", state_bytes=_state_bytes(state))
