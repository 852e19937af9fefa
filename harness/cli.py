"""``rlm-conformance``: run scenarios, record cassettes, list scenarios, re-render reports, explain checks.

Thin by design: it parses arguments, calls ``run_scenario`` and the reporters,
and turns a user error (``HarnessError``: a bad flag, scenario file, target,
missing key ...) into one paragraph on stderr and exit code 2 — never a
traceback. Exit codes:

* 0 — every scenario ran and every check passed (``record``: every cassette was written);
* 1 — a check failed, or a scenario could not run (a missing cassette, a target
  that crashed): a scenario that cannot be judged is a failed scenario. Whatever
  a target, its factory, its session service or the harness raises while a
  scenario runs is that scenario's ``error`` naming the part (harness/failures.py),
  and every report is still written;
* 2 — the command itself cannot start: bad arguments, scenario files, target,
  session service, profile, report format or report file.

``audit`` exits 1 when a gating check failed on a stored session (``--fail-on``), 0 otherwise.
``doctor`` exits 1 when a finding would break a recording (an error), 0 otherwise (warnings allowed).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import os
import platform
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .baseline import add_arguments as add_baseline_arguments
from .errors import HarnessError
from .scenario_run import PROG, configure_logging
from .targets.service_choice import SERVICE_CHOICE

if TYPE_CHECKING:
    from rich.console import Console

    from .parallel import WorkerPool
    from .result import RunReport, ScenarioResult
    from .runner import RunOptions
    from .scenario.models import Scenario
    from .targets.choice import TargetChoice

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
LLM_MODES = ("replay", "scripted", "live")
LOG_LEVELS = ("debug", "info", "warning", "error")


# --- arguments -------------------------------------------------------------------------------------------------


def _formats(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _jobs(value: str) -> int:
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of worker processes: use -j 1 or more")
    return jobs


def _add_selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", action="append", metavar="NAME", default=[],
                        help="run only this scenario (repeat the flag for several)")
    parser.add_argument("-k", metavar="SUBSTRING", dest="substring",
                        help="run only scenarios whose name or a tag contains SUBSTRING (case-insensitive)")
    parser.add_argument("--scenarios-dir", metavar="DIR",
                        help="folder of scenario YAML files (default: scenarios in [tool.rlm-conformance], else "
                             "scenarios)")


def _add_target(parser: argparse.ArgumentParser, *, modes: Sequence[str], default_mode: str) -> None:
    parser.add_argument("--target", metavar="TARGET",
                        help="agent under test: reference, legacy, or module:attr naming an ADK App, a root agent "
                             "or a factory(env) (default: each scenario's own target, normally reference)")
    parser.add_argument("--session-service", metavar="SERVICE",
                        help=SERVICE_CHOICE)
    parser.add_argument("--llm-mode", choices=modes,
                        help=f"where model answers come from (default: llm-mode in [tool.rlm-conformance], else "
                             f"{default_mode})")
    parser.add_argument("--profile", type=Path, metavar="PATH",
                        help="target profile YAML naming your agent's roles and keys (for --target module:attr)")
    parser.add_argument("--cassette-dir", metavar="DIR",
                        help="cassette folder; targets other than 'reference' use a sub-folder (default: cassettes "
                             "in [tool.rlm-conformance], else cassettes)")
    parser.add_argument("--backend", choices=("local", "databricks"),
                        help="where the reference agent's tables, volume and Job_B live: local (DuckDB, a folder, a "
                             "subprocess; the default) or databricks (replayed from <cassette-dir>/databricks/; "
                             "recorded against a local workspace fake, or a real one with --databricks-live). "
                             "See docs/databricks.md")
    parser.add_argument("--databricks-live", action="store_true", default=None,
                        help="with --backend databricks: talk to the real workspace named by DATABRICKS_HOST, "
                             "DATABRICKS_TOKEN, DATABRICKS_WAREHOUSE_ID, RLM_DATABRICKS_* instead of the local fake "
                             "(implied by --llm-mode live)")
    parser.add_argument("--executor", choices=("warm", "one-shot"), default="warm",
                        help="local backend: run a session's Job_B blocks in one warm process that keeps the REPL "
                             "namespace in memory (the default), or each block in a one-shot process that gets it "
                             "from the snapshot alone, as every Databricks job run does")
    parser.add_argument("--allow-drift", action="store_true",
                        help="replay: accept model calls whose request differs from the recorded one (by default "
                             "a stale cassette is an error naming the difference and the command to re-record)")
    parser.add_argument("--require-confinement", action="store_true",
                        help="the executor must confine the code it runs: where the machine cannot give a protection "
                             "(Landlock, TCP rules, a process cap), the run fails instead of warning once "
                             "(docs/executor-confinement.md)")
    parser.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                        help="run N scenarios at a time, each in a worker process of its own (default: "
                             "$RLM_CONFORMANCE_JOBS, else the machine's cores, os.cpu_count()); -j 1 runs them one by "
                             "one in this process. Reports, snapshots and exit code are the same for every N: "
                             "results are listed in scenario order")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (it is off anyway without a TTY)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="error",
                        help="show log records of the target and libraries from this level on (default: %(default)s; "
                             "scenarios inject faults on purpose, so warnings are expected)")


def _add_snapshots(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snapshot-dir", metavar="DIR",
                        help="snapshots the normalized traces are compared with, as pytest does; targets other than "
                             "'reference' use a sub-folder (default: snapshots in [tool.rlm-conformance], else "
                             "snapshots)")
    parser.add_argument("--snapshot-update", action="store_true",
                        help="write the snapshots of the scenarios run instead of failing on a difference (as "
                             "pytest --snapshot-update does); review the diff before committing")


def _add_formats(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--format", action="append", type=_formats, metavar="FORMAT[,FORMAT]", dest="formats",
                        help=f"report formats to write: junit, markdown, html, json (repeatable; default: {default})")


def _add_wide(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wide", action="store_true",
                        help="print the scenario x check matrix (one column per check, as wide as it needs) "
                             "instead of one line per scenario")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Conformance suite for Recursive-Language-Model agents on Google ADK and Databricks.",
        epilog="Exit codes: 0 all passed; 1 a check failed or a scenario could not run; 2 usage or input error. "
               f"Start with: {PROG} run (replays cassettes against the reference agent, offline).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_tool_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run scenarios and write reports",
                              description="Run scenarios against a target, print a summary (one line per "
                                          "scenario, then each failure with its evidence) and write reports. "
                                          "Exit 0 when every check passed, 1 otherwise.")
    _add_selection(run)
    _add_target(run, modes=LLM_MODES, default_mode="replay")
    run.add_argument("--reports-dir", default="reports", metavar="DIR", help="where reports go (default: %(default)s)")
    _add_snapshots(run)
    _add_formats(run, "all four")
    _add_wide(run)
    add_baseline_arguments(run, what="run")

    record = commands.add_parser("record", help="run scenarios in record mode and write their cassettes",
                                 description="Run scenarios with recording on (scripted endpoint by default) and "
                                             "write their cassettes and reports. Checks are shown but do not "
                                             "decide the exit code: 0 when every cassette was written, 1 otherwise. "
                                             "Nothing is saved for a scenario whose script does not fit the target "
                                             "(a script key that names no agent, an HTTP error the script does not "
                                             "declare, a scripted answer never asked for). Gate on "
                                             f"`{PROG} run` (replay) afterwards.")
    _add_selection(record)
    _add_target(record, modes=("scripted", "live"), default_mode="scripted")
    record.add_argument("--allow-script-misfit", action="store_true",
                        help="save the cassette even when the target's model calls do not follow the scenario's "
                             "script (for a deliberately broken target such as legacy, whose misfit is the point); "
                             "by default such a recording is refused and nothing is saved")
    record.add_argument("--reports-dir", default="reports", metavar="DIR",
                        help="where reports go (default: %(default)s)")
    _add_snapshots(record)
    _add_formats(record, "all four")
    _add_wide(record)

    export = commands.add_parser(
        "export", help="write scenarios in another format (an ADK eval set)",
        description="`export evalset --out FILE`: run the selected scenarios (all of the configured folder by "
                    "default) once in scripted mode and write an ADK eval set of what they did — user turns, tool "
                    "trajectory with authors, final responses, initial and final session state — that ADK's own "
                    "loader reads and `adk eval` runs. Exit 0 when every scenario was exported, 1 when some could "
                    "not be, 2 on bad arguments. See docs/import.md.")
    export.add_argument("kind", choices=("evalset",), metavar="KIND", help="evalset")
    export.add_argument("--out", type=Path, required=True, metavar="FILE",
                        help="the eval set file to write (e.g. tests/eval/conformance.evalset.json)")
    _add_selection(export)
    _add_target(export, modes=("scripted",), default_mode="scripted")

    listing = commands.add_parser("list", help="list scenarios: names, descriptions, tags")
    listing.add_argument("--scenarios-dir", metavar="DIR",
                         help="folder of scenario YAML files (default: scenarios in [tool.rlm-conformance], else "
                              "scenarios)")
    listing.add_argument("-k", metavar="SUBSTRING", dest="substring", help="only names or tags containing SUBSTRING")

    report = commands.add_parser("report", help="re-render reports from a conformance.json",
                                 description="Re-render reports from the JSON a run wrote, without running "
                                             "anything. Exit 0 when that run passed, 1 when it did not.")
    report.add_argument("--from", dest="source", type=Path, default=Path("reports/conformance.json"), metavar="PATH",
                        help="the JSON report to read (default: %(default)s)")
    report.add_argument("--reports-dir", metavar="DIR", help="where to write (default: the folder of --from)")
    _add_formats(report, "junit, markdown, html")
    _add_wide(report)

    explain = commands.add_parser("explain", help="explain a check: what it verifies and why",
                                  description="Print a check's title, why it matters and the Definition-of-Done "
                                              "item it verifies; without CHECK, list every check.")
    explain.add_argument("check", nargs="?", metavar="CHECK", help="check name, e.g. summary_persisted")

    init = commands.add_parser(
        "init", help="draft a profile, a smoke scenario and [tool.rlm-conformance] for your agent",
        description="Import --target, walk its agent tree and write rlm-profile.yaml (what could be inferred, "
                    "each line saying why; TODO for the rest), scenarios/smoke.yaml (green in scripted mode on a "
                    "correct agent) and a [tool.rlm-conformance] table in pyproject.toml. Existing files are never "
                    "overwritten without --force.")
    init.add_argument("--target", metavar="MODULE:ATTR",
                      help="your agent: an ADK App, a root agent, or a zero-argument factory of either")
    init.add_argument("--dir", default=".", metavar="DIR", help="where to write (default: the current folder)")
    init.add_argument("--force", action="store_true",
                      help="overwrite rlm-profile.yaml and scenarios/smoke.yaml, and replace the "
                           "[tool.rlm-conformance] table (the rest of pyproject.toml is kept)")
    init.add_argument("--schema", action="store_true",
                      help="print the JSON Schema of profile files instead (python -m harness.targets.profile_schema "
                           "writes or checks it)")

    doctor = commands.add_parser(
        "doctor", help="check the setup before recording; --databricks checks the workspace",
        description="Check what a recording needs and say what to fix. Without --databricks: the local install "
                    "and the project in the working folder ([tool.rlm-conformance], profile, scenarios, targets, "
                    "cassettes). "
                    "With --databricks: the workspace of DATABRICKS_HOST / DATABRICKS_TOKEN (or "
                    "DATABRICKS_CONFIG_PROFILE) and the backend's RLM_DATABRICKS_* settings — identity, warehouse, "
                    "catalog, schema, tables, volume, privileges, Job_B compute and payload, the llm_query secret — "
                    "read-only unless --write-probe. Exit 0 when nothing would break a recording (warnings "
                    "allowed), 1 when something would, 2 on bad arguments. See docs/databricks.md.")
    doctor.add_argument("--databricks", action="store_true", help="check the Databricks workspace and settings")
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON instead of a table")
    doctor.add_argument("--write-probe", action="store_true",
                        help="with --databricks: also upload a small file under <volume root>/_rlm/ and delete it")
    _add_databricks_settings(doctor)

    from .audit.command import add_audit_parser
    from .explore.command import add_explore_parser
    from .importers.command import add_import_parser

    add_audit_parser(commands)
    add_import_parser(commands)
    add_explore_parser(commands)

    differential = commands.add_parser(
        "differential", add_help=False,
        help="run the scenarios on several session services and compare what each persisted "
             "(arguments: see `rlm-conformance differential --help`)")
    differential.add_argument("arguments", nargs=argparse.REMAINDER)
    return parser


def _add_databricks_settings(parser: argparse.ArgumentParser) -> None:
    """The backend's ``--databricks-*`` flags, when databricks-sdk is installed (the module that declares them
    imports it); without it ``doctor --databricks`` says which extra to install."""
    from .extras import databricks_installed

    if databricks_installed():
        from .doctor.settings_flags import add_databricks_flags

        add_databricks_flags(parser)


# --- helpers -----------------------------------------------------------------------------------------------------


def _tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rlm-conformance")
    except PackageNotFoundError:
        return "0+unknown"


def _stdout_console() -> Console:
    from rich.console import Console

    # Without a terminal rich assumes 80 columns; a CI log is wider. (The run summary fits any width; list,
    # explain and doctor print tables.)
    wide = not sys.stdout.isatty() and not os.environ.get("COLUMNS")
    return Console(width=160 if wide else None, highlight=False)


def _titles() -> dict[str, str]:
    from .checks import registered_checks

    return {**{name: spec.title for name, spec in registered_checks().items()},
            "cassette": "The cassette is this scenario's and replays exactly",
            "snapshot": "The normalized trace equals its snapshot"}


def _select(scenarios: list[Scenario], names: Sequence[str], substring: str | None, where: str) -> list[Scenario]:
    known = {s.name: s for s in scenarios}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise HarnessError(f"--scenario {', '.join(unknown)}: no such scenario in {where}. Known scenarios: "
                           f"{', '.join(known) or '(none)'}.")
    selected = [known[n] for n in dict.fromkeys(names)] if names else list(scenarios)
    if substring:
        needle = substring.lower()
        selected = [s for s in selected if needle in s.name.lower() or any(needle in t.lower() for t in s.tags)]
    if not selected:
        what = f" matching -k {substring!r}" if substring else ""
        raise HarnessError(f"no scenario{what} in {where}. Run `{PROG} list --scenarios-dir {where}` to see them.")
    return selected


def _load(directories: Sequence[str], names: Sequence[str], substring: str | None) -> list[Scenario]:
    from .scenario.loader import load_scenarios

    return _select(load_scenarios(directories), names, substring, ", ".join(directories))


def _settle(args: argparse.Namespace) -> None:
    """Fill every setting the command line left out from ``[tool.rlm-conformance]`` (harness/project_config.py),
    else the built-in default. ``scenarios_dir`` becomes a list (the table may name several)."""
    from .project_config import load_project_config

    args.configured_by = {}  # flag -> where its value came from, when that is the pyproject table
    if args.command not in ("run", "record", "list", "export", "explore"):
        return
    project = load_project_config()

    def fill(name: str, value: object, default: object) -> None:
        if hasattr(args, name) and getattr(args, name) is None:
            setattr(args, name, value if value is not None else default)
            if value is not None:
                args.configured_by["--" + name.replace("_", "-")] = project.origin(name)

    if args.scenarios_dir is None and project.scenarios:
        args.configured_by["--scenarios-dir"] = project.origin("scenarios")
    args.scenarios_dir = ([args.scenarios_dir] if args.scenarios_dir is not None
                          else [str(p) for p in project.scenarios] if project.scenarios else ["scenarios"])
    fill("target", project.target, None)
    fill("session_service", project.session_service, "delta")
    fill("profile", project.profile, None)
    fill("cassette_dir", project.cassettes, "cassettes")
    fill("snapshot_dir", project.snapshots, "snapshots")
    fill("backend", project.backend, "local")
    if args.command == "export":  # what it exports is what the script makes the agent do
        args.llm_mode = "scripted"
    elif args.command == "record":  # recording needs a model: a configured replay means "the scripted one"
        fill("llm_mode", project.llm_mode if project.llm_mode != "replay" else None, "scripted")
    else:
        fill("llm_mode", project.llm_mode, "replay")


def _options(args: argparse.Namespace, *, record: bool) -> RunOptions:
    from .llm.modes import LlmMode
    from .run_options import RunOptions
    from .targets.profile import load_profile

    profile = load_profile(args.profile) if args.profile is not None else None
    return RunOptions(target=args.target, llm_mode=LlmMode(args.llm_mode), record=record,
                      cassette_dir=Path(args.cassette_dir), session_service=args.session_service, profile=profile,
                      profile_path=args.profile, profile_is_default="--profile" in getattr(args, "configured_by", {}),
                      backend=args.backend, databricks_live=args.databricks_live, executor=args.executor,
                      allow_drift=args.allow_drift, require_confinement=args.require_confinement,
                      allow_script_misfit=getattr(args, "allow_script_misfit", False))


def _choice(scenario: Scenario, options: RunOptions) -> TargetChoice:
    """The target the scenario runs against (harness/targets/choice.py): the same decision the runner makes."""
    from .targets.choice import choose_target

    return choose_target(scenario, target=options.target, profile=options.profile, profile_path=options.profile_path,
                         profile_is_default=options.profile_is_default)


def _preflight(scenarios: list[Scenario], options: RunOptions) -> None:
    """Fail before running anything on what would fail every scenario the same way: exit 2, not 1 per scenario."""
    from .checks import registered_checks
    from .llm.modes import endpoint_for
    from .targets.registry import resolve_target
    from .targets.session_services import resolve_session_service

    choices = [_choice(s, options) for s in scenarios]  # a scenario's profile file is read here: exit 2 if bad
    for target in dict.fromkeys(c.spec for c in choices):
        resolve_target(target)  # imports a module:attr target; raises TargetError naming it
    if options.session_service != "delta-databricks":  # the runner maps that one to --backend databricks
        resolve_session_service(options.session_service)
    if options.backend == "databricks" or options.session_service == "delta-databricks":  # the legacy target, or a real workspace without its settings: exit 2
        from .extras import require_databricks

        require_databricks(f"--backend {options.backend}" if options.backend == "databricks"
                           else "--session-service delta-databricks")
        from .targets.databricks import preflight as databricks_preflight

        databricks_preflight([c.spec for c in choices], options)
    known = registered_checks()
    for scenario in scenarios:
        selection = scenario.expect.checks
        unknown = [n for n in [*(selection.only or ()), *selection.skip] if n not in known]
        if unknown:
            raise HarnessError(f"scenario {scenario.name!r}: expect.checks names unknown check(s) "
                               f"{', '.join(map(repr, unknown))}. Known checks: {', '.join(known)}.")
    endpoint_for(options.llm_mode, model=options.model, scripted_base_url="http://127.0.0.1:0")


@contextlib.contextmanager
def _workers(scenarios: list[Scenario], jobs: int | None, log_level: str) -> Iterator[WorkerPool | None]:
    """The run's worker processes (None: ``-j 1``, in-process), started now, before the parent reads profiles and
    runs its preflight, so their ADK imports overlap with it; they leave when the block ends."""
    from .parallel import WorkerPool, default_jobs

    count = min(jobs or default_jobs(), len(scenarios))
    if count <= 1:
        yield None
        return
    with WorkerPool(count, log_level=log_level) as pool:
        yield pool


def _run_all(scenarios: list[Scenario], options: RunOptions, *, progress: bool, pool: WorkerPool | None,
             extra: dict[str, str], snapshots: tuple[Path, bool] | None = None,
             reports: tuple[Sequence[str], dict[str, str]] = ((), {})) -> RunReport:
    """Run ``scenarios`` (in-process without a ``pool``, else in its worker processes: harness/parallel.py) and
    return the report, its results in scenario order whatever order they finished in. ``reports``: the formats
    and check titles the reports will be written with; each result's parts of them are rendered as it arrives."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from .report.write import render_pieces
    from .scenario_run import run_one
    from .result import RunReport
    from .trace_spool import TraceSpool

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
                     tool_version=_tool_version(), extra=extra, full_traces=spool.load, pieces=spool.piece)


def _crashed(scenario: Scenario, options: RunOptions, reason: str, duration_s: float) -> ScenarioResult:
    """The ``error`` result of a scenario whose worker process died (harness/parallel.py)."""
    from .failures import error_result

    return error_result(scenario, options, reason, duration_s)


def _report_formats(requested: list[list[str]] | None, default: Sequence[str]) -> list[str]:
    from .report.write import check_formats

    return check_formats([f for group in requested for f in group] if requested else list(default))


def _details_in(directory: str | Path, formats: Sequence[str]) -> str | None:
    """The report a reader of the console summary goes to for the whole evidence: HTML, else Markdown."""
    from .report.write import FORMATS

    return next((str(Path(directory) / FORMATS[name].filename) for name in ("html", "markdown") if name in formats),
                None)


def _print_written(console: Console, written: dict[str, Path]) -> None:
    if not written:
        return
    folders = {path.parent for path in written.values()}
    if len(folders) == 1:
        console.print(f"Reports written to {folders.pop()}{os.sep}: " + ", ".join(p.name for p in written.values()),
                      markup=False)
    else:
        console.print("Reports written: " + ", ".join(str(p) for p in written.values()), markup=False)


# --- commands ----------------------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from . import baseline as accepted

    configure_logging(args.log_level)
    scenarios = _load(args.scenarios_dir, args.scenario, args.substring)
    baseline = accepted.chosen(args)
    with _workers(scenarios, args.jobs, args.log_level) as pool:
        # The renderers (jinja2 and the rest, ~0.15 s) load while the workers import: before, they delayed them.
        from .report import DEFAULT_FORMATS, render_terminal, write_reports

        formats = _report_formats(args.formats, DEFAULT_FORMATS)
        options = _options(args, record=False)
        _refuse_remote_snapshot_update(args, options)
        _preflight(scenarios, options)
        titles = _titles()
        report = _run_all(scenarios, options, progress=not args.no_progress, pool=pool, extra={
            "command": "run", "target": args.target or "(each scenario's own)", "llm_mode": args.llm_mode,
            "session_service": args.session_service, "backend": args.backend, "executor": args.executor,
            "scenarios_dir": ", ".join(args.scenarios_dir)}, snapshots=(Path(args.snapshot_dir), args.snapshot_update),
            reports=(formats, titles))
    console = _stdout_console()
    render_terminal(report, console, wide=args.wide, details_in=_details_in(args.reports_dir, formats))
    written = write_reports(report, args.reports_dir, formats, titles=titles)
    _print_written(console, written)
    baseline, judgement = accepted.settle(args, baseline, accepted.run_findings(report.results),
                                          judged=[r.scenario for r in report.results])
    for line in accepted.report_lines(args, baseline, judgement):
        console.print(line, markup=False)
    return EXIT_OK if accepted.run_ok(report.results, judgement) else EXIT_FAILED


def _refuse_remote_snapshot_update(args: argparse.Namespace, options: RunOptions) -> None:
    if args.snapshot_update and options.backend != "local":
        raise HarnessError(f"--snapshot-update with --backend {options.backend}: snapshots are written by the local "
                           f"backend and compared on the others. Update them without --backend.")


def cmd_record(args: argparse.Namespace) -> int:
    from .report import DEFAULT_FORMATS, render_terminal, write_reports
    from .report.summary import error_lines
    from .runner import cassette_dir_for

    formats = _report_formats(args.formats, DEFAULT_FORMATS)
    configure_logging(args.log_level)
    scenarios = _load(args.scenarios_dir, args.scenario, args.substring)
    with _workers(scenarios, args.jobs, args.log_level) as pool:
        options = _options(args, record=True)
        _refuse_remote_snapshot_update(args, options)
        _preflight(scenarios, options)
        paths = {s.name: cassette_dir_for(options.cassette_dir, _choice(s, options).name, options.backend)
                 / f"{s.name}.yaml" for s in scenarios}
        before = {name: _stamp(path) for name, path in paths.items()}
        titles = _titles()
        report = _run_all(scenarios, options, progress=not args.no_progress, pool=pool, extra={
            "command": "record", "target": args.target or "(each scenario's own)", "llm_mode": args.llm_mode,
            "session_service": args.session_service, "backend": args.backend, "executor": args.executor,
            "scenarios_dir": ", ".join(args.scenarios_dir)}, snapshots=(Path(args.snapshot_dir), args.snapshot_update),
            reports=(formats, titles))
    console = _stdout_console()
    render_terminal(report, console, wide=args.wide, details_in=_details_in(args.reports_dir, formats))
    _print_written(console, write_reports(report, args.reports_dir, formats, titles=titles))
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


def cmd_list(args: argparse.Namespace) -> int:
    from rich.table import Table
    from rich.text import Text

    from .scenario.loader import load_scenarios

    where = ", ".join(args.scenarios_dir)
    scenarios = _select(load_scenarios(args.scenarios_dir), (), args.substring, where)
    table = Table(title=f"{len(scenarios)} scenario(s) in {where}", title_justify="left")
    table.add_column("name", no_wrap=True, style="bold")
    table.add_column("description")
    table.add_column("tags")
    table.add_column("target", no_wrap=True)
    for scenario in scenarios:
        # Text, not markup: a description says "sessions [user_1x1]", which rich would take for a style tag.
        table.add_row(Text(scenario.name), Text(scenario.description), Text(", ".join(scenario.tags)),
                      Text(scenario.target or (f"(profile {scenario.profile})" if scenario.profile else "reference")))
    _stdout_console().print(table)
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from .report import load_report_json, render_terminal, write_reports

    formats = _report_formats(args.formats, ("junit", "markdown", "html"))
    report = load_report_json(args.source)
    console = _stdout_console()
    out_dir = Path(args.reports_dir) if args.reports_dir else args.source.parent
    render_terminal(report, console, wide=args.wide, details_in=_details_in(out_dir, formats))
    _print_written(console, write_reports(report, out_dir, formats, titles=_titles()))
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_explain(args: argparse.Namespace) -> int:
    from rich.table import Table

    from .checks import registered_checks

    specs = registered_checks()
    console = _stdout_console()
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


def cmd_init(args: argparse.Namespace) -> int:
    from .init_project import init_project, summary_lines
    from .targets.profile_schema import render_json_schema

    if args.schema:
        sys.stdout.write(render_json_schema())
        return EXIT_OK
    if not args.target:
        raise HarnessError("--target is required: the module:attr naming your ADK App, root agent or zero-argument "
                           f"factory, e.g. `{PROG} init --target my_pkg.agent:app`.")
    result = init_project(args.target, Path(args.dir), force=args.force)
    print("\n".join(summary_lines(result, PROG)))
    return EXIT_OK


def cmd_audit(args: argparse.Namespace) -> int:
    from .audit.command import cmd_audit as audit

    return audit(args, _stdout_console())


def cmd_import(args: argparse.Namespace) -> int:
    from .importers.command import cmd_import as import_

    return import_(args)


def cmd_export(args: argparse.Namespace) -> int:
    from .importers.export import export_eval_set
    from .init_project import write_atomic

    configure_logging(args.log_level)
    scenarios = _load(args.scenarios_dir, args.scenario, args.substring)
    options = _options(args, record=False)
    _preflight(scenarios, options)
    console = _stdout_console()
    eval_set_id = args.out.name.removesuffix(".json").removesuffix(".evalset").removesuffix(".test")
    eval_set, refused = export_eval_set(scenarios, options, eval_set_id=eval_set_id,
                                        log=lambda name, result: console.print(f"ran {name}: {result.status}",
                                                                               markup=False, soft_wrap=True))
    if eval_set.eval_cases:
        write_atomic(args.out, eval_set.model_dump_json(indent=2, exclude_none=True) + "\n")
        console.print(f"wrote {args.out}: {len(eval_set.eval_cases)} eval case(s)", markup=False, soft_wrap=True)
    else:
        console.print(f"nothing written to {args.out}: no scenario could be exported", markup=False, soft_wrap=True)
    for refusal in refused:
        console.print(f"not exported {refusal}", markup=False, style="bold red", soft_wrap=True)
    return EXIT_FAILED if refused or not eval_set.eval_cases else EXIT_OK


def cmd_capture(args: argparse.Namespace) -> int:
    from .importers.command import cmd_capture as capture

    return capture(args)


def cmd_explore(args: argparse.Namespace) -> int:
    from .explore.command import cmd_explore as explore

    return explore(args, _stdout_console())


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import render_json, render_table, run_local_doctor

    if args.write_probe and not args.databricks:
        raise HarnessError("--write-probe checks the Databricks volume: use it with --databricks.")
    if args.databricks:
        from .extras import require_databricks

        require_databricks("doctor --databricks")
        from .doctor.databricks import run_databricks_doctor

        report = run_databricks_doctor(args=args, write_probe=args.write_probe)
    else:
        report = run_local_doctor()
    if args.json:
        sys.stdout.write(render_json(report))
    else:
        render_table(report, _stdout_console())
    return report.exit_code


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
              "name. `record` saves nothing for such a run (harness/llm/script_fit.py).",
    "snapshot": "`run` compares each scenario's normalized trace with snapshots/<scenario>.json exactly as the "
                "pytest plugin does through syrupy (same serialisation), so `run` and `pytest` give one verdict. "
                "Accept an intended change with --snapshot-update, after reviewing the diff.",
}

COMMANDS = {"run": cmd_run, "record": cmd_record, "list": cmd_list, "report": cmd_report, "explain": cmd_explain,
            "init": cmd_init, "doctor": cmd_doctor, "audit": cmd_audit, "import": cmd_import,
            "capture": cmd_capture, "export": cmd_export, "explore": cmd_explore}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["differential"]:  # its own parser: argparse cannot hand options through a sub-command
        from .contract.differential import main as differential_main

        return differential_main(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        _settle(args)
        return COMMANDS[args.command](args)
    except HarnessError as exc:
        message = str(exc).strip() or type(exc).__name__
        for flag, origin in getattr(args, "configured_by", {}).items():
            if message.startswith(flag + " "):  # the value is the pyproject's: say so, that is what to fix
                message = f"{message} (set by {origin})"
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: interrupted.", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
