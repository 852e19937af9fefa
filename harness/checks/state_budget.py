"""(j) Persisted state and every persisted delta stay within the scenario's size budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, json_bytes, name_event, name_row, name_snapshot
from .timeline import unique_rows

NAME = "state_budget"


def over_budget(delta: Mapping[str, Any], budget: int) -> str | None:
    """"is N bytes > budget B (largest key 'k')" when ``delta`` as JSON exceeds ``budget``; None within it."""
    size = json_bytes(delta)
    if size <= budget:
        return None
    biggest = max(delta, key=lambda k: json_bytes(delta[k]))
    return f"is {size} bytes > budget {budget} (largest key {biggest!r})"


@check(
    NAME,
    title="State stays within its size budget",
    why="stdout/stderr belong in the volume (the result JSON); state holds pointers and bounded previews. "
        "Persisted session state, each persisted state_delta and each delta as its writer emitted it (temp: keys "
        "included, which are never persisted) must stay under expect.state_budget_bytes.",
    dod_item="002: keep session.state small (artifact-first stdout/stderr)",
)
def state_budget(ctx: CheckContext) -> CheckResult:
    trace = ctx.trace
    budget = ctx.scenario.expect.state_budget_bytes
    if not trace.persisted:
        return not_applicable(NAME, "The trace holds no persisted snapshot.")
    evidence: list[str] = []
    largest = 0
    for snapshot in trace.persisted:
        largest = max(largest, snapshot.state_bytes)
        if snapshot.state_bytes > budget:
            evidence.append(f"{name_snapshot(snapshot)}: session_state is {snapshot.state_bytes} bytes "
                            f"> budget {budget}")
    for snapshot, row in unique_rows(trace):
        if (over := over_budget(row.state_delta, budget)) is not None:
            evidence.append(f"{name_row(snapshot, row)}: state_delta {over}")
    for event in trace.events:  # as emitted: temp: keys included, which the service trims before persisting
        if (over := over_budget(event.emitted_delta, budget)) is not None:
            evidence.append(f"{name_event(event)}: emitted state_delta {over}")
    if evidence:
        return failed(NAME, f"State exceeds the {budget}-byte budget.", capped(evidence))
    return passed(NAME, f"Largest persisted session state: {largest} bytes; budget {budget} bytes; every row's "
                        f"state_delta, and every delta as emitted (temp: keys included), within it too.")
