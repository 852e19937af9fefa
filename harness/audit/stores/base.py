"""What every store reader shares: the error, the filter, and the one SQL interface the readers query.

A ``SqlSource`` is a read-only connection that answers one statement at a time with a list of rows. Each
statement the readers send is bounded (a page of sessions, or the events of one page), so a store of any
size is read in constant memory; nothing else is kept between pages.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ...errors import HarnessError


class StoreError(HarnessError):
    """The store cannot be opened or read, or holds no table layout the audit knows."""


class SqlSource(Protocol):
    where: str  # the store as the user named it, password removed: for messages and reports

    def rows(self, sql: str, params: Mapping[str, Any]) -> list[tuple]:
        """Run one SELECT with ``:name`` markers and return its rows."""
        ...

    def columns(self, table: str) -> tuple[str, ...] | None:
        """The columns of ``table`` (lower case) in the store's default schema; None when there is no such table."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions to audit: exact app/user/session ids, and a window on the session's update time."""

    app: str | None = None
    user: str | None = None
    session: str | None = None
    since: float | None = None  # epoch seconds, inclusive
    until: float | None = None  # epoch seconds, inclusive

    def keeps_time(self, update_time: float | None) -> bool:
        if self.since is None and self.until is None:
            return True
        if update_time is None:
            return False
        return (self.since is None or update_time >= self.since) and (self.until is None or update_time <= self.until)


def parse_time(value: str, flag: str) -> float:
    """``--since``/``--until``: epoch seconds, or an ISO 8601 date or date-time (UTC when it names no zone)."""
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise StoreError(f"{flag} {value!r}: not a time. Give epoch seconds (1767225600) or an ISO date-time "
                         f"(2026-01-01T00:00:00, UTC unless it names a zone).") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()
