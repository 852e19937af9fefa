"""What every renderer shares: the check columns, their abbreviations, the counts and the summary line.

Pure functions of a ``RunReport``. Columns are the check names in the order the
results list them (the registry's order), so a report never needs the registry.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..checks.base import CheckResult, Status
from ..result import RunReport, ScenarioResult


def check_columns(report: RunReport) -> list[str]:
    """Every check name that occurs in the report, in first-seen order."""
    seen: dict[str, None] = {}
    for result in report.results:
        for check in result.checks:
            seen.setdefault(check.name, None)
    return list(seen)


def abbreviations(names: Iterable[str]) -> dict[str, str]:
    """``a``, ``b`` ... ``z``, ``aa``, ``ab`` ...: short column headers, in order."""
    letters = string.ascii_lowercase
    out: dict[str, str] = {}
    for i, name in enumerate(names):
        label, n = "", i
        while True:
            label = letters[n % 26] + label
            n = n // 26 - 1
            if n < 0:
                break
        out[name] = label
    return out


@dataclass(frozen=True)
class Counts:
    scenarios: int
    checks: int
    passed: int
    failed: int
    not_applicable: int
    errors: int
    expected: int = 0  # declared divergences that failed as declared (xfail)
    unexpected: int = 0  # declared divergences that passed (xpass: the declaration is stale)


def counts(report: RunReport) -> Counts:
    statuses = [c.status for r in report.results for c in r.checks]
    return Counts(scenarios=len(report.results), checks=len(check_columns(report)),
                  passed=statuses.count(Status.PASS), failed=statuses.count(Status.FAIL),
                  not_applicable=statuses.count(Status.NOT_APPLICABLE),
                  errors=sum(1 for r in report.results if r.status == "error"),
                  expected=sum(1 for r in report.results if r.status == "xfail"),
                  unexpected=sum(1 for r in report.results if r.status == "xpass"))


def check_counts(result: ScenarioResult) -> tuple[int, int, int]:
    """One scenario's checks: how many passed, failed and were n/a."""
    statuses = [c.status for c in result.checks]
    return statuses.count(Status.PASS), statuses.count(Status.FAIL), statuses.count(Status.NOT_APPLICABLE)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_line(report: RunReport) -> str:
    """``16 scenarios, 15 checks: 240 passed, 0 failed, 12 n/a`` (plus ``, 1 could not run`` on errors)."""
    c = counts(report)
    line = (f"{_plural(c.scenarios, report.subject)}, {_plural(c.checks, 'check')}: "
            f"{c.passed} passed, {c.failed} failed, {c.not_applicable} n/a")
    if c.errors:
        line += f", {c.errors} errored"
    if c.expected:
        line += f"; {c.expected} {report.subject}{'s' if c.expected > 1 else ''} failed as declared (xfail)"
    if c.unexpected:
        line += f"; {c.unexpected} passed although declared to fail (XPASS)"
    return line


def scenario_status(result: ScenarioResult) -> str:
    """``pass``, ``fail`` or ``error`` (the scenario could not be judged, or a turn raised undeclared); ``xfail`` /
    ``xpass`` for a divergence the backend declares."""
    return result.status


def run_setups(report: RunReport) -> list[str]:
    """What the scenarios actually ran against, once per distinct setup: target, session service, model route."""
    seen: dict[str, None] = {}
    if report.subject != "scenario":  # an audit ran nothing: its rows say where they were read
        return []
    for result in report.results:
        route = result.trace.model_route if result.trace is not None else ""
        seen.setdefault(f"target {result.target} on session service {result.session_service}"
                        + (f"; model: {route}" if route else ""), None)
    for result in report.results:  # after the setups: said once per run, as the executor says it
        line = confinement_line(result.trace.executor_confinement if result.trace is not None else None)
        if line:
            seen.setdefault(line, None)
    return list(seen)


def confinement_line(said: dict[str, Any] | None) -> str | None:
    """What the target's executor said of its confinement, in one line (None: it said nothing)."""
    if not said:
        return None
    missing = [m for m in said.get("missing") or [] if isinstance(m, dict)]
    if missing:
        return ("executor confinement: runs WITHOUT " + "; ".join(f"{m.get('protection')} ({m.get('reason')})"
                                                                   for m in missing))
    applied = ", ".join(str(p) for p in said.get("applied") or [])
    return f"executor confinement: {applied or 'none applied'}"


def error_lines(result: ScenarioResult) -> list[str]:
    """Why a scenario's verdict is ``error``: the harness's reason, and each undeclared crash of a turn."""
    lines = [f"could not run: {result.error}"] if result.error is not None else []
    for turn in result.crashed_turns:
        crash = turn.outcome.crash
        lines.append(f"turn {turn.turn} (session {turn.session_id}) raised {crash.describe()}"
                     + (f" (caused by {crash.cause})" if crash.cause else "")
                     + (f"; termination {turn.outcome.termination}" if turn.outcome.termination else ""))
    return lines


def error_headline(result: ScenarioResult) -> str:
    """The first reason of an ``error`` verdict, to lead a line: the harness's, else the first undeclared crash
    (``turn 0 raised KeyError from agent x: ...``; ``error_lines`` says which session and how the turn ended)."""
    if result.error is not None:
        return f"could not run: {result.error}"
    crashed = result.crashed_turns
    return f"turn {crashed[0].turn} raised {crashed[0].outcome.crash.describe()}" if crashed else ""


def failing_checks(result: ScenarioResult) -> list[CheckResult]:
    return [c for c in result.checks if c.status is Status.FAIL]
