"""Crash points of a scenario, from its first (uncrashed) run: after and before each appended event, and (on a
workspace the harness keeps, harness/crash/workspace.py) once each job run is submitted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..trace.model import Trace

Kind = Literal["after", "before", "submitted"]
KINDS: tuple[Kind, ...] = ("after", "before", "submitted")
EVENT_KINDS: tuple[Kind, ...] = ("after", "before")


@dataclass(frozen=True)
class CrashPoint:
    """Kill the process right after the store acknowledged whole event ``index`` (counted from 0 over the whole
    run, as the trace numbers them), or right before the harness's wrapper asks the store to write it; or
    (``submitted``) once the workspace created the ``index``-th job run of the run (from 0), before the submit is
    answered. ``author`` and ``turn`` are the point's event's (``submitted``: the first event after the submit)."""

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
    return [CrashPoint(kind, e.index, e.author, e.turn) for e in events for kind in EVENT_KINDS if kind in kinds]


def submitted_points(trace: Trace, after_events: list[int]) -> list[CrashPoint]:
    """A ``submitted`` point per job run the uncrashed run created; ``after_events[k]``: the event its process had
    last acknowledged before the k-th submit (-1: none). The point takes the next event's author and turn."""
    events = [e for e in trace.events if not e.partial]
    points = []
    for k, after in enumerate(after_events):
        following = next((e for e in events if e.index > after), events[-1] if events else None)
        points.append(CrashPoint("submitted", k, following.author if following else "",
                                 following.turn if following else 0))
    return points


def in_run_order(points: list[CrashPoint], submitted: list[CrashPoint], after_events: list[int]) -> list[CrashPoint]:
    """``points`` (event points) with each ``submitted`` point placed after the points of the events before it."""
    merged = list(points)
    for point, after in sorted(zip(submitted, after_events, strict=True), key=lambda pair: -pair[0].index):
        merged.insert(sum(1 for p in points if p.index <= after), point)
    return merged


def point_of(events: list, *, kind: Kind, index: int | None = None, author: str | None = None) -> CrashPoint:
    """The point a scenario's ``crash:`` names: an event index, or the first event of ``author``."""
    whole = [e for e in events if not e.partial]
    found = [e for e in whole if (e.index == index if index is not None else e.author == author)]
    if not found:
        what = f"event #{index}" if index is not None else f"an event of author {author!r}"
        raise LookupError(f"the uncrashed run appended no {what} (it appended {len(whole)} events, authors "
                          f"{sorted({e.author for e in whole})})")
    return CrashPoint(kind, found[0].index, found[0].author, found[0].turn)
