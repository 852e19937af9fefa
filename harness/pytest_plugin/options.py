"""The plugin's command-line options, all in one ``rlm-conformance`` group, and their parsed form.

Every option has an ``--rlm-`` twin (``--target`` / ``--rlm-target``). If another plugin registered the
short name first (pytest raises ``ValueError`` for a clash inside one group, argparse ``ArgumentError``
across groups), only the twin is registered, so a name clash never stops pytest from starting.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..llm.modes import LlmMode

RECORD_MODES = ("none", "once", "new_episodes", "all", "rewrite")
GROUP = "rlm-conformance"


def _add(group: Any, name: str, **kwargs: Any) -> None:
    twin = "--rlm-" + name.removeprefix("--").removeprefix("rlm-")
    names = [name, twin] if twin != name else [name]
    try:
        group.addoption(*names, **kwargs)
    except (ValueError, argparse.ArgumentError):  # the short name is another plugin's: keep our twin
        group.addoption(twin, **kwargs)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "rlm-conformance: run scenarios against an RLM agent")
    _add(group, "--target", dest="rlm_target", default=None, metavar="TARGET",
         help="reference, legacy or module:attr (default: each scenario's own target, i.e. reference unless "
              "the scenario sets 'target:'). Snapshots of a --target other than reference live in "
              "snapshots/<target>/.")
    _add(group, "--session-service", dest="rlm_session_service", default="delta", metavar="NAME",
         help="delta (the target's own), adk-memory, adk-sqlite or module:factory (default: delta).")
    _add(group, "--llm-mode", dest="rlm_llm_mode", default=LlmMode.REPLAY.value,
         choices=[m.value for m in LlmMode],
         help="replay: cassettes, no network (default); scripted: the scenario's model script on a local "
              "endpoint; live: Gemini (needs GOOGLE_API_KEY).")
    record_help = ("pytest-recording's names. none (default): never write a cassette; once: record only "
                   "missing cassettes (existing ones are replayed); rewrite, all, new_episodes: record every "
                   "selected scenario whole. Recording needs --llm-mode scripted or live.")
    if importlib.util.find_spec("pytest_recording") is None:
        _add(group, "--record-mode", dest="rlm_record_mode", default=None, choices=RECORD_MODES, help=record_help)
    else:
        group.addoption("--rlm-record-mode", dest="rlm_record_mode", default=None, choices=RECORD_MODES,
                        help=record_help + " (--record-mode belongs to pytest-recording and is read too.)")
    _add(group, "--scenarios-dir", dest="rlm_scenarios_dir", default=None, metavar="DIR",
         help="folder of scenario YAML files (default: scenarios/ under the rootdir).")
    _add(group, "--cassette-dir", dest="rlm_cassette_dir", default=None, metavar="DIR",
         help="folder of cassettes (default: cassettes/ under the rootdir).")
    group.addoption("--rlm-profile", dest="rlm_profile", default=None, metavar="PATH",
                    help="target profile YAML: the names your agent uses for the roles the checks talk about.")
    group.addoption("--rlm-allow-drift", dest="rlm_allow_drift", action="store_true",
                    help="replay even when a model call's request differs from its recording (by default a stale "
                         "cassette fails the scenario, naming the difference and the command to re-record).")
    _add(group, "--backend", dest="rlm_backend", default="local", choices=("local", "databricks"),
         help="local (DuckDB, a folder, a subprocess; default) or databricks: the reference agent on a workspace, "
              "replayed from cassettes/databricks/ (recorded against the local workspace fake with --llm-mode "
              "scripted). Scenarios that cannot pass there yet are xfail (harness/targets/databricks.py).")


@dataclass(frozen=True)
class PluginOptions:
    target: str | None
    session_service: str
    llm_mode: LlmMode
    record_mode: str
    scenarios_dir: Path
    cassette_dir: Path
    profile_path: Path | None
    backend: str = "local"
    allow_drift: bool = False

    @property
    def records(self) -> bool:
        return self.record_mode != "none"

    @classmethod
    def from_config(cls, config: pytest.Config) -> PluginOptions:
        """Defaults are relative to the rootdir; paths given on the command line to the invocation folder."""
        here, root = config.invocation_params.dir, config.rootpath

        def path(dest: str, default: str) -> Path:
            value = config.getoption(dest)
            return Path(os.path.abspath(here / value)) if value else root / default

        record_mode = config.getoption("rlm_record_mode") or config.getoption("record_mode", None) or "none"
        options = cls(
            target=config.getoption("rlm_target"),
            session_service=config.getoption("rlm_session_service"),
            llm_mode=LlmMode(config.getoption("rlm_llm_mode")),
            record_mode=record_mode,
            scenarios_dir=path("rlm_scenarios_dir", "scenarios"),
            cassette_dir=path("rlm_cassette_dir", "cassettes"),
            profile_path=(here / config.getoption("rlm_profile")) if config.getoption("rlm_profile") else None,
            backend=config.getoption("rlm_backend"),
            allow_drift=config.getoption("rlm_allow_drift"),
        )
        if options.records and options.llm_mode is LlmMode.REPLAY:
            raise pytest.UsageError(
                f"--record-mode {record_mode} records cassettes, but --llm-mode replay only plays them: there is "
                f"nothing to record from. Add --llm-mode scripted (the scenarios' model scripts, no key needed) "
                f"or --llm-mode live (Gemini, needs GOOGLE_API_KEY), or drop --record-mode.")
        return options
