"""The plugin's one session object, kept in ``config.stash[SESSION]``: every hook hands off to it.

It owns the parsed options, the scenarios (loaded once per process), and the result of each item's run
(keyed by node id, so a report can read them all after the session).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..llm.modes import LlmMode
from ..snapshot.extension import SNAPSHOT_DIR, SNAPSHOTS_DIRNAME, snapshot_dir
from .options import PluginOptions

if TYPE_CHECKING:
    from ..result import ScenarioResult
    from ..runner import RunOptions
    from ..scenario.models import Scenario
    from ..targets.profile import TargetProfile

SESSION = pytest.StashKey["ConformanceSession"]()
"""On ``config.stash``: the session object."""
SCENARIO = pytest.StashKey["Scenario"]()
"""On a YAML-collected item: its scenario (test functions get theirs through parametrization)."""

SCENARIO_SUFFIXES = (".yaml", ".yml")


@dataclass
class ConformanceSession:
    options: PluginOptions
    profile: TargetProfile | None = None
    results: dict[str, ScenarioResult] = field(default_factory=dict)
    _scenarios: list[Scenario] | None = None

    @classmethod
    def start(cls, config: pytest.Config) -> ConformanceSession:
        options = PluginOptions.from_config(config)
        if options.backend != "local" and getattr(config.option, "update_snapshots", False):
            raise pytest.UsageError(
                f"--snapshot-update with --backend {options.backend}: snapshots are written by the local backend, "
                f"and the {options.backend} backend is compared with them (its declared divergences would overwrite "
                f"them). Update them without --backend.")
        config.stash[SNAPSHOT_DIR] = snapshot_dir(config.rootpath / SNAPSHOTS_DIRNAME, options.target)
        return cls(options=options, profile=_load_profile(options.profile_path))

    # --- collection ----------------------------------------------------------------------------------

    def is_scenario_file(self, path: Path) -> bool:
        return path.suffix in SCENARIO_SUFFIXES and path.is_relative_to(self.options.scenarios_dir)

    def load(self, path: Path) -> Scenario:
        from ..scenario.loader import load_scenario

        return load_scenario(_shown(path))

    def scenarios(self) -> list[Scenario]:
        if self._scenarios is None:
            from ..errors import HarnessError
            from ..scenario.loader import load_scenarios

            try:
                self._scenarios = load_scenarios(_shown(self.options.scenarios_dir))
            except HarnessError as exc:
                hint = " (set --scenarios-dir)" if not self.options.scenarios_dir.is_dir() else ""
                raise pytest.Collector.CollectError(f"cannot load the scenarios{hint}:\n{exc}") from None
        return self._scenarios

    def parametrize(self, metafunc: pytest.Metafunc) -> None:
        scenarios = self.scenarios()
        metafunc.parametrize("rlm_scenario", [pytest.param(s, id=s.name, marks=self.marks(s)) for s in scenarios])

    def marks(self, scenario: Scenario) -> list[pytest.MarkDecorator]:
        """A declared divergence of the backend (harness/targets/databricks.py) is a strict xfail."""
        if self.options.backend != "databricks":
            return []
        from ..targets.databricks import declared_divergence

        reason = declared_divergence(scenario.name)
        return [pytest.mark.xfail(strict=True, reason=f"databricks backend: {reason}")] if reason else []

    # --- running ---------------------------------------------------------------------------------------

    def target_of(self, scenario: Scenario) -> str:
        return self.options.target or scenario.target

    def cassette_path(self, scenario: Scenario) -> Path:
        from ..runner import cassette_dir_for

        return (cassette_dir_for(self.options.cassette_dir, self.target_of(scenario), self.options.backend)
                / f"{scenario.name}.yaml")

    def run_options(self, scenario: Scenario) -> RunOptions:
        """``--record-mode``: none never writes; once records only a missing cassette and replays an
        existing one; rewrite/all/new_episodes record the run whole (a cassette holding parts of two runs
        would not replay in order)."""
        from ..runner import RunOptions

        o = self.options
        mode, record = o.llm_mode, o.records
        if o.record_mode == "once" and self.cassette_path(scenario).exists():
            mode, record = LlmMode.REPLAY, False
        return RunOptions(target=o.target, llm_mode=mode, record=record, cassette_dir=o.cassette_dir,
                          session_service=o.session_service, profile=self.profile, backend=o.backend,
                          allow_drift=o.allow_drift)

    def result_for(self, item: pytest.Item, scenario: Scenario) -> ScenarioResult:
        if item.nodeid not in self.results:
            from ..runner import run_scenario

            self.results[item.nodeid] = run_scenario(scenario, self.run_options(scenario))
        return self.results[item.nodeid]

    def command(self, nodeid: str, *flags: str, llm_mode: LlmMode | None = None) -> str:
        """The pytest command line that re-runs ``nodeid`` with this run's non-default options plus ``flags``."""
        o, words = self.options, ["pytest", nodeid]
        if o.target:
            words += ["--target", o.target]
        if (llm_mode or o.llm_mode) is not LlmMode.REPLAY:
            words += ["--llm-mode", (llm_mode or o.llm_mode).value]
        if o.session_service != "delta":
            words += ["--session-service", o.session_service]
        if o.backend != "local":
            words += ["--backend", o.backend]
        return shlex.join([*words, *flags])

    def record_command(self, nodeid: str) -> str:
        return self.command(nodeid, "--record-mode", "rewrite", llm_mode=LlmMode.SCRIPTED)


def _shown(path: Path) -> Path:
    """``path`` relative to the working folder when it is inside it: error messages stay short."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _load_profile(path: Path | None) -> TargetProfile | None:
    if path is None:
        return None
    from ..errors import HarnessError
    from ..targets.profile import load_profile

    try:
        return load_profile(path)
    except HarnessError as exc:
        raise pytest.UsageError(f"--rlm-profile: {exc}") from None
