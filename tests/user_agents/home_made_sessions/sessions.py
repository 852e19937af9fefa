"""A team's own session service, the shape issue 51 met: ADK's ``InMemorySessionService`` subclassed to delete a
key on ``None`` (saying so in a class attribute) and to refuse a stale writer with its own ``ValueError``.

Correct on both counts; ``StoringNone`` below is the planted defect (says delete, stores None). Used by
tests/harness/test_user_session_services.py with agents of tests/user_agents (output_key_rlm clears keys with None).
"""

from __future__ import annotations

from google.adk.events import Event
from google.adk.sessions import InMemorySessionService, Session


class VersionConflict(ValueError):
    """The team's own error: the session changed in storage since the writer read it."""


class TeamSessions(InMemorySessionService):
    none_semantics = "delete"  # what the team tells the harness; the harness checks it holds

    def _stored(self, session: Session) -> Session | None:
        return self.sessions.get(session.app_name, {}).get(session.user_id, {}).get(session.id)

    async def append_event(self, session: Session, event: Event) -> Event:
        stored = self._stored(session)
        if stored is not None and not event.partial and len(stored.events) != len(session.events):
            raise VersionConflict(f"session {session.id} was written by someone else since it was read")
        event = await super().append_event(session, event)
        self._delete_nones(session, event)
        return event

    def _delete_nones(self, session: Session, event: Event) -> None:
        """ADK stores None; this service removes the key from storage and from the caller's session."""
        delta = (event.actions.state_delta or {}) if event.actions else {}
        stored = self._stored(session)
        for key in [k for k, v in delta.items() if v is None]:
            session.state.pop(key, None)
            if key.startswith("app:"):
                self.app_state.get(session.app_name, {}).pop(key.removeprefix("app:"), None)
            elif key.startswith("user:"):
                self.user_state.get(session.app_name, {}).get(session.user_id, {}).pop(key.removeprefix("user:"),
                                                                                      None)
            elif stored is not None:
                stored.state.pop(key, None)


class StoringNone(TeamSessions):
    """Planted defect: still says none_semantics = "delete", but keeps ADK's stored None."""

    def _delete_nones(self, session: Session, event: Event) -> None:
        return None
