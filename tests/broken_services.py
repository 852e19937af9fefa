"""Deliberately broken session services (each one bug), for proving the gate catches them.

Use them as ``--session-service tests.broken_services:temp_leak`` (and ``lost_update``,
``null_storing``, ``config_ignoring``, ``newest_first``, ``delete_keeps_events``): every factory takes no
argument and builds on in-memory DuckDB (``stores_then_raises`` and ``raises_and_breaks``, stale writers refused
badly: on ADK's InMemorySessionService).
None declares a divergence, so everything they do differently must be reported.
"""

from __future__ import annotations

import json
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from reference_agent.sessions.delta_session_service import DeltaSessionService

_SCOPES = ((State.APP_PREFIX, "app_state_keys", "app_name = :app_name"),
           (State.USER_PREFIX, "user_state_keys", "app_name = :app_name AND user_id = :user_id"))
_SESSION = "app_name = :app_name AND user_id = :user_id AND id = :session_id"


def _keys(session: Session) -> dict[str, str]:
    return {"app_name": session.app_name, "user_id": session.user_id, "session_id": session.id}


class TempLeakService(DeltaSessionService):
    """Bug: never trims ``temp:`` keys, so they are stored in event rows and kept on the appended event."""

    def _trim_temp_delta_state(self, event: Event) -> Event:
        return event


class LostUpdateService(DeltaSessionService):
    """Bug: no optimistic concurrency, and the writer's in-memory state overwrites the stored state
    (last writer wins), so a stale writer silently drops the other writer's delta."""

    def _check_not_stale(self, *args: Any) -> None:
        return None

    async def append_event(self, session: Session, event: Event) -> Event:
        event = await super().append_event(session, event)
        if not event.partial:
            own = {k: v for k, v in session.state.items()
                   if not k.startswith((State.APP_PREFIX, State.USER_PREFIX, State.TEMP_PREFIX))}
            # The whole state as the snapshot as of now (state_version = version): no later delta is folded in.
            self.engine.execute(f"UPDATE sessions SET state_json = :state, state_version = version, tail_bytes = 0"
                                f" WHERE {_SESSION}",
                                {**_keys(session), "state": json.dumps(own)})
        return event


class NullStoringService(DeltaSessionService):
    """Bug: stores ``None`` (in the live session and in storage) while declaring None-deletes semantics."""

    _update_session_state = BaseSessionService._update_session_state  # live: None is stored, not popped

    async def append_event(self, session: Session, event: Event) -> Event:
        nulls = [k for k, v in (event.actions.state_delta or {}).items()
                 if v is None and not k.startswith(State.TEMP_PREFIX)]
        event = await super().append_event(session, event)
        for key in nulls:
            await self._store_null(session, key)
        return event

    async def _store_null(self, session: Session, key: str) -> None:
        for prefix, scope_table, scope_where in _SCOPES:
            if key.startswith(prefix):  # the key's row holds a JSON null (a deleted key's row holds SQL NULL)
                self.engine.execute(f"UPDATE {scope_table} SET value_json = 'null' WHERE {scope_where}"
                                    " AND state_key = :name", {**_keys(session), "name": key.removeprefix(prefix)})
                return
        # The whole state (snapshot and later deltas), rewritten as the snapshot as of now.
        state = (await self.persisted_rows(**_keys(session))).state
        state[key] = None
        self.engine.execute(f"UPDATE sessions SET state_json = :state, state_version = version, tail_bytes = 0"
                            f" WHERE {_SESSION}", {**_keys(session), "state": json.dumps(state)})


class ConfigIgnoringService(DeltaSessionService):
    """Bug: get_session ignores GetSessionConfig (every event, whatever num_recent_events or after_timestamp)."""

    def _read_events(self, keys: Any, config: Any) -> list[Event]:
        return super()._read_events(keys, None)


class NewestFirstService(DeltaSessionService):
    """Bug: get_session returns a session's events newest first."""

    def _read_events(self, keys: Any, config: Any) -> list[Event]:
        return list(reversed(super()._read_events(keys, config)))


class DeleteKeepsEventsService(DeltaSessionService):
    """Bug: delete_session removes the session row but leaves its events behind (a re-created id inherits them)."""

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        keys = {"app_name": app_name, "user_id": user_id, "session_id": session_id}
        self.engine.execute(f"DELETE FROM sessions WHERE {_SESSION}", keys)
        self._forget_row(keys)


class StoresThenRaisesService(InMemorySessionService):
    """Bug: a stale writer's append is stored, and only then refused with the service's own ValueError: an error
    that is no rejection (the stale write is in storage)."""

    async def append_event(self, session: Session, event: Event) -> Event:
        stored = self.sessions[session.app_name][session.user_id][session.id]
        stale = not event.partial and len(stored.events) != len(session.events)
        event = await super().append_event(session, event)
        if stale:
            raise ValueError("stale session")
        return event


class RaisesAndBreaksService(InMemorySessionService):
    """Bug: a stale writer's append raises the service's own ValueError and leaves the session unreadable (its
    stored copy gone): a crash, not a rejection."""

    async def append_event(self, session: Session, event: Event) -> Event:
        sessions = self.sessions[session.app_name][session.user_id]
        if not event.partial and len(sessions[session.id].events) != len(session.events):
            del sessions[session.id]
            raise ValueError("stale session")
        return await super().append_event(session, event)


def stores_then_raises() -> StoresThenRaisesService:
    return StoresThenRaisesService()


def raises_and_breaks() -> RaisesAndBreaksService:
    return RaisesAndBreaksService()


def config_ignoring() -> ConfigIgnoringService:
    return ConfigIgnoringService.duckdb(None)


def newest_first() -> NewestFirstService:
    return NewestFirstService.duckdb(None)


def delete_keeps_events() -> DeleteKeepsEventsService:
    return DeleteKeepsEventsService.duckdb(None)


def temp_leak() -> TempLeakService:
    return TempLeakService.duckdb(None)


def lost_update() -> LostUpdateService:
    return LostUpdateService.duckdb(None)


def null_storing() -> NullStoringService:
    return NullStoringService.duckdb(None)


def not_a_service() -> dict:
    """Bad input for the error-message tests: returns something that is not a session service."""
    return {"not": "a session service"}


def _declared_null_storing_profile():
    from harness.contract import ServiceProfile

    return ServiceProfile(name="null-storing-declared", factory=lambda folder: null_storing(), none_semantics="store",
                          divergences={"none_deletes": "stores None like ADK; declared, so not a failure"})


# A user-style profile object: ``tests.broken_services:DECLARED_NULL_STORING`` works for the contract suite,
# the differential and --session-service alike; what it declares is reported as declared.
DECLARED_NULL_STORING = _declared_null_storing_profile()
