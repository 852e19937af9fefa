"""Databricks SQL as a ``SqlEngine``: the Statement Execution API on a SQL warehouse.

The SQL is the project's written-once SQL; the ``DATABRICKS`` dialect keeps
its ``:name`` markers and adds ``USING DELTA`` to DDL. Each ``execute`` is one
``POST /api/2.0/sql/statements`` (INLINE, JSON_ARRAY, ``wait_timeout``, then
``on_wait_timeout=CONTINUE``), polled with backoff while PENDING/RUNNING, and
its result chunks fetched by ``next_chunk_index``. Values arrive as strings
and are converted by the manifest's column types. A result over the 25 MiB
INLINE limit fails the statement; it is then run again with
``EXTERNAL_LINKS`` and read from cloud storage (``databricks_links.py``).

Two waits, set apart: a statement is PENDING while the warehouse starts (or
queues it), which can take minutes on a stopped classic warehouse —
``warehouse_wait_s`` (``RLM_DATABRICKS_WAREHOUSE_WAIT_S``), with a progress
message every ``progress_every_s`` to ``on_wait`` (default: this module's
logger at INFO) saying what it waits for and for how long; once RUNNING, the
statement itself has ``timeout_s`` (``RLM_DATABRICKS_SQL_TIMEOUT_S``). Either
running out cancels the statement and names its setting.

**``transaction()`` is a no-op.** The Statement Execution API runs each
statement on its own; there is no multi-statement transaction to open. The
storage code does not rely on one: every write that must not race is a
compare-and-set ``UPDATE ... WHERE version = :expected`` or an insert-if-absent
``MERGE``, checked through its ``num_affected_rows``.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import BadRequest, DatabricksError, NotFound
from databricks.sdk.service.sql import (
    Disposition,
    ExecuteStatementRequestOnWaitTimeout,
    Format,
    StatementParameterListItem,
    StatementResponse,
    StatementState,
)

from reference_agent.backends.databricks.errors import (
    DatabricksConfigError,
    DatabricksSqlError,
    DatabricksTimeoutError,
    DatabricksWriteConflictError,
    translate,
)
from reference_agent.backends.databricks.polling import Backoff

from .databricks_links import INLINE_LIMIT_EXCEEDED, external_rows
from .dialect import DATABRICKS, Dialect

_WAITING = (StatementState.PENDING, StatementState.RUNNING)
DEFAULT_BACKOFF = Backoff(initial_s=0.25, factor=1.5, max_s=5.0)
logger = logging.getLogger(__name__)


def _bool(text: str) -> bool:
    return text.strip().lower() == "true"


_CONVERTERS: dict[str, Callable[[str], Any]] = {
    "LONG": int, "INT": int, "SHORT": int, "BYTE": int,
    "DOUBLE": float, "FLOAT": float,
    "DECIMAL": decimal.Decimal,
    "BOOLEAN": _bool,
    "DATE": datetime.date.fromisoformat,
    "TIMESTAMP": datetime.datetime.fromisoformat,
    "NULL": lambda _: None,
}


def parameter(name: str, value: Any) -> StatementParameterListItem:
    """One named parameter, typed. None is a NULL (no value) of type STRING, the API's default type."""
    if value is None:
        return StatementParameterListItem(name=name, type="STRING")
    if isinstance(value, bool):
        return StatementParameterListItem(name=name, type="BOOLEAN", value="true" if value else "false")
    if isinstance(value, int):
        return StatementParameterListItem(name=name, type="BIGINT", value=str(value))
    if isinstance(value, float):
        return StatementParameterListItem(name=name, type="DOUBLE", value=repr(value))
    if isinstance(value, str):
        return StatementParameterListItem(name=name, type="STRING", value=value)
    raise TypeError(f"SQL parameter :{name} is a {type(value).__name__}; pass str, int, float, bool or None "
                    "(serialize anything else, e.g. JSON text for JSON columns)")


class DatabricksSqlEngine:
    dialect: Dialect = DATABRICKS

    def __init__(
        self,
        client: WorkspaceClient,
        warehouse_id: str,
        *,
        catalog: str | None = None,
        schema: str | None = None,
        timeout_s: float = 300.0,
        warehouse_wait_s: float = 600.0,
        progress_every_s: float = 15.0,
        on_wait: Callable[[str], None] | None = None,
        wait_timeout: str = "10s",
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.warehouse_id = warehouse_id
        self.catalog = catalog
        self.schema = schema
        self.timeout_s = timeout_s  # a RUNNING statement's limit
        self.warehouse_wait_s = warehouse_wait_s  # how long a statement may stay PENDING (warehouse starting)
        self.progress_every_s = progress_every_s
        self._on_wait = on_wait or logger.info
        self.wait_timeout = wait_timeout
        self.backoff = backoff
        self._sleep = sleep
        self._clock = clock

    # --- SqlEngine ---------------------------------------------------------------

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        text, bound = self.dialect.bind(sql, params)
        parameters = [parameter(n, value) for n, value in bound.items()]
        try:
            response = self._statement(text, parameters, Disposition.INLINE)
        except DatabricksSqlError as exc:
            if INLINE_LIMIT_EXCEEDED not in str(exc):
                raise
            # Documented: an INLINE result over 25 MiB aborts the statement, leaving no result; only a query can
            # produce one, so running it again for external links (chunks fetched from cloud storage) is safe.
            logger.info("SQL result over the INLINE limit; fetching it through EXTERNAL_LINKS: %s", text[:120])
            response = self._statement(text, parameters, Disposition.EXTERNAL_LINKS)
        return list(self._rows(response, text))

    def _statement(self, text: str, parameters: list[StatementParameterListItem],
                   disposition: Disposition) -> StatementResponse:
        """One statement, run to its end (``_wait``)."""
        api = self.client.statement_execution
        started = self._clock()
        try:
            response = api.execute_statement(
                statement=text,
                warehouse_id=self.warehouse_id,
                catalog=self.catalog,
                schema=self.schema,
                parameters=parameters or None,
                disposition=disposition,
                format=Format.JSON_ARRAY,
                wait_timeout=self.wait_timeout,
                on_wait_timeout=ExecuteStatementRequestOnWaitTimeout.CONTINUE,
            )
        except DatabricksError as exc:
            # 404, or a 400 that names the warehouse: the id in the settings is wrong.
            if isinstance(exc, NotFound) or (isinstance(exc, BadRequest) and "warehouse" in str(exc).lower()):
                raise DatabricksConfigError(
                    f"SQL warehouse {self.warehouse_id!r} was not found ({exc}): set DATABRICKS_WAREHOUSE_ID "
                    "(or --databricks-warehouse-id) to an existing warehouse id (SQL Warehouses -> Connection details)"
                ) from exc
            raise translate(exc, "executing a SQL statement") from exc
        return self._wait(response, text, started=started)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A no-op: see the module docstring (compare-and-set writes stand in for transactions)."""
        yield

    def close(self) -> None:
        """Nothing to release: each statement is one HTTP exchange; the client belongs to the caller."""

    # --- internals -----------------------------------------------------------------

    def _wait(self, response: StatementResponse, text: str, *, started: float | None = None) -> StatementResponse:
        started = self._clock() if started is None else started
        next_report = started + self.progress_every_s
        running_deadline: float | None = None  # timeout_s from the first poll that sees it RUNNING
        delays = self.backoff.delays()
        api = self.client.statement_execution
        while _state(response) in _WAITING:
            now = self._clock()
            if _state(response) is StatementState.PENDING:
                waited = now - started
                if waited >= self.warehouse_wait_s:
                    self._cancel(response.statement_id)
                    raise DatabricksTimeoutError(
                        f"SQL warehouse {self.warehouse_id!r} did not start: the statement stayed PENDING for "
                        f"{waited:.0f} s (the limit is {self.warehouse_wait_s:g} s) and was cancelled. Start the "
                        "warehouse (SQL Warehouses -> Start) and retry, or wait longer for it: "
                        "RLM_DATABRICKS_WAREHOUSE_WAIT_S / --databricks-warehouse-wait (seconds)"
                    )
                if now >= next_report:
                    self._on_wait(
                        f"waiting for SQL warehouse {self.warehouse_id!r} to start (or to take the statement off "
                        f"its queue): statement {response.statement_id} PENDING for {waited:.0f} s, giving up after "
                        f"{self.warehouse_wait_s:g} s (RLM_DATABRICKS_WAREHOUSE_WAIT_S)")
                    next_report = now + self.progress_every_s
            else:
                running_deadline = now + self.timeout_s if running_deadline is None else running_deadline
                if now >= running_deadline:
                    self._cancel(response.statement_id)
                    raise DatabricksTimeoutError(
                        f"SQL statement still RUNNING after {self.timeout_s:g} s on warehouse {self.warehouse_id!r} "
                        "and was cancelled (raise RLM_DATABRICKS_SQL_TIMEOUT_S / --databricks-sql-timeout if it is "
                        f"expected): {text.strip()[:200]}"
                    )
            self._sleep(next(delays))
            try:
                response = api.get_statement(response.statement_id)
            except DatabricksError as exc:
                raise translate(exc, f"polling SQL statement {response.statement_id}") from exc
        state = _state(response)
        if state is StatementState.SUCCEEDED:
            return response
        error = response.status.error if response.status else None
        code = error.error_code.value if error and error.error_code else "UNKNOWN"
        message = error.message if error and error.message else "(no message)"
        sql_state = f", SQLSTATE {response.status.sql_state}" if response.status and response.status.sql_state else ""
        verb = {StatementState.FAILED: "failed", StatementState.CANCELED: "was canceled",
                StatementState.CLOSED: "was closed before its result was read"}.get(state, f"ended {state}")
        text_of_error = (f"Databricks SQL statement {verb} ({code}{sql_state}): {message}\n"
                         f"  statement: {text.strip()[:300]}")
        conflict = write_conflict_class(message, response.status.sql_state if response.status else None)
        if state is StatementState.FAILED and conflict:
            raise DatabricksWriteConflictError(text_of_error, error_class=conflict)
        raise DatabricksSqlError(text_of_error)

    def _cancel(self, statement_id: str | None) -> None:
        if not statement_id:
            return
        try:
            self.client.statement_execution.cancel_execution(statement_id)
        except DatabricksError:
            pass  # best effort: the timeout error is what the caller needs to see

    def _rows(self, response: StatementResponse, text: str) -> Iterator[tuple]:
        manifest = response.manifest
        if manifest is not None and manifest.truncated:
            # We set no row_limit or byte_limit; EXTERNAL_LINKS results are cut at 100 GiB.
            raise DatabricksSqlError("the statement's result was truncated (over the 100 GiB EXTERNAL_LINKS "
                                     f"limit); select fewer rows or columns: {text.strip()[:200]}")
        columns = (manifest.schema.columns if manifest and manifest.schema and manifest.schema.columns else []) or []
        converters = [_CONVERTERS.get(c.type_name.value if c.type_name else "", str) for c in columns]

        def typed(raw: list[Any]) -> tuple:
            return tuple(None if v is None else (converters[i](v) if i < len(converters) else v)
                         for i, v in enumerate(raw))

        chunk = response.result
        if chunk is not None and chunk.external_links:  # EXTERNAL_LINKS (INLINE results have none)
            for raw in external_rows(self.client, response.statement_id or "", chunk):
                yield typed(raw)
            return
        while chunk is not None:
            for raw in chunk.data_array or []:
                yield typed(raw)
            if chunk.next_chunk_index is None:
                break
            try:
                chunk = self.client.statement_execution.get_statement_result_chunk_n(
                    response.statement_id, chunk.next_chunk_index)
            except DatabricksError as exc:
                doing = f"fetching result chunk {chunk.next_chunk_index} of {response.statement_id}"
                raise translate(exc, doing) from exc

    def __repr__(self) -> str:
        where = ".".join(p for p in (self.catalog, self.schema) if p)
        return f"DatabricksSqlEngine(warehouse={self.warehouse_id!r}{', ' + where if where else ''})"


# Delta's concurrent-modification errors ("Isolation levels and write conflicts on Databricks"): the message
# starts with the error class (optionally with a sub-class, e.g. DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT);
# older runtimes name the Java exception instead. All of them share SQLSTATE class 2D521.
_CONFLICT_CLASS = re.compile(r"^\s*\[(DELTA_CONCURRENT_[A-Z_]+|DELTA_METADATA_CHANGED|DELTA_PROTOCOL_CHANGED)(?:\.[A-Z_]+)?\]")
_CONFLICT_EXCEPTIONS = {
    "ConcurrentAppendException": "DELTA_CONCURRENT_APPEND",
    "ConcurrentDeleteReadException": "DELTA_CONCURRENT_DELETE_READ",
    "ConcurrentDeleteDeleteException": "DELTA_CONCURRENT_DELETE_DELETE",
    "ConcurrentTransactionException": "DELTA_CONCURRENT_TRANSACTION",
    "ConcurrentWriteException": "DELTA_CONCURRENT_WRITE",
    "MetadataChangedException": "DELTA_METADATA_CHANGED",
    "ProtocolChangedException": "DELTA_PROTOCOL_CHANGED",
}
CONFLICT_SQLSTATE = "2D521"


def write_conflict_class(message: str, sql_state: str | None) -> str | None:
    """The Delta conflict class a FAILED statement's error names, or None if it is another error."""
    match = _CONFLICT_CLASS.match(message or "")
    if match:
        return match.group(1)
    for exception, error_class in _CONFLICT_EXCEPTIONS.items():
        if exception in (message or ""):
            return error_class
    return "DELTA_CONCURRENT_MODIFICATION" if sql_state == CONFLICT_SQLSTATE else None


def _state(response: StatementResponse) -> StatementState | None:
    return response.status.state if response.status else None
