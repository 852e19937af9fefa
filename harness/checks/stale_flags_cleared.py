"""(k) A turn's flags are cleared by an appended event before the next turn's work starts."""

from __future__ import annotations

from typing import Any

from ..targets.profile import TargetProfile
from ..trace.model import EventRecord, Trace
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event, show
from .timeline import appended_events, delegation_count, is_execution, is_model_answer, last_snapshot_of_turn

NAME = "stale_flags_cleared"


def _is_set(value: Any) -> bool:
    return value is not None and value is not False and value != ""


def starts_work(event: EventRecord, profile: TargetProfile, models: set[str]) -> bool:
    """Whether the turn's work has started with ``event``: a mapped role acts, or a model answers."""
    roles = {profile.analyst, profile.job_builder, profile.results_processor, profile.summary_author,
             profile.code_executor} - {None}
    return (event.author in roles or is_execution(event, profile) or delegation_count(event, profile) > 0
            or (event.author in models and is_model_answer(event)))


def model_authors(trace: Trace) -> set[str]:
    """Agents that sent a model request: their text or calls are model answers (a loader's text is not)."""
    return {r.agent for r in trace.llm_requests} - {"user"}


@check(
    NAME,
    title="Stale flags are cleared by an appended event",
    why="Per-turn flags of a finished turn (profile stale_flag_keys: exit requested, fatal error, final answer, "
        "termination reason) would end or mislabel the next one. Something must clear them through an appended "
        "event before the turn's work starts (the first event of the analyst, executor or summariser, or the first "
        "model answer): the target's driver, a root callback or a context-loading first sub-agent; mutating the "
        "fetched session instead is never persisted.",
    dod_item="001-A: clear stale flags with a system cleanup event appended via the session service",
)
def stale_flags_cleared(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    if reason := profile.unmapped("stale_flag_keys"):
        return not_applicable(NAME, f"No per-turn flags to follow: {reason}.")
    models = model_authors(trace)
    events = appended_events(trace)
    sessions: dict[str, list[int]] = {}
    for turn in sorted(trace.turns, key=lambda t: t.turn):
        sessions.setdefault(turn.session_id, []).append(turn.turn)
    checked: list[str] = []
    problems: list[str] = []
    for sid, turns in sessions.items():
        for previous, current in zip(turns, turns[1:]):
            snapshot = last_snapshot_of_turn(trace, sid, previous)
            if snapshot is None:
                continue
            flags = {k: snapshot.session_state[k] for k in profile.stale_flag_keys
                     if _is_set(snapshot.session_state.get(k))}
            if not flags:
                continue
            turn_events = [e for e in events if e.session_id == sid and e.turn == current]
            first_agent = next((e for e in turn_events if starts_work(e, profile, models)), None)
            cleanups = turn_events if first_agent is None else [e for e in turn_events if e.index < first_agent.index]
            limit = f"the first agent event {name_event(first_agent)}" if first_agent else "the end of the turn"
            for key, value in flags.items():
                clearing = next((e for e in cleanups if key in e.emitted_delta
                                 and not _is_set(e.emitted_delta[key])), None)
                if clearing is not None:
                    checked.append(f"session {sid} turn {current}: {key!r} cleared by {name_event(clearing)}")
                    continue
                later = next((e for e in turn_events if key in e.emitted_delta and not _is_set(e.emitted_delta[key])
                              and e not in cleanups), None)
                hint = f"; it is only cleared later, by {name_event(later)}" if later else ""
                problems.append(f"session {sid} turn {current}: flag {key!r} (= {show(value)} persisted after turn "
                                f"{previous}) was not cleared by an appended event before {limit}{hint}")
    if not checked and not problems:
        return not_applicable(NAME, "No session has two turns with a flag set at the end of the earlier one.")
    if problems:
        return failed(NAME, f"{len(problems)} stale flag(s) were not cleared by an appended event.", capped(problems))
    return passed(NAME, f"All {len(checked)} stale flag(s) were cleared by an appended event before the next turn.",
                  capped(checked))
