"""A client-observed history of session-service calls: one JSON line per completed call, flushed as it goes.

What a runner saw, not what the store holds: each append (the delta sent, and whether it was acknowledged or
the error it raised, type and message), each read (``get_session``'s state and event markers,
``list_sessions``' ids), each ``create_session``, and the service's opening. ``start``/``end`` are
``time.monotonic_ns()`` — on Linux one clock for every process of the machine — so the calls of several
processes can be put in real-time order. A call cut short by a crash has no line; a line written with
``ok: null`` is indeterminate (it may or may not have been stored). ``harness/contract/history_check.py``
judges the histories.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

OpKind = Literal["open", "create", "read", "list", "append"]


@dataclass(frozen=True)
class Op:
    """One completed call, as the caller observed it."""

    process: str  # who called: a runner ("p0", "p1"), or "final" for the reads after every runner stopped
    seq: int  # its place in that runner's history
    kind: OpKind
    app: str = ""
    user: str = ""
    session: str = ""
    start: int = 0  # monotonic ns when the call was made
    end: int = 0  # ... and when it returned
    ok: bool | None = True  # False: it raised (a refusal: nothing stored); None: indeterminate
    error: str = ""  # "Type: message" when it raised
    delta: dict[str, Any] = field(default_factory=dict)  # append: the state delta sent; create: the initial state
    event: str = ""  # append: the marker (text) of the event sent
    state: dict[str, Any] | None = None  # read: the state returned
    events: tuple[str, ...] | None = None  # read: the event markers returned, in order
    sessions: tuple[str, ...] | None = None  # list: the session ids returned
    seen: tuple[str, ...] | None = None  # append: the event markers the caller's session held (None: not recorded)

    @property
    def ref(self) -> str:
        """Short name in a witness: ``p1#4 append``."""
        return f"{self.process}#{self.seq} {self.kind}"

    def describe(self) -> str:
        """One witness line: who did what to which session, and what came back."""
        where = f"{self.app}/{self.user}/{self.session}" if self.session else f"{self.app}/{self.user}"
        outcome = "acknowledged" if self.ok else ("outcome unknown" if self.ok is None else f"raised {self.error}")
        if self.kind == "append":
            view = "" if self.seen is None else f", on a view of {_view(self.seen)}"
            return f"{self.ref} to {where} (event {self.event!r}, delta {_short(self.delta)}{view}): {outcome}"
        if self.kind == "read":
            if not self.ok:
                return f"{self.ref} of {where}: {outcome}"
            return f"{self.ref} of {where}: state {_short(self.state)}, events {list(self.events or ())}"
        return f"{self.ref} {where}: {outcome}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, default=repr)

    @classmethod
    def from_json(cls, line: str) -> Op:
        data = json.loads(line)
        for name in ("events", "sessions", "seen"):
            if data.get(name) is not None:
                data[name] = tuple(data[name])
        return cls(**data)


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


def _view(seen: tuple[str, ...], shown: int = 3) -> str:
    """The events an append's session held: the count, and the last few (what a missing one would follow)."""
    if not seen:
        return "no events"
    last = list(seen[-shown:])
    return f"{len(seen)} event(s) ending {last}" if len(seen) > shown else f"events {last}"


def now() -> int:
    return time.monotonic_ns()


def error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:300]}"


class HistoryWriter:
    """Appends ops to a JSONL file, one flushed line each (a runner killed mid-run keeps what it wrote); with no
    path, keeps them in ``ops`` only (runners in one process)."""

    def __init__(self, process: str, path: Path | None = None) -> None:
        self.process = process
        self.ops: list[Op] = []
        self._file = open(path, "a", encoding="utf-8") if path is not None else None  # noqa: SIM115 - closed in close()

    def record(self, kind: OpKind, **fields: Any) -> Op:
        op = Op(process=self.process, seq=len(self.ops), kind=kind, **fields)
        self.ops.append(op)
        if self._file is not None:
            self._file.write(op.to_json() + "\n")
            self._file.flush()
        return op

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def read_history(path: Path) -> Iterator[Op]:
    """The ops of a history file; a last line cut short by a crash is left out (it was never complete)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield Op.from_json(line)
        except (json.JSONDecodeError, TypeError) as error:
            if number == len(lines):
                return
            raise ValueError(f"{path}:{number}: not a history line ({error}); the file was written by something "
                             f"else than harness.contract.history.HistoryWriter") from error
