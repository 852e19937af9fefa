"""Crash points of a scenario, from its first (uncrashed) run: after and before each appended event."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..trace.model import Trace

Kind = Literal["after", "before"]
KINDS: tuple[Kind, ...] = ("after", "before")


@dataclass(frozen=True)
class CrashPoint:
    """Kill the process right after the store acknowledged whole event ``index`` (counted from 0 over the whole
    run, as the trace numbers them), or right before the harness's wrapper asks the store to write it."""

    kind: Kind
    index: int
    author: str = ""
    turn: int = 0

    @property
    def label(self) -> str:
        return f"{self.kind} #{self.index} ({self.author})"


def crash_points(trace: Trace, kinds: tuple[Kind, ...] = ("after",)) -> list[CrashPoint]:
    """Every point of ``kinds`` the uncrashed run passed, in the order the run passed them."""
    events = [e for e in trace.events if not e.partial]
    return [CrashPoint(kind, e.index, e.author, e.turn) for e in events for kind in KINDS if kind in kinds]


def point_of(events: list, *, kind: Kind, index: int | None = None, author: str | None = None) -> CrashPoint:
    """The point a scenario's ``crash:`` names: an event index, or the first event of ``author``."""
    whole = [e for e in events if not e.partial]
    found = [e for e in whole if (e.index == index if index is not None else e.author == author)]
    if not found:
        what = f"event #{index}" if index is not None else f"an event of author {author!r}"
        raise LookupError(f"the uncrashed run appended no {what} (it appended {len(whole)} events, authors "
                          f"{sorted({e.author for e in whole})})")
    return CrashPoint(kind, found[0].index, found[0].author, found[0].turn)
