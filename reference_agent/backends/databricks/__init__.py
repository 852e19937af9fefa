"""The Databricks backend: SQL warehouse tables, a UC volume and Job_B as a one-time job run.

Everything goes through databricks-sdk's ``WorkspaceClient`` (no hand-rolled
HTTP). Public names, imported lazily so ``import reference_agent.backends.databricks``
stays cheap:

* ``DatabricksSettings``, ``add_cli_arguments``, ``make_workspace_client`` (config)
* ``UcVolumeStore`` (volume), ``DatabricksJobRunner``, ``JobCompute`` (jobs)
* ``DatabricksSqlEngine`` (``reference_agent.storage.databricks_engine``)
* ``build_databricks_services`` (services)
* the errors: ``DatabricksBackendError`` and its subclasses
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DatabricksSettings": ".config", "add_cli_arguments": ".config", "make_workspace_client": ".config",
    "UcVolumeStore": ".volume",
    "DatabricksJobRunner": ".jobs", "JobCompute": ".jobs",
    "build_databricks_services": ".services", "job_compute": ".services",
    "DatabricksSqlEngine": "reference_agent.storage.databricks_engine",
    "Backoff": ".polling",
    **{name: ".errors" for name in ("DatabricksBackendError", "DatabricksConfigError", "DatabricksAuthError",
                                    "DatabricksSqlError", "DatabricksTimeoutError", "DatabricksJobError")},
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
