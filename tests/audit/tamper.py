"""Single violations written straight into a store's tables, as a direct write that bypassed the service would.

Every function takes an open DB-API connection (sqlite3 or duckdb) to a store written by ``writers.py`` and
changes the one session ``TARGET`` only.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

TARGET = ("rlm_app", "user-1", "s-00001")
KEY = "app_name = ? AND user_id = ? AND {sid} = ?"


class Layout:
    """Where each layout keeps what the violations change."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = "state" if name == "adk" else "state_json"
        self.payload = "event_data" if name == "adk" else "event_json"

    # --- session state ------------------------------------------------------------------------------------------

    def get_state(self, db: Any) -> dict:
        if self.name == "adk":
            (text,) = db.execute(f"SELECT state FROM sessions WHERE {KEY.format(sid='id')}", TARGET).fetchone()
            return json.loads(text)
        # Ours: the snapshot, then the deltas of the events after it (reference_agent/sessions/schema.py).
        text, snapshot_seq = db.execute("SELECT state_json, coalesce(state_version, version) FROM sessions"
                                        f" WHERE {KEY.format(sid='id')}", TARGET).fetchone()
        state = json.loads(text)
        for delta, deleted in db.execute("SELECT state_delta_json, deleted_keys_json FROM events"
                                         f" WHERE {KEY.format(sid='session_id')} AND seq > ? ORDER BY seq",
                                         (*TARGET, snapshot_seq)).fetchall():
            state.update({k: v for k, v in json.loads(delta).items() if not k.startswith(("app:", "user:"))})
            for key in json.loads(deleted or "[]"):
                state.pop(key, None)
        return state

    def set_state(self, db: Any, state: dict) -> None:
        # Ours: written as the snapshot as of the row's version, so no later delta is folded over it.
        snapshot = "" if self.name == "adk" else ", state_version = version, tail_bytes = 0"
        db.execute(f"UPDATE sessions SET {self.state} = ?{snapshot} WHERE {KEY.format(sid='id')}",
                   (json.dumps(state), *TARGET))

    # --- events, by author (the first event of that author, in order) ------------------------------------------------

    def _event(self, db: Any, author: str) -> tuple[str, dict, dict]:
        where = KEY.format(sid="session_id")
        if self.name == "adk":
            for event_id, data in db.execute(f"SELECT id, event_data FROM events WHERE {where} ORDER BY timestamp",
                                             TARGET).fetchall():
                payload = json.loads(data)
                if payload.get("author") == author:
                    return event_id, payload["actions"].get("state_delta", {}), payload
        else:
            for event_id, a, delta in db.execute(
                    f"SELECT id, author, state_delta_json FROM events WHERE {where} ORDER BY seq", TARGET).fetchall():
                if a == author:
                    return event_id, json.loads(delta), {}
        raise LookupError(author)

    def set_delta(self, db: Any, author: str, change: dict, drop: tuple[str, ...] = ()) -> None:
        event_id, delta, payload = self._event(db, author)
        delta = {k: v for k, v in {**delta, **change}.items() if k not in drop}
        if self.name == "adk":
            payload["actions"]["state_delta"] = delta
            db.execute("UPDATE events SET event_data = ? WHERE id = ?", (json.dumps(payload), event_id))
        else:
            db.execute("UPDATE events SET state_delta_json = ? WHERE id = ?", (json.dumps(delta), event_id))

    def event_id(self, db: Any, author: str) -> str:
        return self._event(db, author)[0]


def temp_in_state(layout: Layout, db: Any) -> str:
    state = layout.get_state(db)
    layout.set_state(db, {**state, "temp:rlm:stage": "executed"})
    return "temp:rlm:stage"


def temp_in_event_delta(layout: Layout, db: Any) -> str:
    layout.set_delta(db, "job_builder", {"temp:rlm:execution_stdout": "3"})
    return "temp:rlm:execution_stdout"


def null_in_state(layout: Layout, db: Any) -> str:
    state = layout.get_state(db)
    layout.set_state(db, {**state, "rlm:exit_requested": None})
    return "rlm:exit_requested"


def state_changed_without_event(layout: Layout, db: Any) -> str:
    state = layout.get_state(db)
    layout.set_state(db, {**state, "rlm:last_results_summary": "edited by hand"})
    return "rlm:last_results_summary"


def summary_missing(layout: Layout, db: Any) -> str:
    layout.set_delta(db, "results_processor", {}, drop=("rlm:last_results_summary",))
    state = layout.get_state(db)
    state.pop("rlm:last_results_summary", None)  # ours: gone already when only the (dropped) delta set it
    layout.set_state(db, state)
    return "rlm:last_results_summary"


def event_removed(layout: Layout, db: Any) -> str:
    """The analyst's call (no delta): a gap in seq."""
    db.execute("DELETE FROM events WHERE id = ?", (layout.event_id(db, "databricks_analyst"),))
    return "seq is not contiguous"


def events_reordered(layout: Layout, db: Any) -> str:
    """The user's question moved after the analyst's call: seq swapped (ours), the order column moved (ADK)."""
    user, analyst = layout.event_id(db, "user"), layout.event_id(db, "databricks_analyst")
    if layout.name == "adk":  # the order column is a naive UTC datetime (text in SQLite); half a second later
        (column,) = db.execute("SELECT timestamp FROM events WHERE id = ?", (analyst,)).fetchone()
        later = datetime.datetime.fromisoformat(str(column)) + datetime.timedelta(seconds=0.5)
        db.execute("UPDATE events SET timestamp = ? WHERE id = ?", (later.isoformat(sep=" "), user))
        return user
    db.execute("UPDATE events SET seq = -seq WHERE id = ?", (user,))
    db.execute("UPDATE events SET seq = 1 WHERE id = ?", (analyst,))
    db.execute("UPDATE events SET seq = 2 WHERE id = ?", (user,))
    return user


def unkeyed(layout_name: str, db: Any, table: str) -> None:
    """``table`` without its unique key, as a store written before the key existed (ours: DuckDB's index; ADK's:
    SQLite's primary key, so the table is rebuilt without it). The seeds' tables have none."""
    if layout_name.startswith("rlm"):
        db.execute(f"DROP INDEX IF EXISTS {table}_key")
    elif layout_name == "adk":
        db.execute(f"CREATE TABLE {table}_copy AS SELECT * FROM {table}")
        db.execute(f"DROP TABLE {table}")
        db.execute(f"ALTER TABLE {table}_copy RENAME TO {table}")


def seq_duplicated(layout: Layout, db: Any) -> str:
    unkeyed(layout.name, db, "events")  # ours refuses the duplicate key since the keys were added
    analyst = layout.event_id(db, "databricks_analyst")
    db.execute("UPDATE events SET seq = 1 WHERE id = ?", (analyst,))
    return analyst


VIOLATIONS = {
    # name: (tamper, {layout: the checks that must fail, and only they})
    "temp_in_state": (temp_in_state, {"adk": {"no_temp_persisted"}, "rlm": {"no_temp_persisted"}}),
    "temp_in_event_delta": (temp_in_event_delta, {"adk": {"no_temp_persisted"}, "rlm": {"no_temp_persisted"}}),
    "null_in_state": (null_in_state, {"rlm": {"none_deletes"}}),
    "state_changed_without_event": (state_changed_without_event,
                                    {"adk": {"state_matches_events"}, "rlm": {"state_matches_events"}}),
    "summary_missing": (summary_missing, {"adk": {"summary_persisted"}, "rlm": {"summary_persisted"}}),
    # ADK's tables have no sequence number and do not keep the creation state: a removed event whose keys no
    # later event overwrote reads as state the session was created with, so only ours can show it.
    "event_removed": (event_removed, {"rlm": {"events_ordered"}}),
    "events_reordered": (events_reordered, {"adk": {"events_ordered"}, "rlm": {"events_ordered"}}),
    "seq_duplicated": (seq_duplicated, {"rlm": {"events_ordered"}}),
}
