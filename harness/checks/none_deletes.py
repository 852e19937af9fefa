"""(g) None in a delta deletes the key: storage never holds a null value."""

from __future__ import annotations

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, keys_list, name_row, name_snapshot
from .timeline import unique_rows

NAME = "none_deletes"


@check(
    NAME,
    title="None deletes a key",
    why="Cleanup writes None to remove a flag. A service that stores JSON null instead keeps the key "
        "('key in state' stays true) and every reader must treat null like absent. The reference service "
        "deletes (a declared divergence from ADK, whose services store None).",
    dod_item="001-C: consistent deletion semantics; no null values written for deleted keys",
)
def none_deletes(ctx: CheckContext) -> CheckResult:
    trace = ctx.trace
    service = trace.session_service or "the target's own"
    if ctx.profile.none_semantics != "delete":
        return not_applicable(NAME, f"The session service this run used ({service}) "
                                    f"stores None as a value (ADK's contract; profile none_semantics: "
                                    f"{ctx.profile.none_semantics}), so a null in storage is not a lost delete.")
    if not trace.persisted:
        return not_applicable(NAME, "The trace holds no persisted snapshot.")
    evidence: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for snapshot in trace.persisted:
        for scope, state in (("session_state", snapshot.session_state), ("app_state", snapshot.app_state),
                             ("user_state", snapshot.user_state)):
            for key, value in state.items():
                if value is None and (snapshot.session_id, scope, key) not in seen:
                    seen.add((snapshot.session_id, scope, key))
                    evidence.append(f"{name_snapshot(snapshot)}: {scope} stores {key!r} = null")
    for snapshot, row in unique_rows(trace):
        nulls = [k for k, v in row.state_delta.items() if v is None]
        if nulls:
            evidence.append(f"{name_row(snapshot, row)}: state_delta stores null for {keys_list(nulls)} "
                            f"(a delete belongs in deleted_keys)")
    if evidence:
        return failed(NAME, f"Storage holds null values where None should have deleted the key (the profile says "
                            f"none_semantics: delete). If {trace.session_service or 'the service'} stores None by "
                            f"design, say none_semantics: store (or auto) in the target profile.", capped(evidence))
    return passed(NAME, f"No null value in {len(trace.persisted)} persisted snapshot(s) or their event rows.")
