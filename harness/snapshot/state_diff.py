"""State changes between two runs of a scenario, read from their normalised traces (the snapshot's document, so
ids, paths and clock times drawn afresh each run do not count): each event's delta, matched by position, turn and
author, the event rows storage holds (what the deltas did not already say), and the state storage holds at the end.

Events are matched as a sequence (``difflib``), on (turn, author, function calls): an event HEAD added or dropped
(a processor that now runs twice) shows as such, and the events after it still meet their counterparts.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from .normalize import normalize_state, normalize_trace
from ..trace.model import Trace



@dataclass(frozen=True)
class StateChange:
    place: str  # where: "turn 0, event 5" or "persisted session state of s-1"
    author: str | None  # the event's author; None for persisted state
    key: str | None  # the state key; None: an event added or removed with an empty delta
    change: str  # what happened, in words: "no longer deleted", "now written", "value changed", "event added" ...
    before: Any = None
    after: Any = None
    delta: str = "emitted"  # emitted | appended (an event's delta as the writer emitted it / as the service kept
    # it on the event) | row (an event row storage holds) | persisted (the state storage holds at the end)
    held: Literal["both", "base", "head"] = "both"  # which side holds the key (a None value is a delete, not absence)

def _signature(event: dict[str, Any]) -> tuple[Any, ...]:
    return event["turn"], event["author"], tuple(event["function_calls"])


def _place(event: dict[str, Any], *, side: str = "") -> str:
    return f"turn {event['turn']}, {side}event {event['index']}"


def _delta_changes(before: dict[str, Any], after: dict[str, Any]) -> Iterator[tuple[str, str, Any, Any, str]]:
    """(key, what happened, value before, value after, which side holds the key) for each key the two deltas
    treat differently."""
    for key in sorted({*before, *after}, key=str):
        if key not in after:
            yield key, "no longer deleted" if before[key] is None else "no longer written", before[key], None, "base"
        elif key not in before:
            yield key, "now deleted" if after[key] is None else "now written", None, after[key], "head"
        elif before[key] != after[key]:
            yield key, "now deleted" if after[key] is None else "value changed", before[key], after[key], "both"


def _matched(base: dict[str, Any], head: dict[str, Any]) -> list[StateChange]:
    changes = [StateChange(_place(head), head["author"], key, what, old, new, held=held)
               for key, what, old, new, held in _delta_changes(base["emitted_delta"], head["emitted_delta"])]
    seen = {c.key for c in changes}
    changes += [StateChange(_place(head), head["author"], key, what, old, new, delta="appended", held=held)
                for key, what, old, new, held in _delta_changes(base["appended_delta"], head["appended_delta"])
                if key not in seen]
    return changes


def _alone(event: dict[str, Any], *, added: bool) -> list[StateChange]:
    """An event only one side has: each key of its delta, or the event itself when its delta is empty."""
    place = _place(event, side="new " if added else "BASE's ")
    delta = event["emitted_delta"]
    if not delta:
        return [StateChange(place, event["author"], None, "event added" if added else "event gone")]
    out = []
    for key, value in sorted(delta.items(), key=lambda kv: str(kv[0])):
        if added:
            out.append(StateChange(place, event["author"], key, "deleted in a new event" if value is None
                                   else "written in a new event", None, value, held="head"))
        else:
            out.append(StateChange(place, event["author"], key, "no longer deleted (its event gone)" if value is None
                                   else "no longer written (its event gone)", value, None, held="base"))
    return out


def event_changes(base: list[dict[str, Any]], head: list[dict[str, Any]]) -> list[StateChange]:
    matcher = difflib.SequenceMatcher(a=[_signature(e) for e in base], b=[_signature(e) for e in head],
                                      autojunk=False)
    changes: list[StateChange] = []
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            for old, new in zip(base[a0:a1], head[b0:b1]):
                changes += _matched(old, new)
            continue
        for old in base[a0:a1]:
            changes += _alone(old, added=False)
        for new in head[b0:b1]:
            changes += _alone(new, added=True)
    return changes


def persisted_changes(base: dict[str, Any], head: dict[str, Any]) -> list[StateChange]:
    """The state storage holds at the end, per session and scope (session, app, user)."""
    changes = []
    for session in [*head, *(s for s in base if s not in head)]:
        for scope in ("session", "app", "user"):
            old, new = base.get(session, {}).get(scope, {}), head.get(session, {}).get(scope, {})
            for key in sorted({*old, *new}, key=str):
                if key not in new:
                    what, held = "no longer persisted", "base"
                elif key not in old:
                    what, held = "now persisted", "head"
                elif old[key] != new[key]:
                    what, held = "persisted value changed", "both"
                else:
                    continue
                changes.append(StateChange(f"persisted {scope} state of {session}", None, key, what,
                                           old.get(key), new.get(key), delta="persisted", held=held))
    return changes


def _rows(trace: Trace) -> list[dict[str, Any]]:
    """The event rows storage holds at the end, per session, as events of the snapshot's document: a deleted key
    as a delta to None (what the row means, whichever way the service stores it)."""
    rows = []
    for session in dict.fromkeys(t.session_id for t in trace.turns):
        snapshot = trace.final_persisted(session)
        for row in snapshot.events if snapshot is not None else ():
            delta = normalize_state({**row.state_delta, **dict.fromkeys(row.deleted_keys)}, trace)
            rows.append({"session": session, "seq": row.seq, "author": row.author, "delta": delta})
    return rows


def row_changes(base: Trace, head: Trace, already: list[StateChange]) -> list[StateChange]:
    """What storage's event rows hold differently, less what the events' deltas already said (a service that now
    keeps a ``temp:`` key, or a None, in its rows shows here only)."""
    said = {(c.author, c.key) for c in already}
    old, new = _rows(base), _rows(head)
    matcher = difflib.SequenceMatcher(a=[(r["session"], r["author"]) for r in old],
                                      b=[(r["session"], r["author"]) for r in new], autojunk=False)
    changes = []

    def place(row: dict[str, Any]) -> str:
        return f"persisted row {row['seq']} of {row['session']}"

    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        pairs = list(zip(old[a0:a1], new[b0:b1])) if op == "equal" else \
            [(row, None) for row in old[a0:a1]] + [(None, row) for row in new[b0:b1]]
        for before, after in pairs:
            row = after or before
            for key, what, was, now, held in _delta_changes(before["delta"] if before else {},
                                                            after["delta"] if after else {}):
                if (row["author"], key) not in said:
                    changes.append(StateChange(place(row), row["author"], key, what, was, now, delta="row",
                                               held=held))
    return changes


def state_changes(base: Trace | None, head: Trace | None) -> list[StateChange]:
    """Every state change between the two traces (none when either is missing: nothing to compare)."""
    if base is None or head is None:
        return []
    old, new = normalize_trace(base), normalize_trace(head)
    events = event_changes(old["events"], new["events"])
    return events + row_changes(base, head, events) + persisted_changes(old["final_state"], new["final_state"])
