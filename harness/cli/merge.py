"""``rlm-conformance merge DIR...``: the reports of ``run --shard i/n`` joined into the unsharded run's reports."""

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
    "name": "merge",
    "help": "join the reports of `run --shard i/n` into one report",
    "description": "Read the conformance.json of each shard's reports folder and write the one report (JUnit, "
                   "JSON, HTML, Markdown) the unsharded run would have written, results in its order. Refused "
                   "(exit 2, naming the file): a report that is not a shard's, overlapping shards, shards of "
                   "different settings, targets or ADK lines, and a missing shard. Exit 0 when every check passed, "
                   "1 otherwise.",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(merge: argparse.ArgumentParser) -> None:
    merge.add_argument("shards", nargs="+", type=Path, metavar="DIR",
                       help="a shard's reports folder (or its conformance.json); one per shard")
    merge.add_argument("--reports-dir", default="reports", metavar="DIR",
                       help="where the merged reports go (default: %(default)s)")
    add_formats(merge, "all four")
    add_wide(merge)


def run(args: argparse.Namespace) -> int:
    from ..report import DEFAULT_FORMATS, load_report_json, render_terminal, write_reports
    from ..report.shards import ShardReport, merge_shards

    formats = report_formats(args.formats, DEFAULT_FORMATS)
    paths = [p / "conformance.json" if p.is_dir() else p for p in args.shards]
    report = merge_shards([ShardReport(path, load_report_json(path)) for path in paths])
    console = stdout_console()
    render_terminal(report, console, wide=args.wide, details_in=details_in(args.reports_dir, formats))
    print_written(console, write_reports(report, args.reports_dir, formats, titles=check_titles()))
    return EXIT_OK if report.ok else EXIT_FAILED


COMMANDS = {"merge": run}
