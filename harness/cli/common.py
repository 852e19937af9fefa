"""What the verbs share: exit codes, argument definitions, the scenarios selected, the console and the reports."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HarnessError
from ..run.scenario_run import PROG
from ..targets.plugins import backends
from ..targets.service_choice import SERVICE_CHOICE

if TYPE_CHECKING:
    from rich.console import Console

    from ..run.options import RunOptions
    from ..scenario.models import Scenario
    from ..targets.choice import TargetChoice


EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
LLM_MODES = ("replay", "scripted", "live")
LOG_LEVELS = ("debug", "info", "warning", "error")


def formats_arg(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def jobs_arg(value: str) -> int:
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of worker processes: use -j 1 or more")
    return jobs


def add_selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", action="append", metavar="NAME", default=[],
                        help="run only this scenario (repeat the flag for several)")
    parser.add_argument("-k", metavar="SUBSTRING", dest="substring",
                        help="run only scenarios whose name or a tag contains SUBSTRING (case-insensitive)")
    parser.add_argument("--scenarios-dir", metavar="DIR",
                        help="folder of scenario YAML files (default: scenarios in [tool.rlm-conformance], else "
                             "scenarios)")


def add_target(parser: argparse.ArgumentParser, *, modes: Sequence[str], default_mode: str) -> None:
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
    parser.add_argument("--backend", choices=("local", *backends()),
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
    parser.add_argument("-j", "--jobs", type=jobs_arg, metavar="N",
                        help="run N scenarios at a time, each in a worker process of its own (default: "
                             "$RLM_CONFORMANCE_JOBS, else the machine's cores, os.cpu_count()); -j 1 runs them one by "
                             "one in this process. Reports, snapshots and exit code are the same for every N: "
                             "results are listed in scenario order")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (it is off anyway without a TTY)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="error",
                        help="show log records of the target and libraries from this level on (default: %(default)s; "
                             "scenarios inject faults on purpose, so warnings are expected)")


def add_shard(parser: argparse.ArgumentParser) -> None:
    from ..scenario.shard import shard_arg

    parser.add_argument("--shard", type=shard_arg, metavar="I/N",
                        help="run only shard I of N (1-based): the selection split by scenario and expected cost, "
                             "the same on every machine; the N shards together run the selection exactly once. "
                             f"Join their report folders with `{PROG} merge DIR...`")
    parser.add_argument("--shard-durations", type=Path, metavar="REPORT",
                        help="with --shard: cost each scenario by its duration_s in this conformance.json (a previous "
                             "run's) instead of the estimate from its turns, script steps and waits")


def sharded(args: argparse.Namespace, selection: list[Scenario]) -> tuple[list[Scenario], dict[str, str]]:
    """The scenarios of ``args.shard`` (all without one) and what the report records of the shard for ``merge``:
    its label, the size of the unsharded selection and where its scenarios stand in it."""
    from ..scenario.shard import durations_from, positions, shard_scenarios

    shard = getattr(args, "shard", None)
    if shard is None:
        return selection, {}
    durations = durations_from(args.shard_durations) if args.shard_durations is not None else None
    chosen = shard_scenarios(selection, shard, durations=durations)
    names = [s.name for s in selection]
    return chosen, {"shard": shard.label, "shard_selection": str(len(names)),
                    "shard_positions": positions(names, [s.name for s in chosen])}


def adk_version() -> str:
    """The installed google-adk's version, recorded in the report: ``merge`` refuses shards of two ADK lines.
    Read from the package metadata, not adk_compat: the parallel parent must not import ADK (its workers do).
    Recorded only, never branched on (tests/test_adk_compat.py names this one exemption)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("google-adk")
    except PackageNotFoundError:
        return "unknown"


def add_snapshots(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snapshot-dir", metavar="DIR",
                        help="snapshots the normalized traces are compared with, as pytest does; targets other than "
                             "'reference' use a sub-folder (default: snapshots in [tool.rlm-conformance], else "
                             "snapshots)")
    parser.add_argument("--snapshot-update", action="store_true",
                        help="write the snapshots of the scenarios run instead of failing on a difference (as "
                             "pytest --snapshot-update does); review the diff before committing")


def add_formats(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--format", action="append", type=formats_arg, metavar="FORMAT[,FORMAT]", dest="formats",
                        help=f"report formats to write: junit, markdown, html, json (repeatable; default: {default})")


def add_wide(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wide", action="store_true",
                        help="print the scenario x check matrix (one column per check, as wide as it needs) "
                             "instead of one line per scenario")


def add_backend_settings(parser: argparse.ArgumentParser) -> None:
    """The backend's ``--databricks-*`` flags, when databricks-sdk is installed (the module that declares them
    imports it); without it ``doctor --databricks`` says which extra to install."""
    from ..extras import installed

    for backend in backends().values():
        if backend.add_settings_flags is not None and (backend.extra is None or installed(backend.extra)):
            backend.add_settings_flags(parser)


def tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rlm-conformance")
    except PackageNotFoundError:
        return "0+unknown"


def stdout_console() -> Console:
    from rich.console import Console

    # Without a terminal rich assumes 80 columns; a CI log is wider. (The run summary fits any width; list,
    # explain and doctor print tables.)
    wide = not sys.stdout.isatty() and not os.environ.get("COLUMNS")
    return Console(width=160 if wide else None, highlight=False)


def check_titles() -> dict[str, str]:
    from ..checks import registered_checks

    return {**{name: spec.title for name, spec in registered_checks().items()},
            "cassette": "The cassette is this scenario's and replays exactly",
            "snapshot": "The normalized trace equals its snapshot"}


def select(scenarios: list[Scenario], names: Sequence[str], substring: str | None, where: str) -> list[Scenario]:
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


def load_selected(directories: Sequence[str], names: Sequence[str], substring: str | None) -> list[Scenario]:
    from ..scenario.loader import load_scenarios

    return select(load_scenarios(directories), names, substring, ", ".join(directories))


def target_choice(scenario: Scenario, options: RunOptions) -> TargetChoice:
    """The target the scenario runs against (harness/targets/choice.py): the same decision the runner makes."""
    from ..targets.choice import choose_target

    return choose_target(scenario, target=options.target, profile=options.profile, profile_path=options.profile_path,
                         profile_is_default=options.profile_is_default)


def report_formats(requested: list[list[str]] | None, default: Sequence[str]) -> list[str]:
    from ..report.write import check_formats

    return check_formats([f for group in requested for f in group] if requested else list(default))


def details_in(directory: str | Path, formats: Sequence[str]) -> str | None:
    """The report a reader of the console summary goes to for the whole evidence: HTML, else Markdown."""
    from ..report.write import FORMATS

    return next((str(Path(directory) / FORMATS[name].filename) for name in ("html", "markdown") if name in formats),
                None)


def print_written(console: Console, written: dict[str, Path]) -> None:
    if not written:
        return
    folders = {path.parent for path in written.values()}
    if len(folders) == 1:
        console.print(f"Reports written to {folders.pop()}{os.sep}: " + ", ".join(p.name for p in written.values()),
                      markup=False)
    else:
        console.print("Reports written: " + ", ".join(str(p) for p in written.values()), markup=False)
