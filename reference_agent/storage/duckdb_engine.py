"""DuckDB, embedded: the default SQL engine (a file, or memory for tests)."""

from __future__ import annotations

import itertools
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


# One thread per instance: a store's statements are small (a row, or one session's events), and DuckDB's parallel
# scheduling made them ~30 % slower on 2 cores (an append 6.4 -> 4.5 ms); the one large read, a 10,000-event
# session, takes ~17 ms more of its ~700 ms. A process running scenarios in parallel is already one of N (-j).
# Set after connecting, not as connect(config=...): DuckDB refuses a second connect() of the same file in the
# process whose config differs from the first's, and a user's own duckdb.connect(path) must keep working.
_SET_THREADS = "SET threads = 1"


class _SharedInstance:
    """One in-memory DuckDB instance per process, to which database files are ATTACHed.

    Starting a DuckDB instance costs ~25 ms (an in-memory one as much as a file) and closing a file's ~10 ms;
    attaching a file to a running instance ~3 ms each way. A process that opens many short-lived stores (the
    conformance harness: one per scenario) opens them here. An attached file is the same file: its own WAL,
    checkpointed on DETACH, locked against other processes as ``duckdb.connect`` locks it. Engines on the same
    file share one attachment (counted), as two ``duckdb.connect`` of one path in a process share an instance.
    """

    lock = threading.Lock()
    _conn: duckdb.DuckDBPyConnection | None = None
    _attached: dict[Path, tuple[str, int]] = {}  # resolved file -> (alias, engines open on it)
    _names = itertools.count()

    @classmethod
    def open(cls, path: Path) -> duckdb.DuckDBPyConnection:
        """A new connection (cursor) to the instance, with ``path`` attached and in use."""
        key = path.resolve()
        with cls.lock:
            if cls._conn is None:
                cls._conn = duckdb.connect(":memory:")
                cls._conn.execute(_SET_THREADS)
            alias, users = cls._attached.get(key, ("", 0))
            if not users:  # a fresh alias: a file attached before and detached since may be attached again
                alias = f"store_{next(cls._names)}"
                quoted = str(key).replace("'", "''")
                cls._conn.execute(f"ATTACH '{quoted}' AS {alias}")
            cls._attached[key] = (alias, users + 1)
            cursor = cls._conn.cursor()
        cursor.execute(f"USE {alias}")
        return cursor

    @classmethod
    def close(cls, path: Path) -> None:
        key = path.resolve()
        with cls.lock:
            alias, users = cls._attached[key]
            if users > 1:
                cls._attached[key] = (alias, users - 1)
                return
            del cls._attached[key]
            assert cls._conn is not None
            cls._conn.execute(f"DETACH {alias}")


class DuckDBEngine:
    """One DuckDB connection guarded by a re-entrant lock.

    A DuckDB connection must not be used by two threads at once, so every
    statement, and every transaction as a whole, holds the lock. The lock is
    re-entrant so statements inside ``transaction()`` (same thread) pass.

    ``shared_instance=True`` opens a file on the process's shared DuckDB instance (``_SharedInstance``) rather
    than starting one for it: for processes that open many stores one after another.
    """

    dialect: Dialect = DUCKDB
    # transaction() is atomic: the session service needs no redo record here.
    transactional = True
    # Every statement and transaction holds the lock: callers may run them from worker threads.
    thread_safe = True

    def __init__(self, path: str | Path | None = None, *, shared_instance: bool = False) -> None:
        self._shared = False
        if path is None or str(path) == ":memory:":
            self.path: Path | None = None
            self._conn = duckdb.connect(":memory:")
        else:
            self.path = Path(path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                if shared_instance:
                    self._conn = _SharedInstance.open(self.path)
                    self._shared = True
                else:
                    self._conn = duckdb.connect(str(self.path))
            except duckdb.IOException as exc:
                if "Could not set lock" not in str(exc):
                    raise
                raise DatabaseLockedError(self.path, str(exc)) from exc
        if not self._shared:
            self._conn.execute(_SET_THREADS)  # the instance's setting (the shared one has it)
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
            if self._shared and self.path is not None:
                self._shared = False  # a second close() is a no-op, as a connection's is
                _SharedInstance.close(self.path)

    def __enter__(self) -> "DuckDBEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DuckDBEngine({str(self.path) if self.path else ':memory:'!r})"
