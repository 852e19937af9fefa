"""Comparing two normalised runs of one scenario: every difference, each classified and maybe declared.

A difference is *declared* when its kind (see ``profiles.DIVERGENCE_KINDS``) is
a divergence one of the two services declares; the reason then travels with
it into the report. Everything else is undeclared and fails the gate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .normalize import ABSENT, NormalizedRun
from .probes import ACCEPTED, STALE
from .profiles import NONE_DELETES, STALE_WRITER_REJECTED, ServiceProfile


@dataclass(frozen=True)
class Difference:
    scenario: str
    service_a: str
    service_b: str
    event_index: int | None  # final state: the last event that wrote the key; None: outcomes, run errors
    where: str  # "appended delta", "persisted delta", "final state of <session>", "outcome", "event", "run"
    key: str
    value_a: Any
    value_b: Any
    kind: str | None = None  # a divergence kind when the difference has one
    declared: str | None = None  # the declared reason, or None: undeclared

    @property
    def is_declared(self) -> bool:
        return self.declared is not None


def classify(where: str, key: str, value_a: Any, value_b: Any) -> str | None:
    """The divergence kind a difference is an instance of, if any (a ``temp:`` key never has one)."""
    if key.startswith("temp:"):
        return None
    if (value_a is None and value_b is ABSENT) or (value_a is ABSENT and value_b is None):
        return NONE_DELETES
    if where == "outcome" and sorted(map(repr, (value_a, value_b))) == sorted(map(repr, (ACCEPTED, STALE))):
        return STALE_WRITER_REJECTED
    return None


class _Collector:
    def __init__(self, a: NormalizedRun, b: NormalizedRun, profile_a: ServiceProfile, profile_b: ServiceProfile) -> None:
        self.a, self.b, self.pa, self.pb = a, b, profile_a, profile_b
        self.found: list[Difference] = []

    def add(self, event_index: int | None, where: str, key: str, value_a: Any, value_b: Any) -> None:
        kind = classify(where, key, value_a, value_b)
        declared = (self.pb.declared(kind) or self.pa.declared(kind)) if kind else None
        if declared:
            owner = self.pb.name if self.pb.declared(kind) else self.pa.name
            declared = f"{owner} {kind}: {declared}"
        self.found.append(Difference(self.a.scenario, self.a.service, self.b.service, event_index, where, key,
                                     value_a, value_b, kind, declared))

    def dicts(self, event_index: int | None, where: str, da: dict[str, Any], db: dict[str, Any]) -> None:
        for key in sorted(set(da) | set(db), key=str):
            va, vb = da.get(key, ABSENT), db.get(key, ABSENT)
            if va is ABSENT or vb is ABSENT or va != vb or type(va) is not type(vb):
                self.add(event_index, where, key, va, vb)


def compare_runs(a: NormalizedRun, b: NormalizedRun, profile_a: ServiceProfile,
                 profile_b: ServiceProfile) -> list[Difference]:
    """Every difference between run ``a`` (the baseline) and run ``b`` of the same scenario."""
    c = _Collector(a, b, profile_a, profile_b)
    if a.error != b.error:
        c.add(None, "run", "error", a.error or ABSENT, b.error or ABSENT)
    c.dicts(None, "outcome", a.outcomes, b.outcomes)
    for i in range(max(len(a.events), len(b.events))):
        ea = a.events[i] if i < len(a.events) else None
        eb = b.events[i] if i < len(b.events) else None
        if ea is None or eb is None:
            c.add(i, "event", "<event>", f"{ea.author} in {ea.session_id}" if ea else ABSENT,
                  f"{eb.author} in {eb.session_id}" if eb else ABSENT)
            continue
        if (ea.author, ea.session_id) != (eb.author, eb.session_id):
            c.add(i, "event", "author", f"{ea.author} in {ea.session_id}", f"{eb.author} in {eb.session_id}")
        c.dicts(i, "appended delta", ea.appended, eb.appended)
        if ea.persisted is None or eb.persisted is None:
            if ea.persisted is not eb.persisted:
                c.add(i, "persisted delta", "<stored event>", "stored" if ea.persisted is not None else ABSENT,
                      "stored" if eb.persisted is not None else ABSENT)
        else:
            c.dicts(i, "persisted delta", ea.persisted, eb.persisted)
    for session_id in sorted(set(a.final) | set(b.final)):
        before = len(c.found)
        c.dicts(None, f"final state of {session_id}", a.final.get(session_id, {}), b.final.get(session_id, {}))
        c.found[before:] = [replace(d, event_index=_last_writer(a, b, session_id, d.key)) for d in c.found[before:]]
    return c.found


def _last_writer(a: NormalizedRun, b: NormalizedRun, session_id: str, key: str) -> int | None:
    """The index of the last event (of either run) whose delta set ``key`` in that session: where to look."""
    writers = [e.index for run in (a, b) for e in run.events if e.session_id == session_id and key in e.appended]
    return max(writers, default=None)
