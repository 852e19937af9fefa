"""The terminal summary: a rich table (rows = scenarios, columns = checks a, b, c ...), a legend,
the failures and errors with their first evidence, and one closing summary line."""

from __future__ import annotations

from rich.columns import Columns
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..checks.base import Status
from ..result import RunReport
from .summary import (abbreviations, check_columns, error_lines, failing_checks, run_setups, scenario_status,
                      summary_line)

CELLS = {Status.PASS: Text("✓", style="green"), Status.FAIL: Text("✗", style="bold red"),
         Status.NOT_APPLICABLE: Text("–", style="dim")}
RESULT = {"pass": Text("pass", style="green"), "fail": Text("FAIL", style="bold red"),
          "error": Text("ERROR", style="bold yellow")}
EVIDENCE_LINES = 1
MAX_FAILURES = 30
"""Failed checks detailed in the terminal; the reports hold every one with all its evidence."""


def render_terminal(report: RunReport, console: Console) -> None:
    """Print the table, the legend (``rlm-conformance explain NAME`` tells more), failures and the summary line."""
    columns = check_columns(report)
    short = abbreviations(columns)
    table = Table(title="rlm-conformance", title_justify="left", show_lines=False)
    table.add_column(report.subject, no_wrap=True, overflow="fold")
    for name in columns:
        table.add_column(short[name], justify="center", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    for result in report.results:
        cells = [CELLS[check.status] if (check := result.check(name)) is not None else Text(" ") for name in columns]
        table.add_row(Text(result.scenario), *cells, RESULT[scenario_status(result)], f"{result.duration_s:.1f}s")
    console.print(table)

    if columns:
        console.print(Columns([Text.assemble((short[name], "bold"), " ", name) for name in columns],
                              column_first=True, padding=(0, 3), title=Text("checks", style="dim")))

    for result in report.results:
        for line in error_lines(result):
            console.print()
            console.print(Text.assemble((f"{result.scenario}", "bold"), (" ERROR ", "bold yellow"), line))
    failures = [(r, c) for r in report.results for c in failing_checks(r)]
    for result, check in failures[:MAX_FAILURES]:
        console.print()
        console.print(Text.assemble((f"{result.scenario}::{check.name}", "bold red"), " ", check.explanation))
        for line in check.evidence[:EVIDENCE_LINES]:
            console.print(Text(f"  - {line}", style="dim"))
        if len(check.evidence) > EVIDENCE_LINES:
            console.print(Text(f"  ... {len(check.evidence) - EVIDENCE_LINES} more evidence line(s) in the reports",
                               style="dim"))
    if len(failures) > MAX_FAILURES:
        console.print()
        console.print(Text(f"... and {len(failures) - MAX_FAILURES} more failed checks: every one, with all its "
                           f"evidence, is in the reports.", style="bold red"))

    console.print()
    for setup in run_setups(report):
        console.print(Text(f"Ran against {setup}.", style="dim"))
    console.print(Text(summary_line(report), style="bold green" if report.ok else "bold red"))
