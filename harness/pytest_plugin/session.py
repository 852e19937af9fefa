"""The plugin's one session object, kept in ``config.stash[SESSION]``: every hook hands off to it.

It owns the parsed options, the scenarios (loaded once per process), and the result of each item's run
(keyed by node id, so a report can read them all after the session).
"""

from __future__ import annotations

import contextlib
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..llm.modes import LlmMode
from ..recording.layout import snapshot_dir
from ..snapshot.extension import SNAPSHOT_DIR, SNAPSHOTS_DIRNAME
from .options import PluginOptions

if TYPE_CHECKING:
    from ..targets.choice import TargetChoice
    from ..result import ScenarioResult
    from ..run.runner import RunOptions
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
    rootpath: Path = Path(".")
    results: dict[str, ScenarioResult] = field(default_factory=dict)
    explicit_args: bool = True
    _scenarios: list[Scenario] | None = None

    @classmethod
    def start(cls, config: pytest.Config) -> ConformanceSession:
        """Parse the options and check, once, everything every scenario would otherwise fail on the same way:
        a bad configuration is one ``UsageError`` naming the flag, ini option or pyproject key, not N failures."""
        options = PluginOptions.from_config(config)
        if options.backend != "local" and getattr(config.option, "update_snapshots", False):
            raise pytest.UsageError(
                f"--snapshot-update with --backend {options.backend}: snapshots are written by the local backend, "
                f"and the {options.backend} backend is compared with them (its declared divergences would overwrite "
                f"them). Update them without --backend.")
        config.stash[SNAPSHOT_DIR] = snapshot_dir(options.snapshot_dir or config.rootpath / SNAPSHOTS_DIRNAME,
                                                  options.target)
        with offline(options):
            profile = _check_startup(options)
        return cls(options=options, profile=profile, rootpath=config.rootpath, explicit_args=config.args_source is pytest.Config.ArgsSource.ARGS)

    # --- collection ----------------------------------------------------------------------------------

    def add_scenario_args(self, config: pytest.Config) -> None:
        """Without explicit paths (``pytest`` alone: testpaths or the invocation folder), collect the
        configured scenario folders too, wherever they are."""
        if self.explicit_args or not self.options.configured("scenarios"):
            return  # the built-in default scenarios/ is not added: it may be another tool's folder
        args = [Path(os.path.abspath(config.invocation_params.dir / a.split("::")[0])) for a in config.args]
        for entry in self.options.scenarios:
            if not any(entry == a or entry.is_relative_to(a) for a in args):
                config.args.append(str(entry))

    def drop_double_runs(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Without explicit paths, a test that asks for ``rlm_scenario`` already runs every scenario: the
        scenario files' own items would run each a second time, so they are deselected (explicit paths
        keep both)."""
        if self.explicit_args:
            return

        def from_file(item: pytest.Item) -> bool:  # a scenario file's item carries its scenario in the stash
            return SCENARIO in item.stash

        if any("rlm_scenario" in getattr(i, "fixturenames", ()) and not from_file(i) for i in items):
            dropped = [i for i in items if from_file(i)]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
                items[:] = [i for i in items if not from_file(i)]

    def keep_shard(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """``--shard i/n``: deselect the items of the other shards. A scenario's items (its file's and a test's
        parametrized one) are one unit, costed by the scenario; any other test is a unit of its own, by node id."""
        shard = self.options.shard
        if shard is None:
            return
        from ..scenario.cost import STEP_S
        from ..errors import HarnessError
        from ..scenario.shard import durations_from, in_shard, scenario_costs

        units: dict[int, str] = {}
        scenarios: dict[str, Scenario] = {}
        for item in [i for i in items if not getattr(i, "rlm_unsharded", False)]:
            scenario = self.scenario_of(item)
            units[id(item)] = scenario.name if scenario is not None else item.nodeid
            if scenario is not None:
                scenarios[scenario.name] = scenario
        try:
            durations = (durations_from(self.options.shard_durations) if self.options.shard_durations is not None
                         else None)
        except HarnessError as exc:
            raise pytest.UsageError(str(exc)) from None
        costs = {unit: STEP_S for unit in units.values()} | scenario_costs(list(scenarios.values()), durations)
        chosen = in_shard(costs, shard)
        dropped = [i for i in items if id(i) in units and units[id(i)] not in chosen]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if id(i) not in units or units[id(i)] in chosen]

    def is_scenario_file(self, path: Path) -> bool:
        return path.suffix in SCENARIO_SUFFIXES and any(path == e or path.is_relative_to(e)
                                                        for e in self.options.scenarios)

    def load(self, path: Path) -> Scenario:
        from ..scenario.loader import load_scenario

        return load_scenario(_shown(path))

    def scenarios(self) -> list[Scenario]:
        if self._scenarios is None:
            from ..errors import HarnessError
            from ..scenario.loader import load_scenarios

            try:
                self._scenarios = load_scenarios([_shown(entry) for entry in self.options.scenarios])
            except HarnessError as exc:
                hint = f" (set {_SCENARIOS_FIX})" if not all(e.exists() for e in self.options.scenarios) else ""
                raise pytest.Collector.CollectError(f"cannot load the scenarios{hint}:\n{exc}") from None
        return self._scenarios

    def parametrize(self, metafunc: pytest.Metafunc) -> None:
        scenarios = self.scenarios()
        metafunc.parametrize("rlm_scenario", [pytest.param(s, id=s.name, marks=self.marks(s)) for s in scenarios])

    def marks(self, scenario: Scenario) -> list[pytest.MarkDecorator]:
        """A declared divergence of the backend (reference_agent/conformance/databricks.py) is a strict xfail; a
        concurrent case is a skip: its runners run at once under --rlm-crash (or ``rlm-conformance crash``)."""
        if scenario.concurrent is not None:
            from ..scenario.models import CONCURRENT_RUN_NOTE

            return [pytest.mark.skip(reason=CONCURRENT_RUN_NOTE.format(name=scenario.name))]
        if self.options.backend == "local":
            return []
        from ..targets.plugins import backend

        reason = backend(self.options.backend).declared_divergence(scenario.name)
        return [pytest.mark.xfail(strict=True, reason=f"{self.options.backend} backend: {reason}")] if reason else []

    # --- running ---------------------------------------------------------------------------------------

    def choice(self, scenario: Scenario) -> TargetChoice:
        """The scenario's target, stable name and profile: the decision the runner makes (targets/choice.py)."""
        from ..targets.choice import choose_target

        return choose_target(scenario, target=self.options.target, profile=self.profile,
                             profile_path=self.options.profile_path,
                             profile_is_default=self.options.profile_is_default)

    def target_of(self, scenario: Scenario) -> str:
        return self.choice(scenario).spec

    def cassette_path(self, scenario: Scenario) -> Path:
        from ..recording.layout import cassette_dir

        return (cassette_dir(self.options.cassette_dir, self.choice(scenario).name, self.options.backend)
                / f"{scenario.name}.yaml")

    def snapshot_folder(self, scenario: Scenario) -> Path:
        root = self.options.snapshot_dir or self.rootpath / SNAPSHOTS_DIRNAME
        choice = self.choice(scenario)
        return snapshot_dir(root, None if choice.is_reference else choice.name)

    @staticmethod
    def scenario_of(item: pytest.Item) -> Scenario | None:
        """A scenario file's item carries its scenario; a test function gets it by parametrization."""
        if SCENARIO in item.stash:
            return item.stash[SCENARIO]
        callspec = getattr(item, "callspec", None)
        return callspec.params.get("rlm_scenario") if callspec is not None else None

    def run_options(self, scenario: Scenario) -> RunOptions:
        """``--record-mode``: none never writes; once records only a missing cassette and replays an
        existing one; rewrite/all/new_episodes record the run whole (a cassette holding parts of two runs
        would not replay in order)."""
        from ..run.runner import RunOptions

        o = self.options
        mode, record = o.llm_mode, o.records
        if o.record_mode == "once" and self.cassette_path(scenario).exists():
            mode, record = LlmMode.REPLAY, False
        return RunOptions(target=o.target, llm_mode=mode, record=record, cassette_dir=o.cassette_dir,
                          session_service=o.session_service, profile=self.profile, profile_path=o.profile_path,
                          profile_is_default=o.profile_is_default, backend=o.backend,
                          allow_drift=o.allow_drift, executor=o.executor,
                          require_confinement=o.require_confinement)

    def result_for(self, item: pytest.Item, scenario: Scenario) -> ScenarioResult:
        if item.nodeid not in self.results:
            from ..run.runner import run_scenario

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

    def header(self) -> str:
        o = self.options
        where = sorted({origin.split(" in ", 1)[1] for origin in o.origins.values() if " in " in origin})
        target = o.target or "each scenario's own"
        return (f"rlm-conformance: llm-mode {o.llm_mode.value}, target {target}, "
                f"session-service {o.session_service}, scenarios {', '.join(map(str, map(_shown, o.scenarios)))}"
                + (f", shard {o.shard.label}" if o.shard is not None else "")
                + (f" (settings from {', '.join(where)})" if where else ""))

    def record_command(self, nodeid: str) -> str:
        return self.command(nodeid, "--record-mode", "rewrite", llm_mode=LlmMode.SCRIPTED)


def _shown(path: Path) -> Path:
    """``path`` relative to the working folder when it is inside it: error messages stay short."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


_SCENARIOS_FIX = "--scenarios-dir, ini option rlm_scenarios or scenarios in [tool.rlm-conformance]"


def offline(options: PluginOptions) -> contextlib.AbstractContextManager[object]:
    """The network guard in replay (the runner adds its own around each run), a no-op otherwise."""
    if options.llm_mode is not LlmMode.REPLAY:
        return contextlib.nullcontext()
    from ..llm.network_guard import NetworkGuard

    return NetworkGuard(record_hint="pytest --llm-mode scripted --record-mode once (or live with GOOGLE_API_KEY)")


def _check_startup(options: PluginOptions) -> TargetProfile | None:
    """The target, session service, profile and scenario folders, each resolved once; the profile is returned."""
    from ..errors import HarnessError

    def fail(setting: str, exc: Exception | str) -> pytest.UsageError:
        origin = options.origins.get(setting, "")
        return pytest.UsageError(f"rlm-conformance: {origin}: {exc}".replace(": : ", ": "))

    if options.target is not None:
        from ..targets.registry import resolve_target

        try:
            resolve_target(options.target)
        except HarnessError as exc:
            raise fail("target", exc) from None
    from ..extras import require_extra
    from ..targets.plugins import backend, service_on_backend
    from ..targets.session_services import resolve_session_service

    chosen = service_on_backend(options.session_service, options.backend)  # delta-databricks: delta on databricks
    if chosen.backend != "local":
        try:
            extra = backend(chosen.backend).extra
            if extra is not None:
                require_extra(extra, f"--{chosen.named_by.replace('_', '-')} {getattr(options, chosen.named_by)}")
        except HarnessError as exc:
            raise fail(chosen.named_by, exc) from None
    try:
        resolve_session_service(chosen.session_service)
    except HarnessError as exc:
        raise fail("session_service", exc) from None
    if options.configured("scenarios"):
        missing = [str(p) for p in options.scenarios if not p.exists()]
        if missing:
            raise fail("scenarios", f"no such scenario folder or file: {', '.join(missing)}. Fix the path, or "
                                    f"create the folder.")
    if options.profile_path is None:
        return None
    from ..targets.profile import load_profile

    try:
        return load_profile(options.profile_path)
    except HarnessError as exc:
        raise fail("profile", exc) from None
