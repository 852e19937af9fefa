"""(e) Every artifact whose results were analysed ends consumed (analysis-consumed semantics).

Artifacts and their status come from the target's artifact registry (``trace.executions``, with the status
after each event in ``EventRecord.artifact_statuses``) or, for a target without one, from state keys the
profile names (``artifact_status_prefix``: ``'<prefix><id>'`` holds the status, or a dict with ``status``):
the status after each event is what the events' deltas wrote, the final one what the last persisted snapshot
holds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..targets.profile import TargetProfile
from ..trace.model import EventRecord, ExecutionRecord, Trace
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event
from .timeline import (ExecutionWindow, ProcessorRun, appended_events, execution_code, execution_windows,
                       executions_unmapped, processor_runs, session_ids, state_value, unmapped_all, window_summaries)

NAME = "artifacts_consumed"


@dataclass
class Artifact:
    """One artifact as the check sees it, from either source."""

    artifact_id: str
    session_id: str
    label: str
    status: str | None  # at the end of the scenario
    window: ExecutionWindow | None  # its execution, when one was found
    first_consumed: EventRecord | None  # the first event after which its status was the consumed one


def _window_for(record: ExecutionRecord, windows: list[ExecutionWindow],
                executed: list[ExecutionRecord]) -> ExecutionWindow | None:
    """The execution event of ``record``: the one whose delta names it, else the same position in its session."""
    mine = [w for w in windows if w.execution.session_id == record.session_id]
    names = {v for v in (record.artifact_id, record.result_json_path) if v}
    for window in mine:
        if names & {v for v in window.execution.emitted_delta.values() if isinstance(v, str)}:
            return window
    same_session = [r for r in executed if r.session_id == record.session_id]
    position = next((i for i, r in enumerate(same_session) if r is record), None)
    return mine[position] if position is not None and position < len(mine) else None


def _from_registry(trace: Trace, profile: TargetProfile, windows: list[ExecutionWindow]) -> list[Artifact]:
    executed = sorted((r for r in trace.executions if r.status != "pending"), key=lambda r: r.iteration)
    artifacts = []
    for record in sorted(trace.executions, key=lambda r: (r.session_id, r.iteration)):
        first = next((e for e in trace.events if e.session_id == record.session_id
                      and profile.is_consumed(e.artifact_statuses.get(record.artifact_id))), None)
        artifacts.append(Artifact(
            artifact_id=record.artifact_id, session_id=record.session_id,
            label=f"artifact {record.artifact_id} (session {record.session_id}, iteration {record.iteration})",
            status=record.status, window=_window_for(record, windows, executed) if record.status != "pending" else None,
            first_consumed=first))
    return artifacts


def _status(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("status")
    return None if value is None else str(value)


def _from_state_keys(trace: Trace, profile: TargetProfile, windows: list[ExecutionWindow]) -> list[Artifact]:
    """Artifacts from ``'<prefix><id>'`` keys: statuses after each event from the deltas, the final from storage."""
    prefix = profile.artifact_status_prefix or ""
    artifacts = []
    for sid in session_ids(trace):
        writes: dict[str, list[tuple[EventRecord, str | None]]] = {}
        for event in (e for e in appended_events(trace) if e.session_id == sid):
            for key, value in event.emitted_delta.items():
                if key.startswith(prefix) and len(key) > len(prefix):
                    writes.setdefault(key[len(prefix):], []).append((event, _status(value)))
        snapshot = trace.final_persisted(sid)
        mine = [w for w in windows if w.execution.session_id == sid]
        claimed = _tie(prefix, {aid: history[0][0] for aid, history in writes.items()}, mine, trace)
        for aid, history in writes.items():
            held, stored = state_value(snapshot, prefix + aid) if snapshot is not None else (False, None)
            status = _status(stored) if held else history[-1][1]
            first = next((e for e, s in history if profile.is_consumed(s)), None)
            artifacts.append(Artifact(artifact_id=aid, session_id=sid,
                                      label=f"artifact {aid} (session {sid}, state key {prefix + aid!r})",
                                      status=status, window=claimed.get(aid), first_consumed=first))
    return artifacts


def _tie(prefix: str, first_writes: dict[str, EventRecord], mine: list[ExecutionWindow],
         trace: Trace) -> dict[str, ExecutionWindow]:
    """Each artifact's execution (``first_writes``: artifact id -> the first event writing its key, in order).

    The execution whose event writes the artifact's key, or holds its id as a whole value, is its own (a part of a
    value is no evidence: id '1' is in 'stdout: 1', and tied artifact 1 to execution 2); failing those, the ADK
    code block whose code or output holds the id as a word of its own. The others, in the order of their first
    status write, take the remaining executions in order: the two artifacts one processor event marks after two
    executions of one invocation get one each, as do artifacts marked pending when delegated.
    """
    claimed: dict[str, ExecutionWindow] = {}

    def taken(window: ExecutionWindow) -> bool:
        return any(window is w for w in claimed.values())

    for aid in first_writes:
        window = next((w for w in mine if prefix + aid in w.execution.emitted_delta), None) or next(
            (w for w in mine if aid in [v for v in w.execution.emitted_delta.values() if isinstance(v, str)]), None) \
            or next((w for w in mine if any(_names(text, aid) for text in execution_code(w, trace))), None)
        if window is not None and not taken(window):
            claimed[aid] = window
    free = [w for w in mine if not taken(w)]
    for aid, window in zip([a for a in first_writes if a not in claimed], free):
        claimed[aid] = window
    return claimed


def _names(text: str, aid: str) -> bool:
    """``aid`` in ``text`` as a word of its own (not inside another id or number)."""
    return re.search(rf"(?<![\w-]){re.escape(aid)}(?![\w-])", text) is not None


def _analysis(window: ExecutionWindow | None, trace: Trace, profile: TargetProfile,
              windows: list[ExecutionWindow]) -> tuple[list[EventRecord], EventRecord | None]:
    """The analysis of ``window``'s execution: its own, else that of a later execution of the same invocation (a
    processor running once after several executions of one model turn analyses them all)."""
    if window is None:
        return [], None
    later = [w for w in windows if w.execution.session_id == window.execution.session_id
             and w.execution.index > window.execution.index]
    for candidate in [window, *later]:
        if candidate.execution.invocation_id != window.execution.invocation_id:
            break
        analysis, summary = _analysis_of(candidate, trace, profile)
        if summary is not None:
            return analysis, summary
    return [], None


def _analysis_of(window: ExecutionWindow, trace: Trace, profile: TargetProfile
                 ) -> tuple[list[EventRecord], EventRecord | None]:
    """The events that analysed ``window``'s execution (the processor's run, else the summary writes), and the
    one that wrote the summary."""
    if profile.results_processor is not None:
        runs = window.runs or _next_run(window, trace, profile)
        analysis = list(runs[0].events) if runs else []
        return analysis, (next((e for e in analysis if profile.summary_key and profile.summary_key in e.emitted_delta),
                                analysis[-1]) if analysis else None)
    analysis = window_summaries(window, trace, profile)
    return analysis, (analysis[0] if analysis else None)


def _next_run(window: ExecutionWindow, trace: Trace, profile: TargetProfile) -> tuple[ProcessorRun, ...]:
    """The processor run that analysed an execution its own window has none for: a result ADK's code executor handed
    back to its agent's model, which ran more code first (the run after the agent's run analyses them all), or an
    execution whose turn raised before the processor's turn (the session's next run, before another execution)."""
    execution = window.execution
    crashed = any(t.turn == execution.turn and (t.outcome.crash is not None or t.run_error is not None)
                  for t in trace.turns)
    fed_back = window.fed_back(profile)
    if not (fed_back or crashed):
        return ()
    end = window.next_execution.index if window.next_execution is not None and not fed_back else math.inf
    return tuple(r for r in processor_runs(trace, profile) if r.first.session_id == execution.session_id
                 and (crashed or r.first.invocation_id == execution.invocation_id)
                 and execution.index < r.first.index < end)[:1]


def _no_status_written(trace: Trace, profile: TargetProfile, windows: list[ExecutionWindow]) -> CheckResult:
    """No ``'<prefix><id>'`` key at all: a missing lifecycle when some execution was analysed, else nothing to judge."""
    prefix = profile.artifact_status_prefix
    analysed = [(w, summary) for w in windows if (summary := _analysis(w, trace, profile, windows)[1]) is not None]
    if not analysed:
        return not_applicable(NAME, f"No event wrote a {prefix!r}<id> key and no execution was analysed: the "
                                    f"state holds no artifact for these sessions.")
    verb = "processed" if profile.results_processor else "summarised"
    return failed(NAME, f"{len(analysed)} execution(s) were {verb}, but no event ever wrote a {prefix!r}<id> key: "
                        f"no artifact got a status, so none was marked {profile.consumed_value!r} after its "
                        f"analysis (the profile's artifact_status_prefix says the target keeps them there).",
                  capped([f"{name_event(w.execution)} was {verb} by {name_event(summary)}; expected a "
                          f"{prefix!r}<id> key set to {profile.consumed_value!r} at or after it"
                          for w, summary in analysed]))


@check(
    NAME,
    title="Artifact lifecycle: analysed artifacts are consumed",
    why="With the pruning plugin gone, something else must mark artifacts consumed. The reference uses "
        "seed 000's Option 2 (analysis-consumed): an artifact is consumed once its output was analysed (a results "
        "processor run, or the summary write when the profile maps no results_processor) — not before (the "
        "status is read after every event: consumed before the summary event is too early), and not never. "
        "Statuses come from the target's artifact registry, or from the profile's artifact_status_prefix keys.",
    dod_item="000: artifacts still transition to 'consumed' according to the chosen semantics",
)
def artifacts_consumed(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    consumed_value = profile.consumed_value
    if not trace.executions and profile.artifact_status_prefix is None:
        return not_applicable(NAME, "The trace has no execution records (the target exposes no artifact registry) "
                                    "and the profile maps no artifact_status_prefix (state keys holding each "
                                    "artifact's status); set it in the profile to check this.")
    reason = executions_unmapped(profile) or unmapped_all(profile, "results_processor", "summary_author")
    if reason is None and profile.results_processor is None:
        reason = profile.unmapped("summary_key")
    if reason:
        return not_applicable(NAME, f"Cannot tell when an artifact was analysed: {reason}.")
    windows = execution_windows(trace, profile)
    if trace.executions:
        source = "the target's artifact registry"
        artifacts = _from_registry(trace, profile, windows)
    else:
        source = f"state keys {profile.artifact_status_prefix!r}<id>"
        artifacts = _from_state_keys(trace, profile, windows)
        if not artifacts:
            return _no_status_written(trace, profile, windows)
    analyser = profile.results_processor or profile.summary_writer
    problems: list[str] = []
    consumed = not_due = 0
    for artifact in artifacts:
        window = artifact.window
        analysis, summary = _analysis(window, trace, profile, windows)
        due = _next_turn(trace, summary) if summary is not None and profile.consumed_by == "next_turn" else None
        if summary is not None:
            if profile.is_consumed(artifact.status):
                consumed += 1
                first = artifact.first_consumed
                if first is not None and first.index < summary.index:
                    problems.append(f"{artifact.label}: already {consumed_value!r} right after {name_event(first)}, "
                                    f"before {name_event(summary)} wrote the summary that analysed it: consumed "
                                    f"means analysed, so it may only be marked after the summary")
                elif first is not None and due is not None and first.turn > due:
                    problems.append(f"{artifact.label}: {consumed_value!r} only after {name_event(first)}, not by "
                                    f"the next turn (turn {due}) after {name_event(summary)} analysed it (profile "
                                    f"consumed_by: next_turn)")
            elif profile.consumed_by == "next_turn" and due is None:
                not_due += 1  # analysed in its session's last turn: its next turn, when it is marked, never came
            elif due is not None:
                problems.append(f"{artifact.label}: status {artifact.status!r} although {name_event(analysis[0])} "
                                f"analysed its execution {name_event(window.execution)}; expected "
                                f"{consumed_value!r} by the next turn (turn {due}) (profile consumed_by: next_turn)")
            else:
                problems.append(f"{artifact.label}: status {artifact.status!r} although {name_event(analysis[0])} "
                                f"{'processed' if profile.results_processor else 'summarised'} its execution {name_event(window.execution)}; expected "
                                f"{consumed_value!r}")
        elif profile.is_consumed(artifact.status):
            where = f"after its execution {name_event(window.execution)}" if window else "(no execution event found)"
            problems.append(f"{artifact.label}: status {consumed_value!r} but no {analyser} "
                            f"{'run' if profile.results_processor else 'summary'} followed {where}; "
                            f"analysis-consumed semantics marks it only after analysis")
    if problems:
        return failed(NAME, f"{len(problems)} artifact(s) break the analysis-consumed lifecycle ({source}).",
                      capped(problems))
    later = (f"; {not_due} analysed in its session's last turn, not due yet (consumed_by: next_turn: marked when "
             f"the next turn starts)" if not_due else "")
    return passed(NAME, f"{consumed} analysed artifact(s) {consumed_value}; {len(artifacts) - consumed - not_due} not "
                        f"analysed and not {consumed_value}{later} ({source}).")


def _next_turn(trace: Trace, summary: EventRecord) -> int | None:
    """The turn after the one in which ``summary`` analysed an artifact, in its session (None: it was the last)."""
    return min((t.turn for t in trace.turns if t.session_id == summary.session_id and t.turn > summary.turn),
               default=None)
