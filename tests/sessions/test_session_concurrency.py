"""DeltaSessionService under concurrency and partial failure, on an engine without transactions (as Databricks).

Each path of the module docstring: scope keys version-checked (stale -> StaleSessionError, nothing written;
other keys merged), Delta write conflicts retried or mapped, an append cut after any of its statements reads
back whole and is completed by the next reader or writer, and no acknowledged event is lost.
"""

from __future__ import annotations

import pytest
from adk_compat import StaleSessionError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from reference_agent.sessions import DeltaSessionService
from reference_agent.sessions.conflicts import ConflictRetry
from reference_agent.storage import DuckDBEngine, WriteConflictError

from tests.sessions.faulty_engine import FaultyEngine, InjectedFailure

APP = "app"
_ts = iter(range(1, 1_000_000))


def ev(delta: dict, text: str = "") -> Event:
    return Event(invocation_id="inv", author="agent", timestamp=1_800_000_000.0 + next(_ts),
                 content=types.Content(role="model", parts=[types.Part(text=text or "t")]),
                 actions=EventActions(state_delta=dict(delta)))


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def engine() -> FaultyEngine:
    eng = FaultyEngine(DuckDBEngine(None))
    yield eng
    eng.close()


@pytest.fixture
def svc(engine, sleeps) -> DeltaSessionService:
    return DeltaSessionService(engine, retry=ConflictRetry(attempts=4, sleep=sleeps.append))


async def reload(svc, session):
    return await svc.get_session(app_name=session.app_name, user_id=session.user_id, session_id=session.id)


# --- scope rows: version-checked per key ---------------------------------------------------------------------


async def test_two_sessions_writing_one_user_key_the_stale_one_is_refused_and_nothing_is_written(svc, engine):
    a = await svc.create_session(app_name=APP, user_id="u", session_id="a", state={"user:x": 0})
    b = await svc.create_session(app_name=APP, user_id="u", session_id="b")
    assert b.state == {"user:x": 0}
    await svc.append_event(a, ev({"user:x": 1}))
    with pytest.raises(StaleSessionError, match=r"another session changed user:x"):
        await svc.append_event(b, ev({"user:x": 2, "own": "b"}))
    assert b.state == {"user:x": 0} and b.events == []
    stored = await svc.persisted_rows(app_name=APP, user_id="u", session_id="b")
    assert (stored.user_state, stored.state, stored.events, stored.version) == ({"x": 1}, {}, [], 0)
    # Reloaded, the writer sees x=1 and may change it.
    b = await reload(svc, b)
    await svc.append_event(b, ev({"user:x": 2}))
    assert (await reload(svc, a)).state["user:x"] == 2


async def test_other_keys_of_the_same_row_are_no_conflict_and_are_kept(svc):
    a = await svc.create_session(app_name=APP, user_id="u", session_id="a")
    b = await svc.create_session(app_name=APP, user_id="u", session_id="b")
    await svc.append_event(a, ev({"user:from_a": 1, "app:from_a": 1}))
    await svc.append_event(b, ev({"user:from_b": 1, "app:from_b": 1}))  # b never saw from_a: not its key
    got = await reload(svc, a)
    assert {k: got.state[k] for k in ("user:from_a", "user:from_b", "app:from_a", "app:from_b")} == dict.fromkeys(
        ("user:from_a", "user:from_b", "app:from_a", "app:from_b"), 1)
    assert (await svc.persisted_rows(app_name=APP, user_id="u", session_id="a")).user_state == {
        "from_a": 1, "from_b": 1}
    # One row per key, each written by one append (claimed: version 1, then its value: 2): b's append neither read
    # nor rewrote a's key.
    assert svc.engine.inner.execute("SELECT state_key, version FROM user_state_keys ORDER BY state_key") == [
        ("from_a", 2), ("from_b", 2)]


async def test_a_rival_write_between_read_and_claim_makes_the_append_stale_and_is_kept(svc, engine):
    """The lost update of the old read-then-write: a rival's write of the same key (and of another) lands between
    this append's read and its claim. The claim (a compare-and-set at the version read) fails: the append is stale
    before its commit point, nothing of it is written, and the rival's values stay."""
    a = await svc.create_session(app_name=APP, user_id="u", session_id="a")
    original = engine.execute

    def with_rival(sql, params=None):
        if sql.startswith("MERGE INTO user_state_keys") and not getattr(with_rival, "done", False):
            with_rival.done = True
            engine.inner.execute("INSERT INTO user_state_keys VALUES ('app', 'u', 'rival', '1', 1, '[]', 0.0, NULL),"
                                 " ('app', 'u', 'mine', '0', 1, '[]', 0.0, NULL)")
        return original(sql, params)

    engine.execute = with_rival
    with pytest.raises(StaleSessionError, match="changed or were claimed"):
        await svc.append_event(a, ev({"user:mine": 1, "app:other": 1}))  # read: no row; rival inserts; claim fails
    engine.execute = original
    stored = await svc.persisted_rows(app_name=APP, user_id="u", session_id="a")
    assert (stored.user_state, stored.app_state, stored.version, stored.events) == ({"rival": 1, "mine": 0}, {}, 0, [])
    # Its app: claim was released: no claim is left, and the next writer of app:other is not held up.
    assert engine.inner.execute("SELECT count(*) FROM app_state_keys WHERE claim_json IS NOT NULL") == [(0,)]
    await svc.append_event(await reload(svc, a), ev({"app:other": 2}))
    assert (await reload(svc, a)).state["app:other"] == 2


# --- Delta write conflicts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("statement", [r"^UPDATE sessions", r"^MERGE INTO user_state_keys", r"^MERGE INTO app_state_keys",
                                       r"^MERGE INTO events"])
async def test_a_conflict_on_a_retry_safe_statement_is_retried_with_backoff(svc, engine, sleeps, statement, caplog):
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s", state={"user:n": 0})
    engine.conflict_on = {statement: 2}
    await svc.append_event(s, ev({"k": 1, "user:n": 1, "app:a": 1}, "one"))
    assert engine.conflict_on[statement] == 0, "the conflict was not injected"
    assert len(sleeps) == 2 and sleeps == sorted(sleeps)
    assert "write conflict" in caplog.text and "DELTA_CONCURRENT_APPEND" in caplog.text
    got = await reload(svc, s)
    assert got.state == {"k": 1, "user:n": 1, "app:a": 1} and [e.content.parts[0].text for e in got.events] == ["one"]


async def test_session_row_conflicts_past_the_attempts_are_a_stale_session_and_nothing_is_written(svc, engine):
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    engine.conflict_on = {r"^UPDATE sessions": 99}
    with pytest.raises(StaleSessionError):
        await svc.append_event(s, ev({"k": 1, "user:x": 1}))
    engine.conflict_on = {}
    stored = await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert (stored.state, stored.user_state, stored.events, stored.version) == ({}, {}, [], 0)
    assert s.state == {} and s.events == []


async def test_create_session_conflict_is_retried_and_its_guard_re_checks(svc, engine):
    engine.conflict_on = {r"^MERGE INTO sessions": 1}
    await svc.create_session(app_name=APP, user_id="u", session_id="s")
    assert (await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")).version == 0


def test_retry_gives_up_after_its_attempts_and_re_raises() -> None:
    calls, slept = [], []

    def always_conflicts():
        calls.append(1)
        raise WriteConflictError("x", error_class="DELTA_CONCURRENT_WRITE")

    with pytest.raises(WriteConflictError):
        ConflictRetry(attempts=3, initial_s=0.1, sleep=slept.append).run("test", always_conflicts)
    assert len(calls) == 3 and slept == [0.1, 0.2]


# --- an append cut after any statement -------------------------------------------------------------------------


async def _append_cut_at(k: int):
    inner = DuckDBEngine(None)
    engine = FaultyEngine(inner)
    writer = DeltaSessionService(engine, retry=ConflictRetry(sleep=lambda s: None))
    s = await writer.create_session(app_name=APP, user_id="u", session_id="s", state={"user:n": 0})
    acked = []
    for n in (1, 2):
        await writer.append_event(s, ev({"k": n, "user:n": n, "app:n": n}, f"e{n}"))
        acked.append(f"e{n}")
    engine.statements.clear()
    engine.fail_from = k
    try:
        await writer.append_event(s, ev({"k": 3, "user:n": 3, "app:n": 3, "gone": None}, "e3"))
        cut = False
    except InjectedFailure:
        cut = True
    else:
        acked.append("e3")
    return inner, engine, acked, cut


async def test_the_happy_path_runs_no_more_statements_than_before():
    inner, engine, _, cut = await _append_cut_at(10_000)
    assert not cut
    kinds = [" ".join(q.split(" ")[:2]) for q in engine.statements]
    # Per scope one read, one claim and one write (of the keys the event writes), the session compare-and-set
    # between claims and writes, the event row (insert-if-absent: a reader may have completed the append from its
    # redo record): 8 — the claims are the 2 more than before them (scope_claims.py).
    assert kinds == ["SELECT state_key,", "SELECT state_key,", "MERGE INTO", "MERGE INTO", "UPDATE sessions",
                     "MERGE INTO", "MERGE INTO", "MERGE INTO"], engine.statements


@pytest.mark.parametrize("k", range(8))
async def test_an_append_cut_after_any_statement_reads_back_whole_and_the_next_append_works(k):
    inner, _, acked, cut = await _append_cut_at(k)
    assert cut
    # A new process on the same storage.
    reader = DeltaSessionService(inner, retry=ConflictRetry(sleep=lambda s: None))
    got = await reader.get_session(app_name=APP, user_id="u", session_id="s")
    texts = [e.content.parts[0].text for e in got.events]
    assert texts[:len(acked)] == acked, "an acknowledged event was lost"
    # Statements 0-1 read the scope rows, 2-3 claim them, 4 is the commit point, 5-6 write the scope rows, 7 the
    # event row: cut before the commit point the append never happened (its claims, if any, are left: the next
    # append of this session fences them off); cut after it, it was completed by this read.
    assert texts == (["e1", "e2"] if k <= 4 else ["e1", "e2", "e3"])
    n = len(texts)
    # Whole: the state is the fold of the events that count, in every scope.
    assert (got.state["k"], got.state["user:n"], got.state["app:n"]) == (n, n, n)
    rows = await reader.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert rows.version == n and [e.seq for e in rows.events] == list(range(1, n + 1))
    # The next append works and lands after them.
    await reader.append_event(got, ev({"k": 9, "user:n": 9}, "next"))
    again = await reader.get_session(app_name=APP, user_id="u", session_id="s")
    assert [e.content.parts[0].text for e in again.events] == [*texts, "next"]
    assert (again.state["k"], again.state["user:n"], again.state["app:n"]) == (9, 9, n)


async def test_a_cut_append_is_completed_by_the_next_append_of_a_stale_copy_too():
    inner, _, acked, _ = await _append_cut_at(6)  # committed; app: key written; user: key and event row missing
    other = DeltaSessionService(inner)
    session = await other.get_session(app_name=APP, user_id="u", session_id="s")  # completes it
    assert [e.content.parts[0].text for e in session.events] == ["e1", "e2", "e3"]
    # Rolling forward twice applies nothing twice (the key's claim is gone once its value is written).
    other._roll_forward({"app_name": APP, "user_id": "u", "session_id": "s"}, 3,
                              inner.execute("SELECT pending_json FROM sessions")[0][0])
    rows = await other.persisted_rows(app_name=APP, user_id="u", session_id="s")
    # user:n: created (1), then each of the three appends claimed it (+1) and wrote it (+1).
    assert len(rows.events) == 3 and inner.execute("SELECT version FROM user_state_keys WHERE state_key = 'n'") == [
        (7,)]


async def test_adk_state_writes_through_to_the_live_session_before_the_append_and_that_is_no_conflict(svc):
    """ADK's State sets session.state[key] when a tool writes it, before append_event: the check compares storage
    with what the session was loaded with, not with the live dict."""
    a = await svc.create_session(app_name=APP, user_id="u", session_id="a", state={"app:snips": {"x": 1}})
    a.state["app:snips"] = {"x": 1, "y": 2}  # what State.__setitem__ does
    await svc.append_event(a, ev({"app:snips": {"x": 1, "y": 2}}))
    b = await svc.create_session(app_name=APP, user_id="v", session_id="b")
    b.state["app:snips"] = {**b.state["app:snips"], "z": 3}
    await svc.append_event(b, ev({"app:snips": b.state["app:snips"]}))
    a.state["app:snips"] = {**a.state["app:snips"], "w": 4}  # computed from a's stale view: would drop z
    with pytest.raises(StaleSessionError, match="app:snips"):
        await svc.append_event(a, ev({"app:snips": a.state["app:snips"]}))
    assert (await reload(svc, b)).state["app:snips"] == {"x": 1, "y": 2, "z": 3}


# --- staleness follows the writer's own Session object -----------------------------------------------------------


async def test_a_read_of_the_same_id_in_between_does_not_make_a_stale_writer_fresh(svc):
    """Issue 34 item 3: the check remembered what each session *id* last saw, so a third reader's get_session of
    the writer's id (a UI, another worker) refreshed it and the writer overwrote another session's newer value."""
    a = await svc.create_session(app_name=APP, user_id="u", session_id="a", state={"user:x": 0})
    await svc.create_session(app_name=APP, user_id="u", session_id="b")
    writer = await svc.get_session(app_name=APP, user_id="u", session_id="b")  # sees user:x = 0
    await svc.append_event(a, ev({"user:x": 1}))  # another session changes it
    reader = await svc.get_session(app_name=APP, user_id="u", session_id="b")  # the third reader: sees 1
    assert reader.state["user:x"] == 1 and writer.state["user:x"] == 0
    with pytest.raises(StaleSessionError, match=r"another session changed user:x"):
        await svc.append_event(writer, ev({"user:x": 2}))
    assert (await svc.get_user_state(app_name=APP, user_id="u")) == {"x": 1}
    await svc.append_event(reader, ev({"user:x": 2}))  # the reader's own Session saw 1: it may write
    assert (await svc.get_user_state(app_name=APP, user_id="u")) == {"x": 2}


async def test_each_session_object_keeps_its_own_view_and_an_append_updates_only_its_own(svc):
    a = await svc.create_session(app_name=APP, user_id="u", session_id="a", state={"app:n": 0})
    first = await svc.get_session(app_name=APP, user_id="u", session_id="a")
    second = await svc.get_session(app_name=APP, user_id="u", session_id="a")
    b = await svc.create_session(app_name=APP, user_id="v", session_id="b")
    await svc.append_event(b, ev({"app:n": 1}))
    # Both copies of a loaded app:n = 0 before b changed it: whichever appends, it is stale on the key...
    with pytest.raises(StaleSessionError, match="app:n"):
        await svc.append_event(first, ev({"app:n": 2}))
    # ...and a key it does not write is no conflict: the other copy appends, its version check passes.
    await svc.append_event(second, ev({"own": 1}))
    with pytest.raises(StaleSessionError):  # and now first is also behind on the session row
        await svc.append_event(first, ev({"own": 2}))
    assert a.state == {"app:n": 0}


async def test_views_go_with_their_session_objects(svc):
    import gc

    for n in range(50):
        await svc.get_session(app_name=APP, user_id="u", session_id="a") if n else await svc.create_session(
            app_name=APP, user_id="u", session_id="a", state={"user:x": 0})
    gc.collect()
    assert len(svc._views) == 0
