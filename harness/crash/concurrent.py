"""A scenario's ``concurrent:`` case: its turns sent by N runners at once on the target and its one session service,
judged by what each runner saw (``rlm-conformance crash`` runs it; docs/crash.md, "Two runners at once").

The scenario runs once (scripted model) with ``RunOptions.driver`` set to ``ConcurrentDriver``: instead of the
sessions one after another, N ADK ``Runner``s — one per runner, each on its own wrapper of the run's session
service (``ObservedSessionService``) — send their turns as asyncio tasks of one process, started together and
writing in step (``Lockstep``):

* ``sessions: same`` — every runner on the first session's id (a double submit);
* ``sessions: per_runner`` — runner i on a session of its own, all of one user (sharing ``user:``/``app:`` keys);
* with one session in the scenario every runner sends its turns; with N, runner i sends session i's.

Runners are tasks of one process on one service object, not processes: that is how a store admitting one process
per file (the reference agent's DuckDB) is shared, and the only way the target, built once, is. Each wrapper
records the runner's calls as a client-observed history (``harness/contract/history.py``: each append's delta and
event id, acknowledged or the error it raised; each read's state and event ids); after the runners, each session
is read once through the store. Judged:

* ``concurrent_history`` — ``harness/contract/history_check.py`` on the histories: no acknowledged write lost, no
  ``user:``/``app:`` read-modify-write lost, no refused append stored, no event lost or stored twice, no append
  taken on a view of its session that lacked another runner's event stored before it (the runner's view is the
  session object it appended with: ``stale_append``, a forked conversation), no read
  failed, each with its minimal witness. A runner refused with a stale-session error is a conflict the caller saw,
  not a failure; n/a (saying so) when the runners' turns never overlapped: nothing raced.
* ``conflicts_surfaced`` — a turn whose append the store refused ends in an error its caller sees (or stores that
  event on a retry in the same turn): a turn reporting success with a write dropped fails.
* ``concurrent:<check>`` — the per-event state checks (``STATE_CHECKS``) on the run's trace.

The scripted model serves every runner from one script, each agent's steps in arrival order: a concurrent case's
script holds every runner's answers, written so that it does not matter which runner gets which (the same step N
times); a refused runner leaves its later steps unserved, which is not judged. An in-memory session service makes
the case n/a, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService
from pydantic_core import to_jsonable_python

from ..checks.base import CheckResult, failed, not_applicable, passed
from ..contract.history import HistoryWriter, Op, error_text, now
from ..contract.history_check import Verdict, check_history
from ..contract.runners import overlapped
from ..llm.modes import LlmMode
from ..run.options import RunOptions
from ..scenario.models import Scenario
from ..trace.crash import describe_error
from ..trace.model import TurnOutcome, TurnRecord
from ..trace.persisted import persisted_snapshot
from .checks import RECOVERY_STATE_CHECKS
from .matrix import CrashReport, backend_cannot_crash

IN_MEMORY = ("InMemorySessionService",)  # ADK's: runners at once are judged on a store deployments share

LOCKSTEP_WAIT_S = 30.0  # a runner slow to reach its next write (a long Job_B run) is waited for; a stuck one is not
CHECK = "concurrent_history"
SURFACED = "conflicts_surfaced"
STATE_CHECKS = tuple(c for c in RECOVERY_STATE_CHECKS if c != "outcome_from_storage")
"""The per-event state checks run on a concurrent case's trace; outcome_from_storage is left out: a turn's outcome
is read back after the other runner may have written over it (the history check judges what was lost)."""
CONFLICT_WORDS = ("stale", "conflict", "concurrent", "modified", "version")
"""Words of an error that says another writer came first (ADK's StaleSessionError, a store's own conflict)."""


def _jsonable(value: Any) -> Any:
    return to_jsonable_python(value, fallback=repr)


def _state(session: Any) -> dict[str, Any]:
    return _jsonable({k: v for k, v in session.state.items() if not k.startswith("temp:")})


def _event_ids(session: Any) -> tuple[str, ...]:
    return tuple(e.id for e in session.events if not e.partial)


class Lockstep:
    """The runners' writes in step: each runner's k-th append waits until every runner still running has reached
    its k-th append, so what each read before its k-th write it read before anyone's k-th write went in. Runners of
    one script make the same calls, so every read-modify-write of theirs overlaps the others' — a store without its
    version check loses an update every run, not when the event loop happens to interleave two turns. A runner
    that finished (or was refused and gave up) is not waited for; a wait ends after ``LOCKSTEP_WAIT_S`` for a
    runner that is slow to get there."""

    def __init__(self, runners: int) -> None:
        self._writes = [0] * runners
        self._finished: set[int] = set()
        self._moved = asyncio.Condition()

    def _in_step(self, writes: int) -> bool:
        return all(n >= writes or i in self._finished for i, n in enumerate(self._writes))

    async def write(self, runner: int) -> None:
        async with self._moved:
            self._writes[runner] += 1
            self._moved.notify_all()
            writes = self._writes[runner]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._moved.wait_for(lambda: self._in_step(writes)), LOCKSTEP_WAIT_S)

    async def finished(self, runner: int) -> None:
        async with self._moved:
            self._finished.add(runner)
            self._moved.notify_all()


class ObservedSessionService(BaseSessionService):
    """One runner's view of the run's session service: every call passed on, and recorded as the runner saw it.
    Events are named by their ids (a model event's text is often empty, or the same for two runners); ``temp:``
    keys, which no store persists, are left out of the deltas."""

    def __init__(self, inner: BaseSessionService, writer: HistoryWriter, lockstep: Lockstep | None = None,
                 runner: int = 0) -> None:
        self.inner, self.writer = inner, writer
        self._lockstep, self._runner = lockstep, runner

    async def create_session(self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None,
                             session_id: str | None = None, **kwargs: Any) -> Any:
        start = now()
        try:
            created = await self.inner.create_session(app_name=app_name, user_id=user_id, state=state,
                                                      session_id=session_id, **kwargs)
        except Exception as exc:
            self.writer.record("create", app=app_name, user=user_id, session=session_id or "", start=start,
                               end=now(), ok=False, error=error_text(exc), delta=_jsonable(state or {}))
            raise
        self.writer.record("create", app=app_name, user=user_id, session=created.id, start=start, end=now(),
                           delta=_jsonable(state or {}))
        return created

    async def get_session(self, *, app_name: str, user_id: str, session_id: str, config: Any = None) -> Any:
        start = now()
        try:
            found = await self.inner.get_session(app_name=app_name, user_id=user_id, session_id=session_id,
                                                 config=config)
        except Exception as exc:
            self.writer.record("read", app=app_name, user=user_id, session=session_id, start=start, end=now(),
                               ok=False, error=error_text(exc))
            raise
        if found is not None:
            self.writer.record("read", app=app_name, user=user_id, session=session_id, start=start, end=now(),
                               state=_state(found), events=_event_ids(found))
        return found

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> Any:
        start = now()
        try:
            listed = await self.inner.list_sessions(app_name=app_name, user_id=user_id)
        except Exception as exc:
            self.writer.record("list", app=app_name, user=user_id or "", start=start, end=now(), ok=False,
                               error=error_text(exc))
            raise
        self.writer.record("list", app=app_name, user=user_id or "", start=start, end=now(),
                           sessions=tuple(s.id for s in listed.sessions))
        return listed

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self.inner.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)

    async def append_event(self, session: Any, event: Any) -> Any:
        if event.partial:
            return await self.inner.append_event(session, event)
        if self._lockstep is not None:
            await self._lockstep.write(self._runner)
        delta = _jsonable({k: v for k, v in (event.actions.state_delta or {}).items() if not k.startswith("temp:")})
        where = dict(app=session.app_name, user=session.user_id, session=session.id, event=event.id, delta=delta,
                     seen=_event_ids(session))  # the runner's view its append builds on
        start = now()
        try:
            appended = await self.inner.append_event(session, event)
        except Exception as exc:
            self.writer.record("append", **where, start=start, end=now(), ok=False, error=error_text(exc))
            raise
        self.writer.record("append", **where, start=start, end=now())
        return appended


@dataclass
class ConcurrentDriver:
    """``RunOptions.driver`` of a concurrent case: the runners' turns at once; their histories kept here."""

    ops: list[Op] = field(default_factory=list)
    finals: list[Op] = field(default_factory=list)
    turn_errors: list[str] = field(default_factory=list)
    # Each runner's turn: (runner, its message, the ops it made, whether the caller was told of an error).
    turns: list[tuple[str, str, list[Op], bool]] = field(default_factory=list)

    async def __call__(self, scenario: Scenario, built: Any, service: Any, runner: Any, app_name: str, trace: Any,
                       turn_counter: dict[str, int]) -> None:
        from google.adk.runners import Runner

        spec = scenario.concurrent
        assert spec is not None
        plans = runner_plans(scenario)
        for user, session_id, initial in {(u, s, tuple(i.items())): None for u, s, _, i in plans}:
            if await service.get_session(app_name=app_name, user_id=user, session_id=session_id) is None:
                trace.created_with[session_id] = {**built.initial_state, **dict(initial)}
                await service.create_session(app_name=app_name, user_id=user, session_id=session_id,
                                             state=trace.created_with[session_id] or None)
        writers = [HistoryWriter(f"r{i}") for i in range(len(plans))]
        lockstep = Lockstep(len(plans))

        async def one(index: int) -> None:
            user, session_id, turns, _ = plans[index]
            mine = Runner(app=runner.app, session_service=ObservedSessionService(service, writers[index], lockstep,
                                                                                 index),
                          artifact_service=runner.artifact_service, memory_service=runner.memory_service)
            try:
                for turn in turns:
                    first, run_error = len(writers[index].ops), None
                    try:
                        outcome = await built.run_turn(mine, user, session_id, turn.user)
                    except Exception as exc:  # noqa: BLE001 - a refused runner's turn ends in the error it saw
                        outcome, run_error = TurnOutcome(crash=describe_error(exc)), error_text(exc)
                    told = bool(run_error or outcome.error or outcome.crash)
                    if told:
                        self.turn_errors.append(f"runner r{index}, session {session_id}, turn {turn.user!r}: "
                                                f"{run_error or outcome.error or outcome.crash.describe()}")
                    self.turns.append((f"r{index}", turn.user, writers[index].ops[first:], told))
                    trace.turns.append(TurnRecord(turn=turn_counter["turn"], session_id=session_id, user_id=user,
                                                  message=turn.user, outcome=outcome, run_error=run_error))
                    turn_counter["turn"] += 1
            finally:
                await lockstep.finished(index)  # the others' writes no longer wait for this runner's

        await asyncio.gather(*(one(i) for i in range(len(plans))))
        self.ops = [op for w in writers for op in w.ops]
        store, final = built.session_service, HistoryWriter("final")
        for user, session_id in dict.fromkeys((u, s) for u, s, _, _ in plans):
            start = now()
            try:
                found = await store.get_session(app_name=app_name, user_id=user, session_id=session_id)
            except Exception as exc:  # noqa: BLE001 - a failed final read is what history_check names
                final.record("read", app=app_name, user=user, session=session_id, start=start, end=now(), ok=False,
                             error=error_text(exc))
            else:
                final.record("read", app=app_name, user=user, session=session_id, start=start, end=now(),
                             ok=found is not None, error="" if found is not None else "get_session returned None",
                             state=_state(found) if found is not None else None,
                             events=_event_ids(found) if found is not None else None)
            trace.persisted.append(await persisted_snapshot(store, app_name=app_name, user_id=user,
                                                            session_id=session_id, turn=turn_counter["turn"] - 1))
            if built.list_executions is not None:
                trace.executions.extend(built.list_executions(app_name, user, session_id))
        self.finals = final.ops


def runner_plans(scenario: Scenario) -> list[tuple[str, str, list[Any], dict[str, Any]]]:
    """(user, session id, turns, initial state) of each runner, as the module docstring says."""
    spec = scenario.concurrent
    assert spec is not None
    plans = []
    for index in range(spec.runners):
        own = index if len(scenario.sessions) > 1 else 0
        session = scenario.sessions[own]
        if spec.sessions == "same":
            session_id = scenario.session_id(0)
        elif len(scenario.sessions) > 1:
            session_id = scenario.session_id(own)
        else:
            session_id = f"{scenario.session_id(0)}-r{index}"
        plans.append((session.user, session_id, list(session.turns), dict(session.initial_state)))
    return plans


def _deletes_as_absent(ops: list[Op], finals: list[Op]) -> list[Op]:
    """A key whose write was None reads back absent on a store where None deletes (none_deletes): the final reads
    show it as None, so a deleted key is not taken for a lost write."""
    deleted = {key for op in ops for key, value in op.delta.items() if value is None}
    return [replace(f, state={**{k: None for k in deleted}, **f.state}) if f.state is not None else f
            for f in finals]


def history_result(driver: ConcurrentDriver) -> tuple[CheckResult, Verdict]:
    verdict = check_history(driver.ops, _deletes_as_absent(driver.ops, driver.finals))
    refused = [op for op in driver.ops if op.kind == "append" and op.ok is False]
    seen = [op for op in refused if any(w in op.error.lower() for w in CONFLICT_WORDS)]
    said = (f"{verdict.appends} append(s) by {len({op.process for op in driver.ops})} runners: "
            f"{verdict.acknowledged} acknowledged, {verdict.refused} refused with an error the runner saw "
            f"({len(seen)} of them a conflict: another runner came first)")
    if not verdict.ok:
        evidence = [line for a in verdict.anomalies for line in a.describe().splitlines()]
        return failed(CHECK, f"Runners at once lost, doubled or forked what the store acknowledged: {said}.",
                      evidence), verdict
    if not overlapped(driver.ops):
        return not_applicable(CHECK, f"The runners' turns never ran at the same time: nothing raced ({said})."), \
            verdict
    return passed(CHECK, f"No acknowledged write, user:/app: update or event lost or doubled, no append taken on a "
                          f"stale view; {said}."), verdict


def conflicts_surfaced(driver: ConcurrentDriver) -> CheckResult:
    """A turn whose append the store refused either tells its caller (the turn ends in an error) or stores that
    event after all (a reload and a retry acknowledged in the same turn); a turn that reports success with a write
    dropped tells the user their message was handled when the store kept nothing of it."""
    problems, refused = [], 0
    for runner, message, ops, told in driver.turns:
        dropped = [op for op in ops if op.kind == "append" and op.ok is False
                   and not any(o.kind == "append" and o.ok and o.event == op.event and o.seq > op.seq for o in ops)]
        refused += len(dropped)
        if dropped and not told:
            problems.append(f"runner {runner}'s turn {message!r} ended without an error, yet {dropped[0].describe()}"
                            + (f" (and {len(dropped) - 1} more append(s))" if len(dropped) > 1 else ""))
    if problems:
        return failed(SURFACED, "A turn whose write the store refused reported success: the conflict was not "
                                "surfaced to the caller.", problems)
    if not refused:
        return not_applicable(SURFACED, "No append was refused: there was no conflict to surface.")
    return passed(SURFACED, f"Every turn with a refused append ({refused} of them) ended in an error its caller "
                            f"saw, or stored the event on a retry.")


@dataclass
class ConcurrentReport(CrashReport):
    """A concurrent case's crash report: no crash points, its checks instead."""

    checks: tuple[CheckResult, ...] = ()
    concurrent: dict[str, Any] | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None or any(c.failed for c in self.checks)


def concurrent_run(scenario: Scenario, options: RunOptions, *, keep: Path | None = None) -> ConcurrentReport:
    """Run ``scenario``'s concurrent case once and judge it (see the module docstring); ``keep``: its work folder
    goes there."""
    from ..run.runner import run_scenario

    assert scenario.concurrent is not None
    started = time.perf_counter()
    spec = scenario.concurrent
    report = ConcurrentReport(scenario=scenario.name, concurrent={"runners": spec.runners, "sessions": spec.sessions})
    options = replace(options, llm_mode=LlmMode.SCRIPTED, record=False, observer=None, probe_session_service=False)
    report.not_applicable = backend_cannot_crash(options)
    if report.not_applicable:
        report.seconds = time.perf_counter() - started
        return report
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        options = replace(options, work_dir=keep / f"{scenario.name}-concurrent")
    driver = ConcurrentDriver()
    result = run_scenario(scenario, replace(options, driver=driver))
    report.seconds = report.first_run_s = time.perf_counter() - started
    report.target, report.session_service = result.target, result.session_service
    if result.error or result.trace is None:
        report.error = f"the concurrent run could not run: {result.error}"
        return report
    if result.session_service in IN_MEMORY:
        report.not_applicable = (f"the session service {result.session_service} lives in one process's memory: "
                                 f"runners at once are judged on a durable store that deployments share (ADK's "
                                 f"in-memory service merges a stale append, #5244: docs/session-store.md)")
        return report
    history, verdict = history_result(driver)
    state = (CheckResult(f"concurrent:{c.name}", c.status, c.explanation, c.evidence) for c in result.checks
             if c.name in STATE_CHECKS)
    report.checks = (history, conflicts_surfaced(driver), *state)
    report.concurrent |= {"appends": verdict.appends, "acknowledged": verdict.acknowledged,
                          "refused": verdict.refused, "anomalies": sorted(verdict.names()),
                          "overlapped": overlapped(driver.ops), "turn_errors": driver.turn_errors}
    return report
