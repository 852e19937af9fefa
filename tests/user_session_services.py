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
