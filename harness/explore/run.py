"""One exploration end to end, the call the CLI's ``explore`` and the pytest plugin's ``--rlm-explore N`` share:
the target read, the search, each finding written as a scenario file.

``ExploreSettings`` holds what both surfaces configure (the CLI from its flags and ``[tool.rlm-conformance]``,
the plugin from its resolved options); ``explore`` returns the engine's ``Report`` with every finding's file.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HarnessError
from ..project_config import DEFAULTS

if TYPE_CHECKING:
    from ..targets.profile import TargetProfile
    from .engine import Explorer, Finding, Report
    from .library import Library
    from .target_model import TargetModel

PROG = "rlm-conformance"
DEFAULT_DB = Path(".rlm-conformance") / "explore-db"
DEFAULT_OUT = Path(".rlm-conformance") / "found"
"""Where findings go by default: beside the example database, not in a folder ``run`` loads (a found scenario has
no cassette or snapshot yet: the next plain ``run`` would fail on it). Keeping one is moving it into the scenarios."""
DEFAULT_MAX_EXAMPLES = 100
SEEDED_VALUE = "explore"
"""The value explore gives a state key the target's instruction reads and no session held (an obstruction)."""
MAX_SEEDED_PASSES = 3
DEFAULT_EXAMPLE_TIMEOUT_S = 120.0
"""``--example-timeout``'s default: a generated example takes seconds (code run past the executor's 5 s timeout
among the slowest); past this one it is a hang (hang.py)."""


@dataclass(frozen=True)
class ExploreSettings:
    out_dir: Path  # where minimal failing scenarios are written
    target: str | None = None  # None: the profile's target, else reference
    profile_path: Path | None = None
    session_service: str = DEFAULTS["session_service"]
    executor: str = "warm"
    max_examples: int | None = DEFAULT_MAX_EXAMPLES  # None: unbounded (with a time budget)
    time_s: float | None = None
    seed: int = 0
    checks: tuple[str, ...] = ()  # only these make findings; empty: every registered check
    behaviours: Path | None = None
    shrink_runs: int = 40
    database: Path | None = DEFAULT_DB
    jobs: int = 1  # worker processes running examples ahead of the search (the findings do not depend on it)
    example_timeout: float | None = DEFAULT_EXAMPLE_TIMEOUT_S  # None: no limit (-j 1: every run in this process)
    seed_scenario: Path | None = None  # a scenario whose first session's state, questions and context start each one
    crash: bool = False  # every example killed at a drawn point and recovered (crash_example.py)

    def command_line(self) -> str:
        """The ``rlm-conformance explore`` command that searches the same way (written into each finding)."""
        words = [PROG, "explore", "--seed", str(self.seed)]
        profile = None if self.profile_path is None else relative(self.profile_path)
        for flag, value in (("--target", self.target), ("--profile", profile),
                            ("--max-examples", self.max_examples), ("--time", self.time_s)):
            if value is not None:
                words += [flag, str(value)]
        for name in self.checks:
            words += ["--check", name]
        if self.seed_scenario is not None:
            words += ["--seed-scenario", relative(self.seed_scenario)]
        if self.crash:
            words.append("--crash")
        return shlex.join(words)


def relative(path: Path) -> str:
    from .writer import relative as relative_to

    return relative_to(path)


def explore(settings: ExploreSettings, *, profile: TargetProfile | None = None,
            on_progress: Callable[[Report], None] | None = None) -> Report:
    """Search ``settings.target``, write each finding into ``settings.out_dir``; ``profile``: the profile already
    loaded from ``settings.profile_path`` (loaded here when None)."""
    from ..extras import require_hypothesis

    require_hypothesis("explore")  # before anything imports it: one line and exit 2, not a traceback
    from ..checks import registered_checks
    from ..llm.modes import LlmMode
    from ..run.options import RunOptions
    from ..recording.layout import DEFAULT_TARGET, target_name
    from ..targets.profile import load_profile
    from ..targets.registry import resolve_target
    from .engine import Budget, Explorer
    from .library import load_library
    from .target_model import describe_target

    from .crash_example import CRASH_FINDINGS

    known = list(CRASH_FINDINGS) if settings.crash else registered_checks()
    unknown = [name for name in settings.checks if name not in known]
    if unknown:
        raise HarnessError(f"--check {', '.join(unknown)}: no such check{' of a crash example' * settings.crash}. "
                           f"Known checks: {', '.join(known)}.")
    checks = frozenset(settings.checks or known)
    if profile is None and settings.profile_path is not None:
        profile = load_profile(settings.profile_path)
    spec = settings.target or (profile.target if profile is not None else None) or DEFAULT_TARGET
    resolve_target(spec)  # a target that does not import: a usage error naming it
    library = load_library(settings.behaviours)
    model = starting_point(describe_target(spec, profile), settings.seed_scenario)
    _delegation_text_counts(model, library, settings)
    options = RunOptions(target=spec, llm_mode=LlmMode.SCRIPTED, session_service=settings.session_service,
                         profile=model.profile if profile is not None else None,
                         profile_path=settings.profile_path, executor=settings.executor,
                         probe_session_service=False)
    budget = Budget(max_examples=settings.max_examples, time_s=settings.time_s, shrink_runs=settings.shrink_runs)
    obstructions: list[Finding] = []
    notes: list[str] = []
    for attempt in range(MAX_SEEDED_PASSES + 1):
        with Explorer(model, library, options, checks=checks, seed=settings.seed, budget=budget,
                      database=settings.database, on_progress=on_progress, jobs=settings.jobs,
                      stop_when_blocked=attempt < MAX_SEEDED_PASSES,
                      example_timeout=_example_timeout(settings), crash=settings.crash) as explorer:
            report = explorer.explore()
            _write(report, explorer, settings, name=target_name(spec, profile))
        if not report.blocked_keys:
            break
        # One bug must not mask the others: its example is written, then every session starts with the key.
        obstructions += report.findings  # the obstruction, by the checks that own it (else turns_raised)
        seeded = {key: SEEDED_VALUE for key in report.blocked_keys}
        notes.append(f"obstruction: every turn of the first {report.examples_judged} examples raised on the state "
                     f"key(s) {', '.join(seeded)} the target's instruction reads and no session held; reported once "
                     f"({', '.join(f.check for f in report.findings)}), then the search went on with "
                     f"{', '.join(f'{k}={v!r}' for k, v in seeded.items())} in the starting state (set initial_state "
                     f"in the profile, or --seed-scenario, to give it the value your app sets)")
        model = replace(model, starting_state={**model.starting_state, **seeded})
    report.findings[:0] = obstructions
    report.notes[:0] = notes
    from .writer import scenario_name

    report.judged = [scenario_name(target_name(spec, profile), check) for check in sorted(checks)]
    return report


def _example_timeout(settings: ExploreSettings) -> float | None:
    """The limit is per run: a crash example is RUNS_PER_EXAMPLE of them (crash_example.py)."""
    from .crash_example import RUNS_PER_EXAMPLE

    if settings.example_timeout is None or not settings.crash:
        return settings.example_timeout
    return settings.example_timeout * RUNS_PER_EXAMPLE


def starting_point(model: TargetModel, seed_scenario: Path | None) -> TargetModel:
    """Where generated sessions start: the profile's ``initial_state``, then the seed scenario's first session (its
    initial_state over the profile's, its turns' questions) and context."""
    state = dict(model.profile.initial_state)
    if seed_scenario is None:
        return replace(model, starting_state=state)
    from ..scenario.loader import load_scenarios

    if not seed_scenario.is_file():
        raise HarnessError(f"--seed-scenario {seed_scenario}: no such scenario file. Fix: name a scenario YAML file.")
    scenario = load_scenarios(seed_scenario)[0]
    first = scenario.sessions[0]
    return replace(model, starting_state={**state, **first.initial_state},
                   questions=tuple(turn.user for turn in first.turns), context=scenario.context)


def _delegation_text_counts(model: TargetModel, library: Library, settings: ExploreSettings) -> None:
    """Code explore hands over through delegation_key must be what the profile counts as a delegation: else every
    generated delegation would be judged a plain answer, and the search would find nothing it could name."""
    if model.delegation_key is None or model.profile.hands_over_code(library.wrap("print(1)")):
        return
    from .library import BUILTIN

    where = settings.behaviours or BUILTIN
    raise HarnessError(f"{where}: delegation_text {library.delegation_text!r} does not match the profile's "
                       f"delegation_pattern {model.profile.delegation_pattern!r}, so no generated answer would hand "
                       f"code over. Fix: set delegation_text in a behaviours file (explore --behaviours FILE; pytest "
                       f"--rlm-explore-behaviours FILE) to how your analyst writes code, or correct delegation_pattern "
                       f"in the profile.")


def _write(report: Report, explorer: Explorer, settings: ExploreSettings, *, name: str) -> None:
    """Each finding's scenario, confirmed by a run (the trimmed one first, the whole one if that no longer fails)."""
    from .findings import evidence_of, fails
    from .writer import candidates, write_finding

    pairs = [candidates(f, explorer.model, explorer.library, out_dir=settings.out_dir,
                        profile_path=settings.profile_path, target_name=name,
                        used=explorer.verdict(f.plan).used_steps) for f in report.findings]
    trimmed = explorer.judge_all([t for t, _ in pairs])
    retry = [i for i, (f, v) in enumerate(zip(report.findings, trimmed)) if not fails(f.check, v)]
    whole = dict(zip(retry, explorer.judge_all([pairs[i][1] for i in retry])))
    for i, finding in enumerate(report.findings):
        verdict = trimmed[i] if i not in whole else whole[i]
        chosen, reproduced = (pairs[i][0], True) if i not in whole else (pairs[i][1], fails(finding.check, whole[i]))
        write_finding(finding, chosen, reproduced=reproduced, seed=settings.seed, out_dir=settings.out_dir,
                      explore_command=settings.command_line(), evidence=evidence_of(finding.check, verdict))
