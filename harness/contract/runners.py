"""Concurrent runners' workload: what each runner does to the session service, recorded as it sees it.

Each runner runs turns the way ADK's ``Runner`` does: load the session (``get_session``), then append a few
events on that ``Session`` object, each delta built from the live state — list keys extended by the runner's
own marker (``trail``, ``user:trail``, ``app:trail``: a read-modify-write, as an agent's history key is) and
registers overwritten (``last``, ``user:last``, ``app:last``). A refused append ends the turn (ADK's
``Runner`` does not retry: the caller sees the error); the next turn loads the session again. Two shapes:

* ``one_session`` — a double submit: every runner on one session;
* ``two_sessions`` — one session per runner, all of one user (they share the ``user:``/``app:`` keys).

Each round of a shape has its own app, so rounds do not mix. The runners are OS processes
(``runner_processes.py``) or, for a service no second process can reach, asyncio tasks of one process
(``run_tasks`` here). Sizes are small: a lost update needs two writers and one overlap.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types
from pydantic_core import to_jsonable_python

from .history import HistoryWriter, Op, error_text, now
from .history_check import Verdict, check_history

Shape = Literal["one_session", "two_sessions"]
SHAPES: tuple[Shape, ...] = ("one_session", "two_sessions")
USER = "runner-user"
# Sizes: 2 runners x 3 turns x 2 appends per shape and round (6 appends each): enough for every runner to load
# a session another one then changes, small enough that a round costs well under a second on a file store.
PROCESSES, TURNS, EVENTS_PER_TURN, ROUNDS = 2, 3, 2, 3
# The model's turn between a runner's load and each append: without a pause, runners in one event loop on a
# service that never awaits (InMemorySessionService) would run whole turns one after the other, never racing.
THINK_S = 0.001
Barrier = Callable[[str], Awaitable[None]]
NOT_FOUND = "get_session returned None"


@dataclass(frozen=True)
class Phase:
    """One shape in one round: its app, and the session each runner works on."""

    shape: Shape
    round: int

    @property
    def app(self) -> str:
        return f"concurrent-{self.shape.replace('_', '-')}-r{self.round}"

    def session_for(self, process: str) -> str:
        return "shared" if self.shape == "one_session" else f"own-{process}"

    def sessions(self, processes: list[str]) -> list[str]:
        return sorted({self.session_for(p) for p in processes})

    @property
    def name(self) -> str:
        return f"{self.shape}-r{self.round}"


def phases(rounds: int = ROUNDS) -> list[Phase]:
    return [Phase(shape, r) for r in range(rounds) for shape in SHAPES]


def process_names(count: int = PROCESSES) -> list[str]:
    return [f"p{i}" for i in range(count)]


def _markers(session: Any) -> tuple[str, ...]:
    return tuple("".join(p.text or "" for p in e.content.parts) if e.content and e.content.parts else ""
                 for e in session.events)


async def create_sessions(service: BaseSessionService, writer: HistoryWriter, phase: Phase,
                          processes: list[str]) -> None:
    """The phase's sessions, empty (the first runner makes them before the phase's barrier)."""
    for session_id in phase.sessions(processes):
        start = now()
        try:
            await service.create_session(app_name=phase.app, user_id=USER, session_id=session_id)
        except Exception as error:  # noqa: BLE001 - recorded: the checker reads the session back as it is
            writer.record("create", app=phase.app, user=USER, session=session_id, start=start, end=now(), ok=False,
                          error=error_text(error))
        else:
            writer.record("create", app=phase.app, user=USER, session=session_id, start=start, end=now())


async def read(service: BaseSessionService, writer: HistoryWriter, app: str, session_id: str) -> Any:
    """``get_session``, recorded; the session, or None when it raised or returned None (recorded as failed)."""
    start = now()
    try:
        session = await service.get_session(app_name=app, user_id=USER, session_id=session_id)
    except Exception as error:  # noqa: BLE001 - a failed read is an anomaly the checker names
        writer.record("read", app=app, user=USER, session=session_id, start=start, end=now(), ok=False,
                      error=error_text(error))
        return None
    if session is None:
        writer.record("read", app=app, user=USER, session=session_id, start=start, end=now(), ok=False,
                      error=NOT_FOUND)
        return None
    writer.record("read", app=app, user=USER, session=session_id, start=start, end=now(),
                  state=to_jsonable_python(dict(session.state), fallback=repr), events=_markers(session))
    return session


def _delta(state: dict[str, Any], marker: str) -> dict[str, Any]:
    extended = {key: [*(state.get(key) or []), marker] for key in ("trail", "user:trail", "app:trail")}
    return {**extended, "last": marker, "user:last": marker, "app:last": marker}


async def run_turns(service: BaseSessionService, writer: HistoryWriter, phase: Phase, *,
                    turns: int = TURNS, events_per_turn: int = EVENTS_PER_TURN) -> None:
    """One runner's turns in ``phase`` (see the module docstring), then a ``list_sessions``."""
    session_id = phase.session_for(writer.process)
    for turn in range(turns):
        session = await read(service, writer, phase.app, session_id)
        if session is None:
            continue
        for _ in range(events_per_turn):
            await asyncio.sleep(THINK_S)
            marker = f"{writer.process}-{len(writer.ops)}"  # the append's own seq: unique in the whole history
            delta = _delta(session.state, marker)
            event = Event(invocation_id=f"{writer.process}-{phase.name}-t{turn}", author=writer.process,
                          content=types.Content(role="model", parts=[types.Part(text=marker)]),
                          actions=EventActions(state_delta=copy.deepcopy(delta)), timestamp=time.time())
            start = now()
            try:
                await service.append_event(session, event)
            except Exception as error:  # noqa: BLE001 - any error is the caller's answer: "not stored"
                writer.record("append", app=phase.app, user=USER, session=session_id, start=start, end=now(),
                              ok=False, error=error_text(error), delta=delta, event=marker)
                break  # the turn fails, as ADK's Runner's does
            writer.record("append", app=phase.app, user=USER, session=session_id, start=start, end=now(),
                          delta=delta, event=marker)
    start = now()
    try:
        listed = await service.list_sessions(app_name=phase.app, user_id=USER)
    except Exception as error:  # noqa: BLE001
        writer.record("list", app=phase.app, user=USER, start=start, end=now(), ok=False, error=error_text(error))
    else:
        writer.record("list", app=phase.app, user=USER, start=start, end=now(),
                      sessions=tuple(sorted(s.id for s in listed.sessions)))


async def run_runner(service: BaseSessionService, writer: HistoryWriter, barrier: Barrier, processes: list[str],
                     rounds: int = ROUNDS) -> None:
    """Every phase for one runner: the first runner creates the phase's sessions, all meet at its barrier."""
    for phase in phases(rounds):
        if writer.process == processes[0]:
            await create_sessions(service, writer, phase, processes)
        await barrier(phase.name)
        await run_turns(service, writer, phase)


async def final_reads(service: BaseSessionService, processes: list[str], rounds: int = ROUNDS,
                      writer: HistoryWriter | None = None) -> list[Op]:
    """One ``get_session`` per session after every runner stopped: what the store holds."""
    writer = writer or HistoryWriter("final")
    for phase in phases(rounds):
        for session_id in phase.sessions(processes):
            await read(service, writer, phase.app, session_id)
    return writer.ops


@dataclass(frozen=True)
class RunnersResult:
    """Concurrent runners on one service: the verdict, the histories, and what could not be judged."""

    service: str
    mode: Literal["processes", "tasks"]
    verdict: Verdict
    ops: tuple[Op, ...]
    seconds: float
    overlapped: bool  # two runners' turns (a load and the appends on it) ran at the same time at least once
    not_judged: str = ""  # why the runners could not race (e.g. the second process could not open the store)

    def describe(self) -> str:
        head = (f"{self.service}, {len(process_names_in(self.ops))} runners as {self.mode} ({self.seconds:.1f} s, "
                f"of which the runners' calls {busy_seconds(self.ops):.1f} s)")
        if self.not_judged:
            return f"{head}: not judged — {self.not_judged}"
        return f"{head}: {self.verdict.describe()}"


def process_names_in(ops: tuple[Op, ...]) -> list[str]:
    return sorted({op.process for op in ops if op.process != "final"})


def busy_seconds(ops: tuple[Op, ...]) -> float:
    """From the runners' first call to their last (the rest of a run is starting processes)."""
    calls = [op for op in ops if op.process != "final" and op.kind != "open"]
    return (max(op.end for op in calls) - min(op.start for op in calls)) / 1e9 if calls else 0.0


def _turns(ops: list[Op] | tuple[Op, ...]) -> list[tuple[int, int, str]]:
    """Each runner's turns as (start, end, runner): from a load to the last call before its next load."""
    spans: list[tuple[int, int, str]] = []
    for op in sorted((op for op in ops if op.kind in ("read", "append")), key=lambda op: (op.process, op.seq)):
        if op.kind == "read" or not spans or spans[-1][2] != op.process:
            spans.append((op.start, op.end, op.process))
        else:
            spans[-1] = (spans[-1][0], op.end, op.process)
    return spans


def overlapped(ops: list[Op] | tuple[Op, ...]) -> bool:
    """Whether two runners' turns ran at the same time at least once (else nothing raced)."""
    spans = _turns(ops)
    return any(a[2] != b[2] and a[0] < b[1] and b[0] < a[1] for i, a in enumerate(spans) for b in spans[i + 1:])


async def run_tasks(service: BaseSessionService, name: str, *, processes: int = PROCESSES,
                    rounds: int = ROUNDS) -> RunnersResult:
    """The runners as asyncio tasks of this process on one service instance (an in-memory service cannot be
    shared by two processes)."""
    names = process_names(processes)
    writers = [HistoryWriter(p) for p in names]
    waiting: dict[str, asyncio.Event] = {}
    arrived: dict[str, int] = {}

    async def barrier(phase: str) -> None:
        event = waiting.setdefault(phase, asyncio.Event())
        arrived[phase] = arrived.get(phase, 0) + 1
        if arrived[phase] == len(names):
            event.set()
        await event.wait()

    started = time.monotonic()
    await asyncio.gather(*(run_runner(service, w, barrier, names, rounds) for w in writers))
    finals = await final_reads(service, names, rounds)
    ops = tuple(op for w in writers for op in w.ops)
    return RunnersResult(service=name, mode="tasks", verdict=check_history(ops, finals), ops=ops + tuple(finals),
                         seconds=time.monotonic() - started, overlapped=overlapped(ops))
