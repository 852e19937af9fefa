"""The state-delta timeline of one trace, as rows the HTML template can show without logic.

One row per ``EventRecord``: who wrote, which functions it called, and for the
delta the writer *emitted* and the delta left *appended* after the session
service ran, each key classified against the state before the event:
``added``, ``changed``, ``same`` (re-sent unchanged) or ``deleted`` (a None
value). Emitted keys are compared with the live state, appended keys with the
stored state; both restart from the persisted snapshot after every turn, so a
classification never drifts from what storage held. ``temp:`` keys are flagged:
they are invocation glue and must never be persisted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from ..trace.model import EventRecord, PersistedSnapshot, Trace

PREVIEW_CHARS = 80
FULL_CHARS = 4000
TEXT_CHARS = 160
TEMP_PREFIX = "temp:"

Kind = Literal["added", "changed", "same", "deleted"]


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except ValueError:  # a circular structure
        return repr(value)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class KeyChange:
    key: str
    kind: Kind
    value: str  # a preview of the new value ("" when deleted)
    full: str  # the whole value (capped), for a tooltip
    temp: bool
    dropped: bool = False  # emitted but not left on the appended event

    @property
    def symbol(self) -> str:
        return {"added": "+", "changed": "~", "same": "=", "deleted": "−"}[self.kind]


@dataclass(frozen=True)
class StateEntry:
    key: str
    value: str
    full: str


@dataclass(frozen=True)
class TimelineRow:
    index: int
    turn: int
    session_id: str
    invocation_id: str
    author: str
    function_calls: tuple[str, ...]
    function_responses: tuple[str, ...]
    escalate: bool
    transfer_to_agent: str | None
    partial: bool
    text: str
    emitted: tuple[KeyChange, ...]
    appended: tuple[KeyChange, ...]


@dataclass(frozen=True)
class PersistedView:
    session_id: str
    user_id: str
    source: str
    state_bytes: int
    session_state: tuple[StateEntry, ...]
    app_state: tuple[StateEntry, ...]
    user_state: tuple[StateEntry, ...]
    rows: int


@dataclass(frozen=True)
class TurnBlock:
    turn: int
    session_id: str
    message: str | None
    outcome: str
    run_error: str | None
    rows: tuple[TimelineRow, ...]
    persisted: tuple[PersistedView, ...]


def _classify(delta: dict[str, Any], before: dict[str, Any], kept: set[str] | None = None) -> tuple[KeyChange, ...]:
    changes = []
    for key, value in delta.items():
        if value is None:
            kind: Kind = "deleted"
        elif key not in before:
            kind = "added"
        else:
            kind = "same" if _json(before[key]) == _json(value) else "changed"
        full = "" if value is None else _json(value)
        changes.append(KeyChange(key=key, kind=kind, value=_cut(full, PREVIEW_CHARS), full=_cut(full, FULL_CHARS),
                                 temp=key.startswith(TEMP_PREFIX), dropped=kept is not None and key not in kept))
    return tuple(changes)


def _apply(state: dict[str, Any], delta: dict[str, Any]) -> None:
    for key, value in delta.items():
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value


def _entries(state: dict[str, Any]) -> tuple[StateEntry, ...]:
    return tuple(StateEntry(key=k, value=_cut(_json(v), PREVIEW_CHARS), full=_cut(_json(v), FULL_CHARS))
                 for k, v in sorted(state.items()))


def _merged(snapshot: PersistedSnapshot) -> dict[str, Any]:
    """What a fresh get_session() shows: session state with app:/user: merged back."""
    state = dict(snapshot.session_state)
    state.update({f"app:{k}": v for k, v in snapshot.app_state.items()})
    state.update({f"user:{k}": v for k, v in snapshot.user_state.items()})
    return state


def _persisted_view(snapshot: PersistedSnapshot) -> PersistedView:
    return PersistedView(session_id=snapshot.session_id, user_id=snapshot.user_id, source=snapshot.source,
                         state_bytes=snapshot.state_bytes, session_state=_entries(snapshot.session_state),
                         app_state=_entries(snapshot.app_state), user_state=_entries(snapshot.user_state),
                         rows=len(snapshot.events))


def _row(event: EventRecord, live: dict[str, Any], stored: dict[str, Any]) -> TimelineRow:
    emitted = _classify(event.emitted_delta, live, kept=set(event.appended_delta))
    appended = _classify(event.appended_delta, stored)
    _apply(live, event.emitted_delta)
    _apply(stored, event.appended_delta)
    return TimelineRow(index=event.index, turn=event.turn, session_id=event.session_id,
                       invocation_id=event.invocation_id, author=event.author,
                       function_calls=tuple(event.function_calls), function_responses=tuple(event.function_responses),
                       escalate=event.escalate, transfer_to_agent=event.transfer_to_agent, partial=event.partial,
                       text=_cut(" ".join(event.text.split()), TEXT_CHARS), emitted=emitted, appended=appended)


def build_timeline(trace: Trace) -> list[TurnBlock]:
    """The trace's events grouped by turn, each turn followed by what storage held after it."""
    turns = {t.turn: t for t in trace.turns}
    numbers = sorted({*turns, *(e.turn for e in trace.events), *(p.turn for p in trace.persisted)})
    live: dict[str, dict[str, Any]] = {}
    stored: dict[str, dict[str, Any]] = {}
    invocation: dict[str, str] = {}
    blocks = []
    for number in numbers:
        rows = []
        for event in sorted((e for e in trace.events if e.turn == number), key=lambda e: e.index):
            sid = event.session_id
            session_live = live.setdefault(sid, {})
            if invocation.get(sid) != event.invocation_id:  # temp: state lives for one invocation only
                for key in [k for k in session_live if k.startswith(TEMP_PREFIX)]:
                    del session_live[key]
                invocation[sid] = event.invocation_id
            rows.append(_row(event, session_live, stored.setdefault(sid, {})))
        snapshots = [p for p in trace.persisted if p.turn == number]
        for snapshot in snapshots:  # the next turn starts from what storage actually holds
            live[snapshot.session_id] = _merged(snapshot)
            stored[snapshot.session_id] = _merged(snapshot)
            invocation.pop(snapshot.session_id, None)
        turn = turns.get(number)
        session_id = turn.session_id if turn else rows[0].session_id if rows else snapshots[0].session_id
        blocks.append(TurnBlock(turn=number, session_id=session_id, message=turn.message if turn else None,
                                outcome=_outcome(turn.outcome) if turn else "",
                                run_error=turn.run_error if turn else None, rows=tuple(rows),
                                persisted=tuple(_persisted_view(p) for p in snapshots)))
    return blocks


def _outcome(outcome: Any) -> str:
    parts = [f"{name}: {value}" for name, value in outcome.model_dump().items() if value is not None]
    return ", ".join(parts)
