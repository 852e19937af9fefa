"""``rlm-conformance explain``: what a check verifies and why."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import HarnessError
from ..run.scenario_run import PROG
from .common import EXIT_OK, stdout_console


PARSER: dict[str, Any] = {
    "name": "explain",
    "help": "explain a check: what it verifies and why",
    "description": "Print a check's title, why it matters and the Definition-of-Done "
                   "item it verifies; without CHECK, list every check.",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(explain: argparse.ArgumentParser) -> None:
    explain.add_argument("check", nargs="?", metavar="CHECK", help="check name, e.g. summary_persisted")


VERDICT_ROWS = {
    "cassette": "Replay only. The cassette must carry this scenario's identity (its name, target, and hashes of "
                "the script, inputs and profile it was recorded with) and replay exactly: every recorded call "
                "played, none missing, each with the request it was recorded for. When it does not, the row fails "
                "with what changed and the re-record command, and the scenario's other checks judge a re-run "
                "against its scripted model, so the report still names the invariant a change broke.",
    "script": "Scripted mode only. The model traffic must follow the scenario's script: every script key names an "
              "agent of the target (or sub_lm), no model call gets an HTTP error the script does not declare as a "
              "fault (the scripted endpoint answers 400 past the end of an agent's steps), and every scripted step "
              "is asked for. A failing row names the scenario file:line of each misfit; the other checks still judge "
              "the run, since an agent calling its model more or less often than scripted is often the bug they "
              "name. `record` saves nothing for such a run (harness/run/script_fit.py).",
    "snapshot": "`run` compares each scenario's normalized trace with snapshots/<scenario>.json exactly as the "
                "pytest plugin does through syrupy (same serialisation), so `run` and `pytest` give one verdict. "
                "Accept an intended change with --snapshot-update, after reviewing the diff.",
}


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ..checks import registered_checks

    specs = registered_checks()
    console = stdout_console()
    if args.check is None:
        table = Table(title=f"{len(specs)} checks", title_justify="left")
        table.add_column("check", no_wrap=True, style="bold")
        table.add_column("title")
        for name, spec in specs.items():
            table.add_row(name, spec.title)
        console.print(table)
        console.print(f"Details: {PROG} explain CHECK", markup=False)
        return EXIT_OK
    spec = specs.get(args.check)
    if spec is None and args.check in VERDICT_ROWS:
        console.print(f"{args.check}: a verdict of the harness, not a check of the trace", style="bold", markup=False)
        console.print()
        console.print(VERDICT_ROWS[args.check], markup=False)
        return EXIT_OK
    if spec is None:
        raise HarnessError(f"unknown check {args.check!r}. Known checks: {', '.join([*specs, *VERDICT_ROWS])}.")
    console.print(f"{spec.name}: {spec.title}", style="bold", markup=False)
    console.print()
    console.print(spec.why, markup=False)
    console.print()
    console.print(f"Definition of Done: {spec.dod_item or '(scenario-specific: no single DoD item)'}", markup=False)
    return EXIT_OK


COMMANDS = {"explain": run}
