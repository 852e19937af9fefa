"""SQL storage: one interface, written-once SQL, engines per backend."""

from .dialect import DATABRICKS, DUCKDB, Dialect
from .duckdb_engine import DatabaseLockedError, DuckDBEngine
from .sql import DuplicateKeyError, SqlEngine, WriteConflictError, affected_rows, ensure_tables, ensure_unique_keys

__all__ = ["DATABRICKS", "DUCKDB", "DatabaseLockedError", "Dialect", "DuckDBEngine", "DuplicateKeyError", "SqlEngine",
           "WriteConflictError", "affected_rows", "ensure_tables", "ensure_unique_keys"]
