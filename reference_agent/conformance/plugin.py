"""The reference agent's ``TargetPlugin``s: what its entry points (``rlm_conformance.targets``) hand the harness.

Every hook imports its module when called: the CLI reads the entry points on each start, and the Databricks
pieces need the ``databricks`` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.targets.base import BuiltTarget, TargetEnvironment
from harness.targets.plugins import Backend, TargetPlugin


def _build_reference(env: TargetEnvironment) -> BuiltTarget:
    from .reference import build_reference

    return build_reference(env)


def _build_legacy(env: TargetEnvironment) -> BuiltTarget:
    from .legacy import build_legacy

    return build_legacy(env)


def _profile() -> Any:
    from .profile import reference_profile

    return reference_profile()


def _delta(path: Path | None) -> Any:
    from .common import delta_session_service

    return delta_session_service(path)


def _preflight(targets: list[str], options: Any) -> None:
    from .databricks import preflight

    preflight(targets, options)


def _workspace(scenario: Any, options: Any, target_name: str, home: Path) -> Any:
    from .databricks import databricks_workspace

    return databricks_workspace(scenario, options, target_name, home)


def _crash_matrix(options: Any) -> str | None:
    from .databricks import workspace_kind

    if workspace_kind(options) != "replay":
        return None  # the fake: the matrix's process keeps it (_crash_workspace); a live workspace outlives any run
    return ("on the databricks backend a replay answers each run from its cassette's recorded REST answers: nothing "
            "the killed process wrote is there for the recovery to read. Crash with the scripted model (the "
            "workspace fake, kept by the crash matrix's process) or against a live workspace (--databricks-live; "
            "it creates and bills job runs)")


def _crash_workspace(options: Any, folder: Path) -> Any:
    from .databricks import crash_workspace

    return crash_workspace(options, folder)


def _declared_divergence(scenario: str) -> str | None:
    from .databricks import DIVERGENCES

    return DIVERGENCES.get(scenario)


def _settings_flags(parser: Any) -> None:
    from .doctor.settings_flags import add_databricks_flags

    add_databricks_flags(parser)


def _doctor(**kwargs: Any) -> Any:
    from .doctor.run import run_databricks_doctor

    return run_databricks_doctor(**kwargs)


class _Store:
    """``databricks://CATALOG.SCHEMA``: a Unity Catalog schema the reference agent's backend wrote."""

    spelling = ("databricks://CATALOG.SCHEMA (workspace and warehouse from DATABRICKS_HOST, DATABRICKS_TOKEN or "
                "DATABRICKS_CONFIG_PROFILE, DATABRICKS_WAREHOUSE_ID)")

    @staticmethod
    def is_store(spec: str) -> bool:
        from .audit_store import is_databricks_store

        return is_databricks_store(spec)

    @staticmethod
    def open(spec: str) -> Any:
        from .audit_store import DatabricksSource

        return DatabricksSource(spec)


DATABRICKS = Backend(name="databricks", preflight=_preflight, workspace=_workspace,
                     declared_divergence=_declared_divergence, add_settings_flags=_settings_flags, doctor=_doctor,
                     store=_Store(), extra="databricks", crash_matrix=_crash_matrix,
                     crash_workspace=_crash_workspace)

REFERENCE = TargetPlugin(name="reference", build=_build_reference, profile=_profile, session_services={"delta": _delta},
                         backends={"databricks": DATABRICKS})
LEGACY = TargetPlugin(name="legacy", build=_build_legacy)
