"""SQL storage: one interface, written-once SQL, engines per backend."""

from .dialect import DATABRICKS, DUCKDB, Dialect
from .duckdb_engine import DuckDBEngine
from .sql import SqlEngine, affected_rows, ensure_tables

__all__ = ["DATABRICKS", "DUCKDB", "Dialect", "DuckDBEngine", "SqlEngine", "affected_rows", "ensure_tables"]
