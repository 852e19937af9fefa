"""What ``crash`` runs and how it says what it found, shared by the CLI (``harness/cli/crash.py``) and the pytest
plugin's ``--rlm-crash`` items (``harness/pytest_plugin/crash_items.py``).

* ``default_selection``: the scenarios tagged ``crash`` or declaring a crash case, else all of them;
* ``run_crash``: one scenario's crash run — its declared point and recovery (a ``crash:`` case), its concurrent
  runners (a ``concurrent:`` case, ``concurrent.py``), else its crash matrix;
* ``report_row`` / ``report_lines``: the report as ``reports/crash.json`` holds it, and as the CLI prints it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI imports this module to build its parser: the matrix (and ADK) load when a crash runs
    from ..run.options import RunOptions
    from ..scenario.models import Scenario
    from .matrix import CrashReport

DEFAULT_TAG = "crash"
KINDS = {"after": ("after",), "before": ("before",), "submitted": ("submitted",),
         "all": ("after", "before", "submitted")}
"""``--points`` (CLI) / ``--rlm-crash`` (pytest): which crash points of each scenario run."""
EVIDENCE_LINES = 3


def default_selection(scenarios: list[Any]) -> list[Any]:
    """The scenarios tagged ``crash`` or declaring a crash or concurrent case, else all of them (a project fresh
    from ``init``: its smoke scenario) — never a scenario picked by name, which would be some agent's."""
    return [s for s in scenarios if DEFAULT_TAG in s.tags or s.crash or s.concurrent] or list(scenarios)


def run_crash(scenario: Scenario, options: RunOptions, *, points: str = "after", recovery: str | None = None,
              jobs: int = 1, keep: Path | None = None, max_points: int | None = None) -> CrashReport:
    """``scenario``'s crash run: a declared crash case runs its one point and recovery, a concurrent case its
    runners at once, any other scenario the matrix of ``points`` (a key of ``KINDS``)."""
    from .matrix import crash_matrix

    if scenario.concurrent is not None:
        from .concurrent import concurrent_run

        return concurrent_run(scenario, options, keep=keep)
    declared = scenario.crash  # a crash case kept as a regression: its one point, its recovery
    return crash_matrix(scenario, options, kinds=KINDS[points], recovery=(declared.recovery if declared else None)
                        or recovery, jobs=jobs, keep=keep, only=[declared.point] if declared else None,
                        max_points=max_points)


def report_row(report: CrashReport) -> dict[str, Any]:
    """One scenario of ``reports/crash.json``."""
    from .matrix import point_row

    row = {"scenario": report.scenario, "target": report.target, "session_service": report.session_service,
           "failed": report.failed, "error": report.error, "not_applicable": report.not_applicable,
           "note": report.note, "uncrashed_failures": report.uncrashed_failures, "first_run_s": round(report.first_run_s, 2),
           "seconds": round(report.seconds, 2), "points": [point_row(p) for p in report.points]}
    if getattr(report, "concurrent", None) is not None:
        row["concurrent"] = report.concurrent
        row["checks"] = [{"name": c.name, "status": c.status.value, "explanation": c.explanation,
                          "evidence": list(c.evidence)} for c in report.checks]
    return row


def report_lines(report: CrashReport) -> list[str]:
    """The report as the CLI prints it: a head line, a line per point with its failing checks, then each failing
    check's explanation and first evidence."""
    from .matrix import point_row

    rows = [point_row(p) for p in report.points]
    lines = [f"{report.scenario}: {len(rows)} point(s), {report.seconds:.0f} s "
             f"(uncrashed run {report.first_run_s:.0f} s)"]
    if report.note:
        lines.append(f"  note: {report.note}")
    if report.uncrashed_failures:
        lines.append(f"  note: the uncrashed run itself fails {', '.join(report.uncrashed_failures)} "
                     f"(`rlm-conformance run --llm-mode scripted {report.scenario}`)")
    if getattr(report, "concurrent", None) is not None:  # a concurrent case: its runners, then its checks
        c = report.concurrent
        where = "one session" if c["sessions"] == "same" else "a session each"
        lines[0] = f"{report.scenario}: {c['runners']} runners at once ({where}), {report.seconds:.0f} s"
    if report.error or report.not_applicable:
        lines.append(f"  {'ERROR' if report.error else 'n/a'}: {report.error or report.not_applicable}")
    for row in rows:
        failing = [c["name"] for c in row["checks"] if c["status"] == "fail"]
        verdict = "ERROR" if row["error"] else "n/a" if row["not_applicable"] else "FAIL" if failing else "pass"
        lines.append(f"  {row['point']:<40} {row['recovery']:<9} {verdict:<5} {', '.join(failing)}"
                     f"{row['error'] or row['not_applicable'] or ''}")
        for c in row["checks"]:
            if c["status"] == "fail":
                lines += [f"      {c['name']}: {line}" for line in (c["explanation"], *c["evidence"][:EVIDENCE_LINES])]
    for check in getattr(report, "checks", ()):
        verdict = {"fail": "FAIL", "n/a": "n/a"}.get(check.status.value, check.status.value)
        lines.append(f"  {check.name:<40} {verdict:<5} {check.explanation if verdict != 'pass' else ''}".rstrip())
        if check.failed:
            lines += [f"      {line}" for line in check.evidence[:EVIDENCE_LINES * 4]]
    return lines


def not_judged(report: CrashReport) -> str | None:
    """Why nothing of ``report`` was judged (the matrix n/a, or every point n/a), or None: a pytest skip's reason."""
    if report.failed:
        return None
    if report.not_applicable:
        return report.not_applicable
    checks = getattr(report, "checks", ())
    if checks and all(c.status.value == "n/a" for c in checks if not c.name.startswith("concurrent:")):
        return "; ".join(c.explanation for c in checks if c.status.value == "n/a")
    if report.points and all(p.not_applicable for p in report.points):
        reasons = sorted({p.not_applicable or "" for p in report.points})
        return f"every crash point is n/a: {'; '.join(reasons)}"
    return None
