"""Targets that packages bring: each registers a ``TargetPlugin`` under the entry-point group
``rlm_conformance.targets`` (the reference agent does, in its own ``pyproject.toml``, as any user's package may).

A plugin is a target by name (``--target reference``) and, optionally, what comes with it: its profile (what
``audit --profile NAME`` reads), session services of its own that the contract suite may compare (``delta``),
and backends it can run on besides the local one (``--backend databricks``), each with its preflight, the
workspace a scenario runs in, the scenarios it declares divergent, its settings flags, its doctor and the store
``audit`` reads. The harness imports nothing of a plugin's package but the entry point; the plugin's module
imports the harness's public names. Entry points are read once per process (``importlib.metadata``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from ..errors import HarnessError
from .base import TargetFactory

GROUP = "rlm_conformance.targets"


@dataclass(frozen=True)
class Backend:
    """Where a plugin's target can keep its tables, volume and executor besides the local machine."""

    name: str
    preflight: Callable[..., None]  # (target specs, RunOptions): refuse a run that cannot start, before it does
    workspace: Callable[..., Any]  # (scenario, RunOptions, target name, home) -> context manager of the workspace
    declared_divergence: Callable[[str], str | None]  # scenario name -> why it cannot pass here yet (a strict xfail)
    add_settings_flags: Callable[[Any], None] | None = None  # argparse parser -> its ``--<backend>-*`` flags
    doctor: Callable[..., Any] | None = None  # (args=, write_probe=) -> a DoctorReport of the backend's setup
    store: Any = None  # what ``audit`` reads: ``is_store(spec) -> bool`` and ``open(spec) -> SqlSource``
    extra: str | None = None  # the pip extra the backend needs (harness/extras.py says how to install it)
    # (RunOptions) -> why a crash matrix cannot judge on this backend with these options (None: it can): a crash
    # recovery must read in a fresh process what the killed one wrote, so the backend's stores must outlive it.
    crash_matrix: Callable[[Any], str | None] | None = None
    # (RunOptions, folder) -> context manager of a SharedWorkspace: the workspace the processes of one crash-matrix
    # run share (the killed one and its recovery), started by the matrix's own process so that it outlives the
    # killed one. None: each process reaches its workspace itself (a real one is shared already).
    crash_workspace: Callable[[Any, Any], Any] | None = None


@dataclass(frozen=True)
class SharedWorkspace:
    """What ``Backend.crash_workspace`` yields: how the run processes reach the workspace the crash matrix's process
    keeps for them, and the harness's fake behind it when there is one (its job ledger: crash points inside an
    execution, and which runs executed code for effects_exactly_once)."""

    options: Any  # the RunOptions the processes run with (e.g. RunOptions.shared_workspace set)
    fake: Any = None  # harness.databricks_fake.FakeWorkspace, or None: a workspace the harness cannot look into


@dataclass(frozen=True)
class TargetPlugin:
    name: str
    build: TargetFactory
    profile: Callable[[], Any] | None = None  # () -> TargetProfile
    session_services: Mapping[str, Callable[..., Any]] = field(default_factory=dict)  # name -> (path|None) -> service
    backends: Mapping[str, Backend] = field(default_factory=dict)


class PluginError(HarnessError):
    """An entry point of ``rlm_conformance.targets`` that does not load or is no TargetPlugin."""


@functools.cache
def plugins() -> dict[str, TargetPlugin]:
    found: dict[str, TargetPlugin] = {}
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        try:
            plugin = point.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is named, with what it raised
            raise PluginError(f"the {GROUP} entry point {point.name!r} ({point.value}) does not load: "
                              f"{type(exc).__name__}: {exc}. Fix the package that declares it, or uninstall it.") from exc
        if not isinstance(plugin, TargetPlugin):
            raise PluginError(f"the {GROUP} entry point {point.name!r} ({point.value}) is a "
                              f"{type(plugin).__name__}, not a harness.targets.plugins.TargetPlugin.")
        found[point.name] = plugin
    return found


def backends() -> dict[str, Backend]:
    return {name: backend for plugin in plugins().values() for name, backend in plugin.backends.items()}


def backend(name: str) -> Backend:
    known = backends()
    if name not in known:
        raise HarnessError(f"--backend {name!r} is unknown: use local{''.join(f' or {b}' for b in sorted(known))}.")
    return known[name]


def plugin_session_services() -> dict[str, Callable[..., Any]]:
    return {name: factory for plugin in plugins().values() for name, factory in plugin.session_services.items()}


def plugin_packages() -> tuple[str, ...]:
    """The top-level packages that bring target plugins (``reference_agent``): their session services declare
    their own contract, as ADK's do, so the harness knows them without observing them."""
    return tuple(sorted({plugin.build.__module__.split(".")[0] for plugin in plugins().values()}))


def known_service_modules() -> tuple[str, ...]:
    """Module prefixes of session services whose behaviour is declared, not observed: ADK's and the plugins'."""
    return ("google.adk.", *(f"{package}." for package in plugin_packages()))


@dataclass(frozen=True)
class ServiceOnBackend:
    """The session service and the backend a run uses, resolved once from the two settings that can name them."""

    session_service: str
    backend: str
    named_by: str  # the setting that chose the backend: "backend", or "session_service" for ``delta-databricks``


def service_on_backend(session_service: str, backend: str) -> ServiceOnBackend:
    """``--session-service <service>-<backend>`` (``delta-databricks``) is ``<service>`` on a plugin's backend: the
    same as ``--session-service <service> --backend <backend>``. Anything else is as given."""
    if backend == "local":
        for name in backends():
            if session_service.endswith(f"-{name}"):
                return ServiceOnBackend(session_service.removesuffix(f"-{name}"), name, "session_service")
    return ServiceOnBackend(session_service, backend, "backend")
