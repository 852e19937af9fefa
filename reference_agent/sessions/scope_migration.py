"""On open: move ``app:``/``user:`` state of the previous layout into per-key rows (``scope_rows.py``).

The previous layout kept one row per app (``app_states``) and per user (``user_states``) holding the whole scope
as one JSON object, rewritten whole by every write. Each such row becomes one row per key, inserted only where the
key has no row yet (a key moved by an earlier, interrupted open, or written since, is left as it is) and keeping
the row's ``applied_json`` (a crashed append of the old layout, rolled forward later, then applies once); then the
old row is deleted (only at the version it was read at). On DuckDB it all runs in one transaction; on Databricks
step by step, each step safe to run again, so an open that dies half-way leaves old rows the next open moves.

Left in place, with a warning naming them (their keys stay invisible until the rows are repaired and the store
is opened again): an app or user stored in two old rows (a file from before unique keys: ``rlm-conformance
audit`` lists them) and a row whose ``state_json`` is not a JSON object.

Upgrade every writer of a store together: a writer of the previous version still writing ``app_states`` after
the move is not read by this one (its rows are moved at the next open, where keys written since win).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from reference_agent.storage.sql import SqlEngine, affected_rows

from .conflicts import ConflictRetry
from .scope_rows import BATCH, TABLES

logger = logging.getLogger(__name__)

OLD_TABLES = {"app": "app_states", "user": "user_states"}  # scope -> table of the previous layout


def migrate_scope_rows(engine: SqlEngine, retry: ConflictRetry, dumps: Callable[[Any], str]) -> int:
    """Move every old-layout row that can be moved; the number moved (0, in one cheap statement, once done)."""
    if engine.execute("SELECT (SELECT count(*) FROM app_states), (SELECT count(*) FROM user_states)") == [(0, 0)]:
        return 0
    moved = 0
    with engine.transaction():
        for scope, old in OLD_TABLES.items():
            table, columns = TABLES[scope]
            names = ", ".join(columns)
            for *values, copies in engine.execute(
                    f"SELECT {names}, count(*) FROM {old} GROUP BY {names} ORDER BY {names}"):
                keys = dict(zip(columns, values, strict=True))
                if copies > 1:
                    logger.warning("%s holds %d rows for %s (the layout before unique keys): left in place, its keys "
                                   "not moved to %s. Keep one (`rlm-conformance audit STORE` lists them) and open the "
                                   "store again.", old, copies, keys, table)
                    continue
                moved += _move_row(engine, retry, dumps, scope, keys)
    if moved:
        logger.info("moved %d app:/user: state rows of the previous layout to one row per key", moved)
    return moved


def _move_row(engine: SqlEngine, retry: ConflictRetry, dumps: Callable[[Any], str], scope: str,
              keys: dict[str, Any]) -> int:
    old = OLD_TABLES[scope]
    table, columns = TABLES[scope]
    where = " AND ".join(f"{c} = :{c}" for c in columns)
    rows = engine.execute(f"SELECT state_json, version, applied_json, update_time FROM {old} WHERE {where}", keys)
    if not rows:
        return 0  # moved by another open meanwhile
    state_json, version, applied_json, update_time = rows[0]
    try:
        state = json.loads(state_json) if state_json else {}
        if not isinstance(state, dict):
            raise ValueError(f"a JSON {type(state).__name__}, not an object")
    except ValueError as exc:
        logger.warning("%s row %s: state_json is not a JSON object (%s): left in place, its keys not moved to %s. "
                       "Repair or delete the row and open the store again.", old, keys, exc, table)
        return 0
    try:
        applied = json.loads(applied_json) if applied_json else []
    except ValueError:
        applied = []
    items = list(state.items())
    for start in range(0, len(items), BATCH):
        chunk = items[start:start + BATCH]
        params: dict[str, Any] = {**keys, "applied": dumps(applied if isinstance(applied, list) else []),
                                  "now": float(update_time or 0.0)}
        sources = []
        for i, (name, value) in enumerate(chunk):
            params[f"k{i}"], params[f"v{i}"] = name, dumps(value)
            head = "".join(f":{c} AS {c}, " for c in columns) if i == 0 else "".join(f":{c}, " for c in columns)
            sources.append(f"SELECT {head}:k{i}" + (" AS state_key" if i == 0 else "")
                           + f", :v{i}" + (" AS value_json" if i == 0 else ""))
        on = " AND ".join(f"t.{c} = s.{c}" for c in (*columns, "state_key"))
        inserted = (*columns, "state_key", "value_json")
        sql = (f"MERGE INTO {table} t USING ({' UNION ALL '.join(sources)}) s ON {on} WHEN NOT MATCHED THEN INSERT"
               f" ({', '.join(inserted)}, version, applied_json, update_time)"
               f" VALUES ({', '.join(f's.{c}' for c in inserted)}, 1, :applied, :now)")
        # Insert-if-absent: re-checks when run again after a Delta conflict.
        retry.run(f"moving {old} keys", lambda sql=sql, params=params: engine.execute(sql, params))
    deleted = affected_rows(retry.run(f"deleting a moved {old} row", lambda: engine.execute(
        f"DELETE FROM {old} WHERE {where} AND coalesce(version, 0) = :version", {**keys, "version": int(version or 0)})))
    return 1 if deleted else 0
