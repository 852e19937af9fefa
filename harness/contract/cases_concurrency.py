"""Contract cases: stale writers and concurrent appends."""

from __future__ import annotations

import asyncio

from adk_compat import is_stale_session_error
from google.adk.sessions.base_session_service import BaseSessionService

from .case import Clock, contract_case, event, reload, short, texts
from .profiles import ServiceProfile

APP = "contract-concurrency"
# Sizes: a few writers of a few appends each interleave at every await of the service (a lost update needs two),
# and every run pays the probe once per kind of service (ADK's SQLite service: ~1 s per 20 appends). Measured
# on ADK's SQLite service (ADK 1.x and 2.x): its lost scoped updates show on every run at 4 writers x 3 appends.
SESSIONS, EVENTS_EACH = 6, 4
SCOPED_WRITERS, SCOPED_EVENTS_EACH = 4, 3


@contract_case
async def stale_writer_rejected(service: BaseSessionService, profile: ServiceProfile) -> None:
    """Two writers on one session: the stale one gets exactly one StaleSessionError; after a reload nothing is lost."""
    clock = Clock()
    created = await service.create_session(app_name=APP, user_id="u", state={"base_key": 0})
    writer_a, writer_b = await reload(service, created), await reload(service, created)
    await service.append_event(writer_a, event(clock, {"writer_a": "A"}, author="writer_a", text="A"))
    problems: list[str] = []
    stale_errors = 0
    try:
        await service.append_event(writer_b, event(clock, {"writer_b": "B"}, author="writer_b", text="B"))
    except ValueError as error:  # StaleSessionError is a ValueError; ADK 1.x raises a bare one
        if not is_stale_session_error(error):
            raise
        stale_errors += 1
        between = await reload(service, created)
        if "writer_b" in between.state or "B" in texts(between):
            problems.append("the rejected stale append was partly stored (key 'writer_b' or its event)")
        writer_b = between
        await service.append_event(writer_b, event(clock, {"writer_b": "B"}, author="writer_b", text="B"))
    if stale_errors != 1:
        problems.insert(0, f"expected exactly one StaleSessionError for the stale writer, got {stale_errors}")
    final = await reload(service, created)
    for key, value in (("base_key", 0), ("writer_a", "A"), ("writer_b", "B")):
        if final.state.get(key) != value or key not in final.state:
            got = short(final.state[key]) if key in final.state else "<absent>"
            problems.append(f"lost update: persisted key {key!r} is {got}, expected {value!r}")
    if sorted(texts(final)) != ["A", "B"]:
        problems.append(f"persisted events {texts(final)}, expected one from each writer (A, B)")
    assert not problems, "two writers on one stale session: " + "; ".join(problems)


async def _append_many(service: BaseSessionService, sessions: list, events_each: int,
                       delta_for) -> list[BaseException]:
    clock = Clock(step=0.001)

    async def writer(index: int) -> None:
        for j in range(events_each):
            await service.append_event(sessions[index], event(clock, delta_for(index, j), text=f"s{index}-e{j}"))

    results = await asyncio.gather(*(writer(i) for i in range(len(sessions))), return_exceptions=True)
    return [r for r in results if isinstance(r, BaseException)]


@contract_case
async def concurrent_sessions(service: BaseSessionService, profile: ServiceProfile) -> None:
    """Many sessions appended to concurrently: every event and key lands in its own session, in order."""
    sessions = [await service.create_session(app_name=APP, user_id=f"u{i % 3}", session_id=f"c{i}")
                for i in range(SESSIONS)]
    errors = await _append_many(service, sessions, EVENTS_EACH, lambda i, j: {"counter": j, f"only_in_c{i}": True})
    assert not errors, f"concurrent appends raised: {[f'{type(e).__name__}: {e}' for e in errors]}"
    for i, session in enumerate(sessions):
        got = await reload(service, session)
        assert texts(got) == [f"s{i}-e{j}" for j in range(EVENTS_EACH)], f"session c{i}: events {texts(got)}"
        assert got.state.get("counter") == EVENTS_EACH - 1 and got.state.get(f"only_in_c{i}") is True, \
            f"session c{i}: lost update of 'counter' or 'only_in_c{i}': {got.state}"
        strays = [k for k in got.state if k.startswith("only_in_") and k != f"only_in_c{i}"]
        assert not strays, f"session c{i} holds another session's keys {strays}"


@contract_case
async def concurrent_scoped_writes(service: BaseSessionService, profile: ServiceProfile) -> None:
    """Concurrent appends from several sessions of one user to user:/app: keys lose none of them."""
    sessions = [await service.create_session(app_name=APP + "-scoped", user_id="u", session_id=f"w{i}")
                for i in range(SCOPED_WRITERS)]
    errors = await _append_many(service, sessions, SCOPED_EVENTS_EACH,
                                lambda i, j: {f"user:from_w{i}": j, f"app:from_w{i}": j})
    assert not errors, f"concurrent appends raised: {[f'{type(e).__name__}: {e}' for e in errors]}"
    state = (await reload(service, sessions[0])).state
    last = SCOPED_EVENTS_EACH - 1
    lost = [key for i in range(SCOPED_WRITERS) for key in (f"user:from_w{i}", f"app:from_w{i}")
            if state.get(key) != last]
    assert not lost, (f"lost updates of scoped keys {lost} (each must be {last} after {SCOPED_EVENTS_EACH} appends "
                      f"per session)")
