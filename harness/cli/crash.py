"""``rlm-conformance crash``: each scenario killed (SIGKILL) at each crash point, recovered in a fresh process, and
judged over the combined history (harness/crash/, docs/crash.md). Prints a table per scenario x point with the
failing checks, writes reports/crash.json; exit 1 on any failure, 2 on bad input.

Cost: 1 + 2 x points scenario runs per scenario, each in a process of its own: single_delegation has 9 events, so
9 points of a kind (19 runs). By default it runs the scenarios tagged ``crash`` (a project picks the few worth the
cost), else every scenario of the folder; a scenario with a ``crash:`` field runs its one declared point and recovery
(a crash case kept as a regression); one with a ``concurrent:`` field runs its runners at once, judged by their
client-observed histories (harness/crash/concurrent.py).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..crash.selection import DEFAULT_TAG, KINDS, default_selection
from ..files import write_atomic
from .common import EXIT_FAILED, EXIT_OK, add_target, load_selected, stdout_console

__all__ = ["COMMANDS", "DEFAULT_TAG", "KINDS", "PARSER", "default_selection"]

PARSER: dict[str, Any] = {
    "name": "crash",
    "help": "kill each scenario at every crash point, recover it, and judge what was lost or done twice",
    "description": "For each scenario: an uncrashed run finds the crash points (after / before each event the "
                   "session service appends, or each job run submitted to a workspace the harness keeps); at each, "
                   "the scenario runs in a child process SIGKILLed there, and a "
                   "fresh process recovers as the target profile's 'recovery' says (retry: the crashed turn's "
                   "message again; next_turn: the next message). Checks: effects_exactly_once, result_not_lost, "
                   "consume_once, recovered_outcome, session_readable_prefix, and the state checks on the recovery. "
                   "A concurrent: case runs its runners at once instead (concurrent_history, conflicts_surfaced). "
                   "Scripted model only. Cost: 1 + 2 x points runs per scenario. Exit 0 all passed, 1 a check "
                   "failed or a point could not run, 2 bad input.",
}


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--max-points needs a whole number of at least 1, not {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                        help=f"scenario names (default: those tagged {DEFAULT_TAG}, else every scenario)")
    parser.add_argument("--scenarios-dir", metavar="DIR", help="folder of scenario YAML files")
    add_target(parser, modes=("scripted",), default_mode="scripted")
    parser.add_argument("--points", choices=tuple(KINDS), default="after",
                        help="after each appended event, before each (inside the harness's wrapper of the store, "
                             "before the write), once each job run is submitted (on a workspace the harness keeps: "
                             "the databricks fake), or all (default: %(default)s)")
    parser.add_argument("--max-points", type=_positive, metavar="N",
                        help="run only the first N crash points, in the order the run passed them (a quick look; "
                             "the cost is then 1 + 2 x N runs)")
    parser.add_argument("--recovery", choices=("retry", "next_turn", "resume"),
                        help="how the target recovers (default: the target profile's 'recovery', else retry)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep every run's work folder and journal in DIR")
    parser.add_argument("--reports-dir", default="reports", metavar="DIR", help="where crash.json goes")


def crash(args: argparse.Namespace) -> int:
    from ..crash.selection import report_lines, report_row, run_crash
    from .settings import run_options

    names = list(args.scenarios)
    scenarios = load_selected(args.scenarios_dir, names, None)
    if not names:
        scenarios = default_selection(scenarios)
    options = run_options(args, record=False)
    console = stdout_console()
    reports, failed = [], False
    for scenario in scenarios:
        report = run_crash(scenario, options, points=args.points, recovery=args.recovery, jobs=args.jobs or 1,
                           keep=args.keep, max_points=args.max_points)  # -j N: N points side by side
        failed = failed or report.failed
        reports.append(report_row(report))
        for line in report_lines(report):
            console.print(line, markup=False)
    out = Path(args.reports_dir) / "crash.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps({"scenarios": reports}, indent=2).encode("utf-8"))
    console.print(f"wrote {out}", markup=False)
    return EXIT_FAILED if failed else EXIT_OK


COMMANDS = {"crash": crash}
