"""(f) Each event's state delta holds only keys its author may write, per the state contract."""

from __future__ import annotations

from ..trace.adk_state import adk_note, is_adk_owned
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, keys_list, name_event

NAME = "minimal_deltas"
WHOLE_STATE_THRESHOLD = 5
HOW = "in its code execution result events"


@check(
    NAME,
    title="Minimal state deltas: writers only write their own keys",
    why="A writer that emits dict(ctx.session.state) as its state_delta resends every key, overwrites other "
        "writers' values with stale copies and bloats every row. Each delta key must have a rule in the profile's "
        "contract naming the event's author (or a tool/plugin acting in its events, author_writers) as a writer.",
    dod_item="001-B: JobBuilderAgent emits a minimal state_delta, not dict(ctx.session.state)",
)
def minimal_deltas(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    if profile.contract is None:
        return not_applicable(NAME, "The target profile has no state contract (contract: which author may write "
                                    "which key); set one in the profile to check this.")
    with_delta = [e for e in trace.events if e.emitted_delta]
    if not with_delta:
        return not_applicable(NAME, "No event carried a state delta.")
    evidence: list[str] = []
    adk_keys: set[str] = set()  # ADK's code executor writes its own context in its result events: ADK's key
    for event in sorted(with_delta, key=lambda e: e.index):
        writers = set(profile.writers_for_author(event.author))
        foreign: list[str] = []
        lines: list[str] = []
        for key in event.emitted_delta:
            rule = profile.rule_for(key)
            if rule is None and is_adk_owned(key):
                adk_keys.add(key)
                continue
            if rule is None:
                foreign.append(key)
                lines.append(f"{name_event(event)}: key {key!r} is not in the state contract")
            elif not writers & set(rule.writers):
                foreign.append(key)
                lines.append(f"{name_event(event)}: key {key!r} not owned by {event.author} "
                             f"(contract writers: {', '.join(rule.writers)})")
        if len(foreign) >= WHOLE_STATE_THRESHOLD:
            evidence.append(f"{name_event(event)}: {len(foreign)} of {len(event.emitted_delta)} keys are not "
                            f"{event.author}'s ({keys_list(foreign)}) — looks like a whole-state delta")
        else:
            evidence.extend(lines)
    if evidence:
        return failed(NAME, "Some state deltas hold keys their author does not own." + adk_note(adk_keys, how=HOW),
                      capped(evidence))
    return passed(NAME, f"All {len(with_delta)} state delta(s) hold only keys their author owns per the contract."
                        + adk_note(adk_keys, how=HOW))
