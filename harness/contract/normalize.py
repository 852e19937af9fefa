"""Normalising one run (a scenario Trace or a service probe) into what the differential compares.

A ``NormalizedRun`` holds, per event (by index and author), the delta left on
the event after ``append_event`` and the delta storage holds for it; per
session, the final persisted state (``app:``/``user:`` keys prefixed, as ADK
merges them); and named outcomes (turn results, probe steps). Values that
differ between any two runs whatever the service are replaced first (VOLATILE).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..trace.model import PersistedSnapshot, Trace


class _Absent:
    """A key that is not there at all (as opposed to a key whose value is None)."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()

# What differs between two runs of one scenario whatever the service; replaced before comparing.
VOLATILE: tuple[tuple[str, str], ...] = (
    ("the run's private folder (volume and result-JSON paths)", "<home>"),
    (("generated ids: dashed UUIDs and runs of 12+ hex digits with at least one digit "
      "(artifact ids, uuid4().hex); numbered by first appearance, so equal ids stay equal"), "<id:N>"),
    ("measured times: values of keys ending in _time_s, _latency_s or duration_s (rlm:metrics)", "<time>"),
)
_TIMED = re.compile(r"(_time_s|_latency_s|duration_s)$")
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                 r"|(?<![0-9A-Za-z])(?=[0-9a-f]*[0-9])[0-9a-f]{12,}(?![0-9A-Za-z])")


@dataclass
class NormalizedEvent:
    index: int
    session_id: str
    author: str
    appended: dict[str, Any]
    persisted: dict[str, Any] | None  # None: storage holds no row for this event


@dataclass
class NormalizedRun:
    scenario: str
    service: str
    events: list[NormalizedEvent] = field(default_factory=list)
    final: dict[str, dict[str, Any]] = field(default_factory=dict)  # session id -> merged persisted state
    outcomes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class _Redactor:
    def __init__(self, homes: Iterable[str]) -> None:
        self.homes = sorted({h for h in homes if h}, key=len, reverse=True)
        self.ids: dict[str, str] = {}

    def _text(self, text: str) -> str:
        for home in self.homes:
            text = text.replace(home, "<home>")
        return _ID.sub(lambda m: self.ids.setdefault(m.group(0), f"<id:{len(self.ids) + 1}>"), text)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, dict):  # sorted: the numbering must not depend on a service's key order
            return {self._text(str(k)): "<time>" if _TIMED.search(str(k)) else self(value[k])
                    for k in sorted(value, key=str)}
        if isinstance(value, (list, tuple)):
            return [self(v) for v in value]
        return value


def persisted_state(snapshot: PersistedSnapshot) -> dict[str, Any]:
    return {**snapshot.session_state, **{f"app:{k}": v for k, v in snapshot.app_state.items()},
            **{f"user:{k}": v for k, v in snapshot.user_state.items()}}


def build_run(scenario: str, service: str, events: list[tuple[int, str, str, dict[str, Any]]],
              snapshots: dict[str, PersistedSnapshot], outcomes: dict[str, Any], *,
              homes: Iterable[str] = ()) -> NormalizedRun:
    """``events``: (index, session id, author, appended delta); ``snapshots``: each session's last snapshot."""
    redact = _Redactor(homes)
    run = NormalizedRun(scenario=scenario, service=service)
    position: dict[str, int] = {}
    for index, session_id, author, appended in events:
        p = position[session_id] = position.get(session_id, -1) + 1
        rows = snapshots[session_id].events if session_id in snapshots else []
        stored = None
        if p < len(rows):  # deleted keys come back as {key: None}, as a reloaded event shows them
            stored = {**rows[p].state_delta, **{k: None for k in rows[p].deleted_keys}}
        run.events.append(NormalizedEvent(index, session_id, author, redact(appended), redact(stored)))
    for session_id in sorted(snapshots):
        run.final[session_id] = redact(persisted_state(snapshots[session_id]))
    run.outcomes = redact(outcomes)
    return run


def normalize_trace(trace: Trace, *, service: str, home: Path | None = None) -> NormalizedRun:
    homes = [str(home), str(Path(home).resolve())] if home is not None else []
    snapshots = {t.session_id: snap for t in trace.turns if (snap := trace.final_persisted(t.session_id))}
    outcomes: dict[str, Any] = {}
    for turn in trace.turns:
        for name, value in (*turn.outcome.model_dump(exclude={"crash"}).items(), ("run_error", turn.run_error)):
            outcomes[f"turn {turn.turn} {name}"] = value
    events = [(e.index, e.session_id, e.author, e.appended_delta) for e in trace.events]
    return build_run(trace.scenario, service, events, snapshots, outcomes, homes=homes)
