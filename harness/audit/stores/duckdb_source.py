"""A DuckDB file as a read-only ``SqlSource``: ``duckdb.connect(path, read_only=True)``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import StoreError

_MARKER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class DuckDbSource:
    def __init__(self, path: Path, *, where: str | None = None) -> None:
        import duckdb

        self.where = where or str(path)
        if not path.is_file():
            raise StoreError(f"STORE {self.where}: no such DuckDB file {path}.")
        try:
            self.connection = duckdb.connect(str(path), read_only=True)
        except duckdb.Error as exc:
            raise StoreError(f"STORE {self.where}: DuckDB cannot open it read-only ({exc}). A process that holds "
                             f"it open for writing locks it: audit a copy, or stop that process.") from None

    def rows(self, sql: str, params: Mapping[str, Any]) -> list[tuple]:
        import duckdb

        try:
            return self.connection.execute(_MARKER.sub(r"$\1", sql), dict(params)).fetchall()
        except duckdb.Error as exc:
            raise StoreError(f"{self.where}: a read failed ({exc}). Statement: {sql[:200]}") from None

    def columns(self, table: str) -> tuple[str, ...] | None:
        found = self.connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = $t ORDER BY ordinal_position", {"t": table}).fetchall()
        return tuple(str(name).lower() for (name,) in found) or None

    def close(self) -> None:
        self.connection.close()


def is_duckdb_file(path: Path) -> bool:
    """DuckDB's file header: 8 bytes of checksum, then the magic ``DUCK``."""
    try:
        with path.open("rb") as handle:
            return handle.read(12)[8:12] == b"DUCK"
    except OSError:
        return False


def is_sqlite_file(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False
