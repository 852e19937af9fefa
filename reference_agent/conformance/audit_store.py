"""A Unity Catalog ``catalog.schema`` as a read-only ``SqlSource``, reached the databricks-sdk way.

``databricks://CATALOG.SCHEMA`` (or ``databricks:CATALOG.SCHEMA``): the workspace from ``DATABRICKS_HOST`` and
``DATABRICKS_TOKEN`` (or ``DATABRICKS_CONFIG_PROFILE``), the SQL warehouse from ``DATABRICKS_WAREHOUSE_ID`` (or
``?warehouse=ID`` in STORE), the same settings the reference agent's Databricks backend reads. Statements go
through its ``DatabricksSqlEngine`` (the Statement Execution API); the audit only sends SELECT and DESCRIBE.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from harness.audit.stores.base import StoreError

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
SCHEME = re.compile(r"^(databricks|dbx):(//)?", re.IGNORECASE)


def is_databricks_store(spec: str) -> bool:
    """Our spelling only: SQLAlchemy's own ``databricks://token:…@host?http_path=…`` URLs go to SQLAlchemy."""
    return bool(SCHEME.match(spec)) and "@" not in spec and "http_path" not in spec


class DatabricksSource:
    def __init__(self, spec: str, *, env: Mapping[str, str] | None = None) -> None:
        from harness.extras import require_databricks

        require_databricks(f"STORE {spec}")
        from reference_agent.backends.databricks.config import DatabricksSettings, make_workspace_client
        from reference_agent.backends.databricks.errors import DatabricksConfigError
        from reference_agent.storage.databricks_engine import DatabricksSqlEngine

        rest = SCHEME.sub("", spec)
        name, _, query = rest.partition("?")
        catalog, dot, schema = name.strip("/").partition(".")
        if not dot or not _NAME.match(catalog) or not _NAME.match(schema):
            raise StoreError(f"STORE {spec!r}: a Databricks store is databricks://CATALOG.SCHEMA (plain "
                             f"identifiers), e.g. databricks://main.rlm.")
        options = dict(urllib.parse.parse_qsl(query))
        settings = DatabricksSettings.from_env(env).with_overrides(catalog=catalog, schema=schema)
        if options.get("warehouse"):
            settings = settings.with_overrides(warehouse_id=options["warehouse"])
        self.where = f"databricks://{catalog}.{schema}"
        try:
            settings.require("sql")
            client = make_workspace_client(settings, hermetic=False)
        except DatabricksConfigError as exc:
            raise StoreError(f"STORE {self.where}: {exc}") from None
        self.engine = DatabricksSqlEngine(client, settings.warehouse_id or "", catalog=catalog, schema=schema,
                                          timeout_s=settings.sql_timeout_s, warehouse_wait_s=settings.warehouse_wait_s)

    def rows(self, sql: str, params: Mapping[str, Any]) -> list[tuple]:
        from reference_agent.backends.databricks.errors import DatabricksBackendError

        try:
            return self.engine.execute(sql, dict(params))
        except DatabricksBackendError as exc:
            raise StoreError(f"{self.where}: a read failed ({exc}). Statement: {sql[:200]}") from None

    def columns(self, table: str) -> tuple[str, ...] | None:
        from reference_agent.backends.databricks.errors import DatabricksBackendError, DatabricksSqlError

        try:
            described = self.engine.execute(f"DESCRIBE TABLE {table}")
        except DatabricksSqlError:
            return None  # TABLE_OR_VIEW_NOT_FOUND
        except DatabricksBackendError as exc:  # auth, timeout: the store cannot be read at all
            raise StoreError(f"{self.where}: cannot describe table {table} ({exc}).") from None
        names = []
        for row in described:
            name = str(row[0] or "").strip()
            if not name or name.startswith("#"):  # the partition section starts after a blank/"#" line
                break
            names.append(name.lower())
        return tuple(names)

    def close(self) -> None:
        self.engine.close()
