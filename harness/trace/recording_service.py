"""A session service wrapper that records every event as the runner appends it.

It delegates everything to the target's own service, so what is persisted is
exactly what the target's service does; it only copies each event's delta
before (as the writer emitted it) and after ``append_event`` (as the service
left it). The harness owns the wrapper; the target never sees the difference.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Optional

from google.adk.events import Event
from google.adk.sessions import Session
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse

from .model import CodePartRecord, EventRecord

CODE_OUTPUT_CHARS = 2_000
"""How much of a code execution result's output an event record keeps."""


def _names(event: Event, attr: str) -> list[str]:
    getter = getattr(event, attr, None)
    return [item.name for item in (getter() if getter else []) if getattr(item, "name", None)]


def _text(event: Event, limit: int = 2_000) -> str:
    if not event.content or not event.content.parts:
        return ""
    text = "".join(p.text for p in event.content.parts if getattr(p, "text", None) and not getattr(p, "thought", False))
    return text[:limit]


def code_parts(event: Event) -> list[CodePartRecord]:
    """The event's executable_code and code_execution_result parts, in content order."""
    parts = event.content.parts if event.content and event.content.parts else []
    found: list[CodePartRecord] = []
    for part in parts:
        if getattr(part, "executable_code", None) is not None:
            found.append(CodePartRecord(kind="executable_code", code=part.executable_code.code or ""))
        if getattr(part, "code_execution_result", None) is not None:
            result = part.code_execution_result
            outcome = getattr(result.outcome, "name", None) or (str(result.outcome) if result.outcome else None)
            found.append(CodePartRecord(kind="code_execution_result", outcome=outcome,
                                        output=(result.output or "")[:CODE_OUTPUT_CHARS]))
    return found


class RecordingSessionService(BaseSessionService):
    def __init__(self, inner: BaseSessionService, *, current_turn: Callable[[], int],
                 clock: Callable[[], int] = lambda: -1,
                 artifact_statuses: Callable[[str, str, str], dict[str, str]] | None = None,
                 observer: Any = None) -> None:
        self.inner = inner
        # Told ``before_append(index, event)`` and ``after_append(event, record)`` around each whole event's append
        # (a crash run's journal and kill switch, harness/crash/journal.py); None: nobody.
        self._observer = observer
        self.records: list[EventRecord] = []
        self._current_turn = current_turn
        self._clock = clock
        # (app, user, session) -> {artifact id: status}: read after each append, so a check can tell *when* an
        # artifact changed status (consumed after its summary, not at execution).
        self._artifact_statuses = artifact_statuses

    async def create_session(self, *, app_name: str, user_id: str, state: Optional[dict[str, Any]] = None,
                             session_id: Optional[str] = None) -> Session:
        return await self.inner.create_session(app_name=app_name, user_id=user_id, state=state, session_id=session_id)

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: Optional[GetSessionConfig] = None) -> Optional[Session]:
        return await self.inner.get_session(app_name=app_name, user_id=user_id, session_id=session_id, config=config)

    async def list_sessions(self, *, app_name: str, user_id: Optional[str] = None) -> ListSessionsResponse:
        return await self.inner.list_sessions(app_name=app_name, user_id=user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self.inner.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self.inner.get_user_state(app_name=app_name, user_id=user_id)

    async def append_event(self, session: Session, event: Event) -> Event:
        emitted = copy.deepcopy(dict(event.actions.state_delta or {})) if event.actions else {}
        if self._observer is not None and not event.partial:
            self._observer.before_append(len(self.records), event)
        appended = await self.inner.append_event(session, event)
        if appended.partial:
            return appended
        actions = appended.actions
        self.records.append(
            EventRecord(
                index=len(self.records),
                seq=self._clock(),
                session_id=session.id,
                user_id=session.user_id,
                turn=self._current_turn(),
                invocation_id=appended.invocation_id or "",
                author=appended.author or "",
                emitted_delta=_jsonable(emitted),
                appended_delta=_jsonable(dict(actions.state_delta or {})) if actions else {},
                escalate=bool(actions and actions.escalate),
                transfer_to_agent=actions.transfer_to_agent if actions else None,
                function_calls=_names(appended, "get_function_calls"),
                function_responses=_names(appended, "get_function_responses"),
                text=_text(appended),
                partial=bool(appended.partial),
                code_parts=code_parts(appended),
                artifact_statuses=self._artifact_statuses(session.app_name, session.user_id, session.id)
                if self._artifact_statuses is not None else {},
            )
        )
        if self._observer is not None:
            self._observer.after_append(appended, self.records[-1])
        return appended

    async def flush(self) -> None:
        await self.inner.flush()


def _jsonable(value: dict[str, Any]) -> dict[str, Any]:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=repr)
