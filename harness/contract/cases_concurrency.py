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
    """Two writers on one session: the stale one is refused once, storing nothing; after a reload nothing is lost."""
    clock = Clock()
    created = await service.create_session(app_name=APP, user_id="u", state={"base_key": 0})
    writer_a, writer_b = await reload(service, created), await reload(service, created)
    await service.append_event(writer_a, event(clock, {"writer_a": "A"}, author="writer_a", text="A"))
    problems: list[str] = []
    try:
        await service.append_event(writer_b, event(clock, {"writer_b": "B"}, author="writer_b", text="B"))
    except Exception as error:  # noqa: BLE001 - any error may be the refusal: what was stored tells (below)
        problems += await _refusal_problems(service, created, error)
        if problems:  # a crash, not a rejection: the write after a reload would only add noise
            raise AssertionError("two writers on one stale session: " + "; ".join(problems)) from error
        await service.append_event(await reload(service, created),
                                   event(clock, {"writer_b": "B"}, author="writer_b", text="B"))
    else:
        problems.append("expected the stale writer's append to be refused (StaleSessionError, or any error of the "
                        "service's own that stores nothing), but it was accepted")
    final = await reload(service, created)
    for key, value in (("base_key", 0), ("writer_a", "A"), ("writer_b", "B")):
        if final.state.get(key) != value or key not in final.state:
            got = short(final.state[key]) if key in final.state else "<absent>"
            problems.append(f"lost update: persisted key {key!r} is {got}, expected {value!r}")
    if sorted(texts(final)) != ["A", "B"]:
        problems.append(f"persisted events {texts(final)}, expected one from each writer (A, B)")
    assert not problems, "two writers on one stale session: " + "; ".join(problems)


async def _refusal_problems(service: BaseSessionService, created, error: Exception) -> list[str]:
    """Why the stale append's ``error`` is a crash rather than a rejection (none: a rejection): a rejection leaves
    the session readable, as the first writer left it — base_key and writer_a's event and key, nothing of the
    stale writer. Judged by what was stored, so a home-made service's own exception class is as good as ADK's."""
    said = "StaleSessionError" if is_stale_session_error(error) else f"{type(error).__name__}: {str(error)[:80]}"
    try:
        between = await service.get_session(app_name=created.app_name, user_id=created.user_id,
                                            session_id=created.id)
    except Exception as reading:  # noqa: BLE001 - an unreadable session is the finding
        return [f"the session is unreadable after the stale append raised {said} (get_session raised "
                f"{type(reading).__name__}: {str(reading)[:80]})"]
    if between is None:
        return [f"the session is unreadable after the stale append raised {said} (get_session returned None)"]
    problems = []
    if "writer_b" in between.state or "B" in texts(between):
        problems.append(f"the refused stale append was stored anyway (key 'writer_b' or its event) though it "
                        f"raised {said}")
    if between.state.get("writer_a") != "A" or between.state.get("base_key") != 0 or texts(between) != ["A"]:
        problems.append(f"after the stale append raised {said} the session no longer holds what the first writer "
                        f"stored (base_key 0, writer_a 'A', one event 'A'): state {short(between.state)}, events "
                        f"{texts(between)}")
    return problems


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
