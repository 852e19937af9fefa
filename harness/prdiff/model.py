"""What ``rlm-conformance diff`` found, as plain data: the Markdown and the ``--json`` file are written from it.

Kinds of change, by what a reviewer must do about them:

* ``regression`` — worse at HEAD: a check that fails and did not (pass, n/a, or not run → fail), a scenario in
  error that was not, a scenario that vanished. The only kind that makes ``diff`` exit 1.
* ``improvement`` — a failure or error gone.
* ``change`` — neither, but worth a look: a check that stopped judging (→ n/a), a scenario added, a state delta,
  a model request or a finding that changed under an unchanged verdict.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from ..snapshot.state_diff import StateChange  # noqa: F401 - part of a RunDiff (ScenarioDiff.state)

Kind = Literal["regression", "improvement", "change"]
HARNESS_ROWS = frozenset({"cassette", "snapshot", "script"})
"""Rows the harness adds beside the checks: they follow from a change rather than name it, so they sort last."""


@dataclass(frozen=True)
class VerdictChange:
    check: str  # a check's name, a harness row (snapshot, cassette, script), or "scenario" for the whole scenario
    before: str | None  # pass, fail, n/a, error, xfail, xpass; None: not in BASE
    after: str | None  # the same at HEAD; None: not in HEAD
    kind: Kind
    explanation: str = ""  # HEAD's explanation (BASE's when the check is gone)
    state: StateChange | None = None  # a regression's state change: the one its evidence names, else the first


@dataclass(frozen=True)
class RequestDrift:
    agent: str
    count_before: int
    count_after: int
    changed: tuple[str, ...] = ()  # one line per request whose body changed: "#2 system instruction: ..."


@dataclass(frozen=True)
class FindingChange:
    check: str
    text: str  # one evidence line of a failing check (events, requests or rows it names), normalised
    change: Literal["new", "vanished"]


@dataclass
class ScenarioDiff:
    scenario: str
    before: str | None  # the scenario's status in BASE (None: added)
    after: str | None  # at HEAD (None: removed)
    verdicts: list[VerdictChange] = field(default_factory=list)
    state: list[StateChange] = field(default_factory=list)
    requests: list[RequestDrift] = field(default_factory=list)
    findings: list[FindingChange] = field(default_factory=list)
    error: str | None = None  # HEAD's error, when the scenario is in error there

    @property
    def regressions(self) -> list[VerdictChange]:
        return [v for v in self.verdicts if v.kind == "regression"]

    @property
    def changed(self) -> bool:
        return bool(self.verdicts or self.state or self.requests or self.findings)


@dataclass
class RunDiff:
    base: str  # what BASE was (its path), as the user named it
    head: str
    scenarios: list[ScenarioDiff]  # every scenario of either run, HEAD's order then BASE's vanished ones
    base_meta: dict[str, str] = field(default_factory=dict)  # started_at, tool_version of each run
    head_meta: dict[str, str] = field(default_factory=dict)
    # A sharded run: how many scenarios only BASE ("base") or only HEAD ("head") ran, left out, and the shards.
    not_compared: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> list[ScenarioDiff]:
        return [s for s in self.scenarios if s.changed]

    @property
    def regressed(self) -> bool:
        return any(s.regressions for s in self.scenarios)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["scenarios"] = [s for s in data["scenarios"] if any(s[k] for k in ("verdicts", "state", "requests",
                                                                                  "findings"))]
        data["regressed"] = self.regressed
        data["unchanged"] = sum(1 for s in self.scenarios if not s.changed)
        return data
