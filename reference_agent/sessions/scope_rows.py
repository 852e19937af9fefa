"""``app_states`` / ``user_states`` rows: read, and written by compare-and-set on their ``version``.

A row is shared by every session of the app (app:) or of the user (user:), so two sessions may write it at
once. Each write applies a *delta* (set or delete some keys) to the row as it is now: ``UPDATE ... WHERE
version = :read``; if another writer got in first, the row is read again and the delta re-applied, so keys
the other writer set are kept (no lost update). ``applied_json`` keeps the ids of the last events applied,
so rolling a crashed append forward never applies its delta twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_agent.storage.sql import SqlEngine, WriteConflictError, affected_rows

from .conflicts import ConflictRetry

logger = logging.getLogger(__name__)

TABLES = {
    # scope: (table, key columns)
    "app": ("app_states", ("app_name",)),
    "user": ("user_states", ("app_name", "user_id")),
}
APPLIED_KEPT = 32  # event ids kept per row in applied_json


@dataclass(frozen=True)
class ScopeRow:
    state: dict[str, Any]
    version: int  # NULL (a row made before the column existed) reads as 0
    applied: list[str] = field(default_factory=list)


def apply_delta(stored: Mapping[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """``stored`` updated by ``delta``, where None deletes (the declared divergence)."""
    result = dict(stored)
    for key, value in delta.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


class ScopeWriteConflict(WriteConflictError):
    """The scope row kept changing under an append that had already committed (see ``ScopeRows.write``)."""


class ScopeRows:
    def __init__(self, engine: SqlEngine, retry: ConflictRetry, dumps: Callable[[Any], str]) -> None:
        self.engine = engine
        self.retry = retry
        self._dumps = dumps

    def read(self, scope: str, keys: Mapping[str, str]) -> ScopeRow | None:
        table, columns = TABLES[scope]
        where = " AND ".join(f"{c} = :{c}" for c in columns)
        rows = self.engine.execute(f"SELECT state_json, version, applied_json FROM {table} WHERE {where}",
                                   {c: keys[c] for c in columns})
        if not rows:
            return None
        state_json, version, applied_json = rows[0]
        return ScopeRow(json.loads(state_json) if state_json else {}, int(version or 0),
                        json.loads(applied_json) if applied_json else [])

    def write(self, scope: str, keys: Mapping[str, str], delta: Mapping[str, Any], *, event_id: str, now: float,
              row: ScopeRow | None) -> None:
        """Apply ``delta`` to the row (``row`` = as last read, None = absent) by compare-and-set.

        On a lost race (0 rows, or a Delta conflict) the row is read again and the delta re-applied, up to
        ``retry.attempts`` times. A key of the delta changed by the other writer is logged: this write is later
        in the row's order and wins, as it would had it come second.
        """
        table, columns = TABLES[scope]
        params = {c: keys[c] for c in columns}
        first_read = row
        for attempt, delay in enumerate([*self.retry.delays(), None], start=1):
            if row is not None and event_id in row.applied:
                return  # rolled forward already (by us before a crash, or by another reader)
            state = apply_delta(row.state if row else {}, delta)
            applied = [*(row.applied if row else []), event_id][-APPLIED_KEPT:]
            values = {**params, "state_json": self._dumps(state), "applied_json": self._dumps(applied), "now": now}
            try:
                if row is None:
                    written = self._insert_if_absent(table, columns, values)
                else:
                    written = affected_rows(self.engine.execute(
                        f"UPDATE {table} SET state_json = :state_json, version = :next, applied_json = :applied_json,"
                        " update_time = :now WHERE " + " AND ".join(f"{c} = :{c}" for c in columns)
                        + " AND coalesce(version, 0) = :expected",
                        {**values, "expected": row.version, "next": row.version + 1},
                    ))
            except WriteConflictError as exc:
                if not exc.retryable:  # its transaction was aborted (DuckDB): only the whole append can run again
                    raise
                logger.warning("%s row %s: Delta write conflict (%s) on attempt %d", table, params,
                               exc.error_class, attempt)
                written = 0
            if written:
                return
            if delay is None:
                break
            self.retry.sleep(delay)
            row = self.read(scope, keys)
            if first_read is not None and row is not None:
                rivals = [k for k in delta if first_read.state.get(k) != row.state.get(k)]
                if rivals:
                    logger.warning("%s row %s: keys %s were also written by another session since this append "
                                   "read them; this append comes later and wins", table, params, rivals)
        raise ScopeWriteConflict(
            f"{table} row {params} changed under every one of {self.retry.attempts} attempts to apply event "
            f"{event_id}'s {scope}: keys. The event itself is stored; its {scope}: state is applied by the next "
            "get_session or append_event of this session (reload the session).",
            error_class="SCOPE_ROW_CONTENDED",
        )

    def _insert_if_absent(self, table: str, columns: tuple[str, ...], values: Mapping[str, Any]) -> int:
        source = ", ".join(f":{c} AS {c}" for c in columns)
        on = " AND ".join(f"t.{c} = s.{c}" for c in columns)
        all_columns = (*columns, "state_json", "version", "applied_json", "update_time")
        sources = ", ".join(f"s.{c}" for c in all_columns)
        return affected_rows(self.engine.execute(
            f"MERGE INTO {table} t USING (SELECT {source}, :state_json AS state_json, 1 AS version,"
            " :applied_json AS applied_json, :now AS update_time) s"
            f" ON {on} WHEN NOT MATCHED THEN INSERT ({', '.join(all_columns)}) VALUES ({sources})",
            values,
        ))
