"""A SQLAlchemy URL as a read-only ``SqlSource`` (SQLAlchemy Core, a synchronous engine).

Read-only by construction: SQLite is opened through a ``mode=ro`` URI (the file cannot be written, nor
created); PostgreSQL and MySQL sessions are set ``READ ONLY``; on any engine the reads are only ever rolled back,
never committed. An async driver in the URL (``sqlite+aiosqlite``, ``postgresql+asyncpg``,
as ADK's ``DatabaseSessionService`` takes them) is swapped for the dialect's default synchronous one.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import StoreError

ASYNC_DRIVERS = {"aiosqlite", "asyncpg", "aiomysql", "asyncmy", "psycopg_async", "aioodbc"}
READ_ONLY_SESSION = {"postgresql": "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
                     "mysql": "SET SESSION TRANSACTION READ ONLY", "mariadb": "SET SESSION TRANSACTION READ ONLY"}


class SqlAlchemySource:
    def __init__(self, url: str) -> None:
        import sqlalchemy
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError, NoSuchModuleError

        try:
            parsed = make_url(url)
        except ArgumentError as exc:
            raise StoreError(f"STORE {url!r}: not a SQLAlchemy URL ({exc}).") from None
        self.where = parsed.render_as_string(hide_password=True)
        backend, _, driver = parsed.drivername.partition("+")
        if driver in ASYNC_DRIVERS:
            parsed = parsed.set(drivername=backend)
        if backend == "sqlite":
            parsed = _read_only_sqlite(parsed, self.where)
        try:
            self.engine = sqlalchemy.create_engine(parsed, poolclass=sqlalchemy.pool.NullPool)
            self.connection = self.engine.connect()
            if backend in READ_ONLY_SESSION:
                self.connection.exec_driver_sql(READ_ONLY_SESSION[backend])
                # The setting applies from the next transaction on: end the one that holds only the SET.
                self.connection.commit()
        except (NoSuchModuleError, ModuleNotFoundError) as exc:
            raise StoreError(f"STORE {self.where}: SQLAlchemy has no driver for it here ({exc}). Fix: install the "
                             f"database's driver (e.g. psycopg2 for postgresql://).") from None
        except sqlalchemy.exc.SQLAlchemyError as exc:
            raise StoreError(f"STORE {self.where}: cannot connect ({_reason(exc)}).") from None
        self._inspector = sqlalchemy.inspect(self.connection)

    def rows(self, sql: str, params: Mapping[str, Any]) -> list[tuple]:
        import sqlalchemy

        try:
            return [tuple(row) for row in self.connection.execute(sqlalchemy.text(sql), dict(params))]
        except sqlalchemy.exc.SQLAlchemyError as exc:
            self.connection.rollback()
            raise StoreError(f"{self.where}: a read failed ({_reason(exc)}). Statement: {sql[:200]}") from None

    def columns(self, table: str) -> tuple[str, ...] | None:
        if not self._inspector.has_table(table):
            return None
        return tuple(str(c["name"]).lower() for c in self._inspector.get_columns(table))

    def close(self) -> None:
        self.connection.rollback()
        self.connection.close()
        self.engine.dispose()


def _read_only_sqlite(url: Any, where: str) -> Any:
    database = url.database
    if not database or database == ":memory:":
        raise StoreError(f"STORE {where}: an in-memory SQLite database holds nothing to audit. Give the file: "
                         f"sqlite:///path/to/sessions.db")
    if database.startswith("file:"):  # already a URI: keep it, and make sure it is read-only
        path_part, _, query = database.partition("?")
        options = dict(urllib.parse.parse_qsl(query))
        options["mode"] = "ro"
        return url.set(database=f"{path_part}?{urllib.parse.urlencode(options)}", query={"uri": "true"})
    path = Path(database).expanduser().resolve()
    if not path.is_file():
        raise StoreError(f"STORE {where}: no such SQLite file {path}. Fix: give the path of the database your "
                         f"session service writes (sqlite:///relative/path.db, sqlite:////absolute/path.db).")
    return url.set(database=f"file:{urllib.parse.quote(str(path))}?mode=ro", query={"uri": "true"})


def _reason(exc: Exception) -> str:
    return " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
