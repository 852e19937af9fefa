"""Session services as users bring them to ``--session-service module:attr`` (tests/harness/test_user_session_services.py).

None of them is broken: each is a correct service the harness has never seen, which must not be judged by
assumptions (issue 31: ADK's InMemorySessionService from a user's factory failed two checks in every scenario).
"""

from __future__ import annotations

from pathlib import Path

from google.adk.sessions import InMemorySessionService

CALLS: list[tuple[str, object]] = []
"""How each service below was built: (name, argument)."""


def adk_in_memory() -> InMemorySessionService:
    """A user's factory returning ADK's own in-memory service."""
    return InMemorySessionService()


class OwnSessions(InMemorySessionService):
    """A user's own class (here ADK's behaviour under another module): stores None, accepts a stale writer."""


class FileSessions(InMemorySessionService):
    """A class whose only parameter has a default, like upstream's ``DeltaSessionService(db_path=...)``."""

    def __init__(self, db_path: str = "sessions.duckdb") -> None:
        super().__init__()
        CALLS.append(("FileSessions", db_path))
        Path(db_path).write_text("opened\n", encoding="utf-8")  # a folder here would fail as duckdb.connect does


class DeletingSessions(InMemorySessionService):
    """ADK's in-memory service made to delete a key on ``None``, the way a user writes one (issue 51): after
    ADK's append, every key the delta sets to None is popped from storage and from the caller's session. The
    stored event keeps its delta as appended (``{key: None}``): that None is the delete, not a stored null."""

    async def append_event(self, session, event):  # noqa: ANN001, ANN201
        event = await super().append_event(session, event)
        deleted = [k for k, v in ((event.actions.state_delta or {}) if event.actions else {}).items() if v is None]
        stored = self.sessions.get(session.app_name, {}).get(session.user_id, {}).get(session.id)
        for key in deleted:
            session.state.pop(key, None)
            if key.startswith("app:"):
                self.app_state.get(session.app_name, {}).pop(key.removeprefix("app:"), None)
            elif key.startswith("user:"):
                self.user_state.get(session.app_name, {}).get(session.user_id, {}).pop(key.removeprefix("user:"), None)
            elif stored is not None:
                stored.state.pop(key, None)
        return event


class OwnStaleError(ValueError):
    """A home-made service's own stale-writer error: neither ADK's nor the harness's StaleSessionError."""


class RejectingSessions(InMemorySessionService):
    """A correct home-made service with optimistic concurrency of its own (issue 51, upstream's shape): an append
    from a session older than storage raises its own ``OwnStaleError`` and stores nothing."""

    async def append_event(self, session, event):  # noqa: ANN001, ANN201
        stored = self.sessions.get(session.app_name, {}).get(session.user_id, {}).get(session.id)
        if stored is not None and not event.partial and len(stored.events) != len(session.events):
            raise OwnStaleError(f"session {session.id} changed since it was read: reload it and retry")
        return await super().append_event(session, event)


class SaysDeleteButStores(InMemorySessionService):
    """Broken on purpose: its class attribute says None deletes, but it stores None (ADK's behaviour)."""

    none_semantics = "delete"


class RefusesNone(InMemorySessionService):
    """A service that refuses a None value in a delta outright (a validating store): the harness's observation of
    None fails on it, and must say which profile field skips that observation."""

    async def append_event(self, session, event):  # noqa: ANN001, ANN201
        if event.actions and any(v is None for v in (event.actions.state_delta or {}).values()):
            raise TypeError("None is not a storable value")
        return await super().append_event(session, event)
