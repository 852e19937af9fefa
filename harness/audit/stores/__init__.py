"""Session stores, read-only and streamed: open a STORE, tell its table layout, yield one ``StoredSession``
at a time (``harness.audit.model``).

    with open_store("sqlite:///sessions.db") as store:
        for session in store.sessions(SessionFilter(app="my_app")):
            ...
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..model import StoredSession
from .base import SessionFilter, SqlSource, StoreError, parse_time
from .detect import detect_layout
from .integrity import Finding, unowned_rows
from .layouts import LAYOUTS, Layout
from .open import SPELLINGS, open_source
from .reader import PAGE_SIZE, OnUnreadable, iter_sessions


@dataclass
class Store:
    source: SqlSource
    layout: Layout

    @property
    def where(self) -> str:
        return self.source.where

    def sessions(self, selection: SessionFilter | None = None, *, page_size: int = PAGE_SIZE,
                 on_unreadable: OnUnreadable | None = None) -> Iterator[StoredSession]:
        return iter_sessions(self.source, self.layout, selection, page_size=page_size, on_unreadable=on_unreadable)

    def unowned_rows(self, selection: SessionFilter | None = None) -> list[Finding]:
        """Rows no session owns: orphan events, app/user rows without a session (``integrity.py``)."""
        return unowned_rows(self.source, self.layout, selection)

    def close(self) -> None:
        self.source.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(spec: str) -> Store:
    """Open ``spec`` read-only and recognise its layout; a ``StoreError`` names what is wrong and the fix."""
    source = open_source(spec)
    try:
        return Store(source, detect_layout(source))
    except BaseException:
        source.close()
        raise


__all__ = ["LAYOUTS", "Finding", "SPELLINGS", "Layout", "SessionFilter", "SqlSource", "Store", "StoreError", "open_source",
           "open_store", "parse_time"]
