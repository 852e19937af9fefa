"""DuckDB, embedded: the default SQL engine (a file, or memory for tests)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from .dialect import DUCKDB, Dialect


_HOLDER = re.compile(r"held in (?P<exe>.+?) \(PID (?P<pid>\d+)\)")


class DatabaseLockedError(RuntimeError):
    """Another process holds the DuckDB file: DuckDB lets one process open a file for writing at a time."""

    def __init__(self, path: Path, duckdb_message: str) -> None:
        holder = _HOLDER.search(duckdb_message)
        self.path = path
        self.pid = int(holder.group("pid")) if holder else None
        self.executable = holder.group("exe") if holder else None
        who = f"process {self.pid} ({self.executable})" if holder else "another process"
        super().__init__(
            f"DuckDB database {path} is in use by {who}: DuckDB allows one process per database file. "
            "Wait for that process to finish, or give this run its own database — rlm-agent: "
            "`rlm-agent demo --home DIR`, or RLM_HOME=DIR for `rlm-agent ask`; the harness and tests: a "
            "separate home/tmp folder — or use the in-memory engine (DuckDBEngine(None) / "
            f"DeltaSessionService.duckdb(None)). DuckDB said: {duckdb_message}"
        )


class DuckDBEngine:
    """One DuckDB connection guarded by a re-entrant lock.

    A DuckDB connection must not be used by two threads at once, so every
    statement, and every transaction as a whole, holds the lock. The lock is
    re-entrant so statements inside ``transaction()`` (same thread) pass.
    """

    dialect: Dialect = DUCKDB
    # transaction() is atomic: the session service needs no redo record here.
    transactional = True
    # Every statement and transaction holds the lock: callers may run them from worker threads.
    thread_safe = True

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None or str(path) == ":memory:":
            self.path: Path | None = None
            self._conn = duckdb.connect(":memory:")
        else:
            self.path = Path(path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._conn = duckdb.connect(str(self.path))
            except duckdb.IOException as exc:
                if "Could not set lock" not in str(exc):
                    raise
                raise DatabaseLockedError(self.path, str(exc)) from exc
        self._lock = threading.RLock()
        self._tx_depth = 0  # only touched while holding the lock

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        # Only the parameters the statement uses: DuckDB rejects the others.
        text, bound = self.dialect.bind(sql, params)
        with self._lock:
            cursor = self._conn.execute(text, bound) if bound else self._conn.execute(text)
            return cursor.fetchall() if cursor.description is not None else []

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            if self._tx_depth:  # nested: join the outer transaction
                self._tx_depth += 1
                try:
                    yield
                finally:
                    self._tx_depth -= 1
                return
            self._conn.execute("BEGIN TRANSACTION")
            self._tx_depth = 1
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._tx_depth = 0

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "DuckDBEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DuckDBEngine({str(self.path) if self.path else ':memory:'!r})"
