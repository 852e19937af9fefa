"""``rlm-conformance report``: re-render the reports of a finished run from its JSON."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .common import (
    EXIT_FAILED,
    EXIT_OK,
    add_formats,
    add_wide,
    check_titles,
    details_in,
    print_written,
    report_formats,
    stdout_console,
)


PARSER: dict[str, Any] = {
    "name": "report",
    "help": "re-render reports from a conformance.json",
    "description": "Re-render reports from the JSON a run wrote, without running "
                   "anything. Exit 0 when that run passed, 1 when it did not.",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(report: argparse.ArgumentParser) -> None:
    report.add_argument("--from", dest="source", type=Path, default=Path("reports/conformance.json"), metavar="PATH",
                        help="the JSON report to read (default: %(default)s)")
    report.add_argument("--reports-dir", metavar="DIR", help="where to write (default: the folder of --from)")
    add_formats(report, "junit, markdown, html")
    add_wide(report)


def run(args: argparse.Namespace) -> int:
    from ..report import load_report_json, render_terminal, write_reports

    formats = report_formats(args.formats, ("junit", "markdown", "html"))
    report = load_report_json(args.source)
    console = stdout_console()
    out_dir = Path(args.reports_dir) if args.reports_dir else args.source.parent
    render_terminal(report, console, wide=args.wide, details_in=details_in(out_dir, formats))
    print_written(console, write_reports(report, out_dir, formats, titles=check_titles()))
    return EXIT_OK if report.ok else EXIT_FAILED


COMMANDS = {"report": run}
