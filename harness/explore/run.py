"""One exploration end to end, the call the CLI's ``explore`` and the pytest plugin's ``--rlm-explore N`` share:
the target read, the search, each finding written as a scenario file.

``ExploreSettings`` holds what both surfaces configure (the CLI from its flags and ``[tool.rlm-conformance]``,
the plugin from its resolved options); ``explore`` returns the engine's ``Report`` with every finding's file.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HarnessError

if TYPE_CHECKING:
    from ..targets.profile import TargetProfile
    from .engine import Report

PROG = "rlm-conformance"
DEFAULT_DB = Path(".rlm-conformance") / "explore-db"
DEFAULT_MAX_EXAMPLES = 100


@dataclass(frozen=True)
class ExploreSettings:
    out_dir: Path  # where minimal failing scenarios are written
    target: str | None = None  # None: the profile's target, else reference
    profile_path: Path | None = None
    session_service: str = "delta"
    executor: str = "warm"
    max_examples: int | None = DEFAULT_MAX_EXAMPLES  # None: unbounded (with a time budget)
    time_s: float | None = None
    seed: int = 0
    checks: tuple[str, ...] = ()  # only these make findings; empty: every registered check
    behaviours: Path | None = None
    shrink_runs: int = 40
    database: Path | None = DEFAULT_DB

    def command_line(self) -> str:
        """The ``rlm-conformance explore`` command that searches the same way (written into each finding)."""
        words = [PROG, "explore", "--seed", str(self.seed)]
        for flag, value in (("--target", self.target), ("--profile", self.profile_path),
                            ("--max-examples", self.max_examples), ("--time", self.time_s)):
            if value is not None:
                words += [flag, str(value)]
        for name in self.checks:
            words += ["--check", name]
        return shlex.join(words)


def explore(settings: ExploreSettings, *, profile: TargetProfile | None = None,
            on_progress: Callable[[Report], None] | None = None) -> Report:
    """Search ``settings.target``, write each finding into ``settings.out_dir``; ``profile``: the profile already
    loaded from ``settings.profile_path`` (loaded here when None)."""
    from ..checks import registered_checks
    from ..llm.modes import LlmMode
    from ..run_options import RunOptions
    from ..targets.profile import load_profile, target_name
    from ..targets.registry import resolve_target
    from .engine import Budget, Explorer
    from .findings import HARNESS_BUG
    from .library import load_library
    from .target_model import describe_target
    from .writer import write_finding

    known = registered_checks()
    unknown = [name for name in settings.checks if name not in known]
    if unknown:
        raise HarnessError(f"--check {', '.join(unknown)}: no such check. Known checks: {', '.join(known)}.")
    checks = frozenset(settings.checks or known)
    if profile is None and settings.profile_path is not None:
        profile = load_profile(settings.profile_path)
    spec = settings.target or (profile.target if profile is not None else None) or "reference"
    resolve_target(spec)  # a target that does not import: a usage error naming it
    library = load_library(settings.behaviours)
    model = describe_target(spec, profile)
    options = RunOptions(target=spec, llm_mode=LlmMode.SCRIPTED, session_service=settings.session_service,
                         profile=model.profile if profile is not None else None,
                         profile_path=settings.profile_path, executor=settings.executor,
                         probe_session_service=False)
    budget = Budget(max_examples=settings.max_examples, time_s=settings.time_s, shrink_runs=settings.shrink_runs)
    explorer = Explorer(model, library, options, checks=checks, seed=settings.seed, budget=budget,
                        database=settings.database, on_progress=on_progress)
    report = explorer.explore()
    name = target_name(spec, profile)
    for finding in report.findings:
        write_finding(finding, model, library, options, seed=settings.seed, out_dir=settings.out_dir,
                      profile_path=settings.profile_path, target_name=name,
                      explore_command=settings.command_line(), checks=checks | {HARNESS_BUG},
                      used=explorer.verdict(finding.plan).used_steps)
    return report
