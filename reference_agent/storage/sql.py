"""The SQL engine interface shared by the session service and the artifact registry.

SQL is written once, with ``:name`` markers, in a form both DuckDB and
Databricks SQL accept: types STRING/BIGINT/DOUBLE/BOOLEAN/TIMESTAMP; no
SERIAL/AUTOINCREMENT, no RETURNING, no enforced keys; upserts via MERGE and
concurrency via compare-and-set UPDATEs whose affected-row count is checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from .dialect import Dialect


class WriteConflictError(RuntimeError):
    """A write lost a race with a concurrent writer and was not applied (Delta's ``DELTA_CONCURRENT_*``).

    ``error_class`` is the engine's class for it, e.g. ``DELTA_CONCURRENT_APPEND``. The statement did not
    commit, so running it again is safe when its own guard re-checks (a compare-and-set, an insert-if-absent)
    or when it is idempotent; the session service decides which (see its module docstring).
    """

    def __init__(self, message: str, *, error_class: str) -> None:
        super().__init__(message)
        self.error_class = error_class


@runtime_checkable
class SqlEngine(Protocol):
    dialect: Dialect

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        """Run one statement and return its fetched rows.

        For INSERT/UPDATE/DELETE/MERGE the rows are the engine's DML result;
        read the count with ``affected_rows``.
        """
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """Group statements atomically where the engine can (a no-op where it cannot).

        Callers must not await inside it: the engine is synchronous and a
        transaction holds the engine for its whole duration.
        """
        ...

    def close(self) -> None: ...


def affected_rows(result: Sequence[tuple]) -> int:
    """Rows changed by a DML statement.

    Both DuckDB and Databricks return the count as the first column of the
    first row (Databricks: ``num_affected_rows``).
    """
    if not result or not result[0]:
        return 0
    return int(result[0][0] or 0)


def ensure_tables(engine: SqlEngine, tables: Mapping[str, Sequence[tuple[str, str]]]) -> None:
    """Create each table if missing; safe to call on every start."""
    for table, columns in tables.items():
        engine.execute(engine.dialect.create_table(table, columns))



def add_missing_columns(engine: SqlEngine, tables: Mapping[str, Sequence[tuple[str, str]]]) -> list[str]:
    """Add the columns a table made by an older schema lacks (``ALTER TABLE ... ADD COLUMN``; Delta and DuckDB).

    Added columns are NULL in existing rows, so readers must treat NULL as the column's old meaning. One
    query finds what is missing; returns the ``table.column`` names added. Call it after ``ensure_tables``.
    """
    present: dict[str, set[str]] = {}
    for table, column in engine.execute(engine.dialect.list_columns(list(tables))):
        present.setdefault(table, set()).add(column)
    added = []
    for table, columns in tables.items():
        if table not in present:
            continue  # not created (yet): CREATE TABLE makes it whole
        for column, logical in columns:
            if column.lower() not in present[table]:
                engine.execute(f"ALTER TABLE {table} ADD COLUMN {column} {engine.dialect.column_type(logical)}")
                added.append(f"{table}.{column}")
    return added
