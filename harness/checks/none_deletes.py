"""(g) None in a delta deletes the key: storage never holds a null value the agent wrote.

Two nulls are not the agent's: one the harness planted (the scenario's ``initial_state`` — explore's starting
states hold ``explore_cleared: null`` — created the session with it, and no stored event wrote the key since), and
the ``{key: None}`` an ADK event keeps in its delta on a service read back by ``get_session`` (no row access, so
no ``deleted_keys``): there the delete is judged by the stored state, which does not hold the key — unless the
service is known to store None (``trace.service_semantics["none_behaviour"]``: its class, ADK's contract or the
probe), when the key stored as null and set again later shows only in that delta.
"""

from __future__ import annotations

from typing import Any

from ..trace.model import PersistedSnapshot, Trace
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, keys_list, name_row, name_snapshot
from .timeline import unique_rows

NAME = "none_deletes"
_SCOPES = (("session_state", ""), ("app_state", "app:"), ("user_state", "user:"))


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
    origin = semantics_origin(ctx)
    if ctx.profile.none_semantics != "delete":
        return not_applicable(NAME, f"The session service this run used ({service}) stores None as a value "
                                    f"(said by {origin}), so a null in storage is not a lost delete.")
    if not trace.persisted:
        return not_applicable(NAME, "The trace holds no persisted snapshot.")
    written = _written_keys(trace)
    evidence: list[str] = []
    planted: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for snapshot in trace.persisted:
        for scope, prefix in _SCOPES:
            state: dict[str, Any] = getattr(snapshot, scope)
            for key, value in state.items():
                if value is None and (snapshot.session_id, scope, key) not in seen:
                    seen.add((snapshot.session_id, scope, key))
                    if _planted_null(trace, snapshot, prefix + key) and prefix + key not in written:
                        planted.append(f"{prefix + key!r} of session {snapshot.session_id}")
                    else:
                        evidence.append(f"{name_snapshot(snapshot)}: {scope} stores {key!r} = null")
    reloaded_deletes = 0
    stores_none = trace.service_semantics.get("none_behaviour") == "store"
    for snapshot, row in unique_rows(trace):
        nulls = [k for k, v in row.state_delta.items() if v is None]
        if nulls and snapshot.source == "reload" and not stores_none:
            reloaded_deletes += len(nulls)  # ADK's event keeps the delete as {key: None}; the state judges
        elif nulls and snapshot.source == "reload":
            evidence.append(f"{name_row(snapshot, row)}: state_delta stores null for {keys_list(nulls)} "
                            f"({service} stores None as a value: its class, ADK's contract or the probe says so)")
        elif nulls:
            evidence.append(f"{name_row(snapshot, row)}: state_delta stores null for {keys_list(nulls)} "
                            f"(this service stores deletes in deleted_keys)")
    if evidence:
        fix = "say none_semantics: store in the target profile"
        if "class's attribute" in origin:
            fix = f"set its class attribute none_semantics = 'store' (or {fix})"
        return failed(NAME, f"Storage holds null values where None should have deleted the key (None deletes: said "
                            f"by {origin}). If {trace.session_service or 'the service'} stores None by design, "
                            f"{fix}.", capped(evidence))
    notes = ""
    if planted:
        notes += (f" The null of {', '.join(planted)} is the harness's: the scenario's initial_state created the "
                  f"session with it and no stored event wrote the key since.")
    if reloaded_deletes:
        notes += (f" {reloaded_deletes} None value(s) in stored events' deltas are deletes (get_session shows an "
                  f"event's delta as appended; the stored state does not hold those keys as null).")
    return passed(NAME, f"No null value the agent wrote in {len(trace.persisted)} persisted snapshot(s) or their "
                        f"event rows (None deletes: said by {origin}).{notes}")


def semantics_origin(ctx: CheckContext) -> str:
    """Who said what None means for this run: the probe, the service's class attribute, the profile, ADK."""
    return ctx.trace.service_semantics.get("none_semantics") \
        or f"the target profile's none_semantics: {ctx.profile.none_semantics}"


def _written_keys(trace: Trace) -> set[str]:
    """Every key (scope prefix included) a stored event row set or deleted."""
    return {key for _, row in unique_rows(trace) for key in (*row.state_delta, *row.deleted_keys)}


def _planted_null(trace: Trace, snapshot: PersistedSnapshot, key: str) -> bool:
    """Whether the harness created a session that shares ``key`` with ``snapshot`` holding ``key: None``: the
    same session, for app: any, for user: one of the same user."""
    users = {p.session_id: p.user_id for p in trace.persisted}
    for session_id, created in trace.created_with.items():
        shares = session_id == snapshot.session_id or key.startswith("app:") or (
            key.startswith("user:") and users.get(session_id) == snapshot.user_id)
        if shares and key in created and created[key] is None:
            return True
    return False
