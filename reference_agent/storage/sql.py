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

