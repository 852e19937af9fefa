"""Tables of the Delta session service.

Times are epoch seconds in DOUBLE columns: that is what ADK's ``Session`` and
``Event`` carry, and it round-trips exactly (a TIMESTAMP would round and be
subject to each engine's time-zone handling). JSON columns hold JSON text.
State JSON never contains null: a None in a delta deletes the key.
"""

from __future__ import annotations

from reference_agent.storage.sql import SqlEngine, ensure_tables

SESSIONS = "sessions"
EVENTS = "events"
APP_STATES = "app_states"
USER_STATES = "user_states"

TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    SESSIONS: (
        ("app_name", "STRING"),
        ("user_id", "STRING"),
        ("id", "STRING"),
        ("state_json", "JSON"),
        # Bumped by every append; the optimistic-concurrency revision and the next event's seq.
        ("version", "BIGINT"),
        ("create_time", "DOUBLE"),
        ("update_time", "DOUBLE"),
    ),
    EVENTS: (
        ("app_name", "STRING"),
        ("user_id", "STRING"),
        ("session_id", "STRING"),
        ("id", "STRING"),
        ("seq", "BIGINT"),  # 1-based append order within the session
        ("invocation_id", "STRING"),
        ("author", "STRING"),
        ("timestamp", "DOUBLE"),
        ("state_delta_json", "JSON"),  # keys set to non-None values (temp: never present)
        ("deleted_keys_json", "JSON"),  # JSON list of keys the event deleted
        ("event_json", "JSON"),  # the rest of the event, without actions.state_delta
    ),
    APP_STATES: (
        ("app_name", "STRING"),
        ("state_json", "JSON"),  # keys without the "app:" prefix
        ("update_time", "DOUBLE"),
    ),
    USER_STATES: (
        ("app_name", "STRING"),
        ("user_id", "STRING"),
        ("state_json", "JSON"),  # keys without the "user:" prefix
        ("update_time", "DOUBLE"),
    ),
}


def ensure_schema(engine: SqlEngine) -> None:
    """Create the session tables if they do not exist (idempotent)."""
    ensure_tables(engine, TABLES)
