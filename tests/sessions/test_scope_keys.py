"""``app:``/``user:`` state stored one row per key (issue 34 item 6): an append reads and writes the rows of the
keys it touches, whatever else the scope holds; deleted keys stay as tombstones; stores of the previous layout
(one JSON object per app and per user, rewritten whole) are moved to per-key rows on open — whole, once, and
safely again after an open that died half-way.

Before: an append touching one ``user:`` key of a user whose row held 20 MB read, re-encoded and rewrote the 20 MB
(450-480 ms against 9 ms; bench/store.py has the figure now)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import duckdb
import pytest
from google.adk.events import Event, EventActions

from reference_agent.sessions import DeltaSessionService
from reference_agent.sessions.conflicts import ConflictRetry
from reference_agent.storage import DuckDBEngine
from tests.sessions.faulty_engine import FaultyEngine, InjectedFailure
from tests.sessions.previous_layout import PREVIOUS_TABLES

APP = "app"
BIG = "x" * 1_000_000


def ev(delta: dict[str, Any], text: str = "e") -> Event:
    return Event(invocation_id="inv", author="agent", actions=EventActions(state_delta=delta))


class Recording:
    """An engine wrapper adding up the characters of every statement's parameters."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.dialect = inner, inner.dialect
        self.transactional = getattr(inner, "transactional", False)
        self.chars = 0
        self.statements: list[str] = []

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        self.statements.append(sql)
        self.chars += sum(len(v) for v in (params or {}).values() if isinstance(v, str))
        rows = self.inner.execute(sql, params)
        self.chars += sum(len(v) for row in rows for v in row if isinstance(v, str))
        return rows

    def transaction(self):
        return self.inner.transaction()

    def close(self) -> None:
        self.inner.close()


async def test_an_append_reads_and_writes_only_the_keys_it_touches() -> None:
    engine = Recording(DuckDBEngine(None))
    svc = DeltaSessionService(engine)
    state = {"user:big": BIG, "app:big": BIG, **{f"user:k{i}": i for i in range(300)}}
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s", state=state)
    engine.chars, engine.statements = 0, []
    await svc.append_event(s, ev({"user:k7": "seven", "app:mode": "on", "n": 1}))
    # The 1 MB values and the 300 other keys were neither read nor written: a few hundred characters in all.
    assert engine.chars < 2_000, (engine.chars, engine.statements)
    got = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert got.state == {**state, "user:k7": "seven", "app:mode": "on", "n": 1}


async def test_a_deleted_key_stays_as_a_tombstone_and_can_be_set_again() -> None:
    svc = DeltaSessionService.duckdb()
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s", state={"user:x": 1, "user:y": 2})
    await svc.append_event(s, ev({"user:x": None}))
    assert await svc.get_user_state(app_name=APP, user_id="u") == {"y": 2}
    assert svc.engine.execute("SELECT value_json, version FROM user_state_keys WHERE state_key = 'x'") == [(None, 2)]
    await svc.append_event(s, ev({"user:x": 3}))
    assert (await svc.get_session(app_name=APP, user_id="u", session_id="s")).state == {"user:x": 3, "user:y": 2}
    assert svc.engine.execute("SELECT value_json, version FROM user_state_keys WHERE state_key = 'x'") == [('3', 3)]
    listed = (await svc.list_sessions(app_name=APP)).sessions
    assert [x.state for x in listed] == [{"user:x": 3, "user:y": 2}]


async def test_many_keys_in_one_event_are_written_in_batches() -> None:
    svc = DeltaSessionService.duckdb()
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    delta = {f"user:k{i}": i for i in range(450)}  # more than one statement's worth (scope_rows.BATCH)
    await svc.append_event(s, ev(delta))
    await svc.append_event(s, ev({k: v + 1 for k, v in delta.items()}))
    assert await svc.get_user_state(app_name=APP, user_id="u") == {f"k{i}": i + 1 for i in range(450)}


# --- stores of the previous layout --------------------------------------------------------------------------------

# The tables as the previous version made them (its schema.py: scope rows of one JSON object each), with rows.
PREVIOUS = PREVIOUS_TABLES + """CREATE UNIQUE INDEX sessions_key ON sessions (app_name, user_id, id);
CREATE UNIQUE INDEX events_key ON events (app_name, user_id, session_id, seq);
CREATE UNIQUE INDEX app_states_key ON app_states (app_name);
CREATE UNIQUE INDEX user_states_key ON user_states (app_name, user_id);
INSERT INTO sessions VALUES ('app', 'u', 's', '{"k": 1}', 1, 1.0, 2.0, NULL, 1, 0),
                            ('app', 'v', 't', '{}', 0, 1.0, 1.0, NULL, 0, 0);
INSERT INTO events VALUES ('app', 'u', 's', 'e1', 1, 'inv', 'agent', 2.0, '{"k": 1, "user:lang": "fr"}', '[]', '{}');
INSERT INTO app_states VALUES ('app', '{"mode": "strict", "limits": {"n": [1, 2]}}', 2.0, 3, '["e0", "e1"]');
INSERT INTO user_states VALUES ('app', 'u', '{"lang": "fr", "ключ": "значение ✓"}', 2.0, 2, '["e1"]'),
                               ('app', 'v', '{"lang": "de"}', 1.0, 1, '[]');
"""
MOVED_U = {"k": 1, "app:mode": "strict", "app:limits": {"n": [1, 2]}, "user:lang": "fr", "user:ключ": "значение ✓"}


def previous_store(path: Path, *extra: str) -> Path:
    with duckdb.connect(str(path)) as conn:
        conn.execute(PREVIOUS)
        for statement in extra:
            conn.execute(statement)
    return path


def key_rows(engine: Any) -> list[tuple]:
    return engine.execute("SELECT 'app', app_name, '', state_key, value_json, version, applied_json FROM app_state_keys"
                          " UNION ALL SELECT 'user', app_name, user_id, state_key, value_json, version, applied_json"
                          " FROM user_state_keys ORDER BY 1, 2, 3, 4")


async def test_a_store_of_the_previous_layout_is_moved_to_per_key_rows_on_open(tmp_path: Path, caplog) -> None:
    path = previous_store(tmp_path / "previous.duckdb")
    with caplog.at_level(logging.INFO):
        svc = DeltaSessionService.duckdb(path)
    assert "moved 3 app:/user: state rows" in caplog.text
    assert svc.engine.execute("SELECT (SELECT count(*) FROM app_states), (SELECT count(*) FROM user_states)") == [
        (0, 0)]
    assert key_rows(svc.engine) == [
        ("app", "app", "", "limits", '{"n": [1, 2]}', 1, '["e0", "e1"]'),
        ("app", "app", "", "mode", '"strict"', 1, '["e0", "e1"]'),
        ("user", "app", "u", "lang", '"fr"', 1, '["e1"]'),
        ("user", "app", "u", "ключ", '"значение ✓"', 1, '["e1"]'),
        ("user", "app", "v", "lang", '"de"', 1, "[]"),
    ]
    assert (await svc.get_session(app_name=APP, user_id="u", session_id="s")).state == MOVED_U
    assert await svc.get_user_state(app_name=APP, user_id="v") == {"lang": "de"}
    # It works as a store of this layout, staleness per key included.
    a = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    await svc.append_event(a, ev({"user:lang": "en", "app:mode": "lax"}))
    assert (await svc.get_session(app_name=APP, user_id="u", session_id="s")).state == {
        **MOVED_U, "user:lang": "en", "app:mode": "lax"}
    svc.close()
    again = Recording(DuckDBEngine(path))
    DeltaSessionService(again)  # a second open moves nothing: one count of the emptied tables
    assert [s for s in again.statements if s.startswith(("SELECT (SELECT count", "MERGE", "DELETE"))] == [
        "SELECT (SELECT count(*) FROM app_states), (SELECT count(*) FROM user_states)"]
    assert (await DeltaSessionService(again).get_session(app_name=APP, user_id="u", session_id="s")).state[
        "user:lang"] == "en"
    again.close()


# 14 statements make the tables and keys; the move is the next 12 (a count, then per scope the keys, then per old
# row a read, a MERGE and a DELETE).
@pytest.mark.parametrize("k", [0, *range(13, 27)])
async def test_an_open_that_dies_while_moving_leaves_rows_the_next_open_moves_and_writes_since_win(tmp_path: Path,
                                                                                                  k: int) -> None:
    """On an engine without transactions (Databricks) the move is step by step: cut after any statement, the next
    open completes it, and a key written in between (by a writer of this layout) is not overwritten by the move."""
    inner = DuckDBEngine(previous_store(tmp_path / "previous.duckdb"))
    engine = FaultyEngine(inner)
    engine.fail_from = k
    try:
        DeltaSessionService(engine, retry=ConflictRetry(sleep=lambda s: None))
        died = False
    except InjectedFailure:
        died = True
    assert died == (k < 26), len(engine.statements)
    engine.fail_from = None
    # A writer of this layout sets a key the move has not reached, or has (once the per-key tables are there).
    rival = died and inner.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'user_state_keys'") == [
        (1,)]
    if rival:
        inner.execute("INSERT INTO user_state_keys SELECT 'app', 'u', 'lang', '\"it\"', 5, '[]', 9.0, NULL WHERE NOT EXISTS"
                      " (SELECT 1 FROM user_state_keys WHERE user_id = 'u' AND state_key = 'lang')")
        inner.execute("UPDATE user_state_keys SET value_json = '\"it\"', version = 5 WHERE user_id = 'u'"
                      " AND state_key = 'lang'")
    svc = DeltaSessionService(engine, retry=ConflictRetry(sleep=lambda s: None))
    got = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert got.state == {**MOVED_U, "user:lang": "it" if rival else "fr"}, k
    assert await svc.get_user_state(app_name=APP, user_id="v") == {"lang": "de"}
    assert inner.execute("SELECT (SELECT count(*) FROM app_states), (SELECT count(*) FROM user_states)") == [(0, 0)]
    assert len(key_rows(inner)) == 5  # each key once


async def test_an_append_left_unfinished_in_the_previous_layout_is_rolled_forward_once(tmp_path: Path) -> None:
    """A Databricks writer of the previous version died after its commit point: the redo record names the scope
    deltas; its user: write had landed (the row lists the event), its app: write had not."""
    pending = {"event": {"id": "e2", "invocation_id": "inv", "author": "agent", "timestamp": 3.0,
                         "state_delta_json": '{"user:lang": "de", "app:mode": "lax"}', "deleted_keys_json": "[]",
                         "event_json": "{}"},
               "scopes": {"user": {"lang": "de"}, "app": {"mode": "lax"}}, "bases": {"user": 2, "app": 3}}
    path = previous_store(
        tmp_path / "previous.duckdb",
        f"UPDATE sessions SET version = 2, pending_json = '{json.dumps(pending)}' WHERE id = 's'",
        "UPDATE user_states SET state_json = '{\"lang\": \"de\", \"ключ\": \"значение ✓\"}', version = 3,"
        " applied_json = '[\"e1\", \"e2\"]' WHERE user_id = 'u'")
    inner = DuckDBEngine(path)
    svc = DeltaSessionService(FaultyEngine(inner))  # no transactions: it reads redo records
    # Another session of the user changes lang after the move, before the roll-forward: the record must not undo it.
    other = await svc.create_session(app_name=APP, user_id="u", session_id="other")
    await svc.append_event(other, ev({"user:lang": "pt"}))
    got = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert [e.id for e in got.events] == ["e1", "e2"]
    assert (got.state["user:lang"], got.state["app:mode"]) == ("pt", "lax")
    inner.close()


async def test_rows_the_move_cannot_take_are_left_and_named(tmp_path: Path, caplog) -> None:
    path = previous_store(tmp_path / "previous.duckdb", "UPDATE user_states SET state_json = '[1, 2]' WHERE"
                          " user_id = 'v'")
    with caplog.at_level(logging.WARNING):
        svc = DeltaSessionService.duckdb(path)
    assert "user_states row {'app_name': 'app', 'user_id': 'v'}: state_json is not a JSON object" in caplog.text
    assert svc.engine.execute("SELECT user_id FROM user_states") == [("v",)]  # kept for whoever repairs it
    assert (await svc.get_session(app_name=APP, user_id="u", session_id="s")).state == MOVED_U
    svc.close()


async def test_on_duckdb_a_key_row_is_replaced_and_one_changed_since_its_read_reruns_the_append(caplog) -> None:
    """DuckDB: DELETE at the version read + INSERT (an in-place UPDATE of a string next to a 20 MB value costs tens
    of ms). A key row that moved between the read and the DELETE makes the transaction run again from the read."""
    engine = Recording(DuckDBEngine(None))
    svc = DeltaSessionService(engine, retry=ConflictRetry(sleep=lambda s: None))
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s", state={"user:x": 1})
    original = engine.execute

    def moved_once(sql: str, params: Any = None) -> list[tuple]:
        if sql.startswith("DELETE FROM user_state_keys") and not getattr(moved_once, "done", False):
            moved_once.done = True  # a write that got in between (as a rival connection's would)
            original("UPDATE user_state_keys SET version = version + 1 WHERE state_key = 'x'")
        return original(sql, params)

    engine.execute = moved_once
    engine.statements = []
    with caplog.at_level(logging.WARNING):
        await svc.append_event(s, ev({"user:x": 2, "n": 1}))
    assert moved_once.done and "SCOPE_KEY_CHANGED" in caplog.text
    kinds = [" ".join(q.split()[:2]) for q in engine.statements]
    # The first try stops at its DELETE (rolled back, the bump with it); the second replaces the row and stores the
    # event.
    assert kinds.count("DELETE FROM") == 2 and kinds.count("INSERT INTO") == 2, kinds
    got = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert got.state == {"user:x": 2, "n": 1} and len(got.events) == 1
    assert engine.inner.execute("SELECT version FROM user_state_keys") == [(2,)]
