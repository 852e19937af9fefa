"""``rlm-conformance run``: run scenarios, print the summary, write the reports; exit 0 when every check passed."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import platform
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError
from ..run.baseline import add_arguments as add_baseline_arguments
from ..run.scenario_run import configure_logging
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    LLM_MODES,
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
    tool_version,
)
from .settings import run_options

if TYPE_CHECKING:

    from ..result import RunReport, ScenarioResult
    from ..run.options import RunOptions
    from ..run.pool import WorkerPool
    from ..scenario.models import Scenario


PARSER: dict[str, Any] = {
    "name": "run",
    "help": "run scenarios and write reports",
    "description": "Run scenarios against a target, print a summary (one line per "
                   "scenario, then each failure with its evidence) and write reports. "
                   "Exit 0 when every check passed, 1 otherwise.",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(run: argparse.ArgumentParser) -> None:
    add_selection(run)
    add_shard(run)
    add_target(run, modes=LLM_MODES, default_mode="replay")
    run.add_argument("--reports-dir", default="reports", metavar="DIR", help="where reports go (default: %(default)s)")
    add_snapshots(run)
    add_formats(run, "all four")
    add_wide(run)
    add_baseline_arguments(run, what="run")


def run(args: argparse.Namespace) -> int:
    from ..run import baseline as accepted

    configure_logging(args.log_level)
    scenarios, shard = sharded(args, load_selected(args.scenarios_dir, args.scenario, args.substring))
    scenarios = skip_concurrent(scenarios)
    baseline = accepted.chosen(args)
    with workers(scenarios, args.jobs, args.log_level) as pool:
        # The renderers (jinja2 and the rest, ~0.15 s) load while the workers import: before, they delayed them.
        from ..report import DEFAULT_FORMATS, render_terminal, write_reports

        formats = report_formats(args.formats, DEFAULT_FORMATS)
        options = run_options(args, record=False)
        refuse_remote_snapshot_update(args, options)
        preflight(scenarios, options)
        titles = check_titles()
        report = run_all(scenarios, options, progress=not args.no_progress, pool=pool, extra={
            "command": "run", "target": args.target or "(each scenario's own)", "llm_mode": args.llm_mode,
            "session_service": args.session_service, "backend": args.backend, "executor": args.executor,
            "scenarios_dir": ", ".join(args.scenarios_dir), "adk": adk_version(), **shard},
            snapshots=(Path(args.snapshot_dir), args.snapshot_update), reports=(formats, titles))
    console = stdout_console()
    render_terminal(report, console, wide=args.wide, details_in=details_in(args.reports_dir, formats))
    written = write_reports(report, args.reports_dir, formats, titles=titles)
    print_written(console, written)
    baseline, judgement = accepted.settle(args, baseline, accepted.run_findings(report.results),
                                          judged=[r.scenario for r in report.results])
    for line in accepted.report_lines(args, baseline, judgement):
        console.print(line, markup=False)
    return EXIT_OK if accepted.run_ok(report.results, judgement) else EXIT_FAILED


def skip_concurrent(scenarios: list[Scenario]) -> list[Scenario]:
    """The scenarios but the concurrent cases, each said to be skipped and why (``crash`` runs them)."""
    from ..scenario.models import CONCURRENT_RUN_NOTE

    for scenario in scenarios:
        if scenario.concurrent is not None:
            stdout_console().print("skipped: " + CONCURRENT_RUN_NOTE.format(name=scenario.name), markup=False)
    return [s for s in scenarios if s.concurrent is None]


def refuse_remote_snapshot_update(args: argparse.Namespace, options: RunOptions) -> None:
    if args.snapshot_update and options.backend != "local":
        raise HarnessError(f"--snapshot-update with --backend {options.backend}: snapshots are written by the local "
                           f"backend and compared on the others. Update them without --backend.")


def preflight(scenarios: list[Scenario], options: RunOptions) -> None:
    """Fail before running anything on what would fail every scenario the same way: exit 2, not 1 per scenario."""
    from ..checks import registered_checks
    from ..extras import require_extra
    from ..llm.modes import endpoint_for
    from ..targets.plugins import backend as plugin_backend
    from ..targets.plugins import service_on_backend
    from ..targets.registry import resolve_target
    from ..targets.session_services import resolve_session_service

    choices = [target_choice(s, options) for s in scenarios]  # a scenario's profile file is read here: exit 2 if bad
    for target in dict.fromkeys(c.spec for c in choices):
        resolve_target(target)  # imports a module:attr target; raises TargetError naming it
    chosen = service_on_backend(options.session_service, options.backend)
    resolve_session_service(chosen.session_service)
    if chosen.backend != "local":  # a target without that backend, or a real workspace without its settings: exit 2
        backend = plugin_backend(chosen.backend)
        if backend.extra is not None:
            flag = "--" + chosen.named_by.replace("_", "-")
            require_extra(backend.extra, f"{flag} {getattr(options, chosen.named_by)}")
        backend.preflight([c.spec for c in choices], options)
    known = registered_checks()
    for scenario in scenarios:
        selection = scenario.expect.checks
        unknown = [n for n in [*(selection.only or ()), *selection.skip] if n not in known]
        if unknown:
            raise HarnessError(f"scenario {scenario.name!r}: expect.checks names unknown check(s) "
                               f"{', '.join(map(repr, unknown))}. Known checks: {', '.join(known)}.")
    endpoint_for(options.llm_mode, model=options.model, scripted_base_url="http://127.0.0.1:0")


@contextlib.contextmanager
def workers(scenarios: list[Scenario], jobs: int | None, log_level: str) -> Iterator[WorkerPool | None]:
    """The run's worker processes (None: ``-j 1``, in-process), started now, before the parent reads profiles and
    runs its preflight, so their ADK imports overlap with it; they leave when the block ends."""
    from ..run.pool import WorkerPool, default_jobs

    count = min(jobs or default_jobs(), len(scenarios))
    if count <= 1:
        yield None
        return
    with WorkerPool(count, log_level=log_level) as pool:
        yield pool


def run_all(scenarios: list[Scenario], options: RunOptions, *, progress: bool, pool: WorkerPool | None,
             extra: dict[str, str], snapshots: tuple[Path, bool] | None = None,
             reports: tuple[Sequence[str], dict[str, str]] = ((), {})) -> RunReport:
    """Run ``scenarios`` (in-process without a ``pool``, else in its worker processes: harness/run/pool.py) and
    return the report, its results in scenario order whatever order they finished in. ``reports``: the formats
    and check titles the reports will be written with; each result's parts of them are rendered as it arrives."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from ..report.write import render_pieces
    from ..result import RunReport
    from ..run.scenario_run import run_one
    from ..run.trace_spool import TraceSpool

    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    err = Console(stderr=True)
    results: list[ScenarioResult | None] = [None] * len(scenarios)
    formats, titles = reports
    # Full traces on disk, light ones in memory: flat memory however many scenarios.
    spool = TraceSpool(functools.partial(render_pieces, formats=formats, titles=titles) if formats else None)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True, disable=not progress or not err.is_terminal) as bar:
        task = bar.add_task("running", total=len(scenarios))
        if pool is None:
            for index, scenario in enumerate(scenarios):
                bar.update(task, description=scenario.name)
                results[index] = spool.keep(index, run_one(scenario, options, snapshots))
                bar.advance(task)
        else:
            bar.update(task, description=f"{pool.size} workers")
            for index, result in pool.run(scenarios, options, snapshots=snapshots,
                                          crashed=lambda s, reason, took: _crashed(s, options, reason, took)):
                results[index] = spool.keep(index, result)
                bar.update(task, description=result.scenario, advance=1)
    machine = (f"{platform.node() or 'unknown'} ({platform.system()} {platform.machine()}, "
               f"Python {platform.python_version()})")
    return RunReport(results=tuple(r for r in results if r is not None), started_at=started, machine=machine,
                     tool_version=tool_version(), extra=extra, full_traces=spool.load, pieces=spool.piece)


def _crashed(scenario: Scenario, options: RunOptions, reason: str, duration_s: float) -> ScenarioResult:
    """The ``error`` result of a scenario whose worker process died (harness/run/pool.py)."""
    from ..run.failures import error_result

    return error_result(scenario, options, reason, duration_s)


COMMANDS = {"run": run}
