"""(003-2) The user's history changes only through an appended event (of the target's driver, when mapped)."""

from __future__ import annotations

from typing import Any

from ..trace.model import EventRecord, PersistedSnapshot
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event, name_row, name_snapshot, short_id
from .timeline import appended_events, rows_by_event

NAME = "history_folded_by_event"
_ABSENT = object()


def stored_name(key: str) -> str:
    """A user:/app: key as its scope's row stores it (without the prefix)."""
    for prefix in ("user:", "app:"):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def entries(value: Any) -> str:
    if value is _ABSENT:
        return "<absent>"
    return f"{len(value)} entries" if isinstance(value, list) else repr(value)[:60]


def _writers(events: list[EventRecord], key: str) -> list[EventRecord]:
    return [e for e in events if key in e.emitted_delta or key in e.appended_delta]


@check(
    NAME,
    title="User history is folded in by an appended event",
    why="The user's history (profile history_key) must grow only through an appended event (by the target's "
        "driver, run_conversation_author, when the profile maps one), e.g. at the end of a turn, folding that "
        "turn's temp: log. Writing it into session.state directly is visible for "
        "the rest of the invocation but never persisted (or, written around the session service, persisted with "
        "no event to explain it). Every persisted change must match such an event, and the live state at the end "
        "of each invocation must hold only what events wrote.",
    dod_item="003: temp: per-turn scratch folded into user: history through an event, never by direct mutation",
)
def history_folded_by_event(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    if profile.history_key is None:
        return not_applicable(NAME, f"No history to follow: {profile.unmapped('history_key')}.")
    key, name = profile.history_key, stored_name(profile.history_key)
    driver = profile.run_conversation_author  # None: any appended event may write it
    events = appended_events(trace)
    writers = _writers(events, key)
    seen_in_storage = any(name in s.user_state for s in trace.persisted)
    seen_live = any(key in r.state for r in trace.live_states)
    if not (writers or seen_in_storage or seen_live):
        return not_applicable(NAME, f"No event, persisted user state or live state holds {key!r}.")
    rows = rows_by_event(trace)
    checked: list[str] = []
    problems: list[str] = []

    # 1. Storage: each persisted change of a user's history is what their last writing event appended.
    before: dict[str, tuple[Any, int]] = {}  # user -> (value, turn of that snapshot)
    snapshots_by_user: dict[str, list[PersistedSnapshot]] = {}
    for snapshot in trace.persisted:
        snapshots_by_user.setdefault(snapshot.user_id, []).append(snapshot)
        value = snapshot.user_state.get(name, _ABSENT)
        previous, previous_turn = before.get(snapshot.user_id, (_ABSENT, -1))
        before[snapshot.user_id] = (value, snapshot.turn)
        if value == previous:
            continue
        window = [e for e in writers if e.user_id == snapshot.user_id and previous_turn < e.turn <= snapshot.turn]
        change = f"{name_snapshot(snapshot)}: user {snapshot.user_id}'s {key!r} went from {entries(previous)} to " \
                 f"{entries(value)}"
        if not window:
            problems.append(f"{change} with no appended event writing it (written around the session service?)")
            continue
        last = window[-1]
        written = last.appended_delta.get(key, last.emitted_delta.get(key))
        located = rows.get(last.index)
        where = f"{name_event(last)}" + (f" = {name_row(*located)}" if located else "")
        if driver is not None and last.author != driver:
            problems.append(f"{change}, written by {where}: author {last.author!r}, not {driver!r}")
        elif written != (None if value is _ABSENT else value):
            problems.append(f"{change}, but the last event writing it, {where}, wrote {entries(written)}")
        else:
            checked.append(f"{change} by {where}")

    # 2. Memory: at the end of each invocation the live history is what storage held plus what events wrote.
    users = {t.session_id: t.user_id for t in trace.turns}
    for record in trace.live_states:
        user = users.get(record.session_id)
        if user is None:
            continue
        earlier = [s for s in snapshots_by_user.get(user, []) if s.turn < record.turn]
        expected: Any = earlier[-1].user_state.get(name, _ABSENT) if earlier else _ABSENT
        for event in _writers([e for e in events if e.invocation_id == record.invocation_id], key):
            written = event.emitted_delta.get(key)
            expected = _ABSENT if written is None else written
        live = record.state.get(key, _ABSENT)
        if live == expected:
            continue
        problems.append(f"live state of session {record.session_id} at the end of turn {record.turn} (invocation "
                        f"{short_id(record.invocation_id)}): {key!r} holds {entries(live)} in memory, but storage "
                        f"and this invocation's events account for {entries(expected)}: session.state was mutated "
                        f"directly (never persisted)")

    whose = f"{driver} " if driver is not None else ""
    if problems:
        return failed(NAME, f"{len(problems)} change(s) of {key!r} are not explained by an appended "
                            f"{whose}event.", capped(problems + checked))
    if not checked:
        return not_applicable(NAME, f"{key!r} never changed in storage.")
    return passed(NAME, f"All {len(checked)} persisted change(s) of {key!r} came from appended "
                        f"{whose}events; live state held nothing else.", capped(checked))
