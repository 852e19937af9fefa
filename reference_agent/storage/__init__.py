"""SQL storage: one interface, written-once SQL, engines per backend.

The engines are imported on first use (PEP 562): ``reference_agent.storage.sql``'s errors are read by modules
that never open a store (the CLI's argument parser among them), and ``duckdb`` alone costs ~0.15 s to import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .dialect import DATABRICKS, DUCKDB, Dialect
    from .duckdb_engine import DatabaseLockedError, DuckDBEngine
    from .sql import DuplicateKeyError, SqlEngine, WriteConflictError, affected_rows, ensure_tables, ensure_unique_keys

_WHERE = {"DATABRICKS": "dialect", "DUCKDB": "dialect", "Dialect": "dialect",
          "DatabaseLockedError": "duckdb_engine", "DuckDBEngine": "duckdb_engine",
          "DuplicateKeyError": "sql", "SqlEngine": "sql", "WriteConflictError": "sql", "affected_rows": "sql",
          "ensure_tables": "sql", "ensure_unique_keys": "sql"}
__all__ = ["DATABRICKS", "DUCKDB", "DatabaseLockedError", "Dialect", "DuckDBEngine", "DuplicateKeyError", "SqlEngine",
           "WriteConflictError", "affected_rows", "ensure_tables", "ensure_unique_keys"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
