"""Checks over a crash point's combined history: the crashed run's journal, the store as the crash left it (read by
the recovering process before its turns), the recovery run's trace, and the uncrashed run it is compared with.

Executions, summaries and consumed marks are found as the other checks find them (the target profile's roles
and keys, harness/checks/timeline.py); nothing here knows an agent's names.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..checks import run_checks
from ..checks.base import CheckContext, CheckResult, Status, failed, not_applicable, passed
from ..checks.timeline import execution_count, executions_unmapped
from ..result import ScenarioResult
from ..scenario.models import Scenario
from ..targets.profile import TargetProfile
from ..trace.model import EventRecord, ExecutionRecord, Trace
from .journal import Journal, executions_read
from .points import CrashPoint
from .recovery import answered

if TYPE_CHECKING:
    from .workspace import RunSubmitted

CRASH_CHECKS = ("effects_exactly_once", "result_not_lost", "consume_once", "recovered_outcome",
                "session_readable_prefix")


@dataclass
class WorkspaceRuns:
    """The workspace's own ledger of job runs (harness/crash/workspace.py): the uncrashed run's, and this point's
    (the crashed run's submits, then the recovery's)."""

    uncrashed: list[RunSubmitted]
    point: list[RunSubmitted]


@dataclass
class CombinedHistory:
    scenario: Scenario
    uncrashed: Trace
    profile: TargetProfile
    point: CrashPoint
    journal: Journal
    reads: dict[str, Any]  # what the recovering process read before its turns (journal.py)
    recovery: ScenarioResult
    recovery_scenario: Scenario
    notes: list[str] = field(default_factory=list)
    workspace_runs: WorkspaceRuns | None = None  # where the harness keeps the workspace the jobs run on
    resumed: str | None = None  # the invocation ADK resumed (recovery resume): its agents' answers count as ADK says
    uncrashed_journal: Journal | None = None  # the model calls each run made (None: count the trace's requests)
    recovery_journal: Journal | None = None

    @property
    def recovered_events(self) -> list[EventRecord]:
        return [e for e in self.recovery.trace.events if not e.partial] if self.recovery.trace else []

    @property
    def events(self) -> list[EventRecord]:
        """Every acknowledged event, the crashed run's then the recovery's."""
        return self.journal.records + self.recovered_events


def _executions(events: list[EventRecord], profile: TargetProfile) -> list[EventRecord]:
    return [e for e in events for _ in range(execution_count(e, profile))]


def _fingerprint(x: ExecutionRecord) -> str:
    """An execution's result as its run wrote it (its registry status aside): another run writes another."""
    return json.dumps(x.model_dump(mode="json", exclude={"status"}), sort_keys=True, default=str)


def effects_exactly_once(h: CombinedHistory) -> CheckResult:
    """The target's own record (``_effects_recorded``) and, where the harness keeps the workspace the jobs run on,
    the workspace's ledger: what the agent recorded cannot hide a second run the workspace executed."""
    recorded = _effects_recorded(h)
    if h.workspace_runs is None:
        return recorded
    problems, summary = _workspace_problems(h.workspace_runs)
    if recorded.failed:
        return failed(recorded.name, recorded.explanation, [*recorded.evidence, *problems])
    if problems:
        return failed(recorded.name, "The workspace executed a job run's task more often than the uncrashed run did: "
                                     "a block ran again across the crash and the recovery.", problems)
    said = recorded.explanation if recorded.status is Status.PASS else f"({recorded.explanation})"
    return passed(recorded.name, f"{summary} {said}")


def _workspace_problems(runs: WorkspaceRuns) -> tuple[list[str], str]:
    """(problems, summary) of the point's ledger against the uncrashed run's: no task (a python file and its
    parameters) executed twice unless the uncrashed run did, and no more runs executed than in the uncrashed run."""
    executed = [r for r in runs.point if r.submit.executed]
    wanted = Counter(r.submit.task for r in runs.uncrashed if r.submit.executed)
    problems = []
    for task, count in Counter(r.submit.task for r in executed).items():
        if count > max(1, wanted[task]):  # a task of its own (ids the recovery made) may run once
            each = "; ".join(f"run {r.submit.run_id} submitted by the {r.phase} with "
                             + (f"idempotency_token {r.submit.idempotency_token}" if r.submit.idempotency_token
                                else "no idempotency_token") for r in executed if r.submit.task == task)
            problems.append(f"the workspace executed one task {count} times (the uncrashed run: {wanted[task]}): "
                            f"{each}; task: {task[:200]}")
    if not problems and len(executed) > sum(wanted.values()):
        problems.append(f"the workspace executed {len(executed)} job run(s) across the crash and the recovery, the "
                        f"uncrashed run {sum(wanted.values())}: " + "; ".join(
                            f"run {r.submit.run_id} ({r.phase}): {r.submit.task[:120]}" for r in executed))
    rejoined = sum(1 for r in runs.point if not r.submit.started_run)
    summary = (f"The workspace executed {len(executed)} job run(s) across the crash and the recovery (uncrashed: "
               f"{sum(wanted.values())}); {rejoined} submit(s) got an earlier run back by its idempotency_token.")
    return problems, summary


def _effects_recorded(h: CombinedHistory) -> CheckResult:
    """Runs are told apart by their results where the target lists its executions (a re-run writes another result
    over the first; an adopted or re-opened result is the same one); else by the execution events themselves."""
    name = "effects_exactly_once"
    found = {x.artifact_id: x for x in executions_read(h.reads) if x.result_status is not None}
    if h.recovery.trace is not None and (h.uncrashed.executions or found or h.recovery.trace.executions):
        final = {x.artifact_id: x for x in h.recovery.trace.executions if x.result_status is not None}
        expected = sum(1 for x in h.uncrashed.executions if x.result_status is not None)
        problems = [f"artifact {a}: the result the crash left ({x.result_status}, {x.result_json_path}) was replaced "
                    f"by another run's ({final[a].result_status}): its block ran again"
                    for a, x in found.items() if a in final and _fingerprint(final[a]) != _fingerprint(x)]
        if len(final) > expected:
            problems.append(f"{len(final)} executed block(s) after the recovery, the uncrashed run's {expected}: "
                            + ", ".join(sorted(set(final) - set(found))) + " ran in the recovery")
        if problems:
            return failed(name, "A delegated block ran more than once across the crash and the recovery.", problems)
        return passed(name, f"{len(final)} executed block(s) after the recovery (uncrashed: {expected}); none of "
                            f"the {len(found)} result(s) the crash left was written again.")
    reason = executions_unmapped(h.profile)
    if reason:
        return not_applicable(name, f"Cannot count executions: {reason}.")
    before, after = _executions(h.journal.records, h.profile), _executions(h.recovered_events, h.profile)
    expected = len(_executions([e for e in h.uncrashed.events if not e.partial], h.profile))
    if len(before) + len(after) > expected:
        return failed(name, "A delegated block ran more than once across the crash and the recovery.",
                      [f"{len(before)} execution event(s) acknowledged before the crash and {len(after)} in the "
                       f"recovery, where the uncrashed run had {expected} (the target lists no executions, so "
                       f"an execution event is one run)"])
    return passed(name, f"{len(before)} execution event(s) before the crash, {len(after)} in the recovery "
                        f"(uncrashed: {expected}).")


def _summarised_windows(events: list[EventRecord], profile: TargetProfile) -> list[tuple[EventRecord, int]]:
    """Each execution event with the number of summaries written from it to the next execution."""
    windows: list[tuple[EventRecord, int]] = []
    writer, key = profile.summary_writer, profile.summary_key
    for event in events:
        if execution_count(event, profile):
            windows.append((event, 0))
        if windows and event.author == writer and (key in event.emitted_delta or key in event.appended_delta):
            windows[-1] = (windows[-1][0], windows[-1][1] + 1)
    return windows


def result_not_lost(h: CombinedHistory) -> CheckResult:
    """A result computed before the crash (an acknowledged execution event, or a result the store held after the
    crash that no acknowledged event recorded) is summarised exactly once, or its block re-run and that summarised
    once; never left unsummarised, never summarised twice."""
    name = "result_not_lost"
    reason = (h.profile.unmapped("summary_key") or executions_unmapped(h.profile)
              or (None if h.profile.summary_writer else "the target profile maps no summary_author nor "
                                                         "results_processor"))
    if reason:
        return not_applicable(name, f"Cannot tell a result's summary: {reason}.")
    acked = len(_executions(h.journal.records, h.profile))
    found = sum(1 for x in executions_read(h.reads) if x.result_status is not None)
    computed = max(acked, found)
    if not computed:
        return not_applicable(name, "No result was computed before the crash.")
    windows = _summarised_windows(h.events, h.profile)
    uncrashed = _summarised_windows([e for e in h.uncrashed.events if not e.partial], h.profile)
    problems = []
    for position in range(computed):
        if position < len(uncrashed) and not uncrashed[position][1]:
            continue  # the uncrashed run did not summarise this one either (a failed run, say)
        if position >= len(windows):
            problems.append("a result computed before the crash (found in the store after it) was never "
                            "recorded by an execution event, so never summarised")
            continue
        event, summaries = windows[position]
        where = "crashed run" if position < acked else "recovery"
        rerun_summarised = position + 1 < len(windows) and windows[position + 1][1] > 0
        if summaries == 0 and not rerun_summarised:
            problems.append(f"execution event #{event.index} (author {event.author}, {where}) was never summarised "
                            f"({h.profile.summary_key!r} by {h.profile.summary_writer})")
        elif summaries > 1:
            problems.append(f"execution event #{event.index} (author {event.author}, {where}) was summarised "
                            f"{summaries} times")
    wanted = sum(1 for _, n in uncrashed if n)
    got = sum(1 for _, n in windows if n)
    if got > wanted:
        problems.append(f"{got} execution(s) summarised across the crash and the recovery, where the uncrashed run "
                        f"summarised {wanted}: a result was summarised again")
    problems += _summary_writer_asked_again(h)
    if problems:
        return failed(name, "A result computed before the crash was lost or summarised twice.", problems)
    return passed(name, f"{computed} result(s) computed before the crash, each summarised once.")


def _summary_writer_asked_again(h: CombinedHistory) -> list[str]:
    """The summary writer's model asked more often across the crash (its answers the store acknowledged) and the
    recovery (its calls that reached the model) than in the uncrashed run: a result summarised before the crash was
    processed again. Seen even where the script holds no answer for the extra call (the re-summary never gets
    written); a request the agent's own callback answers (a guard against summarising twice) is no call."""
    writer = h.profile.summary_writer
    if writer is None or h.recovery.trace is None:
        return []
    uncrashed = (h.uncrashed_journal.asked(writer) if h.uncrashed_journal is not None
                 else len(h.uncrashed.requests_of(writer)))
    before = answered(h.journal.records, writer, resumed=h.resumed)
    after = (h.recovery_journal.asked(writer) if h.recovery_journal is not None
             else len(h.recovery.trace.requests_of(writer)))
    if not uncrashed or before + after <= uncrashed:
        return []
    return [f"the summary writer {writer!r} was asked {before + after} time(s) across the crash ({before} answer(s) "
            f"stored) and the recovery ({after} request(s)), {uncrashed} in the uncrashed run: a result summarised "
            f"before the crash was processed again"]


def _statuses(h: CombinedHistory) -> list[tuple[str, dict[str, str]]]:
    """(where, {artifact: status}) in the order the client saw them."""
    seen = [(f"crashed run event #{e.index}", e.artifact_statuses) for e in h.journal.records]
    seen.append(("the store after the crash", {x.artifact_id: x.status for x in executions_read(h.reads)}))
    seen += [(f"recovery event #{e.index}", e.artifact_statuses) for e in h.recovered_events]
    if h.recovery.trace is not None:
        seen.append(("the store after the recovery", {x.artifact_id: x.status for x in h.recovery.trace.executions}))
    prefix = h.profile.artifact_status_prefix
    if prefix:  # consumed marks kept as state keys
        for where, events in (("crashed run", h.journal.records), ("recovery", h.recovered_events)):
            for e in events:
                marks = {k[len(prefix):]: (v.get("status") if isinstance(v, dict) else v)
                         for k, v in e.appended_delta.items() if k.startswith(prefix)}
                if marks:
                    seen.append((f"{where} event #{e.index}", {k: str(v) for k, v in marks.items()}))
    return [(where, s) for where, s in seen if s]


def consume_once(h: CombinedHistory) -> CheckResult:
    name = "consume_once"
    seen = _statuses(h)
    if not seen:
        return not_applicable(name, "No artifact status was observed (the target lists no executions and its "
                                    "profile maps no artifact_status_prefix).")
    last: dict[str, str] = {}
    consumed_at: dict[str, list[str]] = {}
    for where, statuses in seen:
        for artifact, status in statuses.items():
            if h.profile.is_consumed(status) and not h.profile.is_consumed(last.get(artifact)):
                consumed_at.setdefault(artifact, []).append(where)
            last[artifact] = status
    problems = [f"artifact {a}: marked {h.profile.consumed_value!r} {len(w)} times ({'; '.join(w)})"
                for a, w in consumed_at.items() if len(w) > 1]
    uncrashed = sum(1 for x in h.uncrashed.executions if h.profile.is_consumed(x.status))
    final = sum(1 for s in last.values() if h.profile.is_consumed(s))
    if final < uncrashed:
        problems.append(f"{final} artifact(s) end {h.profile.consumed_value!r} after the recovery, the uncrashed "
                        f"run's {uncrashed}: " + ", ".join(f"{a} ends {s!r}" for a, s in last.items()
                                                           if not h.profile.is_consumed(s)))
    if problems:
        return failed(name, "An artifact was consumed twice, or never, across the crash and the recovery.", problems)
    return passed(name, f"{final} artifact(s) consumed once each (uncrashed: {uncrashed}).")


def recovered_outcome(h: CombinedHistory) -> CheckResult:
    name = "recovered_outcome"
    trace = h.recovery.trace
    if trace is None or not trace.turns:
        return failed(name, f"The recovery did not run: {h.recovery.error}")
    problems = []
    exhausted = script_exhausted(h.recovery)
    expectations = run_checks(CheckContext(trace=trace, scenario=h.recovery_scenario, profile=h.profile),
                              only=["scenario_expectations"])
    problems += [f"{e}" for r in expectations if r.failed for e in (r.explanation, *r.evidence)]
    problems += [f"the recovery's turn {t.turn} raised {t.outcome.crash.describe()}" for t in trace.turns
                 if t.outcome.crash is not None and not t.outcome.crash.expected]
    want = h.uncrashed.turns[-1].outcome.termination if h.uncrashed.turns else None
    got = trace.turns[-1].outcome.termination
    if want != got:
        problems.append(f"the recovery's last turn ended {got!r}, the uncrashed run's {want!r}")
    if problems and exhausted:
        return not_applicable(name, "The recovery needed model answers the scenario's script does not hold (the "
                                    "steps served before the crash are not served again): "
                                    + "; ".join(exhausted)[:600])
    if problems:
        return failed(name, "The recovered run did not reach the uncrashed run's outcome.", problems)
    return passed(name, f"The recovery ended {got!r} with the scenario's expected state, as the uncrashed run.")


def script_exhausted(result: ScenarioResult) -> list[str]:
    """What the scenario's script could not answer in the recovery (calls past the end of an agent's steps)."""
    return [e for c in result.checks if c.name == "script" and c.failed for e in c.evidence if "HTTP 400" in e]


def _folded(records: list[EventRecord], session_id: str) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for r in records:
        if r.session_id == session_id:
            state.update({k: v for k, v in r.appended_delta.items() if not k.startswith("temp:")})
    return state


def session_readable_prefix(h: CombinedHistory) -> CheckResult:
    name = "session_readable_prefix"
    sessions, listed = h.reads.get("sessions", {}), h.reads.get("listed", {})
    problems = [f"get_session({sid!r}) after the crash raised {read['error']}" for sid, read in sessions.items()
                if isinstance(read, dict) and "error" in read]
    problems += [f"list_sessions(user {user!r}) after the crash raised {ids['error']}" for user, ids in listed.items()
                 if isinstance(ids, dict)]
    killed = (h.journal.killing or {}).get("id")
    for sid, read in sessions.items():
        acked = [(i, r) for i, r in h.journal.acks if r.session_id == sid]
        if read is None:
            if acked:
                problems.append(f"session {sid!r}: get_session found nothing after the crash, though {len(acked)} "
                                f"append(s) to it were acknowledged (does the session service keep anything "
                                f"across processes?)")
            continue
        if "error" in read:
            continue
        stored = read["ids"]
        lost = [f"#{r.index} ({r.author})" for i, r in acked if i not in stored]
        if lost:
            problems.append(f"session {sid!r}: acknowledged event(s) {', '.join(lost)} are not in the store")
        extra = [i for i in stored if i not in {i for i, _ in acked} and i != killed]
        if extra:
            problems.append(f"session {sid!r}: the store holds {len(extra)} event(s) never acknowledged: {extra[:5]}")
        for key, value in _folded(h.journal.records, sid).items():
            held = read["state"].get(key)
            if held != value and not (value is None and key not in read["state"]):
                problems.append(f"session {sid!r}: state {key!r} is {held!r} in the store, {value!r} as acknowledged")
        for user, ids in listed.items():
            if isinstance(ids, list) and sid not in ids and any(r.user_id == user for _, r in acked):
                problems.append(f"list_sessions(user {user!r}) after the crash does not list session {sid!r}")
    error = h.recovery.error or ""
    if "get_session" in error or "list_sessions" in error:
        problems.append(f"the recovery's own read failed: {error.splitlines()[0]}")
    if problems:
        return failed(name, "After the crash the store was unreadable, or not a prefix of what was acknowledged.",
                      problems)
    return passed(name, f"{len(sessions)} session(s) read after the crash; each holds exactly the "
                        f"{len(h.journal.acks)} acknowledged append(s) (plus at most the killed one).")


RECOVERY_STATE_CHECKS = ("no_temp_persisted", "none_deletes", "minimal_deltas", "state_budget",
                         "stale_flags_cleared", "no_unpersisted_mutation", "outcome_from_storage")
"""The registered checks run on the recovery run: those that judge each event and the state it leaves. The checks
of a whole execution's lifecycle (artifacts_consumed, summary_persisted, stage_gating, ...) would misread a
recovery trace that starts mid-lifecycle: consume_once and result_not_lost judge that over the combined history."""


def crash_checks(h: CombinedHistory) -> tuple[CheckResult, ...]:
    """The five crash checks, then the state checks on the recovery run (named ``recovery:<check>``)."""
    own = tuple(fn(h) for fn in (effects_exactly_once, result_not_lost, consume_once, recovered_outcome,
                                 session_readable_prefix))
    recovery = h.recovery.checks if h.recovery.trace is not None else ()
    return own + tuple(CheckResult(f"recovery:{r.name}", r.status, r.explanation, r.evidence) for r in recovery
                       if r.name in RECOVERY_STATE_CHECKS)
