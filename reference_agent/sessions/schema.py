"""Tables of the Delta session service.

Times are epoch seconds in DOUBLE columns: that is what ADK's ``Session`` and
``Event`` carry, and it round-trips exactly (a TIMESTAMP would round and be
subject to each engine's time-zone handling). JSON columns hold JSON text.
State JSON never contains null: a None in a delta deletes the key.
"""

from __future__ import annotations

from reference_agent.storage.sql import (
    DuplicateKeyError,
    SqlEngine,
    add_missing_columns,
    ensure_tables,
    ensure_unique_keys,
)

SESSIONS = "sessions"
EVENTS = "events"
APP_STATE_KEYS = "app_state_keys"
USER_STATE_KEYS = "user_state_keys"
# The layout before per-key rows: one row per app / per user holding the whole scope as one JSON object, rewritten
# whole by every write. Still created (empty), so that opening a store tells cheaply whether it holds rows to move
# (a count of an empty table; DuckDB lists its catalog in 25-45 ms per connection): ``scope_migration.py`` moves them
# into the per-key tables on open.
APP_STATES = "app_states"
USER_STATES = "user_states"

_SCOPE_KEY = (
    ("state_key", "STRING"),  # the key without its "app:"/"user:" prefix
    ("value_json", "JSON"),  # its value; NULL: deleted (the row stays, a tombstone: see scope_rows.py)
    ("version", "BIGINT"),  # compare-and-set revision of the key
    ("applied_json", "JSON"),  # JSON list of the ids of the last events that wrote it (roll-forward applies once)
    ("update_time", "DOUBLE"),
    # The append that claimed the key before its commit point (on engines without transactions): its session,
    # the session version and fence it expects, its event (scope_claims.py). NULL: nobody holds the key.
    ("claim_json", "JSON"),
)

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
        # Bumped to fence off the appends that claimed scope keys at this version and have not committed: their
        # compare-and-set expects the fence they read, so a claim left by a writer that died can be cleared
        # (scope_claims.py). NULL: 0.
        ("fence", "BIGINT"),
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
    APP_STATE_KEYS: (("app_name", "STRING"), *_SCOPE_KEY),
    USER_STATE_KEYS: (("app_name", "STRING"), ("user_id", "STRING"), *_SCOPE_KEY),
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


# Each table's key: one row per key. Enforced by a unique index where the engine can (DuckDB), so no writer —
# this service through any connection, or anyone else's INSERT — can store a second session, event (per seq),
# app or user key (or, in the tables of the previous layout, app or user row). On Delta nothing enforces a key: this service's MERGE insert-if-absent and compare-and-set
# writes, with Delta's conflict detection, are what keep them unique there (see the service's docstring).
KEYS: dict[str, tuple[str, ...]] = {
    SESSIONS: ("app_name", "user_id", "id"),
    EVENTS: ("app_name", "user_id", "session_id", "seq"),
    APP_STATE_KEYS: ("app_name", "state_key"),
    USER_STATE_KEYS: ("app_name", "user_id", "state_key"),
    APP_STATES: ("app_name",),
    USER_STATES: ("app_name", "user_id"),
}


def ensure_schema(engine: SqlEngine) -> list[str]:
    """Create the session tables if they do not exist, add the columns that tables of an older schema lack,
    and the tables' unique keys where the engine enforces them (idempotent; existing rows are kept). Returns the
    ``table.column`` names added. A table whose rows already break its key is left without it (a warning names
    the keys; see ``ensure_unique_keys``)."""
    try:
        # One transaction where the engine has them: one commit instead of one per statement (a new DuckDB file:
        # ~18 ms instead of ~55).
        with engine.transaction():
            ensure_tables(engine, TABLES)
            added = add_missing_columns(engine, TABLES)
            for table, columns in KEYS.items():
                ddl = engine.dialect.unique_index(table, columns)
                if ddl is not None:
                    engine.execute(ddl)
        return added
    except DuplicateKeyError:  # a table already breaks its key: rolled back; again, step by step, keeping the rows
        ensure_tables(engine, TABLES)
        added = add_missing_columns(engine, TABLES)
        ensure_unique_keys(engine, KEYS)
        return added
