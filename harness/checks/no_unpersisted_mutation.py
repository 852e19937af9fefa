"""(h) What the agents left in memory is what storage holds: no direct ``session.state`` mutation."""

from __future__ import annotations

from typing import Any

from ..trace.adk_state import adk_note, is_adk_owned
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, short_id, show

NAME = "no_unpersisted_mutation"
_ABSENT = object()


def _durable(state: dict[str, Any]) -> dict[str, Any]:
    # None and absent are the same to a reader (state.get), so a None left in memory is not a difference.
    return {k: v for k, v in state.items() if not k.startswith("temp:") and v is not None}


def _shown(value: Any) -> str:
    return "<absent>" if value is _ABSENT else show(value)


@check(
    NAME,
    title="No unpersisted state mutation",
    why="Writing ctx.session.state[...] directly is visible for the rest of the invocation but never persisted, "
        "silently. At the end of each invocation the live state (temp: aside) must equal a fresh read of storage.",
    dod_item="001-A: never mutate a retrieved session.state directly; state changes go through events",
)
def no_unpersisted_mutation(ctx: CheckContext) -> CheckResult:
    records = ctx.trace.live_states
    if not records:
        return not_applicable(NAME, "The trace holds no live-state record (the recorder saw no invocation end).")
    evidence: list[str] = []
    adk_keys: set[str] = set()  # ADK's own bookkeeping written without an event: said once, never judged
    for record in records:
        live, stored = _durable(record.state), _durable(record.persisted_state)
        for key in sorted(set(live) | set(stored)):
            a, b = live.get(key, _ABSENT), stored.get(key, _ABSENT)
            if a != b and is_adk_owned(key):
                adk_keys.add(key)
            elif a != b:
                evidence.append(f"live state of session {record.session_id} at the end of turn {record.turn} "
                                f"(invocation {short_id(record.invocation_id)}): key {key!r} is {_shown(a)} in memory "
                                f"but {_shown(b)} in storage")
    if evidence:
        return failed(NAME, "In-memory state differs from what storage holds: something mutated session.state "
                            "without an event." + adk_note(adk_keys), capped(evidence))
    return passed(NAME, f"Live and persisted state agree (temp: aside) at the end of {len(records)} invocation(s)."
                        + adk_note(adk_keys))
