"""``rlm-conformance explore``: its arguments, the run, the final table. The CLI hands over after ``_settle``
(target, profile, session service and scenarios folder resolved as for ``run``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..project_config import DEFAULTS
from ..run.baseline import add_arguments as add_baseline_arguments
from ..scenario.shard import shard_arg
from .run import DEFAULT_DB, DEFAULT_EXAMPLE_TIMEOUT_S, DEFAULT_MAX_EXAMPLES, DEFAULT_OUT, PROG, ExploreSettings

if TYPE_CHECKING:
    from rich.console import Console

    from .engine import Report

EXIT_OK, EXIT_FOUND = 0, 1


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number")
    return number


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return number


def _seconds_or_off(value: str) -> float | None:
    """A number of seconds, or 0 for none (None)."""
    if value.strip() in ("0", "0.0"):
        return None
    return _seconds(value)


def add_explore_parser(commands: Any) -> None:
    explore = commands.add_parser(
        "explore", help="generate conversations from the target, find failing checks, write minimal scenarios",
        description="Generate scripted conversations from the target itself (its LlmAgents, the tools each offers, "
                    "the profile's roles, a library of code behaviours), run each through the same pipeline as "
                    "`run --llm-mode scripted`, apply every check, shrink each failing check to a minimal scenario "
                    "and write it into --out. Exit 0, or with --fail-on-find 1 when something was found; 2 on "
                    "usage errors.")
    explore.add_argument("--target", metavar="TARGET",
                         help="agent under test: reference, legacy, or module:attr (default: target in "
                              "[tool.rlm-conformance], else the profile's, else reference)")
    explore.add_argument("--profile", type=Path, metavar="PATH",
                         help="target profile YAML naming your agent's roles and keys")
    explore.add_argument("--session-service", metavar="SERVICE", help="as for run (default: delta)")
    explore.add_argument("--executor", choices=("warm", "one-shot"), default="warm", help="as for run")
    explore.add_argument("--scenarios-dir", metavar="DIR", help="the project's scenarios (explore writes "
                                                               "none there: see --out)")
    explore.add_argument("--max-examples", type=_positive, metavar="N",
                         help="generated conversations to run (default: 100, or unbounded with --time alone)")
    explore.add_argument("--time", type=_seconds, metavar="S", help="stop after S seconds, shrinking included")
    explore.add_argument("--seed", type=int, default=0, help="the seed: the same one gives the same conversations "
                                                             "and findings (default: %(default)s)")
    explore.add_argument("--out", type=Path, metavar="DIR",
                         help=f"where minimal failing scenarios are written (default: {DEFAULT_OUT.as_posix()}: not a "
                              "folder `run` loads; move a scenario into your scenarios folder to keep it)")
    explore.add_argument("--seed-scenario", type=Path, action="append", default=[], metavar="FILE",
                         help="start every generated session where this scenario's first session starts: its "
                              "initial_state (over the profile's initial_state), its questions and its context. "
                              "Repeatable: one search per seed scenario, each writing into --out/<seed file's name>/")
    explore.add_argument("--shard", type=shard_arg, metavar="I/N",
                         help="search only shard I of N of the seed scenarios (split by name, the same on every "
                              "machine; without --seed-scenario the one search is shard 1/N's). A search is not split "
                              "itself: its examples depend on what it found before")
    explore.add_argument("--crash", action="store_true",
                         help="kill each example at a drawn point (after/before an appended event) and recover it in "
                              "a fresh process; findings are the crash checks (docs/crash.md); about 4 processes per "
                              "example")
    explore.add_argument("--check", action="append", default=[], metavar="NAME",
                         help="only these checks make findings (repeatable; default: every check)")
    explore.add_argument("--behaviours", type=Path, metavar="FILE",
                         help="more code behaviours for the analyst's delegations (YAML; see "
                              "harness/explore/behaviours.yaml)")
    explore.add_argument("-j", "--jobs", type=_positive, metavar="N",
                         help="run examples in N worker processes, ahead of the search: the same seed gives the same "
                              "findings whatever N is (default: $RLM_CONFORMANCE_JOBS, else one per core)")
    explore.add_argument("--example-timeout", type=_seconds_or_off, default=DEFAULT_EXAMPLE_TIMEOUT_S, metavar="S",
                         help="an example running past S seconds is a finding, target_hung, naming where the target "
                              "was stuck (examples run in worker processes, one with -j 1); 0: no limit, and with "
                              "-j 1 every run in this process (default: %(default)g)")
    explore.add_argument("--shrink-runs", type=_positive, default=40, metavar="N",
                         help="runs spent shrinking each finding (default: %(default)s)")
    explore.add_argument("--database", type=Path, default=DEFAULT_DB, metavar="DIR",
                         help="Hypothesis' example database (default: %(default)s; gitignored)")
    explore.add_argument("--no-database", action="store_true", help="keep no example database")
    explore.add_argument("--fail-on-find", action="store_true", help="exit 1 when something was found (for CI)")
    add_baseline_arguments(explore, what="--fail-on-find")
    explore.add_argument("--no-progress", action="store_true", help="no progress bar (off anyway without a TTY)")
    explore.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="error",
                         help="log records of the target and libraries from this level on (default: %(default)s)")


def seeds_in_shard(args: argparse.Namespace) -> list[Path | None]:
    """The seed scenarios this run searches from (None: the profile's start, when no seed scenario is given): all
    of them, or ``--shard i/n``'s share. Each search costs its budget, so every seed counts the same."""
    from ..scenario.shard import in_shard

    seeds: list[Path | None] = list(dict.fromkeys(args.seed_scenario)) or [None]
    if args.shard is None:
        return seeds
    chosen = in_shard({_seed_key(seed): 1.0 for seed in seeds}, args.shard)
    return [seed for seed in seeds if _seed_key(seed) in chosen]


def _seed_key(seed: Path | None) -> str:
    return "" if seed is None else seed.as_posix()


def settings_from(args: argparse.Namespace, seed_scenario: Path | None = None) -> ExploreSettings:
    from ..run.pool import default_jobs

    max_examples = args.max_examples if args.max_examples is not None else (None if args.time else
                                                                             DEFAULT_MAX_EXAMPLES)
    out_dir = args.out if args.out is not None else DEFAULT_OUT
    if len(args.seed_scenario) > 1 and seed_scenario is not None:  # two seeds may find one check: a folder each
        out_dir = out_dir / seed_scenario.stem
    return ExploreSettings(
        out_dir=out_dir,
        target=args.target, profile_path=args.profile, session_service=args.session_service or DEFAULTS["session_service"],
        executor=args.executor, max_examples=max_examples, time_s=args.time, seed=args.seed,
        checks=tuple(args.check), behaviours=args.behaviours, shrink_runs=args.shrink_runs,
        database=None if args.no_database else args.database,
        jobs=args.jobs if args.jobs is not None else default_jobs(), seed_scenario=seed_scenario,
        example_timeout=args.example_timeout, crash=args.crash)


def cmd_explore(args: argparse.Namespace, console: Console) -> int:
    from ..run import baseline as accepted
    from ..run.scenario_run import configure_logging
    from .engine import Budget
    from .run import explore

    configure_logging(args.log_level)
    seeds = seeds_in_shard(args)
    baseline = accepted.chosen(args)  # a bad file: a usage error before the search
    if not seeds:
        console.print(f"explore --shard {args.shard.label}: no seed scenario in this shard (one search per seed "
                      f"scenario; {len(args.seed_scenario) or 'no'} given).", markup=False)
    findings: list[tuple[str, str]] = []
    judged: list[str] = []
    checks: tuple[str, ...] = tuple(args.check)
    for seed in seeds:
        settings = settings_from(args, seed)
        if len(seeds) > 1 or args.shard is not None:
            start = "the profile's start" if seed is None else str(seed)
            console.print(f"explore from {start}:", markup=False)
        budget = Budget(max_examples=settings.max_examples, time_s=settings.time_s)
        with _progress(console, enabled=not args.no_progress, budget=budget) as update:
            report = explore(settings, on_progress=update)
        render_report(report, console)
        findings += [(f.check, f.path.stem if f.path else f.check) for f in report.findings]
        judged += [name for name in report.judged if name not in judged]
    baseline, judgement = accepted.settle(args, baseline, findings, judged=judged, checks=checks or None)
    for line in accepted.report_lines(args, baseline, judgement):
        console.print(line, markup=False)
    return EXIT_FOUND if judgement.unaccepted and args.fail_on_find else EXIT_OK


def _progress(console: Console, *, enabled: bool, budget: Any) -> Any:
    import contextlib

    from rich.console import Console as RichConsole
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err = RichConsole(stderr=True)

    @contextlib.contextmanager
    def bar() -> Any:
        columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True, disable=not enabled or not err.is_terminal) as progress:
            task = progress.add_task("exploring", total=budget.max_examples)

            def update(report: Report) -> None:
                generated = report.tried - report.shrink_runs
                progress.update(task, completed=generated if budget.max_examples is None
                                else min(generated, budget.max_examples),
                                description=f"exploring: {report.tried} runs ({report.shrink_runs} shrinking)")

            yield update

    return bar()


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def render_report(report: Report, console: Console) -> None:
    from rich.table import Table

    rate = report.tried / report.elapsed_s if report.elapsed_s else 0.0
    console.print(f"explore {report.target} (seed {report.seed}): {report.tried} examples run "
                  f"({report.shrink_runs} while shrinking), {report.discarded} discarded, {report.raised_turns} "
                  f"turns raised; {report.elapsed_s:.1f}s, {rate:.2f} examples/s", markup=False)
    if report.unused_runs:
        console.print(f"  -j: {report.unused_runs} runs made ahead were not asked for", markup=False)
    for reason, count in sorted(report.discard_reasons.items()):
        console.print(f"  discarded {count}: {reason}", markup=False)
    for how, count in sorted(report.raised_reasons.items()):
        console.print(f"  turns raised {count}: {how} (judged all the same; not a finding by itself)", markup=False)
    if report.examples_raised:
        console.print(f"  {report.examples_raised} of {report.examples_judged} examples had a turn that raised "
                      f"({report.raised_turns} of {report.turns_run} turns)", markup=False)
    for note in report.notes:
        console.print(f"  note: {note}", markup=False)
    if report.obstruction:
        console.print(f"  obstruction: {report.obstruction}", markup=False)
    if not report.findings:
        console.print("Nothing found.", markup=False)
        return
    table = Table(title=f"{len(report.findings)} finding(s)", title_justify="left", width=min(console.width, 100))
    table.add_column("check", no_wrap=True, style="bold")
    table.add_column("first", justify="right", no_wrap=True)
    table.add_column("size", no_wrap=True)
    table.add_column("minimal scenario", overflow="fold")
    for finding in report.findings:
        size = f"{finding.written_turns}t {finding.written_steps}s" + ("" if finding.reproduced else " (!)")
        table.add_row(finding.check, f"{finding.after_s:.0f}s #{finding.after_examples}", size,
                      _shown(finding.path) if finding.path else "(not written)")
    console.print(table)
    if any(not f.reproduced for f in report.findings):
        console.print("(!) the written scenario did not fail the same check when run again: the failure depends on "
                      "something the scenario does not pin (timing?).", markup=False)
    console.print(f"size: turns (t) and script steps (s). Run one: {PROG} run --scenario NAME --scenarios-dir DIR "
                  "--llm-mode scripted", markup=False)
