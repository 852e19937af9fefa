"""``rlm-conformance record``: run scenarios with recording on and write their cassettes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..run.scenario_run import PROG, configure_logging
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    add_formats,
    add_selection,
    add_shard,
    add_snapshots,
    add_target,
    add_wide,
    adk_version,
    check_titles,
    details_in,
    load_selected,
    print_written,
    report_formats,
    sharded,
    stdout_console,
    target_choice,
)
from .run import preflight, refuse_remote_snapshot_update, run_all, workers
from .settings import run_options


PARSER: dict[str, Any] = {
    "name": "record",
    "help": "run scenarios in record mode and write their cassettes",
    "description": "Run scenarios with recording on (scripted endpoint by default) and "
                   "write their cassettes and reports. Checks are shown but do not "
                   "decide the exit code: 0 when every cassette was written, 1 otherwise. "
                   "Nothing is saved for a scenario whose script does not fit the target "
                   "(a script key that names no agent, an HTTP error the script does not "
                   "declare, a scripted answer never asked for). Gate on "
                   f"`{PROG} run` (replay) afterwards.",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(record: argparse.ArgumentParser) -> None:
    add_selection(record)
    add_shard(record)
    add_target(record, modes=("scripted", "live"), default_mode="scripted")
    record.add_argument("--allow-script-misfit", action="store_true",
                        help="save the cassette even when the target's model calls do not follow the scenario's "
                             "script (for a deliberately broken target such as legacy, whose misfit is the point); "
                             "by default such a recording is refused and nothing is saved")
    record.add_argument("--reports-dir", default="reports", metavar="DIR",
                        help="where reports go (default: %(default)s)")
    add_snapshots(record)
    add_formats(record, "all four")
    add_wide(record)


def run(args: argparse.Namespace) -> int:
    from ..recording.layout import cassette_dir
    from ..report import DEFAULT_FORMATS, render_terminal, write_reports
    from ..report.summary import error_lines

    formats = report_formats(args.formats, DEFAULT_FORMATS)
    configure_logging(args.log_level)
    scenarios, shard = sharded(args, load_selected(args.scenarios_dir, args.scenario, args.substring))
    with workers(scenarios, args.jobs, args.log_level) as pool:
        options = run_options(args, record=True)
        refuse_remote_snapshot_update(args, options)
        preflight(scenarios, options)
        paths = {s.name: cassette_dir(options.cassette_dir, target_choice(s, options).name, options.backend)
                 / f"{s.name}.yaml" for s in scenarios}
        before = {name: _stamp(path) for name, path in paths.items()}
        titles = check_titles()
        report = run_all(scenarios, options, progress=not args.no_progress, pool=pool, extra={
            "command": "record", "target": args.target or "(each scenario's own)", "llm_mode": args.llm_mode,
            "session_service": args.session_service, "backend": args.backend, "executor": args.executor,
            "scenarios_dir": ", ".join(args.scenarios_dir), "adk": adk_version(), **shard},
            snapshots=(Path(args.snapshot_dir), args.snapshot_update), reports=(formats, titles))
    console = stdout_console()
    render_terminal(report, console, wide=args.wide, details_in=details_in(args.reports_dir, formats))
    print_written(console, write_reports(report, args.reports_dir, formats, titles=titles))
    console.print()
    missing = 0
    for result in report.results:
        path = paths[result.scenario]
        stamp = _stamp(path)
        written = stamp is not None and stamp != before[result.scenario]
        crashed = "; ".join(error_lines(result))  # a turn that raised (no key, DNS ...) says why, here
        if written and result.error is None and not crashed:
            console.print(f"cassette written: {path}", markup=False)
            continue
        missing += 1
        if written:  # something was saved, but from a run that did not finish: do not trust it
            console.print(f"cassette written but the run failed, re-record it: {path} — {crashed}",
                          markup=False, style="bold red")
        else:
            reason = crashed or "the run made no model call to record"
            console.print(f"cassette NOT written: {path} — {reason}", markup=False, style="bold red")
    if not missing:
        console.print(f"Replay them with: {_replay_command(args)}", markup=False)
    return EXIT_OK if not missing else EXIT_FAILED


def _replay_command(args: argparse.Namespace) -> str:
    """``run`` with the flags this ``record`` was given on the command line (the pyproject table's are implied)."""
    import shlex

    words = [PROG, "run"]
    given = (("--scenarios-dir", args.scenarios_dir[0] if len(args.scenarios_dir) == 1 else None, "scenarios"),
             ("--target", args.target, None), ("--profile", args.profile, None),
             ("--cassette-dir", args.cassette_dir, "cassettes"), ("--snapshot-dir", args.snapshot_dir, "snapshots"),
             ("--backend", args.backend, "local"))
    for flag, value, default in given:
        if value is not None and str(value) != str(default) and flag not in args.configured_by:
            words += [flag, str(value)]
    return shlex.join(words)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


COMMANDS = {"record": run}
