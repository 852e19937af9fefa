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
from .run import preflight, refuse_remote_snapshot_update, run_all, skip_concurrent, workers
from .settings import run_options


PARSER: dict[str, Any] = {
    "name": "record",
    "help": "run scenarios in record mode and write their cassettes",
    "description": "Run scenarios with recording on (scripted endpoint by default) and "
                   "write their cassettes and reports. A scenario that has a cassette keeps it: the new one "
                   "waits in <cassette-dir>.new/ with a drift report until `record --accept`. Checks are shown "
                   "but do not "
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
    record.add_argument("--accept", action="store_true",
                        help="record nothing: move the selected scenarios' re-recordings, waiting in "
                             "<cassette-dir>.new/ since a record that found an old cassette, into place (one rename "
                             "each). Without it an existing cassette is never replaced: the new one waits there, "
                             "with a drift report (cassette-drift.md, .json in --reports-dir)")
    add_snapshots(record)
    add_formats(record, "all four")
    add_wide(record)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..recording.layout import cassette_dir
    from ..report import DEFAULT_FORMATS, render_terminal, write_reports
    from ..report.summary import error_lines
    from ..rerecord.pending import discard, pending_root

    formats = report_formats(args.formats, DEFAULT_FORMATS)
    configure_logging(args.log_level)
    scenarios, shard = sharded(args, load_selected(args.scenarios_dir, args.scenario, args.substring))
    scenarios = skip_concurrent(scenarios)  # run never replays one: no cassette to record
    options = run_options(args, record=True)
    root, pending = options.cassette_dir, pending_root(options.cassette_dir)
    where = {s.name: cassette_dir(Path(), target_choice(s, options).name, options.backend) / f"{s.name}.yaml"
             for s in scenarios}
    if args.accept:
        return _accept(scenarios, where, root=root, pending=pending)
    with workers(scenarios, args.jobs, args.log_level) as pool:
        refuse_remote_snapshot_update(args, options)
        preflight(scenarios, options)
        before = {name: _stamp(pending / path) for name, path in where.items()}
        titles = check_titles()
        # Into the pending folder: an old cassette is replaced only by --accept, after review (harness/rerecord/).
        report = run_all(scenarios, replace(options, cassette_dir=pending), progress=not args.no_progress, pool=pool,
                         extra={"command": "record", "target": args.target or "(each scenario's own)",
                                "llm_mode": args.llm_mode, "session_service": args.session_service,
                                "backend": args.backend, "executor": args.executor,
                                "scenarios_dir": ", ".join(args.scenarios_dir), "adk": adk_version(), **shard},
                         snapshots=(Path(args.snapshot_dir), args.snapshot_update), reports=(formats, titles))
    console = stdout_console()
    render_terminal(report, console, wide=args.wide, details_in=details_in(args.reports_dir, formats))
    print_written(console, write_reports(report, args.reports_dir, formats, titles=titles))
    console.print()
    missing, drifts = 0, []
    for result in report.results:
        new, old = pending / where[result.scenario], root / where[result.scenario]
        stamp = _stamp(new)
        written = stamp is not None and stamp != before[result.scenario]
        crashed = "; ".join(error_lines(result))  # a turn that raised (no key, DNS ...) says why, here
        if written and result.error is None and not crashed:
            drift = _settle(result.scenario, new, old, pending=pending, console=console)
            if drift is not None:
                drifts.append(drift)
            continue
        missing += 1
        if written:  # something was saved, but from a run that did not finish: not kept, so --accept cannot take it
            discard(new, root=pending)
            console.print(f"cassette recorded but the run failed, not kept (re-record it): {old} — {crashed}",
                          markup=False, style="bold red")
        else:
            reason = crashed or "the run made no model call to record"
            console.print(f"cassette NOT written: {old} — {reason}", markup=False, style="bold red")
    if drifts:
        _drift_report(args, drifts, scenarios, options, root=root, pending=pending, console=console)
    elif not missing:
        console.print(f"Replay them with: {_replay_command(args)}", markup=False)
    return EXIT_OK if not missing else EXIT_FAILED


def _settle(name: str, new: Path, old: Path, *, pending: Path, console: Any) -> Any:
    """A first recording goes into place; a re-recording that changed no call is dropped; any other waits in the
    pending folder: returned, for the drift report."""
    from ..rerecord.drift_report import cassette_changes
    from ..rerecord.pending import discard, move_into_place

    if not old.exists():
        move_into_place(new, old, root=pending)
        console.print(f"cassette written: {old}", markup=False)
        return None
    drift = cassette_changes(name, old, new)
    if not drift.changed:
        discard(new, root=pending)
        console.print(f"cassette unchanged: {old} (the same requests and answers)", markup=False)
        return None
    console.print(f"cassette re-recorded, pending review: {new} ({len(drift.calls)} model call(s) changed)",
                  markup=False)
    return drift


def _drift_report(args: argparse.Namespace, drifts: list[Any], scenarios: list[Any], options: Any, *, root: Path,
                  pending: Path, console: Any) -> None:
    from ..rerecord.drift_report import with_replays, write_drift_report

    by_name = {s.name: s for s in scenarios}
    judged = [with_replays(d, by_name[d.scenario], options, old_root=root, new_root=pending) for d in drifts]
    accept = _accept_command(args, [d.scenario for d in drifts])
    paths = write_drift_report(judged, Path(args.reports_dir), pending=str(pending), accept=accept)
    console.print(f"Drift report: {paths[0]} and {paths[1]}. Nothing was replaced: review it, then accept with: "
                  f"{accept}", markup=False)


def _accept(scenarios: list[Any], where: dict[str, Path], *, root: Path, pending: Path) -> int:
    """``record --accept``: each selected scenario's pending re-recording replaces its cassette (one rename each)."""
    from ..rerecord.pending import move_into_place

    console = stdout_console()
    accepted = 0
    for scenario in scenarios:
        new, old = pending / where[scenario.name], root / where[scenario.name]
        if new.is_file():
            move_into_place(new, old, root=pending)
            console.print(f"accepted: {old}", markup=False)
            accepted += 1
    if not accepted:
        console.print(f"nothing to accept: no re-recording of the selected scenarios waits in {pending}",
                      markup=False)
    return EXIT_OK


def _accept_command(args: argparse.Namespace, names: list[str]) -> str:
    import shlex

    words = [PROG, "record", "--accept", *[w for name in names for w in ("--scenario", name)]]
    for flag, value, default in (("--scenarios-dir", args.scenarios_dir[0] if len(args.scenarios_dir) == 1 else None,
                                  "scenarios"), ("--target", args.target, None), ("--profile", args.profile, None),
                                 ("--cassette-dir", args.cassette_dir, "cassettes"), ("--backend", args.backend, "local")):
        if value is not None and str(value) != str(default) and flag not in args.configured_by:
            words += [flag, str(value)]
    return shlex.join(words)


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
