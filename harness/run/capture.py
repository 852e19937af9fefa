"""Reading back what storage holds after a turn: the evidence the checks trust."""

from __future__ import annotations

import json
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService

from ..trace.model import PersistedEventRow, PersistedSnapshot


def _state_bytes(state: dict[str, Any]) -> int:
    return len(json.dumps(state, ensure_ascii=False, default=repr).encode("utf-8"))


async def persisted_snapshot(service: BaseSessionService, *, app_name: str, user_id: str, session_id: str,
                             turn: int) -> PersistedSnapshot:
    """Rows as stored when the service can show them (DeltaSessionService), else a fresh reload."""
    rows_reader = getattr(service, "persisted_rows", None)
    if rows_reader is not None:
        rows = await rows_reader(app_name=app_name, user_id=user_id, session_id=session_id)
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
