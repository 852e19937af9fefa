"""The team's session service: ADK's DatabaseSessionService on a sqlite file named relative to the folder it
runs in (as a team writes it for `adk web`)."""

from __future__ import annotations

from google.adk.sessions import DatabaseSessionService


def sqlite_sessions() -> DatabaseSessionService:
    return DatabaseSessionService(db_url="sqlite+aiosqlite:///sessions.db")


def sqlite_at(db_url: str) -> DatabaseSessionService:
    """The same service where the caller says (session_service_args: {db_url: ...})."""
    return DatabaseSessionService(db_url=db_url)
