"""DeltaSessionService against ADK's session-service contract and its declared divergences."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time

import pytest
from adk_compat import GET_SESSION_CONFIG_REJECTS_NEGATIVE, StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.session import Session
from google.genai import types

from reference_agent.sessions import DeltaSessionService, ensure_schema
from reference_agent.storage import DuckDBEngine

APP = "app"

_clock = iter(range(1, 100_000))
# Later than any create_session in the run, so event order and update order agree.
_BASE = float(int(time.time()) + 3600)


def ev(delta: dict | None = None, *, author: str = "agent", text: str | None = None, **kw) -> Event:
    """An event with a strictly increasing timestamp (tests must not depend on wall time)."""
    content = types.Content(role="model", parts=[types.Part(text=text)]) if text else None
    return Event(
        invocation_id="inv", author=author, content=content,
        actions=EventActions(state_delta=dict(delta or {})), timestamp=_BASE + next(_clock), **kw,
    )


@pytest.fixture
def engine():
    eng = DuckDBEngine(None)
    yield eng
    eng.close()


@pytest.fixture
def svc(engine) -> DeltaSessionService:
    return DeltaSessionService(engine)


def rows(engine, sql: str) -> list[tuple]:
    return engine.execute(sql)


def all_persisted_text(engine) -> str:
    """Every stored JSON/string cell, to search for leaked keys or nulls."""
    parts = []
    for table in ("sessions", "events", "app_states", "user_states"):
        for row in engine.execute(f"SELECT * FROM {table}"):
            parts.extend(str(cell) for cell in row)
    return "\n".join(parts)


def test_is_an_adk_session_service(svc):
    assert isinstance(svc, BaseSessionService)
    ensure_schema(svc.engine)  # idempotent


async def test_create_get_list_delete(svc):
    s = await svc.create_session(app_name=APP, user_id="u1", state={"k": 1}, session_id="s1")
    assert (s.id, s.app_name, s.user_id, s.state, s.events) == ("s1", APP, "u1", {"k": 1}, [])
    assert s._storage_update_marker == "0"
    generated = await svc.create_session(app_name=APP, user_id="u1")
    assert generated.id and generated.id != "s1"

    await svc.append_event(s, ev({"k": 2}, text="hi"))
    got = await svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert got.state == {"k": 2} and len(got.events) == 1
    assert got.events[0].content.parts[0].text == "hi"
    assert got.last_update_time == s.last_update_time
    # Returned sessions are copies.
    got.state["k"] = 99
    assert (await svc.get_session(app_name=APP, user_id="u1", session_id="s1")).state == {"k": 2}

    listed = (await svc.list_sessions(app_name=APP, user_id="u1")).sessions
    assert {x.id for x in listed} == {"s1", generated.id}
    assert all(x.events == [] for x in listed)
    assert [x.id for x in listed][-1] == "s1"  # oldest update first; s1 was just updated
    assert (await svc.list_sessions(app_name=APP, user_id="nobody")).sessions == []

    await svc.delete_session(app_name=APP, user_id="u1", session_id="s1")
    assert await svc.get_session(app_name=APP, user_id="u1", session_id="s1") is None
    assert rows(svc.engine, "SELECT count(*) FROM events") == [(0,)]
    await svc.delete_session(app_name=APP, user_id="u1", session_id="s1")  # deleting twice is fine


async def test_already_exists_and_not_found(svc):
    await svc.create_session(app_name=APP, user_id="u", session_id="s")
    with pytest.raises(AlreadyExistsError):
        await svc.create_session(app_name=APP, user_id="u", session_id="s")
    # The same id under another user is a different session.
    await svc.create_session(app_name=APP, user_id="other", session_id="s")
    assert await svc.get_session(app_name=APP, user_id="u", session_id="nope") is None
    ghost = Session(app_name=APP, user_id="u", id="ghost")
    with pytest.raises(SessionNotFoundError):
        await svc.append_event(ghost, ev({"k": 1}))
    with pytest.raises(SessionNotFoundError):
        await svc.persisted_rows(app_name=APP, user_id="u", session_id="ghost")


async def test_scopes_across_two_users_and_two_sessions(svc):
    a1 = await svc.create_session(app_name=APP, user_id="alice", session_id="a1", state={"app:mode": "x"})
    await svc.create_session(app_name=APP, user_id="alice", session_id="a2")
    b1 = await svc.create_session(app_name=APP, user_id="bob", session_id="b1")
    await svc.append_event(a1, ev({"user:lang": "fr", "app:mode": "y", "local": 1}))
    await svc.append_event(b1, ev({"user:lang": "de", "local": 2}))

    async def state(user, sid):
        return (await svc.get_session(app_name=APP, user_id=user, session_id=sid)).state

    assert await state("alice", "a1") == {"local": 1, "user:lang": "fr", "app:mode": "y"}
    assert await state("alice", "a2") == {"user:lang": "fr", "app:mode": "y"}
    assert await state("bob", "b1") == {"local": 2, "user:lang": "de", "app:mode": "y"}
    assert await svc.get_user_state(app_name=APP, user_id="alice") == {"lang": "fr"}
    assert await svc.get_user_state(app_name=APP, user_id="nobody") == {}
    # The live session holds what get_session would return.
    assert a1.state == await state("alice", "a1")
    listed = {s.id: s.state for s in (await svc.list_sessions(app_name=APP)).sessions}
    assert listed == {"a1": await state("alice", "a1"), "a2": await state("alice", "a2"), "b1": await state("bob", "b1")}
    # Stored rows keep scopes apart, without prefixes.
    p = await svc.persisted_rows(app_name=APP, user_id="alice", session_id="a1")
    assert (p.state, p.user_state, p.app_state) == ({"local": 1}, {"lang": "fr"}, {"mode": "y"})


async def test_temp_is_live_but_never_persisted(svc):
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s", state={"temp:init": 1})
    event = ev({"temp:rlm:stage": "delegated", "temp:big": "x" * 10, "kept": True})
    returned = await svc.append_event(s, event)
    assert s.state["temp:rlm:stage"] == "delegated"  # visible in this invocation
    assert returned.actions.state_delta == {"kept": True}  # trimmed on the caller's event, like ADK
    assert "temp:" not in all_persisted_text(svc.engine)
    p = await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert p.state == {"kept": True} and p.events[0].state_delta == {"kept": True}
    reloaded = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert not any(k.startswith("temp:") for k in reloaded.state)
    assert reloaded.events[0].actions.state_delta == {"kept": True}


async def test_none_deletes_in_every_scope(svc):
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    await svc.append_event(s, ev({"k": 1, "keep": 2, "user:u": 3, "app:a": 4, "temp:t": 5}))
    await svc.append_event(s, ev({"k": None, "user:u": None, "app:a": None, "temp:t": None, "never": None}))

    # Live session: keys removed, not set to None.
    assert s.state == {"keep": 2}
    p = await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert (p.state, p.user_state, p.app_state) == ({"keep": 2}, {}, {})
    assert p.events[1].state_delta == {}
    assert sorted(p.events[1].deleted_keys) == ["app:a", "k", "never", "user:u"]
    # No null in any stored state or delta column.
    for table, col in (("sessions", "state_json"), ("app_states", "state_json"),
                       ("user_states", "state_json"), ("events", "state_delta_json")):
        for (text,) in rows(svc.engine, f"SELECT {col} FROM {table}"):
            assert None not in json.loads(text).values(), (table, text)
    # The event round-trips with {key: None}.
    reloaded = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert reloaded.state == {"keep": 2}
    assert reloaded.events[1].actions.state_delta == {"k": None, "user:u": None, "app:a": None, "never": None}


async def test_none_in_create_state_is_not_stored(svc):
    await svc.create_session(app_name=APP, user_id="u", session_id="s0", state={"user:x": 1, "app:y": 2})
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s", state={"a": None, "b": 1, "user:x": None})
    assert s.state == {"b": 1, "app:y": 2}
    assert await svc.get_user_state(app_name=APP, user_id="u") == {}


async def test_stale_writer_gets_stale_session_error_and_nothing_is_lost(svc):
    await svc.create_session(app_name=APP, user_id="u", session_id="s")
    w1 = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    w2 = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    await svc.append_event(w1, ev({"a": 1, "temp:t": 1}))
    late = ev({"b": 2, "temp:t2": 1})
    with pytest.raises(StaleSessionError):
        await svc.append_event(w2, late)
    # The stale writer's copy and event are untouched; storage holds only w1's write.
    assert w2.events == [] and w2.state == {}
    assert late.actions.state_delta == {"b": 2, "temp:t2": 1}
    stored = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert stored.state == {"a": 1} and len(stored.events) == 1
    # w1 goes on appending: its marker tracked the new version.
    await svc.append_event(w1, ev({"c": 3}))
    # Reloading recovers.
    fresh = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    await svc.append_event(fresh, late)
    p = await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert p.state == {"a": 1, "c": 3, "b": 2}
    assert [e.seq for e in p.events] == [1, 2, 3] and p.version == 3


def test_racing_threads_exactly_one_wins(tmp_path):
    svc = DeltaSessionService.duckdb(tmp_path / "race.duckdb")
    asyncio.run(svc.create_session(app_name=APP, user_id="u", session_id="s"))
    n = 6
    sessions = [asyncio.run(svc.get_session(app_name=APP, user_id="u", session_id="s")) for _ in range(n)]
    barrier = threading.Barrier(n)
    outcomes: list[str] = []

    def write(i: int) -> None:
        barrier.wait()
        try:
            asyncio.run(svc.append_event(sessions[i], ev({f"k{i}": i})))
            outcomes.append("ok")
        except StaleSessionError:
            outcomes.append("stale")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(outcomes) == ["ok"] + ["stale"] * (n - 1)
    p = asyncio.run(svc.persisted_rows(app_name=APP, user_id="u", session_id="s"))
    assert len(p.events) == 1 and p.version == 1 and len(p.state) == 1
    svc.close()


class _InterleavingEngine:
    """An engine without transactions (like Databricks) where a rival write lands
    between append_event's read and its compare-and-set update."""

    def __init__(self, inner: DuckDBEngine) -> None:
        self.inner, self.dialect, self.armed = inner, inner.dialect, False

    def execute(self, sql, params=None):
        if self.armed and sql.startswith("UPDATE sessions"):
            self.armed = False
            self.inner.execute("UPDATE sessions SET version = version + 1")
        return self.inner.execute(sql, params)

    def transaction(self):
        import contextlib
        return contextlib.nullcontext()

    def close(self):
        self.inner.close()


async def test_compare_and_set_guards_without_transactions(engine):
    svc = DeltaSessionService(_InterleavingEngine(engine))
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    svc.engine.armed = True
    with pytest.raises(StaleSessionError):
        await svc.append_event(s, ev({"a": 1, "user:x": 1}))
    assert s.events == [] and s.state == {}
    assert engine.execute("SELECT count(*) FROM events") == [(0,)]
    assert engine.execute("SELECT state_json FROM sessions") == [("{}",)]
    assert engine.execute("SELECT count(*) FROM user_states") == [(0,)]


async def test_markerless_session_falls_back_to_update_time(svc):
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    first = ev({"a": 1})
    await svc.append_event(s, first)
    # A session built elsewhere that has seen the latest event is accepted...
    same = Session(app_name=APP, user_id="u", id="s", events=[first], last_update_time=0.0)
    await svc.append_event(same, ev({"b": 2}))
    assert same._storage_update_marker == "2"
    # ...one that missed an event is stale.
    behind = Session(app_name=APP, user_id="u", id="s", events=[first], last_update_time=0.0)
    with pytest.raises(StaleSessionError):
        await svc.append_event(behind, ev({"c": 3}))


async def test_file_backed_reopen(tmp_path):
    path = tmp_path / "nested" / "sessions.duckdb"
    svc = DeltaSessionService.duckdb(path)
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s", state={"app:a": 1})
    await svc.append_event(s, ev({"k": "v", "user:u": [1, 2]}, text="one"))
    await svc.append_event(s, ev({"k": None}, author="user", text="two"))
    before = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    svc.close()

    again = DeltaSessionService.duckdb(path)
    after = await again.get_session(app_name=APP, user_id="u", session_id="s")
    assert after.state == before.state == {"app:a": 1, "user:u": [1, 2]}
    assert [e.model_dump() for e in after.events] == [e.model_dump() for e in before.events]
    assert after._storage_update_marker == "2"
    await again.append_event(after, ev({"k": "again"}))  # the reopened session is writable
    again.close()


async def test_get_session_config_filters(svc):
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    events = [ev({"i": i}) for i in range(5)]
    for e in events:
        await svc.append_event(s, e)

    async def ids(**cfg):
        got = await svc.get_session(app_name=APP, user_id="u", session_id="s", config=GetSessionConfig(**cfg))
        return [e.id for e in got.events]

    all_ids = [e.id for e in events]
    assert await ids() == all_ids
    assert await ids(num_recent_events=2) == all_ids[-2:]
    assert await ids(num_recent_events=0) == []
    assert await ids(num_recent_events=50) == all_ids
    assert await ids(after_timestamp=events[3].timestamp) == all_ids[3:]
    assert await ids(after_timestamp=events[1].timestamp, num_recent_events=1) == all_ids[-1:]
    assert await ids(after_timestamp=events[-1].timestamp + 1) == []
    if GET_SESSION_CONFIG_REJECTS_NEGATIVE:  # ADK 2.x validates it; ADK 1.x accepts -1 (adk_compat)
        with pytest.raises(ValueError):
            GetSessionConfig(num_recent_events=-1)


async def test_partial_event_not_persisted(svc):
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    partial = ev({"k": 1, "temp:t": 1}, text="stream", partial=True)
    assert await svc.append_event(s, partial) is partial
    assert s.events == [] and s.state == {}
    assert rows(svc.engine, "SELECT count(*) FROM events") == [(0,)]
    assert (await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")).version == 0


async def test_unicode_and_large_values_round_trip(svc):
    big = "é" * 1_000_000 + "🚀"
    state = {"ключ": "значение ✓", "user:名前": "太郎", "app:emoji": "🎉", "big": big, "nested": {"ü": ["ß", 1.5]}}
    s = await svc.create_session(app_name=APP, user_id="ユーザー", session_id="séance")
    await svc.append_event(s, ev(state, text="données"))
    got = await svc.get_session(app_name=APP, user_id="ユーザー", session_id="séance")
    assert got.state == state
    assert got.events[0].actions.state_delta == state
    assert got.events[0].content.parts[0].text == "données"
    # Stored as real UTF-8 text, not \u escapes.
    (text,) = rows(svc.engine, "SELECT state_json FROM sessions")[0]
    assert "значение" in text and "\\u" not in text[:200]


async def test_event_fields_round_trip(svc):
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    call = types.Part(function_call=types.FunctionCall(name="delegate_code_results", args={"code": "print(1)"}))
    event = Event(
        invocation_id="inv-9", author="databricks_analyst", branch="b",
        content=types.Content(role="model", parts=[call]),
        actions=EventActions(state_delta={"x": 1}, escalate=True), timestamp=1_700_000_500.25,
    )
    await svc.append_event(s, event)
    (got,) = (await svc.get_session(app_name=APP, user_id="u", session_id="s")).events
    assert got.model_dump() == event.model_dump()
    p = await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")
    (row,) = p.events
    assert (row.seq, row.id, row.author, row.invocation_id, row.timestamp) == (
        1, event.id, "databricks_analyst", "inv-9", 1_700_000_500.25)


async def test_get_session_leaves_the_garbage_collector_as_it_found_it() -> None:
    service = DeltaSessionService.duckdb(None)
    session = await service.create_session(app_name="app", user_id="u", session_id="s")
    await service.append_event(session, Event(invocation_id="i", author="agent",
                                              actions=EventActions(state_delta={"k": 1})))
    assert gc.isenabled()
    assert len((await service.get_session(app_name="app", user_id="u", session_id="s")).events) == 1
    assert gc.isenabled()  # paused only while the events were built
    gc.disable()
    try:
        await service.get_session(app_name="app", user_id="u", session_id="s")
        assert not gc.isenabled()  # a caller's own gc.disable() holds
    finally:
        gc.enable()


class _CountingEngine(DuckDBEngine):
    """A DuckDB engine that keeps the statements it ran."""

    def __init__(self) -> None:
        super().__init__(None)
        self.statements: list[str] = []

    def execute(self, sql, params=None):
        self.statements.append(" ".join(sql.split()))
        return super().execute(sql, params)


async def test_an_append_to_a_session_as_fetched_writes_without_reading_the_row_first() -> None:
    engine = _CountingEngine()
    service = DeltaSessionService(engine)
    session = await service.create_session(app_name="app", user_id="u", session_id="s", state={"n": 0})
    for n in (1, 2):
        engine.statements.clear()
        await service.append_event(session, Event(invocation_id="i", author="agent",
                                                  actions=EventActions(state_delta={"n": n})))
        assert not [q for q in engine.statements if q.startswith("SELECT")], engine.statements
    fetched = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert fetched.state == {"n": 2} and len(fetched.events) == 2


async def test_a_row_deleted_and_recreated_at_the_same_version_is_read_not_overwritten() -> None:
    # The remembered row says version 0, {"a": 1}; the stored one is version 0, {"b": 2}. Comparing the
    # version alone would write {"a": 1, "c": 3}; the state comparison sends the append to read the row.
    engine = DuckDBEngine(None)
    first, second = DeltaSessionService(engine), DeltaSessionService(engine)
    session = await first.create_session(app_name="app", user_id="u", session_id="s", state={"a": 1})
    await second.delete_session(app_name="app", user_id="u", session_id="s")
    await second.create_session(app_name="app", user_id="u", session_id="s", state={"b": 2})
    await first.append_event(session, Event(invocation_id="i", author="agent",
                                            actions=EventActions(state_delta={"c": 3})))
    stored = await second.persisted_rows(app_name="app", user_id="u", session_id="s")
    assert stored.state == {"b": 2, "c": 3}
