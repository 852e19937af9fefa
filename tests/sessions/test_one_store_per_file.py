"""One store per DuckDB file per process: services and engines opened on one file share one connection, the
tables' keys are enforced, and every conflict DuckDB reports reaches the caller as ADK's typed errors.

Reproduces issue 34 item 1: two ``DeltaSessionService`` on one file used to insert a duplicate session row in
18 of 20 concurrent ``create_session`` calls with one id, duplicate ``user_states`` rows in 40 of 40 first
``user:`` appends (after which every ``get_session`` of that user raised DuckDB's "More than one row returned
by a subquery"), and a write racing another connection raised DuckDB's raw ``TransactionException``.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import duckdb
import pytest
from adk_compat import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions

from reference_agent.sessions import DeltaSessionService
from reference_agent.sessions.conflicts import ConflictRetry
from reference_agent.storage import DuckDBEngine
from tests.sessions.previous_layout import PREVIOUS_TABLES

APP = "app"
TRIES = 20


def ev(delta: dict) -> Event:
    return Event(invocation_id="inv", author="agent", actions=EventActions(state_delta=dict(delta)))


def count(service: DeltaSessionService, sql: str, **params: str) -> int:
    return service.engine.execute(sql, params)[0][0]


@pytest.fixture
def two(tmp_path: Path):
    """Two services opened separately on one file, as two apps of one API server, or a service per request."""
    path = tmp_path / "sessions.duckdb"
    a, b = DeltaSessionService.duckdb(path), DeltaSessionService.duckdb(path)
    yield a, b
    a.close()
    b.close()


def test_engines_on_one_file_share_one_connection_until_the_last_closes(tmp_path: Path) -> None:
    path = tmp_path / "one.duckdb"
    first, second = DuckDBEngine(path), DuckDBEngine(str(tmp_path / "." / "one.duckdb"))
    shared = DuckDBEngine(path, shared_instance=True)  # the first opener's mode holds for the file
    assert first.handle is second.handle is shared.handle
    first.execute("CREATE TABLE t (k STRING)")
    with first.transaction():
        first.execute("INSERT INTO t VALUES ('a')")
        # Joined, not raced: the same connection, so no second transaction exists to conflict with.
        assert second.execute("SELECT count(*) FROM t") == [(1,)]
    first.close()
    first.close()
    assert second.execute("SELECT count(*) FROM t") == [(1,)]
    second.close()
    shared.close()
    again = DuckDBEngine(path)  # all closed: a fresh connection, the data there
    assert again.handle is not first.handle and again.execute("SELECT k FROM t") == [("a",)]
    again.close()
    assert DuckDBEngine(None).handle is not DuckDBEngine(None).handle  # in memory: each its own database


async def test_concurrent_create_session_with_one_id_through_two_services_gives_one_session(two) -> None:
    a, b = two
    outcomes = []
    for n in range(TRIES):
        results = await asyncio.gather(a.create_session(app_name=APP, user_id="u", session_id=f"s{n}"),
                                       b.create_session(app_name=APP, user_id="u", session_id=f"s{n}"),
                                       return_exceptions=True)
        outcomes.append(sorted(type(r).__name__ for r in results))
        assert count(a, "SELECT count(*) FROM sessions WHERE id = :id", id=f"s{n}") == 1, f"try {n}: {results}"
    assert outcomes == [["AlreadyExistsError", "Session"]] * TRIES


async def test_first_scope_writes_through_two_services_make_one_row_per_key(two) -> None:
    a, b = two
    for n in range(TRIES):
        user = f"u{n}"
        sa = await a.create_session(app_name=APP, user_id=user, session_id="x")
        sb = await b.create_session(app_name=APP, user_id=user, session_id="y")
        await asyncio.gather(a.append_event(sa, ev({"user:from_a": n, "app:a": n})),
                             b.append_event(sb, ev({"user:from_b": n, "app:b": n})))
        assert a.engine.execute("SELECT state_key, count(*) FROM user_state_keys WHERE user_id = :u GROUP BY"
                                " state_key ORDER BY state_key", {"u": user}) == [("from_a", 1), ("from_b", 1)], n
        got = await b.get_session(app_name=APP, user_id=user, session_id="x")
        assert (got.state["user:from_a"], got.state["user:from_b"]) == (n, n)
    assert a.engine.execute("SELECT state_key, count(*) FROM app_state_keys GROUP BY state_key ORDER BY state_key"
                            ) == [("a", 1), ("b", 1)]


async def test_two_services_appending_to_one_session_lose_nothing_and_the_loser_is_stale(two) -> None:
    a, b = two
    await a.create_session(app_name=APP, user_id="u", session_id="s")
    stale = 0
    for n in range(TRIES):
        sa = await a.get_session(app_name=APP, user_id="u", session_id="s")
        sb = await b.get_session(app_name=APP, user_id="u", session_id="s")
        results = await asyncio.gather(a.append_event(sa, ev({f"a{n}": n, "user:n": n})),
                                       b.append_event(sb, ev({f"b{n}": n})), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        assert len(errors) == 1 and isinstance(errors[0], StaleSessionError), results
        stale += 1
    rows = await a.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert rows.version == TRIES and [e.seq for e in rows.events] == list(range(1, TRIES + 1)) and stale == TRIES


def test_the_tables_refuse_duplicate_keys(tmp_path: Path) -> None:
    """The keys hold for any writer, not only this service: a direct INSERT of a second row is refused."""
    service = DeltaSessionService.duckdb(tmp_path / "keys.duckdb")
    engine = service.engine
    engine.execute("INSERT INTO sessions (app_name, user_id, id, version) VALUES ('a', 'u', 's', 0)")
    engine.execute("INSERT INTO events (app_name, user_id, session_id, id, seq) VALUES ('a', 'u', 's', 'e', 1)")
    engine.execute("INSERT INTO app_states (app_name, version) VALUES ('a', 1)")
    engine.execute("INSERT INTO user_states (app_name, user_id, version) VALUES ('a', 'u', 1)")
    engine.execute("INSERT INTO app_state_keys (app_name, state_key, version) VALUES ('a', 'k', 1)")
    engine.execute("INSERT INTO user_state_keys (app_name, user_id, state_key, version) VALUES ('a', 'u', 'k', 1)")
    for duplicate in ("INSERT INTO app_state_keys (app_name, state_key, version) VALUES ('a', 'k', 1)",
                      "INSERT INTO user_state_keys (app_name, user_id, state_key, version) VALUES ('a', 'u', 'k', 1)",
                      "INSERT INTO sessions (app_name, user_id, id, version) VALUES ('a', 'u', 's', 0)",
                      "INSERT INTO events (app_name, user_id, session_id, id, seq) VALUES ('a', 'u', 's', 'f', 1)",
                      "INSERT INTO app_states (app_name, version) VALUES ('a', 1)",
                      "INSERT INTO user_states (app_name, user_id, version) VALUES ('a', 'u', 1)"):
        with pytest.raises(duckdb.ConstraintException):
            engine._conn.execute(engine.dialect.translate(duplicate)[0])
    service.close()


# --- conflicts from another connection in the process (a user's own duckdb.connect of the file) ----------------


@pytest.fixture
def held(tmp_path: Path):
    """A service on a file, and another connection to that file in this process with a transaction open."""
    path = tmp_path / "held.duckdb"
    service = DeltaSessionService(DuckDBEngine(path), retry=ConflictRetry(attempts=3, sleep=lambda s: None))
    other = duckdb.connect(str(path))
    yield service, other
    other.close()
    service.engine.close()


async def test_an_append_racing_another_connection_is_a_stale_session_not_a_driver_error(held, caplog) -> None:
    service, other = held
    session = await service.create_session(app_name=APP, user_id="u", session_id="s", state={"user:x": 0})
    other.execute("BEGIN")
    # Holds the session row. (A key row held this way is not a conflict DuckDB reports: an append replaces key rows
    # by DELETE + INSERT, and DuckDB does not see a DELETE and another transaction's UPDATE of one row as a
    # conflict — that direct write is lost; docs/session-store.md.)
    other.execute("UPDATE sessions SET update_time = 0 WHERE user_id = 'u'")
    with caplog.at_level(logging.WARNING), pytest.raises(StaleSessionError, match="conflict"):
        await service.append_event(session, ev({"user:x": 1, "k": 1}))
    other.execute("ROLLBACK")
    assert "Conflict on update" in caplog.text  # the engine's words are logged, not raised
    got = await service.get_session(app_name=APP, user_id="u", session_id="s")
    assert (got.state, got.events) == ({"user:x": 0}, [])  # nothing written
    await service.append_event(got, ev({"user:x": 1}))  # once the other transaction is gone, it works
    assert (await service.get_session(app_name=APP, user_id="u", session_id="s")).state == {"user:x": 1}


async def test_a_create_losing_to_another_connections_insert_of_the_id_is_already_exists(held) -> None:
    """The other connection inserts the id and commits while this create's transaction is open: DuckDB refuses
    this create's row at its commit (the key); the create runs again, finds the row, and says it exists."""
    service, other = held
    engine, original = service.engine, service.engine.execute

    def racing(sql, params=None):
        result = original(sql, params)
        if sql.startswith("MERGE INTO sessions") and not getattr(racing, "done", False):
            racing.done = True
            other.execute("INSERT INTO sessions (app_name, user_id, id, state_json, version, create_time,"
                          " update_time) VALUES ('app', 'u', 's', '{\"theirs\": 1}', 0, 1.0, 1.0)")
        return result

    engine.execute = racing
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name=APP, user_id="u", session_id="s", state={"mine": 1})
    assert racing.done
    assert engine.execute("SELECT state_json FROM sessions") == [('{"theirs": 1}',)]


async def test_delete_racing_another_connection_is_a_stale_session_not_a_driver_error(held) -> None:
    service, other = held
    await service.create_session(app_name=APP, user_id="u", session_id="s")
    other.execute("BEGIN")
    other.execute("DELETE FROM sessions")  # not committed: DuckDB's "Conflict on tuple deletion!" for ours
    with pytest.raises(StaleSessionError, match="conflict"):
        await service.delete_session(app_name=APP, user_id="u", session_id="s")
    other.execute("ROLLBACK")
    await service.delete_session(app_name=APP, user_id="u", session_id="s")
    assert count(service, "SELECT count(*) FROM sessions") == 0


# --- files written before the keys existed ------------------------------------------------------------------------


OLD_ROWS = PREVIOUS_TABLES + """INSERT INTO sessions VALUES ('app', 'u', 's', '{"k": 1}', 1, 1.0, 2.0, NULL, 1, 0);
INSERT INTO events VALUES ('app', 'u', 's', 'e1', 1, 'inv', 'agent', 2.0, '{"k": 1}', '[]', '{}');
INSERT INTO user_states VALUES ('app', 'u', '{"lang": "fr"}', 2.0, 1, '[]');
"""


def indexes(service: DeltaSessionService) -> set[str]:
    return {name for (name,) in service.engine.execute("SELECT index_name FROM duckdb_indexes()")}


async def test_a_file_made_before_the_keys_gains_them_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(OLD_ROWS)
    service = DeltaSessionService.duckdb(path)
    assert indexes(service) == {"sessions_key", "events_key", "app_states_key", "user_states_key",
                                "app_state_keys_key", "user_state_keys_key"}
    got = await service.get_session(app_name=APP, user_id="u", session_id="s")
    assert got.state == {"k": 1, "user:lang": "fr"} and [e.id for e in got.events] == ["e1"]
    # The old user row was moved to one row per key.
    assert count(service, "SELECT count(*) FROM user_states") == 0
    assert service.engine.execute("SELECT state_key, value_json FROM user_state_keys") == [("lang", '"fr"')]
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name=APP, user_id="u", session_id="s")
    service.close()


async def test_a_file_already_holding_duplicates_opens_keeps_them_and_says_where(tmp_path: Path, caplog) -> None:
    """A store corrupted before this version (two connections racing): nothing is deleted or refused; the table
    with duplicates is left without its key, named in a warning, and the others get theirs. Its duplicated user
    row is not moved to per-key rows either (which of the two?): left, named, and moved once repaired."""
    path = tmp_path / "corrupt.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(OLD_ROWS)
        conn.execute("INSERT INTO user_states VALUES ('app', 'u', '{\"lang\": \"de\"}', 3.0, 1, '[]')")
    with caplog.at_level(logging.WARNING):
        service = DeltaSessionService.duckdb(path)
    assert indexes(service) == {"sessions_key", "events_key", "app_states_key", "app_state_keys_key",
                                "user_state_keys_key"}
    assert "user_states holds rows with the same key" in caplog.text and "('app', 'u', 2)" in caplog.text
    assert "rlm-conformance audit" in caplog.text
    assert count(service, "SELECT count(*) FROM user_states") == 2  # kept, for whoever repairs it
    assert "user_states holds 2 rows for {'app_name': 'app', 'user_id': 'u'}" in caplog.text
    assert count(service, "SELECT count(*) FROM user_state_keys") == 0
    service.close()
    with duckdb.connect(str(path)) as conn:  # repaired by hand
        conn.execute("DELETE FROM user_states WHERE update_time = 3.0")
    again = DeltaSessionService.duckdb(path)  # the next start adds the key
    assert "user_states_key" in indexes(again)
    assert (await again.get_session(app_name=APP, user_id="u", session_id="s")).state == {"k": 1, "user:lang": "fr"}
    again.close()
