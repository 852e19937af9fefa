"""SQL Statement Execution API of the fake (``/api/2.0/sql/statements``), answered by DuckDB.

Statements arrive in the project's SQL with ``:name`` markers and typed
``parameters``; the fake drops Delta's ``USING DELTA``, turns markers into
DuckDB's ``$name`` (``duckdb_markers``) and runs them on one
in-memory database. Responses follow the REST shapes: ``status.state``,
``manifest`` (``schema.columns[].type_name``, ``chunks``), ``result.data_array``
of strings, ``next_chunk_index`` when a result spans chunks, and DML results
as ``num_affected_rows`` (plus the per-kind columns Databricks returns).

Dispositions as documented: ``INLINE`` results are limited to 25 MiB
(``inline_byte_limit``, smaller in tests; counted here as the compact JSON of
the rows) and a statement over it FAILS with ``BAD_REQUEST`` "Inline byte limit
exceeded ..." and no result; ``EXTERNAL_LINKS`` (``JSON_ARRAY``) answers with
``result.external_links`` per chunk, presigned URLs on the fake's separate
link server (``links.py``), a fresh link each time a chunk is asked for.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import duckdb

from .faults import Faults
from .links import ResultLinks
from .replies import ApiError, Reply, bad_request, ok

PREFIX = "/api/2.0/sql/statements"
INLINE_BYTE_LIMIT = 25 * 1024 * 1024  # "Statements with disposition=INLINE are limited to 25 MiB"
_INLINE_LIMIT_MESSAGE = ("Inline byte limit exceeded. Statements executed with disposition=INLINE can have a result "
                         "size of at most {limit} bytes. Please execute the statement with "
                         "disposition=EXTERNAL_LINKS if you want to download the full result.")
# A ``:name`` marker that is not part of a ``::`` cast. Quoted literals and identifiers ('...', "...", `...`)
# are matched first and kept as they are, so a colon inside quotes is never a marker.
_MARKER = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`|(?<!:):([A-Za-z_][A-Za-z0-9_]*)\b""")
_USING_DELTA = re.compile(r"\)\s*USING\s+DELTA\s*;?\s*$", re.IGNORECASE)
_WAIT = re.compile(r"^(\d+)s$")
_DML_COLUMNS = {
    "INSERT": ("num_affected_rows", "num_inserted_rows"),
    "UPDATE": ("num_affected_rows",),
    "DELETE": ("num_affected_rows",),
    "MERGE": ("num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows"),
}
_DDL = ("CREATE", "DROP", "ALTER", "USE", "SET", "COMMENT")
_TYPES = {  # DuckDB type -> (type_name, type_text)
    "VARCHAR": ("STRING", "STRING"), "BIGINT": ("LONG", "BIGINT"), "INTEGER": ("INT", "INT"),
    "SMALLINT": ("SHORT", "SMALLINT"), "TINYINT": ("BYTE", "TINYINT"), "DOUBLE": ("DOUBLE", "DOUBLE"),
    "FLOAT": ("FLOAT", "FLOAT"), "BOOLEAN": ("BOOLEAN", "BOOLEAN"), "DATE": ("DATE", "DATE"),
    "TIMESTAMP": ("TIMESTAMP", "TIMESTAMP"), "TIMESTAMP WITH TIME ZONE": ("TIMESTAMP", "TIMESTAMP"),
    '"NULL"': ("NULL", "VOID"), "HUGEINT": ("DECIMAL", "DECIMAL(38,0)"),
}
_PARAM_TYPES = {"STRING": str, "BIGINT": int, "INT": int, "LONG": int, "SMALLINT": int, "TINYINT": int,
                "DOUBLE": float, "FLOAT": float, "BOOLEAN": lambda v: v.strip().lower() == "true"}


@dataclass
class _Statement:
    statement_id: str
    sql: str
    parameters: list[dict[str, Any]]
    state: str = "PENDING"
    polls_left: int = 0
    error: dict[str, Any] | None = None
    manifest: dict[str, Any] | None = None
    chunks: list[dict[str, Any]] = field(default_factory=list)
    disposition: str = "INLINE"
    linked: Callable[[int], dict[str, Any]] | None = None  # EXTERNAL_LINKS: chunk index -> {"external_links": [...]}

    def chunk(self, index: int) -> dict[str, Any]:
        return self.linked(index) if self.linked is not None else self.chunks[index]

    def response(self) -> dict[str, Any]:
        status: dict[str, Any] = {"state": self.state}
        if self.error:
            status["error"] = {k: v for k, v in self.error.items() if k != "sql_state"}
            status["sql_state"] = self.error.get("sql_state", "42000")
        body: dict[str, Any] = {"statement_id": self.statement_id, "status": status}
        if self.state == "SUCCEEDED":
            body["manifest"] = self.manifest
            body["result"] = self.chunk(0)
        return body


class SqlApi:
    def __init__(self, faults: Faults, warehouses: set[str], chunk_rows: int, *, links: ResultLinks | None = None,
                 inline_byte_limit: int = INLINE_BYTE_LIMIT) -> None:
        self.faults = faults
        self.warehouses = warehouses
        self.chunk_rows = max(1, chunk_rows)
        self.links = links
        self.inline_byte_limit = inline_byte_limit  # set it any time (tests use a small one)
        self.conn = duckdb.connect(":memory:")
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self.statements: dict[str, _Statement] = {}
        self._conflicts_fired: dict[str, int] = {}

    def close(self) -> None:
        with self._lock:
            self.conn.close()
            self.statements.clear()

    def handle(self, method: str, path: str, body: dict[str, Any]) -> Reply:
        with self._lock:  # one statement at a time, like one DuckDB connection can take
            return self._handle(method, path, body)

    def _handle(self, method: str, path: str, body: dict[str, Any]) -> Reply:
        rest = path[len(PREFIX):].strip("/").split("/") if path != PREFIX else []
        if method == "POST" and not rest:
            return ok(self._execute(body))
        if not rest or rest[0] not in self.statements:
            raise ApiError(404, "NOT_FOUND", f"Statement {rest[0] if rest else ''} not found.")
        statement = self.statements[rest[0]]
        if method == "GET" and len(rest) == 1:
            return ok(self._poll(statement))
        if method == "POST" and rest[1:] == ["cancel"]:
            if statement.state in ("PENDING", "RUNNING"):
                statement.state = "CANCELED"
            return ok({})
        if method == "GET" and len(rest) == 4 and rest[1:3] == ["result", "chunks"] and rest[3].isdigit():
            index = int(rest[3])
            if statement.state != "SUCCEEDED" or index >= len(statement.chunks):
                raise bad_request(f"Chunk {index} is not available for statement {statement.statement_id}.")
            return ok(statement.chunk(index))
        raise ApiError(404, "ENDPOINT_NOT_FOUND", f"No API found for '{method} {path}'")

    # --- requests ------------------------------------------------------------------

    def _execute(self, body: dict[str, Any]) -> dict[str, Any]:
        warehouse = body.get("warehouse_id")
        if not warehouse:
            raise bad_request("warehouse_id is required")
        if warehouse not in self.warehouses:
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", f"SQL warehouse {warehouse} does not exist.")
        if not isinstance(body.get("statement"), str) or not body["statement"].strip():
            raise bad_request("statement is required")
        disposition = body.get("disposition", "INLINE")
        if disposition not in ("INLINE", "EXTERNAL_LINKS"):
            raise bad_request(f"disposition must be INLINE or EXTERNAL_LINKS, got {disposition!r}")
        if body.get("format", "JSON_ARRAY") != "JSON_ARRAY":
            raise bad_request("the fake workspace serves format JSON_ARRAY only (ARROW_STREAM and CSV are "
                              "EXTERNAL_LINKS formats it does not implement)")
        if disposition == "EXTERNAL_LINKS" and self.links is None:
            raise bad_request("EXTERNAL_LINKS disposition is not enabled for this workspace")
        wait = _WAIT.match(str(body.get("wait_timeout", "10s")))
        if not wait or not (int(wait.group(1)) == 0 or 5 <= int(wait.group(1)) <= 50):
            raise bad_request("wait_timeout must be 0s or between 5s and 50s")
        on_timeout = body.get("on_wait_timeout", "CONTINUE")
        if on_timeout not in ("CONTINUE", "CANCEL"):
            raise bad_request("on_wait_timeout must be CONTINUE or CANCEL")
        parameters = list(body.get("parameters") or [])
        statement = _Statement(f"fake-stmt-{next(self._ids):06d}", body["statement"], parameters,
                               disposition=disposition)
        self.statements[statement.statement_id] = statement
        if self.faults.warehouse_pending_polls > 0:
            statement.polls_left = self.faults.warehouse_pending_polls
            if on_timeout == "CANCEL" and int(wait.group(1)) > 0:
                statement.state = "CANCELED"  # the wait ran out while the warehouse was starting
        else:
            self._run(statement)
        return statement.response()

    def _poll(self, statement: _Statement) -> dict[str, Any]:
        if statement.state == "PENDING":
            statement.polls_left -= 1
            if statement.polls_left <= 0:
                self._run(statement)
        return statement.response()

    # --- running on DuckDB --------------------------------------------------------------

    def _run(self, statement: _Statement) -> None:
        if self._injected_failure(statement):
            return
        sql = _USING_DELTA.sub(")", statement.sql.strip())
        text, names = duckdb_markers(sql)
        try:
            params = {p["name"]: _param_value(p) for p in statement.parameters}
        except (KeyError, TypeError, ValueError) as exc:
            return self._fail(statement, "BAD_REQUEST", f"[INVALID_PARAMETER_VALUE] bad parameter: {exc}", "22023")
        unbound = [n for n in names if n not in params]
        if unbound:
            return self._fail(statement, "BAD_REQUEST",
                              f"[UNBOUND_SQL_PARAMETER] Found the unbound parameter: {unbound[0]}.", "42P02")
        first = re.match(r"\s*(\w+)", sql)
        kind = first.group(1).upper() if first else ""
        try:
            cursor = self.conn.execute(text, {n: params[n] for n in names})
            rows = cursor.fetchall() if cursor.description is not None else []
            description = cursor.description or []
        except duckdb.Error as exc:
            return self._fail(statement, "BAD_REQUEST", f"[{type(exc).__name__}] {exc}", "42000")
        if kind in _DML_COLUMNS:
            count = int(rows[0][0]) if rows else 0
            names_out = _DML_COLUMNS[kind]
            values = [count] + ([count] if kind == "INSERT" else [None] * (len(names_out) - 1))
            self._succeed(statement, [(n, "LONG", "BIGINT") for n in names_out], [tuple(values)])
        elif kind in _DDL:
            self._succeed(statement, [], [])
        else:
            columns = [(d[0], *_TYPES.get(str(d[1]), ("DECIMAL", str(d[1])) if str(d[1]).startswith("DECIMAL")
                                           else ("STRING", "STRING"))) for d in description]
            self._succeed(statement, columns, rows)

    def _injected_failure(self, statement: _Statement) -> bool:
        """Apply the SQL fault switches (faults.py); True if the statement was failed instead of run."""
        faults = self.faults
        if faults.fail_statements_after is not None:
            if faults.fail_statements_after <= 0:
                self._fail(statement, "INTERNAL_ERROR",
                           "[INTERNAL_ERROR] injected failure: the client stopped (Faults.fail_statements_after).",
                           "XX000")
                return True
            faults.fail_statements_after -= 1
        if faults.fail_statement_matching and re.search(faults.fail_statement_matching, statement.sql):
            faults.fail_statement_matching = None
            self._fail(statement, "INTERNAL_ERROR",
                       "[INTERNAL_ERROR] injected failure (Faults.fail_statement_matching).", "XX000")
            return True
        for pattern, error_class in list(faults.conflict_on.items()):
            if re.search(pattern, statement.sql):
                fired = self._conflicts_fired.get(pattern, 0) + 1
                self._conflicts_fired[pattern] = fired
                if fired >= max(1, faults.conflicts_per_match):
                    del faults.conflict_on[pattern]
                    self._conflicts_fired.pop(pattern, None)
                self._fail(statement, "BAD_REQUEST", conflict_message(error_class, _target_table(statement.sql)),
                           CONFLICT_SQLSTATE)
                return True
        return False

    def _fail(self, statement: _Statement, code: str, message: str, sql_state: str) -> None:
        statement.state = "FAILED"
        statement.error = {"error_code": code, "message": message, "sql_state": sql_state}

    def _succeed(self, statement: _Statement, columns: list[tuple[str, str, str]], rows: list[tuple]) -> None:
        data = [[_text(v) for v in row] for row in rows]
        if statement.disposition == "INLINE" and _size(data) > self.inline_byte_limit:
            # Documented: the statement is aborted and no result set is available.
            return self._fail(statement, "BAD_REQUEST", _INLINE_LIMIT_MESSAGE.format(limit=self.inline_byte_limit),
                              None)
        pieces = [data[i:i + self.chunk_rows] for i in range(0, len(data), self.chunk_rows)] or [[]]
        if statement.disposition == "EXTERNAL_LINKS":
            return self._succeed_with_links(statement, columns, pieces)
        link = f"{PREFIX}/{statement.statement_id}/result/chunks/"
        chunks, offset = [], 0
        for index, piece in enumerate(pieces):
            chunk: dict[str, Any] = {"chunk_index": index, "row_offset": offset, "row_count": len(piece)}
            if piece:
                chunk["data_array"] = piece
            if index + 1 < len(pieces):
                chunk.update(next_chunk_index=index + 1, next_chunk_internal_link=f"{link}{index + 1}")
            chunks.append(chunk)
            offset += len(piece)
        statement.chunks = chunks
        statement.manifest = _manifest(columns, chunks, total_row_count=len(data))
        statement.state = "SUCCEEDED"

    def _succeed_with_links(self, statement: _Statement, columns: list[tuple[str, str, str]],
                            pieces: list[list[list[str | None]]]) -> None:
        link = f"{PREFIX}/{statement.statement_id}/result/chunks/"
        bodies = [json.dumps(piece, separators=(",", ":")).encode("utf-8") for piece in pieces]
        chunks, offset = [], 0
        for index, (piece, data) in enumerate(zip(pieces, bodies, strict=True)):
            chunk: dict[str, Any] = {"chunk_index": index, "row_offset": offset, "row_count": len(piece),
                                     "byte_count": len(data)}
            if index + 1 < len(pieces):
                chunk.update(next_chunk_index=index + 1, next_chunk_internal_link=f"{link}{index + 1}")
            chunks.append(chunk)
            offset += len(piece)
        links = self.links
        assert links is not None

        def linked(index: int) -> dict[str, Any]:  # a fresh presigned URL each time a chunk is asked for
            published = links.publish(f"{statement.statement_id}/{index}", bodies[index])
            return {"external_links": [{**chunks[index], **published}]}

        statement.chunks, statement.linked = chunks, linked
        statement.manifest = _manifest(columns, chunks, total_row_count=offset,
                                       total_byte_count=sum(len(b) for b in bodies))
        statement.state = "SUCCEEDED"


def _manifest(columns: list[tuple[str, str, str]], chunks: list[dict[str, Any]], **totals: int) -> dict[str, Any]:
    """A SUCCEEDED statement's ``manifest``: its schema, its chunks' positions (and sizes, for links), totals."""
    described = ("chunk_index", "row_offset", "row_count", "byte_count")
    return {
        "format": "JSON_ARRAY",
        "schema": {"column_count": len(columns), "columns": [
            {"name": name, "position": i, "type_name": type_name, "type_text": type_text}
            for i, (name, type_name, type_text) in enumerate(columns)]},
        "total_chunk_count": len(chunks),
        "chunks": [{k: c[k] for k in described if k in c} for c in chunks],
        **totals,
        "truncated": False,
    }


def _size(data: list[list[str | None]]) -> int:
    """A result's size as the fake counts it for the INLINE limit: its rows as compact JSON, in bytes."""
    return len(json.dumps(data, separators=(",", ":")).encode("utf-8"))


# Delta's write-conflict errors as a warehouse reports them: the message starts with the error class, then the
# exception and its text ("Isolation levels and write conflicts on Databricks"; error-classes reference);
# every one has SQLSTATE 2D521.
CONFLICT_SQLSTATE = "2D521"
_CONFLICT_TEXT = {
    "DELTA_CONCURRENT_APPEND": "ConcurrentAppendException: Files were added to {table} by a concurrent update.",
    "DELTA_CONCURRENT_DELETE_READ": "ConcurrentDeleteReadException: This transaction attempted to read one or more "
                                    "files that were deleted (for example part-00000.snappy.parquet in {table}) "
                                    "by a concurrent update.",
    "DELTA_CONCURRENT_DELETE_DELETE": "ConcurrentDeleteDeleteException: This transaction attempted to delete one or "
                                      "more files that were deleted (for example part-00000.snappy.parquet in "
                                      "{table}) by a concurrent update.",
    "DELTA_CONCURRENT_TRANSACTION": "ConcurrentTransactionException: This error occurs when multiple streaming "
                                    "queries are using the same checkpoint to write into {table}.",
    "DELTA_CONCURRENT_WRITE": "ConcurrentWriteException: A concurrent transaction has written new data to {table} "
                              "since the current transaction read the table.",
    "DELTA_METADATA_CHANGED": "MetadataChangedException: The metadata of {table} has been changed by a concurrent "
                              "update.",
    "DELTA_PROTOCOL_CHANGED": "ProtocolChangedException: The protocol version of {table} has been changed by a "
                              "concurrent update.",
}


def conflict_message(error_class: str, table: str) -> str:
    if error_class not in _CONFLICT_TEXT:
        raise ValueError(f"Faults.conflict_on: unknown Delta conflict class {error_class!r}; "
                         f"use one of {', '.join(_CONFLICT_TEXT)}")
    return (f"[{error_class}] " + _CONFLICT_TEXT[error_class].format(table=table)
            + " Please try the operation again.")


def _target_table(sql: str) -> str:
    match = re.search(r"\b(?:INTO|UPDATE|FROM|TABLE)\s+([\w.`]+)", sql, re.IGNORECASE)
    return f"the table {match.group(1)}" if match else "the root of the table"


def _param_value(parameter: dict[str, Any]) -> Any:
    if "value" not in parameter or parameter["value"] is None:
        return None
    kind = str(parameter.get("type") or "STRING").upper()
    if kind not in _PARAM_TYPES:
        raise ValueError(f"type {kind!r} of :{parameter['name']} is not supported by the fake")
    return _PARAM_TYPES[kind](parameter["value"])


def _text(value: Any) -> str | None:
    """A cell as JSON_ARRAY sends it: a string, or null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat(timespec="microseconds") + ("" if value.tzinfo else "Z")
    if isinstance(value, (datetime.date, decimal.Decimal)):
        return str(value)
    return str(value)


def duckdb_markers(sql: str) -> tuple[str, tuple[str, ...]]:
    """Databricks SQL's ``:name`` parameter markers as DuckDB's ``$name``, and the names in order of use."""
    names: list[str] = []

    def repl(match: re.Match[str]) -> str:
        if match.group(1) is None:  # a quoted literal or identifier
            return match.group(0)
        names.append(match.group(1))
        return "$" + match.group(1)

    return _MARKER.sub(repl, sql), tuple(dict.fromkeys(names))
