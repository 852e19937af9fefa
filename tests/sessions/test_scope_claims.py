"""Claims on app:/user: keys before the commit point (reference_agent/sessions/scope_claims.py), on an engine
without transactions (as Databricks): two sessions of one user racing on one key, deterministically interleaved,
and a claimer that dies or stalls at each step of the protocol.

The race: session a's append is held right before its commit point while session b's append of the same key runs
whole. With claims, b finds a's claim and is stale, a lands. Without them (the broken variant: the keys checked
before the commit point and written after it, the store before this design) both are acknowledged and b's update
is lost — the window the concurrent runners found across two processes (docs/session-store.md).
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from adk_compat import StaleSessionError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from reference_agent.sessions import DeltaSessionService
from reference_agent.sessions.conflicts import ConflictRetry
from reference_agent.storage import DuckDBEngine

from tests.sessions.faulty_engine import FaultyEngine, InjectedFailure

APP, USER = "app", "u"
_ts = iter(range(1, 1_000_000))


def ev(delta: dict, text: str = "t") -> Event:
    return Event(invocation_id="inv", author="agent", timestamp=1_800_000_000.0 + next(_ts),
                 content=types.Content(role="model", parts=[types.Part(text=text)]),
                 actions=EventActions(state_delta=dict(delta)))


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class Unclaimed(DeltaSessionService):
    """The broken variant: keys checked before the commit point, written after it (no claim)."""

    claims_before_commit = False


class HoldBefore(FaultyEngine):
    """Runs ``meanwhile`` (in another thread, as another process would) just before the first statement matching
    ``pattern``, then that statement."""

    def __init__(self, inner: DuckDBEngine, pattern: str, meanwhile) -> None:
        super().__init__(inner)
        self.pattern, self.meanwhile, self.done = pattern, meanwhile, False

    def execute(self, sql, params=None):
        if not self.done and sql.startswith(self.pattern):
            self.done = True
            errors: list[BaseException] = []

            def run() -> None:
                try:
                    asyncio.run(self.meanwhile())
                except BaseException as exc:  # noqa: BLE001 - handed to the test
                    errors.append(exc)

            thread = threading.Thread(target=run)
            thread.start()
            thread.join()
            self.outcome = errors[0] if errors else None
        return super().execute(sql, params)


def service(engine, cls=DeltaSessionService, clock=None) -> DeltaSessionService:
    return cls(engine, retry=ConflictRetry(sleep=lambda s: None), clock=clock or Clock())


async def _race(cls) -> tuple[list, BaseException | None, list]:
    """a and b, two sessions of one user, both loaded user:trail = []; a's append is held before its commit point
    while b appends whole. Returns (a's outcome, b's outcome, the stored trail)."""
    inner = DuckDBEngine(None)
    setup = service(FaultyEngine(inner), cls)
    await setup.create_session(app_name=APP, user_id=USER, session_id="a", state={"user:trail": []})
    await setup.create_session(app_name=APP, user_id=USER, session_id="b")
    b_service = service(FaultyEngine(inner), cls)
    b = await b_service.get_session(app_name=APP, user_id=USER, session_id="b")

    async def b_appends() -> None:
        await b_service.append_event(b, ev({"user:trail": [*b.state["user:trail"], "b"]}, "b"))

    engine = HoldBefore(inner, "UPDATE sessions", b_appends)
    a_service = service(engine, cls)
    a = await a_service.get_session(app_name=APP, user_id=USER, session_id="a")
    await a_service.append_event(a, ev({"user:trail": [*a.state["user:trail"], "a"]}, "a"))
    trail = (await setup.get_session(app_name=APP, user_id=USER, session_id="b")).state["user:trail"]
    return ["a"], engine.outcome, trail


async def test_a_session_whose_key_another_append_claimed_is_stale_and_the_claimer_lands():
    acked, b_outcome, trail = await _race(DeltaSessionService)
    assert isinstance(b_outcome, StaleSessionError) and "another session's append" in str(b_outcome), b_outcome
    assert trail == ["a"], "the acknowledged update of a is kept, b's refused one is not stored"


async def test_without_the_claim_before_the_commit_point_an_acknowledged_update_is_lost():
    """The variant the concurrent runners caught (lost_update, user:trail): both appends are acknowledged, a's
    later write of the key overwrites b's."""
    _, b_outcome, trail = await _race(Unclaimed)
    assert b_outcome is None, "b's append was acknowledged"
    assert trail == ["a"] and "b" not in trail, "b's acknowledged update is lost"


async def test_a_stalled_claimer_fenced_off_after_the_lease_cannot_commit():
    """a's claim is older than the lease when b meets it: b fences a's session off and lands; a, resuming, finds its
    compare-and-set refused (the fence moved) and is stale — before it acknowledged anything."""
    inner = DuckDBEngine(None)
    clock = Clock()
    setup = service(FaultyEngine(inner), clock=clock)
    await setup.create_session(app_name=APP, user_id=USER, session_id="a", state={"user:n": 0})
    await setup.create_session(app_name=APP, user_id=USER, session_id="b")
    b_service = service(FaultyEngine(inner), clock=clock)
    b = await b_service.get_session(app_name=APP, user_id=USER, session_id="b")

    async def b_appends_after_the_lease() -> None:
        clock.now += 31
        await b_service.append_event(b, ev({"user:n": b.state["user:n"] + 10}, "b"))

    engine = HoldBefore(inner, "UPDATE sessions", b_appends_after_the_lease)
    a_service = service(engine, clock=clock)
    a = await a_service.get_session(app_name=APP, user_id=USER, session_id="a")
    with pytest.raises(StaleSessionError):
        await a_service.append_event(a, ev({"user:n": a.state["user:n"] + 1}, "a"))
    assert engine.outcome is None, engine.outcome
    assert await setup.get_user_state(app_name=APP, user_id=USER) == {"n": 10}
    assert inner.execute("SELECT version, fence FROM sessions WHERE id = 'a'") == [(0, 1)]
    assert inner.execute("SELECT count(*) FROM user_state_keys WHERE claim_json IS NOT NULL") == [(0,)]


async def _cut_a_after(k: int, clock: Clock) -> DuckDBEngine:
    """Session a's append of user:n = 1 dies at its statement k (0-1: read, 2-3: claims, 4: commit point, 5-6:
    the keys written, 7: the event row); session b loaded user:n = 0 before."""
    inner = DuckDBEngine(None)
    engine = FaultyEngine(inner)
    writer = service(engine, clock=clock)
    a = await writer.create_session(app_name=APP, user_id=USER, session_id="a", state={"user:n": 0, "app:m": 0})
    engine.statements.clear()
    engine.fail_from = k
    with pytest.raises(InjectedFailure):
        await writer.append_event(a, ev({"user:n": 1, "app:m": 1}, "a1"))
    return inner


@pytest.mark.parametrize("k", range(8))
async def test_another_session_meets_what_a_dead_writer_left_after_each_statement(k):
    """A writer of session a dies after each statement of its append; session b of the same user (loaded before)
    then writes the same keys, as b's runner would, and reloads and retries on StaleSessionError. Nothing a never
    committed shows; what a committed is finished and kept (b's update builds on it); a dead claim holds the key
    only until the lease is over."""
    clock = Clock()
    inner = await _cut_a_after(k, clock)
    committed = k >= 5
    other = service(FaultyEngine(inner), clock=clock)
    b = await other.create_session(app_name=APP, user_id=USER, session_id="b")
    # What b loaded: a's keys as written so far (6: app:m written, 7: both; the event row missing).
    assert (b.state["user:n"], b.state["app:m"]) == {6: (0, 1), 7: (1, 1)}.get(k, (0, 0))
    try:
        await other.append_event(b, ev({"user:n": b.state["user:n"] + 10, "app:m": b.state["app:m"] + 10}, "b1"))
        landed = True
    except StaleSessionError as stale:
        landed = False
        if k in (3, 4):  # a's claims taken (3: app:m only; 4: both), its commit never ran: held for the lease
            assert "another session's append" in str(stale), stale
            clock.now += 31
        else:  # a committed: b settled a's claim by finishing it, and b had loaded the values before it
            assert committed and "another session changed" in str(stale), stale
        b = await other.get_session(app_name=APP, user_id=USER, session_id="b")
        await other.append_event(b, ev({"user:n": b.state["user:n"] + 10, "app:m": b.state["app:m"] + 10}, "b1"))
    assert landed == (k not in (3, 4, 5, 6)), k
    base = 1 if committed else 0
    assert await other.get_user_state(app_name=APP, user_id=USER) == {"n": base + 10}
    a = await other.get_session(app_name=APP, user_id=USER, session_id="a")
    assert [e.content.parts[0].text for e in a.events] == (["a1"] if committed else [])
    assert (a.state["user:n"], a.state["app:m"]) == (base + 10, base + 10)
    assert inner.execute("SELECT count(*) FROM user_state_keys WHERE claim_json IS NOT NULL") == [(0,)]


async def test_a_create_writing_a_key_claimed_in_flight_fences_the_claimer_off_and_lands():
    """A blind write after its own commit point (a create's initial user: state) never waits for a lease: it
    fences off the claim in flight, whose append can then no longer commit."""
    clock = Clock()
    inner = await _cut_a_after(4, clock)  # a's claims taken, its commit never ran
    other = service(FaultyEngine(inner), clock=clock)
    await other.create_session(app_name=APP, user_id=USER, session_id="c", state={"user:n": 5})
    assert await other.get_user_state(app_name=APP, user_id=USER) == {"n": 5}
    assert inner.execute("SELECT version, fence FROM sessions WHERE id = 'a'") == [(0, 1)]
