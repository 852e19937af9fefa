"""The storage-level checks: state mechanics judged from one persisted session, after the fact.

Each check reads a ``StoredSession`` (and the target profile) and returns a run-time ``CheckResult``; the
names are the run-time checks' where they mean the same thing. A FAIL's evidence names the session key, the
event (id, position, seq) or table row, and the state key. What a store cannot tell is ``n/a`` with the reason.

A key in the state that no event wrote may be the state the session was created with, which stores do not keep:
it is not judged, unless the creation state is known or the profile's contract names the key's writers.

Facts a reader may put in ``StoredSession.extra`` (all optional):
``initial_state`` (dict): the session-scope state it was created with, when the store keeps it;
``pending_append`` (bool): ours: the last append committed but its event row awaits roll-forward.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection
from typing import Any

from ..checks.base import CheckContext, CheckResult, Status, failed, not_applicable, passed
from ..checks.evidence import capped, json_bytes, keys_list, show
from ..checks.no_temp_persisted import TEMP
from ..checks.state_budget import over_budget
from ..scenario.models import Expectations
from ..targets.profile import TargetProfile
from .as_trace import describe_event, name_stored_events, stored_as_trace
from .leftovers import delegations_executed, unanalysed_artifacts, unsummarised_executions, with_leftovers
from .model import StoredEvent, StoredSession
from .stores.layouts import OURS

DEFAULT_STATE_BUDGET_BYTES: int = Expectations.model_fields["state_budget_bytes"].default
SCOPED_PREFIXES = ("app:", "user:", TEMP)


def _scopes(stored: StoredSession) -> list[tuple[str, str, dict[str, Any]]]:
    """(scope, where, state) of each state row the session has: its own, its app's, its user's."""
    scopes = [("session state", stored.row or "sessions row", stored.state)]
    if stored.app_state is not None:
        scopes.append(("app state", stored.app_row or f"app_states row app={stored.app_name}", stored.app_state))
    if stored.user_state is not None:
        scopes.append(("user state", stored.user_row or f"user_states row app={stored.app_name} user={stored.user_id}",
                       stored.user_state))
    return scopes


def _fail(name: str, stored: StoredSession, explanation: str, evidence: list[str]) -> CheckResult:
    return failed(name, explanation, capped([f"session {stored.key}: {line}" for line in evidence]))


# --- temp: and null ---------------------------------------------------------------------------------------------

def no_temp_persisted(stored: StoredSession, profile: TargetProfile, budget: int) -> CheckResult:
    name = "no_temp_persisted"
    evidence = [f"{where}: {scope} holds {key!r}" for scope, where, state in _scopes(stored)
                for key in state if key.startswith(TEMP)]
    evidence += [f"{describe_event(e)}: state_delta holds {keys_list(k for k in e.state_delta if k.startswith(TEMP))}"
                 for e in stored.events if any(k.startswith(TEMP) for k in e.state_delta)]
    if evidence:
        return _fail(name, stored, "temp: keys reached storage (invocation glue must never be persisted).", evidence)
    return passed(name, f"No temp: key in the session, app or user state or the {len(stored.events)} event deltas.")


def none_semantics(stored: StoredSession, profile: TargetProfile) -> str:
    """What None means for the service that wrote ``stored``: the profile's word, else the writer's (layout)."""
    if profile.none_semantics != "auto":
        return profile.none_semantics
    return "delete" if stored.nulls_are_deletes else "store"


def _written_nulls(stored: StoredSession) -> set[str]:
    """Keys (with their app:/user: prefix) some event's delta set to None."""
    return {k for e in stored.events for k, v in e.state_delta.items() if v is None}


def none_deletes(stored: StoredSession, profile: TargetProfile, budget: int) -> CheckResult:
    name = "none_deletes"
    semantics = none_semantics(stored, profile)
    prefixes = {"session state": "", "app state": "app:", "user state": "user:"}
    nulls = [(scope, where, key) for scope, where, state in _scopes(stored) for key, value in state.items()
             if value is None and not key.startswith(TEMP)]
    if semantics == "store":
        # The service keeps None as a value: a null an event wrote is its contract; one no event wrote is not.
        written = _written_nulls(stored)
        evidence = [f"{where}: {scope} stores {key!r} = null, which no event's delta set to None"
                    for scope, where, key in nulls if prefixes[scope] + key not in written]
        if evidence:
            return _fail(name, stored, "Storage holds null values no event wrote (the service stores None as a "
                                       "value, but only where a delta said None).", evidence)
        return passed(name, f"The service that wrote this session ({stored.layout} layout) keeps None as a value "
                            f"(ADK's contract; profile none_semantics: {profile.none_semantics}): the "
                            f"{len(nulls)} stored null(s) were each written by an event's delta, so none is a "
                            f"lost delete.")
    evidence = [f"{where}: {scope} stores {key!r} = null" for scope, where, key in nulls]
    if not stored.nulls_are_deletes:  # the layout stores None as a value: a None in a delta is a stored null
        evidence += [f"{describe_event(e)}: state_delta stores null for "
                     f"{keys_list(k for k, v in e.state_delta.items() if v is None)}"
                     for e in stored.events if any(v is None for v in e.state_delta.values())]
    if evidence:
        return _fail(name, stored, "Storage holds null values where None should have deleted the key (none "
                                   "semantics: delete).", evidence)
    return passed(name, "No null value in the session, app or user state"
                        + ("." if stored.nulls_are_deletes else " or the event deltas."))


# --- the run-time checks' own logic, over the session as a trace ------------------------------------------------

def _shared(name: str, fn: Callable[[CheckContext], CheckResult]) -> Callable[..., CheckResult]:
    def judge(stored: StoredSession, profile: TargetProfile, budget: int) -> CheckResult:
        from ..scenario.models import Scenario

        scenario = Scenario.model_construct()  # neither shared check reads the scenario
        result = fn(CheckContext(trace=stored_as_trace(stored), scenario=scenario, profile=profile))
        return CheckResult(name, result.status, result.explanation,
                           tuple(name_stored_events(line, stored) for line in result.evidence))

    judge.__name__ = name
    return judge


def _summary_persisted(ctx: CheckContext) -> CheckResult:
    from ..checks.summary_persisted import summary_persisted

    # At rest, an execution nothing summarised is a crash leftover (a run leaves it to stage_gating's checks).
    return with_leftovers(summary_persisted(ctx), unsummarised_executions(ctx.trace, ctx.profile),
                          what="execution(s) never summarised")


def _artifacts_consumed(ctx: CheckContext) -> CheckResult:
    from ..checks.artifacts_consumed import artifacts_consumed

    if not ctx.profile.artifact_status_prefix:  # a registry lives outside the session store
        return not_applicable("artifacts_consumed", "The profile maps no artifact_status_prefix (state keys "
                                                    "holding each artifact's status); an artifact registry is not "
                                                    "in the session store, so the store cannot tell.")
    return with_leftovers(artifacts_consumed(ctx), unanalysed_artifacts(ctx.trace, ctx.profile),
                          what="artifact(s) left unanalysed and not consumed")


# --- contract, budget ---------------------------------------------------------------------------------------------

def minimal_deltas(stored: StoredSession, profile: TargetProfile, budget: int) -> CheckResult:
    name = "minimal_deltas"
    if profile.contract is None:
        return not_applicable(name, "The target profile has no state contract (contract: which author may write "
                                    "which key); set one in the profile to check this.")
    evidence: list[str] = []
    judged = 0
    for event in stored.events:
        writers = set(profile.writers_for_author(event.author or ""))
        for key in event.state_delta:
            rule = profile.rule_for(key)
            if rule is None:
                continue  # keys the contract does not list are not judged from a store
            judged += 1
            if not writers & set(rule.writers):
                evidence.append(f"{describe_event(event)}: key {key!r} written by {event.author}, which may not "
                                f"write it (contract writers: {', '.join(rule.writers)})")
    if evidence:
        return _fail(name, stored, "Some event deltas hold keys their author may not write per the contract.",
                     evidence)
    return passed(name, f"{judged} contract key write(s) in {len(stored.events)} events, each by an allowed writer "
                        f"(keys outside the contract are not judged).")


def state_budget(stored: StoredSession, profile: TargetProfile, budget: int) -> CheckResult:
    name = "state_budget"
    evidence = []
    for scope, where, state in _scopes(stored):
        if (over := over_budget(state, budget)) is not None:
            evidence.append(f"{where}: {scope} {over}")
    for event in stored.events:
        if (over := over_budget(event.state_delta, budget)) is not None:
            evidence.append(f"{describe_event(event)}: state_delta {over}")
    if evidence:
        return _fail(name, stored, f"State exceeds the {budget}-byte budget.", evidence)
    return passed(name, f"Session state {json_bytes(stored.state)} bytes; every state row and event delta within "
                        f"the {budget}-byte budget.")


# --- order and versions ------------------------------------------------------------------------------------------

def events_ordered(stored: StoredSession, profile: TargetProfile, budget: int) -> CheckResult:
    name = "events_ordered"
    evidence: list[str] = []
    events = stored.events
    for before, after in zip(events, events[1:]):
        if before.timestamp is not None and after.timestamp is not None and after.timestamp < before.timestamp:
            evidence.append(f"{describe_event(after)}: timestamp {after.timestamp} is earlier than the previous "
                            f"{describe_event(before)}'s {before.timestamp}")
    for event_id, count in Counter(e.id for e in events).items():
        if count > 1:
            evidence.append(f"event id {event_id} is stored {count} times (positions "
                            f"{', '.join(str(e.position) for e in events if e.id == event_id)})")
    notes = []
    seqs = [e for e in events if e.seq is not None]
    if seqs:
        for before, after in zip(seqs, seqs[1:]):
            if after.seq <= before.seq:  # type: ignore[operator]
                what = "duplicates" if after.seq == before.seq else "goes back from"
                evidence.append(f"{describe_event(after)}: seq {after.seq} {what} the previous seq {before.seq}")
        if stored.layout in OURS:  # ours: seq is 1-based and contiguous; version = the last append's seq
            expected = list(range(1, len(seqs) + 1))
            actual = [e.seq for e in seqs]
            if actual != expected and sorted(set(actual)) == actual:
                missing = sorted(set(range(1, max(actual) + 1)) - set(actual))
                evidence.append(f"seq is not contiguous from 1: missing {', '.join(map(str, missing[:10]))}")
            last = actual[-1] if actual else 0
            if stored.version is not None and stored.version != last:
                if stored.extra.get("pending_append") and stored.version == last + 1:
                    notes.append(f"version {stored.version}: its last append awaits roll-forward (pending_json)")
                else:
                    evidence.append(f"{stored.row or 'sessions row'}: version {stored.version} but the last event's "
                                    f"seq is {last} (every append bumps both)")
        else:
            notes.append(f"seq contiguity and the version are not judged for the {stored.layout} layout (its "
                         f"service defines them)")
    if evidence:
        return _fail(name, stored, "The session's events are out of order or its sequence is inconsistent.",
                     evidence)
    return CheckResult(name, Status.PASS, f"{len(events)} events in timestamp order with unique ids"
                       + (", seq strictly increasing" if seqs else "") + ".", tuple(notes))


# --- rows: each key stored once, every event within its session's version ------------------------------------------

def store_integrity(stored: StoredSession, profile: TargetProfile, budget: int) -> CheckResult:
    name = "store_integrity"
    evidence: list[str] = []
    for table, copies in sorted((stored.extra.get("duplicate_rows") or {}).items()):
        row = {"sessions": stored.row or "sessions row", "app_states": f"app_states row app={stored.app_name}",
               "user_states": f"user_states row app={stored.app_name} user={stored.user_id}"}.get(table, table)
        evidence.append(f"{row} is stored {copies} times (rows with the same key: readers get one at random, or "
                        "fail; ours: DuckDB's 'More than one row returned by a subquery')")
    # Event rows sharing an id or a seq are events_ordered's to report (so one duplicate fails one check).
    notes = []
    if stored.version is None:
        notes.append(f"events past the session's version are not judged: the {stored.layout} layout keeps no "
                     "version")
    elif stored.layout in OURS:
        notes.append("events past the session's version: events_ordered compares the version with the last seq")
    else:
        # Ours: seq = the version its append made; the seeds': sequence_num = version * 1000 + n.
        made = (lambda e: e.seq // 1000) if stored.layout == "seed" else (lambda e: e.seq)
        for event in stored.events:
            if event.seq is not None and made(event) > stored.version:
                evidence.append(f"{describe_event(event)} is past the session's version {stored.version} (seq "
                                f"{event.seq}): an append that never committed, or a row written past the service")
    if evidence:
        return _fail(name, stored, "The store holds rows the service's keys forbid.", evidence)
    return CheckResult(name, Status.PASS, "One sessions row, one app and one user row (or row per key)"
                       + ("" if stored.version is None else f"; no event past version {stored.version}") + ".",
                       tuple(notes))


# --- state = fold of the events' deltas ----------------------------------------------------------------------------

_ABSENT = object()


def _fold(stored: StoredSession) -> tuple[dict[str, Any], dict[str, StoredEvent]]:
    state: dict[str, Any] = dict(stored.extra.get("initial_state") or {})
    last_writer: dict[str, StoredEvent] = {}
    for event in stored.events:
        for key, value in event.state_delta.items():
            if key.startswith(SCOPED_PREFIXES):
                continue
            last_writer[key] = event
            if value is None and stored.nulls_are_deletes:
                state.pop(key, None)
            else:
                state[key] = value
    return state, last_writer


def state_matches_events(stored: StoredSession, profile: TargetProfile, budget: int) -> CheckResult:
    name = "state_matches_events"
    folded, last_writer = _fold(stored)
    initial_known = isinstance(stored.extra.get("initial_state"), dict)
    evidence: list[str] = []
    unjudged: list[str] = []
    nulls_judged = none_semantics(stored, profile) == "delete"
    for key in sorted(set(folded) | set(stored.state)):
        held, value = stored.state.get(key, _ABSENT), folded.get(key, _ABSENT)
        if key.startswith(TEMP) or (held is None and nulls_judged):
            continue  # no_temp_persisted's and none_deletes' to report
        if held == value and (held is _ABSENT) == (value is _ABSENT):
            continue
        rule = profile.rule_for(key)
        if key not in last_writer and not initial_known and value is _ABSENT and rule is None:
            unjudged.append(key)  # creation state the store does not keep (a contract key has writers instead)
            continue
        writer = last_writer.get(key)
        by = (f"last written by {describe_event(writer)}" if writer is not None else
              f"written by no event, though the contract names its writers: {', '.join(rule.writers)}"
              if rule is not None and not initial_known else "written by no event")
        stored_text = "absent" if held is _ABSENT else show(held)
        folded_text = "absent" if value is _ABSENT else show(value)
        evidence.append(f"{stored.row or 'sessions row'}: state key {key!r} holds {stored_text} but the events' "
                        f"deltas fold to {folded_text} ({by}): a direct write that bypassed events")
    if evidence:
        return _fail(name, stored, "The session state differs from the fold of its events' deltas.", evidence)
    note = (f"; {len(unjudged)} key(s) no event wrote are taken as the creation state, not judged "
            f"({keys_list(unjudged)})" if unjudged else "")
    return passed(name, f"The session state equals the fold of its {len(stored.events)} events' deltas{note}.")


# --- the registry of audit checks ---------------------------------------------------------------------------------

AuditCheck = Callable[[StoredSession, TargetProfile, int], CheckResult]

_CHECKS: dict[str, AuditCheck] = {
    "no_temp_persisted": no_temp_persisted,
    "none_deletes": none_deletes,
    "summary_persisted": _shared("summary_persisted", _summary_persisted),
    "artifacts_consumed": _shared("artifacts_consumed", _artifacts_consumed),
    "delegations_executed": _shared("delegations_executed", delegations_executed),
    "minimal_deltas": minimal_deltas,
    "state_budget": state_budget,
    "events_ordered": events_ordered,
    "state_matches_events": state_matches_events,
    "store_integrity": store_integrity,
}

# Judged on rows no session owns (stores/integrity.py), so never in a session's own row: each finding is a row of
# its own (an orphan event's session key; an app or user key).
STORE_CHECK_NAMES: tuple[str, ...] = ("scope_rows_owned",)

AUDIT_CHECK_NAMES: tuple[str, ...] = (*_CHECKS, *STORE_CHECK_NAMES)


def run_audit_checks(stored: StoredSession, profile: TargetProfile, *, only: Collection[str] | None = None,
                     state_budget_bytes: int | None = None) -> list[CheckResult]:
    """The audit checks over one stored session, in ``AUDIT_CHECK_NAMES`` order (``only``: a subset)."""
    unknown = sorted(set(only or ()) - set(_CHECKS) - set(STORE_CHECK_NAMES))
    if unknown:
        raise ValueError(f"unknown audit check(s) {', '.join(unknown)}; known: {', '.join(AUDIT_CHECK_NAMES)}")
    budget = state_budget_bytes or DEFAULT_STATE_BUDGET_BYTES
    return [fn(stored, profile, budget) for name, fn in _CHECKS.items() if only is None or name in only]
