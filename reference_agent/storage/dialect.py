"""The one place where SQL dialects differ.

Every statement in the project is written once, in the subset Databricks SQL
and DuckDB share, with ``:name`` parameter markers. A ``Dialect`` turns that
text into what one engine accepts and renders ``CREATE TABLE``; nothing else
in the code base may branch on the engine.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Logical column types used in DDL. ``JSON`` is a string column holding JSON
# text: neither engine's native JSON/VARIANT type is portable.
LOGICAL_TYPES = ("STRING", "BIGINT", "DOUBLE", "BOOLEAN", "TIMESTAMP", "JSON")

# A ``:name`` marker that is not part of a ``::`` cast. Quoted literals and
# identifiers ('...', "...", `...`) are matched first and kept as they are, so a
# colon inside quotes is never a marker.
_TOKEN = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`|(?<!:):([A-Za-z_][A-Za-z0-9_]*)\b""")


@functools.lru_cache(maxsize=512)  # the same few statements run over and over (an append is two)
def _translate(param_prefix: str, sql: str) -> tuple[str, tuple[str, ...]]:
    names: list[str] = []

    def repl(match: re.Match[str]) -> str:
        if match.group(1) is None:  # a string literal
            return match.group(0)
        names.append(match.group(1))
        return param_prefix + match.group(1)

    return _TOKEN.sub(repl, sql), tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class Dialect:
    name: str
    # Prefix the engine uses for a named parameter (":" for Databricks, "$" for DuckDB).
    param_prefix: str
    # Appended to CREATE TABLE, e.g. "USING DELTA".
    create_table_suffix: str = ""
    type_names: dict[str, str] = field(default_factory=lambda: {"JSON": "STRING"})
    # How the engine lists tables' columns (``list_columns``): "information_schema" (standard; skips missing
    # tables) or "pragma" (DuckDB's pragma_table_info, per existing table).
    columns_from: str = "information_schema"
    # Whether the engine enforces a UNIQUE index (DuckDB: yes; Delta: PRIMARY KEY/UNIQUE are at most
    # informational, never enforced). Where it does, tables get one on their key (``unique_index``).
    unique_indexes: bool = False

    def translate(self, sql: str) -> tuple[str, tuple[str, ...]]:
        """``sql`` with markers in this dialect's style, and the parameter names it uses."""
        return _translate(self.param_prefix, sql)

    def bind(self, sql: str, params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
        """``translate``, plus the values of the parameters the statement uses (in order), each required."""
        text, names = self.translate(sql)
        params = params or {}
        missing = [n for n in names if n not in params]
        if missing:
            raise KeyError(f"SQL parameter(s) {', '.join(missing)} not supplied for: {sql.strip()[:200]}")
        return text, {n: params[n] for n in names}

    def column_type(self, logical: str) -> str:
        if logical not in LOGICAL_TYPES:
            raise ValueError(f"unknown column type {logical!r}; use one of {', '.join(LOGICAL_TYPES)}")
        return self.type_names.get(logical, logical)

    def list_columns(self, tables: Sequence[str]) -> str:
        """``(table, column)`` rows, lower case, of ``tables`` in the current schema (with "pragma": each table
        must exist, as it does after ``ensure_tables``)."""
        if self.columns_from == "pragma":
            return " UNION ALL ".join(f"SELECT '{table.lower()}', lower(name) FROM pragma_table_info('{table}')"
                                      for table in tables)
        names = ", ".join(f"'{table}'" for table in tables)
        return ("SELECT lower(table_name), lower(column_name) FROM information_schema.columns"
                f" WHERE table_schema = current_schema() AND lower(table_name) IN ({names})")

    def create_table(self, table: str, columns: Sequence[tuple[str, str]]) -> str:
        """Idempotent DDL for ``table`` from ``(column, logical type)`` pairs.

        No PRIMARY KEY or UNIQUE here: Delta does not enforce them, so the storage
        code guarantees uniqueness itself (MERGE, compare-and-set updates) and
        behaves the same on both engines; where the engine can enforce a key,
        ``unique_index`` adds one as a second line.
        """
        cols = ",\n  ".join(f"{name} {self.column_type(logical)}" for name, logical in columns)
        suffix = f" {self.create_table_suffix}" if self.create_table_suffix else ""
        return f"CREATE TABLE IF NOT EXISTS {table} (\n  {cols}\n){suffix}"

    def unique_index(self, table: str, columns: Sequence[str]) -> str | None:
        """Idempotent DDL making ``columns`` a unique key of ``table``; None where the engine cannot enforce one."""
        if not self.unique_indexes:
            return None
        return f"CREATE UNIQUE INDEX IF NOT EXISTS {table}_key ON {table} ({', '.join(columns)})"


# pragma_table_info answers in ~1 ms; DuckDB's catalog views (information_schema, duckdb_columns()) take 25-45 ms
# on a connection's first use, which every scenario's fresh store paid on start.
DUCKDB = Dialect(name="duckdb", param_prefix="$", columns_from="pragma", unique_indexes=True)
DATABRICKS = Dialect(name="databricks", param_prefix=":", create_table_suffix="USING DELTA")
