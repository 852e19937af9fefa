"""STORE as the user writes it -> a read-only ``SqlSource``.

Spellings: ``duckdb:///path`` or the path of a DuckDB file; the path of a SQLite file; a store a target plugin's
backend reads (``databricks://CATALOG.SCHEMA``: harness/targets/plugins.py); any other ``scheme://`` is a
SQLAlchemy URL (``sqlite:///…``, ``postgresql://…``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import SqlSource, StoreError
from .duckdb_source import is_duckdb_file, is_sqlite_file

SPELLINGS = ("sqlite:///path/to/sessions.db (or any SQLAlchemy URL: postgresql://user@host/db ...)",
             "duckdb:///path/to/sessions.duckdb, or the path of a DuckDB or SQLite file")


def _plugin_stores() -> list[Any]:
    from ...targets.plugins import backends

    return [backend.store for backend in backends().values() if backend.store is not None]


def spellings() -> tuple[str, ...]:
    return SPELLINGS + tuple(store.spelling for store in _plugin_stores())


def open_source(spec: str) -> SqlSource:
    text = spec.strip()
    for store in _plugin_stores():
        if store.is_store(text):
            return store.open(text)
    if text.lower().startswith("duckdb:"):
        from .duckdb_source import DuckDbSource

        path = text.split(":", 1)[1]
        path = path[3:] if path.startswith("///") else path.lstrip("/") if path.startswith("//") else path
        return DuckDbSource(Path(path).expanduser(), where=text)
    if "://" in text:
        from .sqlalchemy_source import SqlAlchemySource

        return SqlAlchemySource(text)
    path = Path(text).expanduser()
    if is_duckdb_file(path):
        from .duckdb_source import DuckDbSource

        return DuckDbSource(path)
    if is_sqlite_file(path):
        from .sqlalchemy_source import SqlAlchemySource

        return SqlAlchemySource(f"sqlite:///{path.resolve()}")
    what = "no such file" if not path.exists() else "neither a DuckDB nor a SQLite file, nor a URL"
    raise StoreError(f"STORE {spec!r}: {what}. Spell STORE as one of: " + "; ".join(spellings()) + ".")
