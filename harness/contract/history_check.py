"""An Elle-style check of client-observed histories (``history.py``) against what the store holds at the end.

A pure function: ``check_history(ops, finals)`` — ``ops`` what every runner saw, ``finals`` one ``get_session``
per session after every runner stopped. Anomalies, each with a **minimal witness** (the few calls that show it):

* ``lost_write`` — a key's final value is not that of its last acknowledged write: either it is absent, or it is
  the value of a write that another acknowledged write *began after* (real time: ``start`` after the first's
  ``end``). Writes whose calls overlap are unordered: either may be last.
* ``lost_update`` — a read-modify-write lost: a list key each append extends by one element (its last one, the
  append's own marker), and an acknowledged element is missing from the final list. The witness is the
  append, the acknowledged append that wrote over it, that writer's read it built on, and the final read.
* ``refused_write_stored`` — an append that raised (the caller was told "not stored") left its value, its list
  element or its event in the store: a conflict not surfaced as the caller saw it.
* ``lost_event`` / ``duplicate_event`` — an acknowledged append's event is not in its session exactly once.
* ``stale_append`` — an acknowledged append built on a view of its session (``Op.seen``, where the runner recorded
  it) that lacked an acknowledged event the store keeps *before* it: two runners extended one session's events,
  each without seeing the other's, and the store took both — no order of the two explains what each saw (Elle's
  G-single: the stored order puts the other's event first, the view says it came after). A conflict the store did
  not surface; the session's conversation forks (google/adk-python #4751).
* ``read_failed`` — a ``get_session``/``list_sessions`` raised, or a created session read back as None.

Keys follow ADK's scopes: a session key belongs to its session, ``user:`` to every session of the app and
user, ``app:`` to every session of the app. A ``create_session`` counts as a write of its initial state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .history import Op

_ABSENT = object()


@dataclass(frozen=True)
class Anomaly:
    name: str
    key: str  # the state key or event marker it is about
    message: str
    witness: tuple[Op, ...]

    def describe(self) -> str:
        lines = [f"{self.name} ({self.key}): {self.message}", "  minimal witness:"]
        return "\n".join(lines + [f"    {op.describe()}" for op in self.witness])


@dataclass(frozen=True)
class Verdict:
    anomalies: tuple[Anomaly, ...] = field(default_factory=tuple)
    appends: int = 0  # appends in the histories
    acknowledged: int = 0
    refused: int = 0

    @property
    def ok(self) -> bool:
        return not self.anomalies

    def names(self) -> set[str]:
        return {a.name for a in self.anomalies}

    def describe(self) -> str:
        head = (f"{self.appends} appends ({self.acknowledged} acknowledged, {self.refused} refused with an error "
                f"the caller saw)")
        if self.ok:
            return head + ": no anomaly"
        return head + f"; {len(self.anomalies)} anomal{'y' if len(self.anomalies) == 1 else 'ies'}:\n" + \
            "\n".join(a.describe() for a in self.anomalies)


def _scope_of(key: str) -> str:
    return "app" if key.startswith("app:") else "user" if key.startswith("user:") else "session"


def _touches(write: Op, key: str, final: Op) -> bool:
    """Whether ``write`` wrote ``key`` where ``final``'s session reads it."""
    if key not in write.delta or write.app != final.app:
        return False
    scope = _scope_of(key)
    if scope == "app":
        return True
    return write.user == final.user and (scope == "user" or write.session == final.session)


def _after(later: Op, earlier: Op) -> bool:
    """``later`` began after ``earlier`` was acknowledged: real-time order across processes."""
    return later.start > earlier.end


def check_history(ops: Iterable[Op], finals: Sequence[Op]) -> Verdict:
    """Every anomaly ``ops`` and ``finals`` show (see the module docstring); at most one per key and kind."""
    ops = list(ops)
    writes = [op for op in ops if op.kind in ("append", "create") and op.delta]
    appends = [op for op in ops if op.kind == "append"]
    anomalies: list[Anomaly] = []
    seen: set[tuple[str, str, str, int]] = set()

    def add(anomaly: Anomaly) -> None:
        # once per anomaly, key and the call it is about (a user: key is read back from each session of the user)
        first = anomaly.witness[0]
        if (anomaly.name, anomaly.key, first.process, first.seq) not in seen:
            seen.add((anomaly.name, anomaly.key, first.process, first.seq))
            anomalies.append(anomaly)

    for read in (op for op in [*ops, *finals] if op.kind in ("read", "list") and op.ok is False):
        add(Anomaly("read_failed", read.session or read.user, f"a read raised {read.error}", (read,)))
    for final in finals:
        if not final.ok or final.state is None:
            add(Anomaly("read_failed", final.session, f"the final read of session {final.session!r} "
                        f"{'raised ' + final.error if final.error else 'returned None'}", (final,)))
            continue
        keys = sorted({key for op in writes for key in op.delta if _touches(op, key, final)})
        for key in keys:
            relevant = [op for op in writes if _touches(op, key, final)]
            for anomaly in (*_registers(key, relevant, final), *_list_appends(key, relevant, ops, final)):
                add(anomaly)
        for anomaly in (*_events(appends, final), *_stale_appends(appends, final)):
            add(anomaly)
    return Verdict(tuple(anomalies), appends=len(appends), acknowledged=sum(1 for op in appends if op.ok),
                   refused=sum(1 for op in appends if op.ok is False))


def _registers(key: str, relevant: list[Op], final: Op) -> list[Anomaly]:
    """The final value is the value of a last acknowledged write (or of a write whose outcome is unknown)."""
    assert final.state is not None
    value = final.state.get(key, _ABSENT)
    acked = [op for op in relevant if op.ok]
    last = [op for op in acked if not any(_after(other, op) for other in acked)]
    if any(op.delta[key] == value for op in [*last, *(op for op in relevant if op.ok is None)]):
        return []
    if not acked and value is _ABSENT:
        return []  # only refused writes, none stored
    refused = next((op for op in relevant if op.ok is False and op.delta[key] == value), None)
    if refused is not None:
        return [Anomaly("refused_write_stored", key, f"the store holds {key!r} = {_show(value)}, the value of an "
                        f"append that raised (the caller was told it was not stored)", (refused, final))]
    if not last:
        return []
    overwritten = next((op for op in acked if op.delta[key] == value), None)
    if overwritten is not None:
        later = min((op for op in last if _after(op, overwritten)), key=lambda op: op.start)
        return [Anomaly("lost_write", key, f"the store holds {key!r} = {_show(value)} of {overwritten.ref}, but "
                        f"{later.ref} wrote {_show(later.delta[key])} after it was acknowledged, and was acknowledged "
                        f"too", (overwritten, later, final))]
    newest = max(last, key=lambda op: op.end)
    said = "does not hold" if value is _ABSENT else f"holds {_show(value)}, written by no call of the history, for"
    return [Anomaly("lost_write", key, f"the store {said} {key!r}; its last acknowledged write, {newest.ref}, "
                    f"wrote {_show(newest.delta[key])}", (newest, final))]


def _list_appends(key: str, relevant: list[Op], ops: list[Op], final: Op) -> list[Anomaly]:
    """A list key each append extends with its own element: every acknowledged element is in the final list,
    no refused one is."""
    if not relevant or not all(isinstance(op.delta[key], list) and op.delta[key] for op in relevant
                               if op.kind == "append"):
        return []
    assert final.state is not None
    stored = final.state.get(key)
    stored = stored if isinstance(stored, list) else []
    found: list[Anomaly] = []
    mine = {id(op): op.delta[key][-1] for op in relevant if op.kind == "append"}
    for op in relevant:
        if op.kind != "append":
            continue
        element = mine[id(op)]
        if op.ok and element not in stored:
            over = _overwriter(key, element, op, relevant)
            base = _base_read(over, ops) if over is not None else None
            witness = tuple(w for w in (op, base, over, final) if w is not None)
            how = (f"; {over.ref} wrote {key!r} without it (built on a read that did not hold it) and was acknowledged"
                   if over is not None else "")
            found.append(Anomaly("lost_update", key, f"{op.ref} added {_show(element)} to {key!r} and was "
                                 f"acknowledged, but the final list does not hold it{how}", witness))
        elif op.ok is False and element in stored and all(element != e for o, e in mine.items() if o != id(op)):
            found.append(Anomaly("refused_write_stored", key, f"{op.ref} raised {op.error}, yet its element "
                                 f"{_show(element)} is in the stored {key!r}", (op, final)))
    return found[:1]  # the first is the witness; the rest are the same defect again


def _overwriter(key: str, element: Any, lost: Op, relevant: list[Op]) -> Op | None:
    """The acknowledged write that first replaced the list without ``element``: the first acknowledged after
    ``lost`` whose list lacks it (where the element was lost; later ones only carried the loss on)."""
    candidates = [op for op in relevant if op.ok and op is not lost and op.end > lost.end
                  and element not in op.delta[key]]
    return min(candidates, key=lambda op: op.end, default=None)


def _base_read(write: Op, ops: list[Op]) -> Op | None:
    """The read ``write``'s runner made of its session last before ``write``: what it built the write on."""
    before = [op for op in ops if op.process == write.process and op.kind == "read" and op.ok
              and op.session == write.session and op.seq < write.seq]
    return before[-1] if before else None


def _events(appends: list[Op], final: Op) -> list[Anomaly]:
    assert final.events is not None or final.state is not None
    stored = list(final.events or ())
    found = []
    for op in (op for op in appends if op.session == final.session and op.user == final.user and op.app == final.app):
        count = stored.count(op.event)
        if op.ok and count == 0:
            found.append(Anomaly("lost_event", op.event, f"{op.ref} was acknowledged but its event is not in the "
                                 f"session", (op, final)))
        elif count > 1:
            found.append(Anomaly("duplicate_event", op.event, f"the event of {op.ref} is stored {count} times",
                                 (op, final)))
        elif op.ok is False and count:
            found.append(Anomaly("refused_write_stored", op.event, f"{op.ref} raised {op.error}, yet its event is "
                                 f"stored", (op, final)))
    return found


def _stale_appends(appends: list[Op], final: Op) -> list[Anomaly]:
    """The first acknowledged append of ``final``'s session whose view lacked an acknowledged event stored before
    its own (see the module docstring); appends whose view was not recorded are not judged."""
    stored = list(final.events or ())
    mine = [op for op in appends if op.session == final.session and op.user == final.user and op.app == final.app
            and op.ok]
    by_event = {op.event: op for op in mine}
    for op in sorted(mine, key=lambda o: o.end):
        if op.seen is None or op.event not in stored:
            continue
        unseen = [e for e in stored[:stored.index(op.event)] if e not in op.seen and e in by_event]
        if unseen:
            earlier = by_event[unseen[0]]
            return [Anomaly("stale_append", op.event, f"{op.ref} was acknowledged on a view of the session without "
                            f"the event of {earlier.ref}, which the store keeps before it: both runners' appends taken, "
                            f"neither seeing the other's (a conflict not surfaced)", (earlier, op, final))]
    return []


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:120] + "..."
