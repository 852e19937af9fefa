"""Session services for the concurrent-runner tests, as ``module:attr`` factories a second process can build.

* ``delta_on_workspace`` — the reference store (``DeltaSessionService``) on its Databricks SQL engine, against
  the workspace fake whose address the test wrote to ``<folder>/workspace.json``: the one reference engine two
  processes can share (DuckDB admits one process per file).
* ``unchecked_*`` — the broken variant: the reference store appending **without a version check** (neither the
  session row's version nor the ``user:``/``app:`` keys the session loaded are compared), so a stale runner's
  append is accepted over the other's.
* ``unversioned_delta_file`` — the reference store appending without the session row's version check only (the
  ``user:``/``app:`` key checks kept): a double submit's second runner appends on a stale session, nothing is lost,
  and the session's events fork (``stale_append``).
* ``unclaimed_delta_on_workspace`` — the store before its keys were claimed before the commit point: the
  ``user:``/``app:`` keys are checked before the session row's commit point and written after it, so two sessions
  that both read a key at one version both commit and the later write wins (reference_agent/sessions/scope_claims.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reference_agent.sessions.delta_session_service import DeltaSessionService


class UnclaimedDeltaSessionService(DeltaSessionService):
    """Checks its app:/user: keys before the commit point and writes them after it, claiming nothing."""

    claims_before_commit = False


class UncheckedDeltaSessionService(DeltaSessionService):
    """Appends without a version check: the stale-session and stale-scope-key checks are skipped."""

    def _check_not_stale(self, *args: Any) -> None:
        return None

    def _check_scope_keys(self, *args: Any) -> None:
        return None


class UnversionedDeltaSessionService(DeltaSessionService):
    """Appends on a stale session: the session row's version check skipped, the scope-key checks kept."""

    def _check_not_stale(self, *args: Any) -> None:
        return None


def unversioned_delta_file(folder: Path) -> UnversionedDeltaSessionService:
    return UnversionedDeltaSessionService.duckdb(Path(folder) / "sessions.duckdb")


def unchecked_delta_file(folder: Path) -> UncheckedDeltaSessionService:
    return UncheckedDeltaSessionService.duckdb(Path(folder) / "sessions.duckdb")


def _on_workspace(cls: type[DeltaSessionService], folder: Path) -> DeltaSessionService:
    from reference_agent.backends.databricks.config import DatabricksSettings, make_workspace_client
    from reference_agent.storage.databricks_engine import DatabricksSqlEngine

    where = json.loads((Path(folder) / "workspace.json").read_text(encoding="utf-8"))
    settings = DatabricksSettings(host=where["host"], token=where["token"], warehouse_id=where["warehouse"])
    engine = DatabricksSqlEngine(make_workspace_client(settings, hermetic=True), where["warehouse"], timeout_s=30.0)
    return cls(engine)


def delta_on_workspace(folder: Path) -> DeltaSessionService:
    return _on_workspace(DeltaSessionService, folder)


def unchecked_delta_on_workspace(folder: Path) -> DeltaSessionService:
    return _on_workspace(UncheckedDeltaSessionService, folder)


def unclaimed_delta_on_workspace(folder: Path) -> DeltaSessionService:
    return _on_workspace(UnclaimedDeltaSessionService, folder)
