"""The result of a conformance run: the only input the reporters read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .checks.base import CheckResult, Status
from .trace.model import Trace, TurnRecord


@dataclass(frozen=True)
class ScenarioResult:
    scenario: str
    description: str
    target: str
    llm_mode: str
    session_service: str
    checks: tuple[CheckResult, ...]
    trace: Trace | None
    duration_s: float
    # A harness-level failure (cassette miss, target import error ...): the scenario could not be judged.
    error: str | None = None
    # A divergence the run's backend declares for this scenario (harness/targets/databricks.py), with its reason:
    # the scenario is a strict expected failure, as pytest's xfail(strict=True): "xfail" when it fails or errs
    # (the run stays green), "xpass" when it passes (the declaration is stale: the run is red).
    declared: str | None = None

    @property
    def crashed_turns(self) -> list[TurnRecord]:
        """Turns that ended by raising when the scenario did not declare that error."""
        if self.trace is None:
            return []
        return [t for t in self.trace.turns if t.outcome.crash is not None and not t.outcome.crash.expected]

    @property
    def verdict(self) -> str:
        """What the run showed: ``error`` (could not be judged, or a turn raised undeclared), ``fail`` (a check
        failed) or ``pass`` — whatever was declared."""
        if self.error is not None or self.crashed_turns:
            return "error"
        return "fail" if any(c.status is Status.FAIL for c in self.checks) else "pass"

    @property
    def status(self) -> str:
        """The verdict, or for a declared divergence ``xfail`` (it failed, as declared) / ``xpass`` (it passed)."""
        if self.declared is None:
            return self.verdict
        return "xpass" if self.verdict == "pass" else "xfail"

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "xfail")

    def check(self, name: str) -> CheckResult | None:
        return next((c for c in self.checks if c.name == name), None)


@dataclass(frozen=True)
class RunReport:
    results: tuple[ScenarioResult, ...]
    started_at: str
    machine: str
    tool_version: str
    extra: dict[str, str] = field(default_factory=dict)
    # What a row stands for: "scenario" for run/record; "session" for `audit`, whose rows are stored sessions.
    subject: str = "scenario"
    # The CLI keeps each result with a light trace and the full one on disk (harness/run/trace_spool.py): this reads
    # the full trace of results[i] back. None: every result holds its full trace.
    full_traces: Callable[[int], Trace | None] | None = field(default=None, compare=False, repr=False)
    # results[i]'s part of a report format ("json", "junit", "html"), rendered by the CLI as the result arrived
    # (harness/run/trace_spool.py, harness/report/write.py): the reports then only join the parts after the run.
    # None, or None for a part: the renderer makes it from the result.
    pieces: Callable[[int, str], str | None] | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def trace_at(self, index: int) -> Trace | None:
        """The full trace of ``results[index]`` (what the JSON and HTML reports show)."""
        if self.full_traces is not None and self.results[index].trace is not None:
            return self.full_traces(index)
        return self.results[index].trace

    def piece_at(self, index: int, format_name: str) -> str | None:
        """``results[index]``'s part of the ``format_name`` report if it was rendered as the result arrived."""
        return self.pieces(index, format_name) if self.pieces is not None else None
