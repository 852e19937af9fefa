"""The plugin's command-line and ini options, all in one ``rlm-conformance`` group, and their parsed form.

Every option has the CLI's name and an ``--rlm-`` twin (``--target`` / ``--rlm-target``). If another plugin
registered the short name first (pytest raises ``ValueError`` for a clash inside one group, argparse
``ArgumentError`` across groups), only the twin is registered, so a name clash never stops pytest from
starting; a short name another installed plugin is known to own (``--profile``: pytest-profiling) is left
to it.

Each setting is read from, first to last: the command line, the pytest ini option (``rlm_*``), the
``[tool.rlm-conformance]`` table of pyproject.toml (``harness/project_config.py``), the built-in default.
Paths are relative to where they are written: the invocation folder (command line), the ini file's folder,
the pyproject.toml's folder; the defaults are under the rootdir. ``PluginOptions.origins`` says where each
value came from, so a configuration error names the flag, ini option or pyproject key to fix.

``--record-mode`` is pytest-recording's flag, with its names (none, once, new_episodes, all, and
rewrite). When pytest-recording is installed it owns the flag (same ``dest``, ``record_mode``) and we read
its value: one ``--record-mode=once`` then drives VCR tests and scenarios alike. We check for the package
rather than the registered plugin because plugins' ``pytest_addoption`` run in entry-point order: if we
registered the flag first, pytest-recording's own registration would crash. ``--rlm-record-mode`` is
always ours.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..llm.modes import LlmMode
from ..project_config import DEFAULT_ORIGIN, DEFAULTS, resolve
from ..scenario.shard import Shard, shard_arg
from ..targets.plugins import backends
from ..targets.service_choice import SERVICE_CHOICE, SERVICE_CHOICES

if TYPE_CHECKING:
    from ..project_config import ProjectConfig

RECORD_MODES = ("none", "once", "new_episodes", "all", "rewrite")
GROUP = "rlm-conformance"
OWNED_BY = {"--profile": "pytest_profiling"}
"""Short names another plugin registers: when it is installed we only register the ``--rlm-`` twin
(plugins' ``pytest_addoption`` run in entry-point order, so it could come after us and crash on a clash)."""
DEFAULT = DEFAULT_ORIGIN


def _registered_names(group: Any) -> set[str]:
    """Option strings other plugins registered so far, in any group. pytest has no public listing, so this
    reads its parser's groups defensively (an attribute it lacks reads as none registered)."""
    parser = getattr(group, "parser", None)
    groups = [*getattr(parser, "_groups", ()), getattr(parser, "_anonymous", None)]
    return {n for g in groups if g is not None for option in getattr(g, "options", ()) for n in option.names()}


def _add(group: Any, name: str, **kwargs: Any) -> None:
    twin = "--rlm-" + name.removeprefix("--").removeprefix("rlm-")
    names = [name, twin] if twin != name else [name]
    if name in OWNED_BY and importlib.util.find_spec(OWNED_BY[name]) is not None:
        names = [twin]
    if name in _registered_names(group):
        names = [twin]  # pytest 8 raises such a clash only later, when it builds its argparse parser
    try:
        group.addoption(*names, **kwargs)
    except (ValueError, argparse.ArgumentError):  # the short name is another plugin's: keep our twin
        group.addoption(twin, **kwargs)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "rlm-conformance: run scenarios against an RLM agent")
    _add(group, "--target", dest="rlm_target", default=None, metavar="TARGET",
         help="reference, legacy or module:attr (default: each scenario's own target, i.e. reference unless "
              "the scenario sets 'target:'). Snapshots of a --target other than reference live in "
              "snapshots/<target>/. ini: rlm_target; pyproject: target.")
    _add(group, "--session-service", dest="rlm_session_service", default=None, metavar="NAME",
         help=f"{SERVICE_CHOICE}. ini: rlm_session_service; pyproject: session-service.")
    _add(group, "--llm-mode", dest="rlm_llm_mode", default=None, choices=[m.value for m in LlmMode],
         help="replay: cassettes, no network (default; scripted when recording); scripted: the scenario's model "
              "script on a local endpoint; live: Gemini (needs GOOGLE_API_KEY). ini: rlm_llm_mode; "
              "pyproject: llm-mode.")
    record_help = ("pytest-recording's names. none (default): never write a cassette; once: record only "
                   "missing cassettes (existing ones are replayed); rewrite, all, new_episodes: record every "
                   "selected scenario whole. Records from --llm-mode scripted unless scripted or live is chosen.")
    if importlib.util.find_spec("pytest_recording") is None:
        _add(group, "--record-mode", dest="rlm_record_mode", default=None, choices=RECORD_MODES, help=record_help)
    else:
        group.addoption("--rlm-record-mode", dest="rlm_record_mode", default=None, choices=RECORD_MODES,
                        help=record_help + " (--record-mode belongs to pytest-recording and is read too.)")
    _add(group, "--scenarios-dir", dest="rlm_scenarios_dir", default=None, metavar="DIR",
         help="folder (or file) of scenario YAML (default: scenarios/ under the rootdir). "
              "ini: rlm_scenarios; pyproject: scenarios.")
    _add(group, "--cassette-dir", dest="rlm_cassette_dir", default=None, metavar="DIR",
         help="folder of cassettes (default: cassettes/ under the rootdir). ini: rlm_cassette_dir; "
              "pyproject: cassettes.")
    _add(group, "--snapshot-dir", dest="rlm_snapshot_dir", default=None, metavar="DIR",
         help="folder of snapshots (default: snapshots/ under the rootdir). ini: rlm_snapshot_dir; "
              "pyproject: snapshots.")
    _add(group, "--profile", dest="rlm_profile", default=None, metavar="PATH",
         help="target profile YAML: the names your agent uses for the roles the checks talk about. "
              "ini: rlm_profile; pyproject: profile.")
    _add(group, "--allow-drift", dest="rlm_allow_drift", action="store_true",
         help="replay even when a model call's request differs from its recording (by default a stale "
              "cassette fails the scenario, naming the difference and the command to re-record).")
    _add(group, "--require-confinement", dest="rlm_require_confinement", action="store_true",
         help="the executor must confine the code it runs: a missing protection fails the run instead of warning "
              "once (docs/executor-confinement.md).")
    _add(group, "--backend", dest="rlm_backend", default=None, choices=("local", *backends()),
         help="local (DuckDB, a folder, a subprocess; default) or databricks: the reference agent on a workspace, "
              "replayed from cassettes/databricks/ (recorded against the local workspace fake with --llm-mode "
              "scripted). Scenarios that cannot pass there yet are xfail (reference_agent/conformance/databricks.py). "
              "ini: rlm_backend; pyproject: backend.")
    _add(group, "--executor", dest="rlm_executor", default="warm", choices=("warm", "one-shot"),
         help="local backend: run a session's Job_B blocks in one warm process (default) or each in a one-shot "
              "process, as every Databricks job run does.")
    _add(group, "--baseline", dest="rlm_baseline", default=None, type=Path, metavar="FILE",
         help="accepted findings (check, where, reason; the CLI's run writes one with its write-baseline "
              "option): a scenario whose only failures it accepts is xfail with the entry as the reason; an entry "
              "naming a scenario whose check passed is a warning to remove it (docs/explore.md).")
    _add(group, "--rlm-explore", dest="rlm_explore", default=None, type=_examples, metavar="N",
         help="also run `rlm-conformance explore` with N generated conversations against the configured target "
              "(scripted, every check, seed 0) before the tests: each finding is a failing item explore::<check>, "
              "its minimal scenario written into .rlm-conformance/found/ under the rootdir; nothing is added when "
              "nothing is found (docs/explore.md).")
    _add(group, "--rlm-explore-behaviours", dest="rlm_explore_behaviours", default=None, type=Path, metavar="FILE",
         help="with --rlm-explore: a behaviours YAML, as the explore command takes one: extra code behaviours, and the "
              "delegation_text your analyst's answers use when the profile's delegation_pattern needs another "
              "fence than ```repl (docs/explore.md).")
    _add(group, "--rlm-crash", dest="rlm_crash", default=None, choices=("after", "before", "all"),
         help="also run `rlm-conformance crash` on the scenarios it would pick (tagged crash, else all): one item "
              "crash::<scenario> each, its crash matrix of these points (a declared crash or concurrent case: its "
              "own); a failure shows the failing checks and their evidence, an n/a matrix is a skip (docs/crash.md).")
    _add(group, "--rlm-crash-recovery", dest="rlm_crash_recovery", default=None,
         choices=("retry", "next_turn", "resume"),
         help="with --rlm-crash: how the target recovers (default: the target profile's 'recovery', else retry).")
    _add(group, "--rlm-crash-max-points", dest="rlm_crash_max_points", default=None, type=_positive, metavar="N",
         help="with --rlm-crash: only the first N crash points of each scenario, in run order.")
    _add(group, "--rlm-crash-jobs", dest="rlm_crash_jobs", default=1, type=_positive, metavar="N",
         help="with --rlm-crash: N crash points of a scenario side by side (each point is two processes).")
    _add(group, "--shard", dest="rlm_shard", default=None, type=shard_arg, metavar="I/N",
         help="run only shard I of N (1-based) of the collected items: scenarios split by expected cost "
              "(harness/scenario/shard.py), other tests by node id, the same on every machine; the N shards "
              "together run every item exactly once.")
    _add(group, "--shard-durations", dest="rlm_shard_durations", default=None, type=Path, metavar="REPORT",
         help="with --shard: cost each scenario by its duration_s in this conformance.json (a previous run's).")
    for name, help_text in INI.items():
        parser.addini(name, help_text, type="paths" if name == "rlm_scenarios" else "string", default=None)


def _examples(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number of examples")
    return int(value)


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number")
    return int(value)


INI = {
    "rlm_target": "rlm-conformance: reference, legacy or module:attr (as --target)",
    "rlm_profile": "rlm-conformance: target profile YAML, relative to this file (as --profile)",
    "rlm_scenarios": "rlm-conformance: scenario folders or files, relative to this file (as --scenarios-dir)",
    "rlm_cassette_dir": "rlm-conformance: cassette folder, relative to this file (as --cassette-dir)",
    "rlm_snapshot_dir": "rlm-conformance: snapshot folder, relative to this file (as --snapshot-dir)",
    "rlm_llm_mode": "rlm-conformance: replay, scripted or live (as --llm-mode)",
    "rlm_session_service": f"rlm-conformance: {SERVICE_CHOICES} (as --session-service)",
    "rlm_backend": "rlm-conformance: local or databricks (as --backend)",
}


@dataclass(frozen=True)
class PluginOptions:
    target: str | None
    session_service: str
    llm_mode: LlmMode
    record_mode: str
    scenarios: tuple[Path, ...]
    cassette_dir: Path
    profile_path: Path | None
    snapshot_dir: Path | None = None
    backend: str = "local"
    allow_drift: bool = False
    executor: str = "warm"
    require_confinement: bool = False
    explore: int | None = None  # --rlm-explore N: examples explore generates before the tests (None: off)
    explore_behaviours: Path | None = None  # --rlm-explore-behaviours FILE: explore's --behaviours
    crash: str | None = None  # --rlm-crash POINTS: crash items of these points (None: off)
    crash_recovery: str | None = None  # --rlm-crash-recovery: the profile's recovery overridden
    crash_max_points: int | None = None  # --rlm-crash-max-points N
    crash_jobs: int = 1  # --rlm-crash-jobs N
    shard: Shard | None = None  # --shard I/N: only these items run
    shard_durations: Path | None = None  # --shard-durations REPORT: costs from a previous report
    origins: Mapping[str, str] = field(default_factory=dict)
    """Setting name -> where its value came from ("--target", "ini option rlm_target in ...", ...)."""

    @property
    def records(self) -> bool:
        return self.record_mode != "none"

    def configured(self, name: str) -> bool:
        return self.origins.get(name, DEFAULT) != DEFAULT

    @property
    def profile_is_default(self) -> bool:
        """The profile is the project's (ini or pyproject), not --profile: a scenario's own profile: beats it."""
        return self.configured("profile") and self.origins["profile"] != "--profile"

    @classmethod
    def from_config(cls, config: pytest.Config) -> PluginOptions:
        from ..project_config import ProjectConfigError, load_project_config

        try:
            project = load_project_config(config.invocation_params.dir)
        except ProjectConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        pick = _Picker(config, project)
        record_mode = config.getoption("rlm_record_mode") or config.getoption("record_mode", None) or "none"
        llm_mode = pick.choice("llm_mode", "--llm-mode", "rlm_llm_mode", [m.value for m in LlmMode])
        if record_mode != "none" and llm_mode == "replay":
            if pick.origins["llm_mode"] == "--llm-mode":
                raise pytest.UsageError(
                    f"--record-mode {record_mode} records cassettes, but --llm-mode replay only plays them: there is "
                    f"nothing to record from. Drop --llm-mode replay (recording then uses scripted, the scenarios' "
                    f"model scripts, no key needed), or use --llm-mode live (Gemini, needs GOOGLE_API_KEY), or drop "
                    f"--record-mode.")
            llm_mode, pick.origins["llm_mode"] = "scripted", f"--record-mode {record_mode}"
        root = config.rootpath
        return cls(
            target=pick.text("target", "--target", "rlm_target"),
            session_service=pick.text("session_service", "--session-service", "rlm_session_service"),
            llm_mode=LlmMode(llm_mode),
            record_mode=record_mode,
            scenarios=pick.paths("scenarios", "--scenarios-dir", "rlm_scenarios", root / DEFAULTS["scenarios"]),
            cassette_dir=pick.path("cassettes", "--cassette-dir", "rlm_cassette_dir", root / DEFAULTS["cassettes"]),
            snapshot_dir=pick.path("snapshots", "--snapshot-dir", "rlm_snapshot_dir", root / DEFAULTS["snapshots"]),
            profile_path=pick.path("profile", "--profile", "rlm_profile", None),
            backend=pick.choice("backend", "--backend", "rlm_backend", ["local", *backends()]),
            allow_drift=config.getoption("rlm_allow_drift"),
            executor=config.getoption("rlm_executor"),
            require_confinement=config.getoption("rlm_require_confinement"),
            explore=config.getoption("rlm_explore"),
            explore_behaviours=config.getoption("rlm_explore_behaviours"),
            crash=config.getoption("rlm_crash"),
            crash_recovery=config.getoption("rlm_crash_recovery"),
            crash_max_points=config.getoption("rlm_crash_max_points"),
            crash_jobs=config.getoption("rlm_crash_jobs"),
            shard=config.getoption("rlm_shard"),
            shard_durations=config.getoption("rlm_shard_durations"),
            origins=dict(pick.origins),
        )


class _Picker:
    """One setting from the command line, else the ini file, else ``[tool.rlm-conformance]``, else the default;
    remembers where each value came from (``origins``, keyed by the pyproject key in snake_case)."""

    def __init__(self, config: pytest.Config, project: ProjectConfig) -> None:
        self.config, self.project = config, project
        self.origins: dict[str, str] = {}

    def _cli_dest(self, flag: str) -> str:
        return "rlm_" + flag.removeprefix("--").replace("-", "_")

    def _ini(self, name: str) -> Any:
        value = self.config.getini(name)
        return value if value not in (None, "", []) else None

    def _ini_origin(self, name: str) -> str:
        return f"ini option {name} in {self.config.inipath}"

    def text(self, key: str, flag: str, ini: str) -> Any:
        value, self.origins[key] = resolve(key, (self.config.getoption(self._cli_dest(flag)), flag),
                                           (self._ini(ini), self._ini_origin(ini)), self.project.layer(key))
        return value

    def choice(self, key: str, flag: str, ini: str, choices: list[str]) -> str:
        value = self.text(key, flag, ini)
        if value not in choices:  # only an ini value can be out of range: argparse and pydantic check the others
            raise pytest.UsageError(f"{self.origins[key]}: {value!r} is not one of {', '.join(choices)}. "
                                    f"Fix the value.")
        return value

    def path(self, key: str, flag: str, ini: str, default: Path | None) -> Any:
        here = self.config.invocation_params.dir
        value = self.config.getoption(self._cli_dest(flag))
        if value:
            self.origins[key] = flag
            return Path(os.path.abspath(here / value))
        value = self._ini(ini)
        if value is not None:
            self.origins[key] = self._ini_origin(ini)
            base = self.config.inipath.parent if self.config.inipath else self.config.rootpath
            return Path(os.path.abspath(base / value))
        value = getattr(self.project, key)
        if value is not None:
            self.origins[key] = self.project.origin(key)
            return value
        self.origins[key] = DEFAULT
        return default

    def paths(self, key: str, flag: str, ini: str, default: Path) -> tuple[Path, ...]:
        value = self.config.getoption(self._cli_dest(flag))
        if value:
            self.origins[key] = flag
            return (Path(os.path.abspath(self.config.invocation_params.dir / value)),)
        value = self._ini(ini)
        if value is not None:  # type "paths": already relative to the ini file's folder
            self.origins[key] = self._ini_origin(ini)
            return tuple(Path(os.path.abspath(p)) for p in value)
        if self.project.scenarios is not None:
            self.origins[key] = self.project.origin(key)
            return self.project.scenarios
        self.origins[key] = DEFAULT
        return (default,)
