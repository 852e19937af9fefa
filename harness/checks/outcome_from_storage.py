"""The turn outcome agrees with storage: termination and final answer are read from persisted state."""

from __future__ import annotations

from typing import Any

from ..trace.model import TurnOutcome
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, show
from .outcome_events import answer_unproduced, end_misreported
from .timeline import appended_events, last_snapshot_of_turn, state_value, unmapped_all

NAME = "outcome_from_storage"
CRASH_TERMINATIONS = ("model_error", "agent_error")
"""What a target driven by the harness ends a turn with when it raised and stored no termination."""


def _same(outcome_value: Any, stored: Any) -> bool:
    if outcome_value is None or stored is None:
        return outcome_value is None and stored is None
    return outcome_value == stored or str(outcome_value) == str(stored)


@check(
    NAME,
    title="Outcome computed from persisted state",
    why="Events yielded by the Runner have lost their temp: keys, so an outcome computed from temp: flags always "
        "reads 'success'. The outcome a turn reports must match what storage holds (the profile's termination_key, "
        "its value named through termination_map, and final_answer_key) and the delegate_tool calls made in that "
        "turn. A driver's reported outcome (profile driver) is judged against the turn's events where no key "
        "is mapped: a final answer no event holds, a loop said to end by a final answer that nothing escalated, "
        "or max_iterations after an escalation.",
    dod_item="design: compute outcomes from persisted state or explicit events",
)
def outcome_from_storage(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    keyless = unmapped_all(profile, "termination_key", "final_answer_key")
    if keyless and not any(t.outcome.reported_by for t in trace.turns):
        return not_applicable(NAME, f"No stored outcome to compare with: {keyless}; and no profile driver reports "
                                    f"one (a driver's outcome is judged against the turn's events).")
    if not any(t.outcome.termination is not None or t.outcome.reported_by for t in trace.turns):
        return not_applicable(NAME, "The target's turn outcome carries no termination (and no profile driver "
                                    "reports one).")
    events = appended_events(trace)
    problems: list[str] = []
    compared = 0
    against_events = 0  # turns whose driver-reported outcome was judged against the events (no key mapped)
    for turn in sorted(trace.turns, key=lambda t: t.turn):
        label = f"turn {turn.turn} (session {turn.session_id})" + (
            f", outcome from {turn.outcome.reported_by}" if turn.outcome.reported_by else "")
        if turn.run_error and turn.outcome == TurnOutcome():
            continue  # the target's runner crashed: the harness made up an empty outcome; nothing to compare
        if turn.outcome.reported_by:
            judged = [fn for fn, key in ((end_misreported, profile.termination_key),
                                         (answer_unproduced, profile.final_answer_key)) if key is None]
            problems += [p for fn in judged if (p := fn(trace, turn, label))]
            against_events += bool(judged)
        elif keyless:
            continue  # no key and no driver's word for this turn: nothing to compare
        snapshot = None if keyless else last_snapshot_of_turn(trace, turn.session_id, turn.turn)
        if snapshot is None and not keyless:
            problems.append(f"{label}: no persisted snapshot of session {turn.session_id} after this turn to "
                            f"compare the outcome with")
            continue
        compared += 1
        for field, key in (("termination", profile.termination_key), ("final_answer", profile.final_answer_key)):
            if key is None or snapshot is None:
                continue
            value, stored = getattr(turn.outcome, field), state_value(snapshot, key)[1]
            if field == "termination":
                if stored is None and turn.outcome.crash is not None and value in CRASH_TERMINATIONS:
                    continue  # the turn raised and stored no reason: the harness named its end
                named = profile.termination_name(stored)
                if not _same(value, named):
                    mapped = f" (named {show(named)} by termination_map)" if named != stored else ""
                    problems.append(f"{label}: outcome.termination is {show(value)} but the persisted {key!r} is "
                                    f"{show(stored)}{mapped}")
            elif not _same(value, stored):
                problems.append(f"{label}: outcome.{field} is {show(value)} but the persisted {key!r} is "
                                f"{show(stored)}")
        if turn.outcome.delegations is not None and profile.delegate_tool is not None:
            calls = sum(e.function_calls.count(profile.delegate_tool) for e in events
                        if e.session_id == turn.session_id and e.turn == turn.turn)
            if turn.outcome.delegations != calls:
                problems.append(f"{label}: outcome.delegations is {turn.outcome.delegations} but the turn's events "
                                f"hold {calls} {profile.delegate_tool} call(s)")
    where = "persisted state" if not keyless else "the turn's events (the profile maps no outcome key)"
    if keyless is None and against_events:
        where += f" ({against_events} driver-reported outcome(s) also against the turn's events: a key is unmapped)"
    if problems:
        return failed(NAME, f"Turn outcomes disagree with {where}.", capped(problems))
    drivers = sorted({t.outcome.reported_by.split(" (")[0] for t in trace.turns if t.outcome.reported_by})
    said = f" (outcomes reported by {', '.join(drivers)})" if drivers else ""
    return passed(NAME, f"The outcome of each of {compared} turn(s) matches {where}{said}.")
