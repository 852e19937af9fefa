"""Tables of the Delta session service.

Times are epoch seconds in DOUBLE columns: that is what ADK's ``Session`` and
``Event`` carry, and it round-trips exactly (a TIMESTAMP would round and be
subject to each engine's time-zone handling). JSON columns hold JSON text.
State JSON never contains null: a None in a delta deletes the key.
"""

from __future__ import annotations

from reference_agent.storage.sql import SqlEngine, add_missing_columns, ensure_tables

SESSIONS = "sessions"
EVENTS = "events"
APP_STATES = "app_states"
USER_STATES = "user_states"

_SCOPE_VERSIONING = (
    # Compare-and-set revision of the row (NULL in rows made before it existed = 0).
    ("version", "BIGINT"),
    # JSON list of the ids of the last events applied to the row, so rolling an append forward never applies
    # its delta twice.
    ("applied_json", "JSON"),
)

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
        # The last append's redo record: the event and its app:/user: deltas, written by the compare-and-set
        # that commits the append, so a writer that died before the event row was stored can be rolled forward.
        ("pending_json", "JSON"),
        # state_json is a snapshot: the session state after the append with seq = state_version (NULL, rows
        # written before this column: the row's version). The events after it carry the rest in their deltas
        # (``tail_bytes`` of them), folded in on read and compacted into state_json now and then by an append,
        # so an append writes its delta, not the whole state.
        ("state_version", "BIGINT"),
        ("tail_bytes", "BIGINT"),
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
        *_SCOPE_VERSIONING,
    ),
    USER_STATES: (
        ("app_name", "STRING"),
        ("user_id", "STRING"),
        ("state_json", "JSON"),  # keys without the "user:" prefix
        ("update_time", "DOUBLE"),
        *_SCOPE_VERSIONING,
    ),
}


def ensure_schema(engine: SqlEngine) -> list[str]:
    """Create the session tables if they do not exist, and add the columns that tables of an older schema
    lack (idempotent). Returns the ``table.column`` names added."""
    ensure_tables(engine, TABLES)
    return add_missing_columns(engine, TABLES)
