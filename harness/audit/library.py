"""Audit one ADK ``Session`` in a team's own tests, or after each production turn.

    from harness.audit import audit_session
    session = await service.get_session(app_name=..., user_id=..., session_id=...)
    audit_session(session).assert_clean()

The session is judged as its service persisted it: read it back with ``get_session`` (the live object an agent
holds between appends also carries ``temp:`` keys, which are never persisted). The neutral profile runs the
checks that need no knowledge of the agent; pass the agent's profile for the rest.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..checks.base import CheckResult
from ..targets.profile import TargetProfile
from .checks import run_audit_checks
from .model import StoredEvent, StoredSession

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

APP_PREFIX, USER_PREFIX = "app:", "user:"


@dataclass(frozen=True)
class SessionAudit:
    """The audit checks' results for one session."""

    session_key: str
    results: tuple[CheckResult, ...]

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.failed]

    @property
    def ok(self) -> bool:
        return not self.failed

    def message(self) -> str:
        lines = [f"session {self.session_key}: {len(self.failed)} audit check(s) failed"]
        for result in self.failed:
            lines.append(f"  {result.name}: {result.explanation}")
            lines.extend(f"    - {line}" for line in result.evidence)
        return "\n".join(lines)

    def assert_clean(self) -> None:
        """Raise ``AssertionError`` naming each failed check, its events and keys, if any check failed."""
        if not self.ok:
            raise AssertionError(self.message())

    raise_for_violations = assert_clean


def _split(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(session, app, user) state from ADK's merged view; app:/user: keys lose their prefix as stored."""
    own, app, user = {}, {}, {}
    for key, value in state.items():
        if key.startswith(APP_PREFIX):
            app[key[len(APP_PREFIX):]] = value
        elif key.startswith(USER_PREFIX):
            user[key[len(USER_PREFIX):]] = value
        else:
            own[key] = value
    return own, app, user


def _stored_event(position: int, event: Event) -> StoredEvent:
    parts = event.content.parts if event.content and event.content.parts else []
    return StoredEvent(
        position=position, id=event.id, author=event.author, invocation_id=event.invocation_id,
        timestamp=event.timestamp, state_delta=dict(event.actions.state_delta or {}) if event.actions else {},
        row=f"event {event.id}",
        function_calls=tuple(c.name or "" for c in event.get_function_calls()),
        function_responses=tuple(r.name or "" for r in event.get_function_responses()),
        has_content=bool(parts), content=event.content.model_dump(mode="json", exclude_none=True)
        if event.content else None)


def stored_session(session: Session, *, nulls_are_deletes: bool = False) -> StoredSession:
    """``session`` as a store would hold it (partial events are never persisted, so they are left out)."""
    own, app, user = _split(dict(session.state))
    events = [e for e in session.events if not e.partial]
    return StoredSession(
        layout="session", app_name=session.app_name, user_id=session.user_id, session_id=session.id,
        state=own, app_state=app, user_state=user,
        events=tuple(_stored_event(i, e) for i, e in enumerate(events)),
        update_time=session.last_update_time, nulls_are_deletes=nulls_are_deletes,
        row=f"session {session.id} state")


def audit_session(session: Session, *, profile: TargetProfile | None = None, nulls_are_deletes: bool | None = None,
                  only: Collection[str] | None = None) -> SessionAudit:
    """Run the audit checks over one ADK ``Session``.

    ``nulls_are_deletes``: whether the service that wrote it deletes a key on None (the reference
    ``DeltaSessionService``) rather than storing None (ADK's services; the default). ``profile``: the agent's
    target profile (default: the neutral one, so checks that need roles or a contract are n/a).
    """
    stored = stored_session(session, nulls_are_deletes=bool(nulls_are_deletes))
    results = run_audit_checks(stored, profile or TargetProfile(), only=only)
    return SessionAudit(session_key=stored.key, results=tuple(results))
