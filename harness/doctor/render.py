"""The doctor's outputs: a rich table for people, JSON for machines."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .findings import DoctorReport, Level

STYLES = {Level.OK: "green", Level.WARNING: "bold yellow", Level.ERROR: "bold red", Level.SKIPPED: "dim"}


def render_table(report: DoctorReport, console: Console) -> None:
    table = Table(title=report.title, title_justify="left", show_lines=True)
    table.add_column("check", no_wrap=True, style="bold")
    table.add_column("level", no_wrap=True)
    table.add_column("finding")
    table.add_column("fix")
    for finding in report.findings:
        table.add_row(Text(finding.check), Text(finding.level.value, style=STYLES[finding.level]),
                      Text(finding.message), Text(finding.fix))
    console.print(table)
    counts = {level: sum(f.level is level for f in report.findings) for level in Level}
    summary = (f"{counts[Level.ERROR]} error(s), {counts[Level.WARNING]} warning(s), {counts[Level.OK]} ok, "
               f"{counts[Level.SKIPPED]} skipped")
    verdict = "a recording would fail: fix the errors above" if report.errors else "ready to record"
    console.print(Text(f"{summary}: {verdict}.", style="bold red" if report.errors else "bold green"))


def render_json(report: DoctorReport) -> str:
    return json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n"
