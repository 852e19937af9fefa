"""SQL storage: one interface, written-once SQL, engines per backend."""

from .dialect import DATABRICKS, DUCKDB, Dialect
from .duckdb_engine import DatabaseLockedError, DuckDBEngine
from .sql import SqlEngine, WriteConflictError, affected_rows, ensure_tables

__all__ = ["DATABRICKS", "DUCKDB", "DatabaseLockedError", "Dialect", "DuckDBEngine", "SqlEngine", "WriteConflictError",
           "affected_rows", "ensure_tables"]
