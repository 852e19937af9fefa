"""Crash leftovers: work a stored session holds half done, as a process killed mid-turn leaves it.

Judged from the session's events alone, through the profile's declared roles and keys (never an agent's own
names), over the session seen as a trace (``as_trace.py``):

* an execution that no results-processor run and no summary write followed before the session's next execution:
  its result was computed and never summarised (``summary_persisted`` fails on it);
* a delegation that no execution followed before the next delegation: code handed over and never run
  (``delegations_executed``);
* an artifact status key (profile ``artifact_status_prefix``) whose last write is not ``consumed_value`` and
  that no summary write followed: an artifact left pending or executed, never analysed (``artifacts_consumed``).

A clean session has none: the loop runs each delegation, summarises each execution and marks the artifact.
"""

from __future__ import annotations

from ..checks.base import CheckContext, CheckResult, failed, not_applicable, passed
from ..checks.evidence import capped, name_event
from ..checks.timeline import (appended_events, delegation_count, delegation_source, delegations_unmapped,
                               execution_source, execution_windows, executions, executions_unmapped,
                               summary_writes, window_summaries)
from ..trace.model import EventRecord, Trace
from ..targets.profile import TargetProfile


def unsummarised_executions(trace: Trace, profile: TargetProfile) -> list[str]:
    """Each execution no processor run and no summary write followed (before the next execution), as evidence."""
    if profile.summary_key is None or profile.summary_writer is None or executions_unmapped(profile):
        return []
    return [f"{name_event(w.execution)}: an execution no {profile.summary_writer} run and no {profile.summary_key!r} "
            f"write followed" + (f" before the next execution {name_event(w.next_execution)}"
                                 if w.next_execution is not None else " (the session ends there)")
            + ": its result was never summarised (a crash between the execution and its summary?)"
            for w in execution_windows(trace, profile) if not w.runs and not window_summaries(w, trace, profile)]


def _delegations(trace: Trace, profile: TargetProfile) -> list[EventRecord]:
    events = appended_events(trace)
    return [e for i, e in enumerate(events) for _ in range(delegation_count(e, profile, None, events[:i]))]


def delegations_executed(ctx: CheckContext) -> CheckResult:
    """Every delegation is followed by an execution before the session's next delegation."""
    name = "delegations_executed"
    trace, profile = ctx.trace, ctx.profile
    reason = delegations_unmapped(profile) or executions_unmapped(profile)
    if reason:
        return not_applicable(name, f"Cannot tell delegations from executions: {reason}.")
    delegations, ran = _delegations(trace, profile), executions(trace, profile)
    if not delegations:
        return not_applicable(name, f"No delegation in the session (looked for {delegation_source(profile)}).")
    problems = []
    for i, delegation in enumerate(delegations):
        following = delegations[i + 1] if i + 1 < len(delegations) else None
        end = following.index if following is not None else float("inf")
        if not any(delegation.index <= e.index < end and e.session_id == delegation.session_id for e in ran):
            problems.append(f"{name_event(delegation)}: a delegation no execution followed"
                            + (f" before the next delegation {name_event(following)}" if following is not None
                               else " (the session ends there)")
                            + ": the code was handed over and never run (a crash between the delegation and "
                              "the execution?)")
    if problems:
        return failed(name, f"{len(problems)} of {len(delegations)} delegation(s) were never executed "
                            f"({execution_source(profile)}).", capped(problems))
    return passed(name, f"Each of {len(delegations)} delegation(s) was followed by an execution.")


def unanalysed_artifacts(trace: Trace, profile: TargetProfile) -> list[str]:
    """Artifact status keys last set to something other than consumed_value with no summary write after."""
    prefix = profile.artifact_status_prefix
    if not prefix:
        return []
    last: dict[str, tuple[EventRecord, object]] = {}
    for event in appended_events(trace):
        for key, value in event.emitted_delta.items():
            if key.startswith(prefix) and len(key) > len(prefix):
                last[key] = (event, value.get("status") if isinstance(value, dict) else value)
    summaries = summary_writes(trace, profile)
    return [f"{name_event(event)}: {key!r} was last set to {status!r}, never {profile.consumed_value!r}, and no "
            f"{profile.summary_key!r} write followed: an artifact left unanalysed (a crash before its summary?)"
            for key, (event, status) in last.items() if not profile.is_consumed(status)
            and not any(s.index > event.index and s.session_id == event.session_id for s in summaries)]


def with_leftovers(result: CheckResult, leftovers: list[str], *, what: str) -> CheckResult:
    """``result`` failed by the crash leftovers too (they come first in the evidence), else unchanged."""
    if not leftovers:
        return result
    earlier = list(result.evidence) if result.failed else []
    explanation = f"{len(leftovers)} {what}" + (f"; and: {result.explanation}" if result.failed else ".")
    return failed(result.name, explanation, capped([*leftovers, *earlier]))
