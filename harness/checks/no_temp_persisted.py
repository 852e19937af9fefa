"""(c) No ``temp:`` key reaches storage."""

from __future__ import annotations

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, keys_list, name_event, name_row, name_snapshot
from .timeline import unique_rows

NAME = "no_temp_persisted"
TEMP = "temp:"


def _temp(keys: object) -> list[str]:
    return [k for k in keys if isinstance(k, str) and k.startswith(TEMP)]  # type: ignore[attr-defined]


@check(
    NAME,
    title="temp: state is never persisted",
    why="temp: keys are invocation glue. Persisting them makes stale glue reappear in later invocations "
        "and leaks large previews into storage; ADK's base append_event strips them, a service that "
        "bypasses it does not.",
    dod_item="000 verification: temp: never persists (absent from state_delta_json)",
)
def no_temp_persisted(ctx: CheckContext) -> CheckResult:
    trace = ctx.trace
    if not trace.persisted and not trace.events:
        return not_applicable(NAME, "The trace holds no persisted snapshot and no appended event.")
    evidence: list[str] = []
    seen_states: set[tuple[str, str, str]] = set()
    for snapshot in trace.persisted:
        for scope, state in (("session_state", snapshot.session_state), ("app_state", snapshot.app_state),
                             ("user_state", snapshot.user_state)):
            for key in _temp(state):
                if (snapshot.session_id, scope, key) not in seen_states:
                    seen_states.add((snapshot.session_id, scope, key))
                    evidence.append(f"{name_snapshot(snapshot)}: {scope} holds {key!r}")
    for snapshot, row in unique_rows(trace):
        keys = _temp(row.state_delta)
        if keys:
            evidence.append(f"{name_row(snapshot, row)}: state_delta holds {keys_list(keys)}")
        deleted = _temp(row.deleted_keys)
        if deleted:
            evidence.append(f"{name_row(snapshot, row)}: deleted_keys holds {keys_list(deleted)}")
    for event in trace.events:
        keys = _temp(event.appended_delta)
        if keys:
            evidence.append(f"{name_event(event)}: state_delta after append_event still holds {keys_list(keys)}")
    if evidence:
        return failed(NAME, f"temp: keys reached storage or survived append_event ({len(evidence)} place(s)).",
                      capped(evidence))
    return passed(NAME, f"No temp: key in {len(trace.persisted)} persisted snapshot(s), their event rows, "
                        f"or the {len(trace.events)} appended event delta(s).")
