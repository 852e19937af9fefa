"""The SQL engine interface shared by the session service and the artifact registry.

SQL is written once, with ``:name`` markers, in a form both DuckDB and
Databricks SQL accept: types STRING/BIGINT/DOUBLE/BOOLEAN/TIMESTAMP; no
SERIAL/AUTOINCREMENT, no RETURNING; upserts via MERGE and concurrency via
compare-and-set UPDATEs whose affected-row count is checked. Unique keys are
enforced where the dialect can (``Dialect.unique_indexes``: DuckDB), as a
second line behind the MERGEs; Delta does not enforce them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from .dialect import Dialect

logger = logging.getLogger(__name__)


class WriteConflictError(RuntimeError):
    """A write lost a race with a concurrent writer and was not applied (Delta's ``DELTA_CONCURRENT_*``).

    ``error_class`` is the engine's class for it, e.g. ``DELTA_CONCURRENT_APPEND``. The statement did not
    commit, so running it again is safe when its own guard re-checks (a compare-and-set, an insert-if-absent)
    or when it is idempotent; the session service decides which (see its module docstring).

    ``retryable`` False: the statement ran inside a transaction the engine has aborted (DuckDB), so running the
    statement again cannot help; only the whole transaction can run again.
    """

    def __init__(self, message: str, *, error_class: str, retryable: bool = True) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.retryable = retryable


class DuplicateKeyError(WriteConflictError):
    """A row with the same key as an existing one was refused by the table's unique index (another writer made
    that row first). Only where the engine enforces keys (DuckDB; Delta does not).
    """


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


def ensure_unique_keys(engine: SqlEngine, keys: Mapping[str, Sequence[str]]) -> dict[str, list[tuple]]:
    """Make each ``table: key columns`` a unique key where the engine enforces one (``Dialect.unique_index``).

    Idempotent; call it after ``add_missing_columns``. A table that already holds duplicate keys (rows written
    before the key existed, e.g. by two connections racing) keeps its rows and gets no key: a warning names the
    duplicated keys (up to 5), and the next start tries again. Returns ``{table: [duplicated key, ...]}`` for the
    tables left without their key (empty when every key is in place, and where the engine enforces none).
    """
    left: dict[str, list[tuple]] = {}
    for table, columns in keys.items():
        ddl = engine.dialect.unique_index(table, columns)
        if ddl is None:
            continue
        try:
            engine.execute(ddl)
        except DuplicateKeyError:
            cols = ", ".join(columns)
            duplicated = [tuple(row) for row in engine.execute(
                f"SELECT {cols}, count(*) FROM {table} GROUP BY {cols} HAVING count(*) > 1 ORDER BY {cols} LIMIT 5")]
            left[table] = duplicated
            logger.warning("table %s holds rows with the same key (%s), e.g. %s (key values, then the count): it "
                           "is left without its unique key, so it is not protected against more. Remove the extra "
                           "rows (`rlm-conformance audit STORE` lists them) and restart to add the key.",
                           table, cols, duplicated)
    return left
