"""What an append writes, and that it does not grow with the session's state; the snapshot + tail layout.

An append writes its event and advances the session row; the state is the row's snapshot (``state_json`` as of
``state_version``) plus the later events' deltas, compacted into a new snapshot by an append once the tail
outgrows it. Counted in statements and bound bytes (deterministic), not in time; the bench times it.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import GetSessionConfig

from reference_agent.sessions import DeltaSessionService
from reference_agent.sessions import delta_session_service as service_module
from reference_agent.sessions.conflicts import ConflictRetry
from reference_agent.storage import DuckDBEngine

from tests.sessions.faulty_engine import FaultyEngine, InjectedFailure

APP = "app"
BIG = 20_000_000


def ev(delta: dict) -> Event:
    return Event(invocation_id="inv", author="agent", actions=EventActions(state_delta=dict(delta)))


class CountingEngine(DuckDBEngine):
    """DuckDB, counting each statement and the characters of the values bound to it."""

    def __init__(self) -> None:
        super().__init__(None)
        self.statements: list[str] = []
        self.bound_chars = 0

    def execute(self, sql, params=None):
        self.statements.append(sql.split(" ")[0] + " " + sql.split(" ")[1])
        self.bound_chars += sum(len(v) for v in (params or {}).values() if isinstance(v, str))
        return super().execute(sql, params)

    def take(self) -> tuple[list[str], int]:
        taken = self.statements, self.bound_chars
        self.statements, self.bound_chars = [], 0
        return taken


async def test_an_append_after_a_20_mb_value_writes_its_delta_not_the_state():
    engine = CountingEngine()
    svc = DeltaSessionService(engine)
    small = await svc.create_session(app_name=APP, user_id="u", session_id="small")
    big = await svc.create_session(app_name=APP, user_id="u", session_id="big")
    await svc.append_event(big, ev({"blob": "x" * BIG}))
    engine.take()
    written = {}
    for session in (small, big, small, big):
        await svc.append_event(session, ev({"n": 1, "note": "a small change"}))
        written[session.id] = engine.take()
    # On DuckDB: the session row's compare-and-set and the event row, in one transaction; no read-back.
    assert written["small"][0] == written["big"][0] == ["UPDATE sessions", "INSERT INTO"]
    # The same bytes bound in both (the session ids aside), a few hundred: not the 20 MB state.
    assert abs(written["big"][1] - written["small"][1]) <= 2 * len("small") and written["big"][1] < 2_000, written
    # The state reads back whole from its snapshot and the later deltas.
    loaded = await svc.get_session(app_name=APP, user_id="u", session_id="big")
    assert len(loaded.state["blob"]) == BIG and loaded.state["n"] == 1
    # A session loaded elsewhere (this service never read its snapshot) appends its delta all the same.
    other = DeltaSessionService(engine)
    stale_view = await other.get_session(app_name=APP, user_id="u", session_id="big")
    engine.take()
    await other.append_event(stale_view, ev({"n": 2}))
    assert engine.take()[1] < 2_000


async def test_the_tail_is_compacted_into_the_snapshot_and_every_reader_folds_it(monkeypatch):
    monkeypatch.setattr(service_module, "COMPACT_MIN_CHARS", 200)
    engine = DuckDBEngine(None)
    svc = DeltaSessionService(engine)
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s", state={"keep": 0, "drop": 1})
    expected = {"keep": 0, "drop": 1}
    for n in range(1, 40):
        delta = {f"k{n % 7}": n, "user:seen": n} if n != 5 else {"drop": None}
        await svc.append_event(s, ev(delta))
        expected.update({k: v for k, v in delta.items()})
        expected = {k: v for k, v in expected.items() if v is not None}
    (state_version, version, tail), = engine.execute("SELECT state_version, version, tail_bytes FROM sessions")
    assert 0 < state_version < version == 39 and 0 < tail <= 200, "never compacted, or never since"
    got = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert got.state == expected and len(got.events) == 39
    recent = await svc.get_session(app_name=APP, user_id="u", session_id="s",
                                   config=GetSessionConfig(num_recent_events=1))
    assert recent.state == expected and len(recent.events) == 1
    listed = (await svc.list_sessions(app_name=APP, user_id="u")).sessions
    assert listed[0].state == expected
    assert (await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")).state == {
        k: v for k, v in expected.items() if not k.startswith("user:")}
    # A second service (another process) reads the same, and its appends compact from what it read.
    other = DeltaSessionService(engine)
    again = await other.get_session(app_name=APP, user_id="u", session_id="s")
    for n in range(40, 60):
        await other.append_event(again, ev({"late": n}))
    expected["late"] = 59
    assert (await svc.get_session(app_name=APP, user_id="u", session_id="s")).state == expected


async def test_a_stale_snapshot_is_never_compacted_over_a_newer_row(monkeypatch):
    """The compare-and-set guards the compaction too: a writer whose view is stale reads the row instead."""
    monkeypatch.setattr(service_module, "COMPACT_MIN_CHARS", 10)
    engine = DuckDBEngine(None)
    first, second = DeltaSessionService(engine), DeltaSessionService(engine)
    a = await first.create_session(app_name=APP, user_id="u", session_id="s", state={"a": 1})
    await second.delete_session(app_name=APP, user_id="u", session_id="s")
    await second.create_session(app_name=APP, user_id="u", session_id="s", state={"b": 2})
    await first.append_event(a, ev({"c": "a value long enough to compact"}))
    assert (await second.get_session(app_name=APP, user_id="u", session_id="s")).state == {
        "b": 2, "c": "a value long enough to compact"}


@pytest.mark.parametrize("k", range(2))
async def test_a_compacting_append_cut_after_any_statement_reads_back_whole(monkeypatch, k):
    """Without transactions (Databricks): the compaction rides on the commit point; a cut after it rolls forward."""
    monkeypatch.setattr(service_module, "COMPACT_MIN_CHARS", 10)
    inner = DuckDBEngine(None)
    engine = FaultyEngine(inner)
    writer = DeltaSessionService(engine, retry=ConflictRetry(sleep=lambda s: None))
    s = await writer.create_session(app_name=APP, user_id="u", session_id="s")
    await writer.append_event(s, ev({"a": "first value"}))
    engine.fail_from = len(engine.statements) + k  # 0: the compare-and-set (compacting), 1: the event row
    with pytest.raises(InjectedFailure):
        await writer.append_event(s, ev({"b": "second value, long enough to compact"}))
    got = await DeltaSessionService(inner).get_session(app_name=APP, user_id="u", session_id="s")
    assert got.state == ({"a": "first value"} if k == 0 else {"a": "first value",
                                                               "b": "second value, long enough to compact"})
    assert len(got.events) == 1 + k


class SlowEngine(DuckDBEngine):
    """Each statement takes 20 ms, holding no Python lock: like DuckDB on a large file."""

    def execute(self, sql, params=None):
        time.sleep(0.02)
        return super().execute(sql, params)


async def test_an_append_leaves_the_event_loop_free():
    svc = DeltaSessionService(SlowEngine(None))
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    ticks = 0
    done = asyncio.Event()

    async def ticker():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    await svc.append_event(s, ev({"n": 1}))
    await svc.get_session(app_name=APP, user_id="u", session_id="s")
    done.set()
    await task
    assert ticks >= 5, "the loop was blocked while DuckDB ran"
    assert threading.main_thread() is threading.current_thread()


async def test_an_engine_not_marked_thread_safe_runs_on_the_loop():
    engine = FaultyEngine(DuckDBEngine(None))  # no thread_safe mark: a wrapper that does not say it is safe
    svc = DeltaSessionService(engine)
    threads = []
    original = engine.execute

    def record(sql, params=None):
        threads.append(threading.current_thread())
        return original(sql, params)

    engine.execute = record
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    await svc.append_event(s, ev({"n": 1}))
    assert set(threads) == {threading.main_thread()}
