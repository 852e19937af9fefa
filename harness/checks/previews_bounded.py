"""Previews of the executed code's output are bounded where they are *emitted*, and exact at the boundary.

A preview lives in a ``temp:`` key, which the service trims before anything is persisted: a check that reads
persisted rows (``state_budget``) never sees an uncut one. This one reads each event's delta as its writer
emitted it. Where the trace has the output itself (the execution's result JSON), a stdout preview is judged
exactly: an output of at most ``preview_chars`` characters is kept whole, a longer one is cut so that at most
``preview_chars`` of its characters remain (all of the preview but the agent's cut marker, a regular
expression of the profile).
"""

from __future__ import annotations

import re

from ..targets.profile import TargetProfile
from ..trace.model import EventRecord, ExecutionRecord, Trace
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event
from .timeline import executions, executions_unmapped

NAME = "previews_bounded"


def kept_chars(preview: str, marker: str | None) -> int:
    """Characters of output a cut preview shows: all of it but the agent's cut marker, when it has one."""
    found = re.search(marker, preview) if marker else None
    return len(preview) - (found.end() - found.start()) if found else len(preview)


def _execution_of(event: EventRecord, trace: Trace) -> ExecutionRecord | None:
    """The execution an event's delta points at (its result JSON path or artifact id)."""
    values = {v for v in event.emitted_delta.values() if isinstance(v, str)}
    return next((x for x in trace.executions if x.session_id == event.session_id
                 and values & {v for v in (x.result_json_path, x.artifact_id) if v}), None)


def _no_preview_emitted(trace: Trace, profile: TargetProfile) -> CheckResult:
    """No preview at all: a missing preview when an execution produced output, else nothing to judge."""
    keys = ", ".join(map(repr, profile.preview_keys))
    if executions_unmapped(profile):
        return not_applicable(NAME, f"No event emitted a preview key ({keys}), and the profile maps no executor "
                                    f"to say whether one was owed.")
    runs = executions(trace, profile)
    # An execution whose result the trace holds is owed a preview only if it printed something.
    owed = [e for e in runs if (x := _execution_of(e, trace)) is None or x.stdout_chars is None or x.stdout_chars > 0]
    if not owed:
        return not_applicable(NAME, f"No event emitted a preview key ({keys}), and no execution printed anything "
                                    f"({len(runs)} execution(s)).")
    return failed(NAME, f"The profile maps preview_keys ({keys}), but none of {len(runs)} execution(s) emitted "
                        f"one: the output never reaches state as a bounded preview.",
                  capped([f"{name_event(e)} executed" + (f" and printed {x.stdout_chars} characters"
                                                        if (x := _execution_of(e, trace)) and x.stdout_chars else "")
                          + f"; no event wrote {keys}" for e in owed]))


@check(
    NAME,
    title="Output previews are bounded where emitted, exact at the limit",
    why="stdout/stderr belong in the volume; state carries previews (profile preview_keys) of at most "
        "preview_chars characters. The "
        "previews sit in temp: keys that are never persisted, so the bound is judged on the delta each agent "
        "emits. At the boundary: an output of exactly the limit is kept whole, one character more is cut to the "
        "limit (no off-by-one either way).",
    dod_item="002: keep session.state small (artifact-first stdout/stderr, bounded previews)",
)
def previews_bounded(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    if reason := profile.unmapped("preview_keys"):
        return not_applicable(NAME, f"No preview to judge: {reason}.")
    limit = ctx.scenario.limits.preview_chars or profile.preview_chars
    if limit is None:
        return not_applicable(NAME, f"No bound to judge the previews by: neither the scenario "
                                    f"(limits.preview_chars) nor the profile sets preview_chars "
                                    f"({type(profile).model_fields['preview_chars'].description}).")
    room = limit + profile.preview_marker_chars
    checked, exact, problems = 0, 0, []
    not_text: list[str] = []  # preview keys written with a value that is no text: no preview to measure
    for event in trace.events:
        for key, stream in profile.preview_keys.items():
            value = event.emitted_delta.get(key)
            if not isinstance(value, str):
                if value is not None:
                    not_text.append(f"{name_event(event)} wrote {key!r} as a {type(value).__name__}")
                continue
            checked += 1
            where = f"{name_event(event)}: {key!r}"
            if len(value) > room:
                problems.append(f"{where} is a preview of {len(value)} characters > {limit} (+{profile.preview_marker_chars} "
                                f"for a cut marker): the output was not cut")
                continue
            execution = _execution_of(event, trace) if stream == "stdout" else None
            if execution is None or execution.stdout_chars is None or execution.stdout_head is None:
                continue
            exact += 1
            size, head = execution.stdout_chars, execution.stdout_head
            if size <= limit and value != head:
                problems.append(f"{where}: the output of artifact {execution.artifact_id} has {size} characters, "
                                f"within the limit of {limit}, but the preview is not the whole output "
                                f"({len(value)} characters): cut although it fits")
            elif size > limit and profile.preview_cut_marker and (
                    shown := kept_chars(value, profile.preview_cut_marker)) > limit:
                problems.append(f"{where}: the output of artifact {execution.artifact_id} has {size} characters and "
                                f"its preview shows {shown} of them, more than the limit of {limit}")
    if not checked and not_text:
        return not_applicable(NAME, f"The profile's preview_keys name keys the agent writes as something other than "
                                    f"text ({'; '.join(not_text[:3])}): a preview is the output's text, cut to "
                                    f"preview_chars. Fix: map preview_keys to the key holding that text (a string).")
    if not checked:
        return _no_preview_emitted(trace, profile)
    if problems:
        return failed(NAME, f"{len(problems)} emitted preview(s) break the {limit}-character bound.", capped(problems))
    return passed(NAME, f"{checked} emitted preview(s) within {limit} characters; {exact} stdout preview(s) judged "
                        f"exactly against their output (whole when it fits, cut to the limit when not).")
