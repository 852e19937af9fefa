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
from .sql import DuplicateKeyError, WriteConflictError


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


class _Handle:
    """One DuckDB connection, its lock and its transaction depth: shared by every engine on one file in a process."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, path: Path | None, shared: bool) -> None:
        self.conn = conn
        self.path = path
        self.shared = shared  # opened on _SharedInstance (the file ATTACHed there)
        self.lock = threading.RLock()
        self.tx_depth = 0  # only touched while holding the lock
        self.users = 1  # engines open on it (changed under _FILES_LOCK)


# resolved file -> its one handle. Two connections to one file in a process are two transactions that race: DuckDB
# detects some of it ("Conflict on update!") and not the rest (two MERGE insert-if-absent of one key both insert,
# where the table has no unique index). One connection whose lock every statement and transaction holds makes the
# engines on a file take turns, as the statements of one engine always did.
_FILES: dict[Path, _Handle] = {}
_FILES_LOCK = threading.Lock()


def _open_file(path: Path, *, shared_instance: bool) -> _Handle:
    key = path.resolve()
    with _FILES_LOCK:
        handle = _FILES.get(key)
        if handle is not None:
            handle.users += 1
            return handle
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if shared_instance:
                conn = _SharedInstance.open(path)
            else:
                conn = duckdb.connect(str(path))
                conn.execute(_SET_THREADS)  # the instance's setting (the shared one has it)
        except duckdb.IOException as exc:
            if "Could not set lock" not in str(exc):
                raise
            raise DatabaseLockedError(path, str(exc)) from exc
        handle = _FILES[key] = _Handle(conn, key, shared_instance)
        return handle


def _release(handle: _Handle) -> None:
    with _FILES_LOCK:
        handle.users -= 1
        if handle.users:
            return
        if handle.path is not None:
            _FILES.pop(handle.path, None)
    with handle.lock:
        handle.conn.close()
    if handle.shared and handle.path is not None:
        _SharedInstance.close(handle.path)


def _conflict(exc: duckdb.Error, *, in_transaction: bool) -> WriteConflictError | None:
    """The ``WriteConflictError`` for a DuckDB error that reports a race with another connection, else None.

    ``retryable`` is False inside a transaction: DuckDB has aborted it, so only the whole transaction can run again.
    """
    text = str(exc)
    if isinstance(exc, duckdb.ConstraintException) and ("Duplicate key" in text or "contains duplicates" in text) or (
            isinstance(exc, duckdb.TransactionException) and "duplicate key" in text):
        return DuplicateKeyError(f"DuckDB refused a duplicate key: {text}", error_class="DUCKDB_DUPLICATE_KEY",
                                 retryable=not in_transaction)
    if isinstance(exc, duckdb.TransactionException) and "Conflict" in text:
        return WriteConflictError(f"DuckDB write conflict: {text}", error_class="DUCKDB_TRANSACTION_CONFLICT",
                                  retryable=not in_transaction)
    return None


class DuckDBEngine:
    """A DuckDB connection guarded by a re-entrant lock, one per file per process.

    A DuckDB connection must not be used by two threads at once, so every
    statement, and every transaction as a whole, holds the lock. The lock is
    re-entrant so statements inside ``transaction()`` (same thread) pass.

    **One per file.** Engines opened on the same file in one process (two services of one server, a service built
    per request) share one connection and its lock (``handle``), counted, closed with the last engine. The first
    opener's ``shared_instance`` holds for the file while it is open. Sharing rather than refusing the second open:
    the engines then take turns exactly as one engine's callers do, and a second app in a process just works.

    **Conflicts** DuckDB reports against another connection to the file (a user's own ``duckdb.connect`` in the
    process) are raised as ``WriteConflictError`` (a duplicate key: ``DuplicateKeyError``), never as DuckDB's own
    exceptions; inside a transaction they are not ``retryable`` (DuckDB aborted it).

    ``shared_instance=True`` opens a file on the process's shared DuckDB instance (``_SharedInstance``) rather
    than starting one for it: for processes that open many stores one after another.
    """

    dialect: Dialect = DUCKDB
    # transaction() is atomic: the session service needs no redo record here.
    transactional = True
    # Every statement and transaction holds the lock: callers may run them from worker threads.
    thread_safe = True

    def __init__(self, path: str | Path | None = None, *, shared_instance: bool = False) -> None:
        self._closed = False
        if path is None or str(path) == ":memory:":
            self.path: Path | None = None
            conn = duckdb.connect(":memory:")
            conn.execute(_SET_THREADS)
            self.handle = _Handle(conn, None, False)
        else:
            self.path = Path(path)
            self.handle = _open_file(self.path, shared_instance=shared_instance)

    @property
    def _conn(self) -> duckdb.DuckDBPyConnection:
        return self.handle.conn

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        # Only the parameters the statement uses: DuckDB rejects the others.
        text, bound = self.dialect.bind(sql, params)
        handle = self.handle
        with handle.lock:
            try:
                cursor = handle.conn.execute(text, bound) if bound else handle.conn.execute(text)
                return cursor.fetchall() if cursor.description is not None else []
            except duckdb.Error as exc:
                conflict = _conflict(exc, in_transaction=bool(handle.tx_depth))
                if conflict is None:
                    raise
                raise conflict from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        handle = self.handle
        with handle.lock:
            if handle.tx_depth:  # nested: join the outer transaction
                handle.tx_depth += 1
                try:
                    yield
                finally:
                    handle.tx_depth -= 1
                return
            handle.conn.execute("BEGIN TRANSACTION")
            handle.tx_depth = 1
            try:
                yield
            except BaseException:
                handle.conn.execute("ROLLBACK")
                raise
            else:
                try:
                    handle.conn.execute("COMMIT")
                except duckdb.Error as exc:  # DuckDB checks some conflicts (a duplicate key) at commit
                    conflict = _conflict(exc, in_transaction=True)
                    if conflict is None:
                        raise
                    raise conflict from exc
            finally:
                handle.tx_depth = 0

    def close(self) -> None:
        if self._closed:
            return  # a second close() is a no-op, as a connection's is
        self._closed = True
        if self.path is None:
            with self.handle.lock:
                self.handle.conn.close()
            return
        _release(self.handle)

    def __enter__(self) -> "DuckDBEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DuckDBEngine({str(self.path) if self.path else ':memory:'!r})"
