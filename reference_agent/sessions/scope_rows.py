"""``app:``/``user:`` state, one row per key: ``app_state_keys`` and ``user_state_keys``.

A key's row holds its value as JSON (``value_json``). A deleted key keeps its row with ``value_json`` NULL (a
tombstone): its version and ``applied_json`` go on, so rolling an old append forward can never bring a deleted
value back or overwrite a newer one. An append reads and writes only the rows of the keys it sets or deletes, so
its cost follows its own delta, not the size of the scope (a user whose other keys hold 20 MB appends as fast as
any other).

Rows are shared by every session of the app (``app:``) or of the user (``user:``), so two sessions may write one
at once. An append's read-modify-write of them is made safe where statements commit alone (Delta) by claiming the
keys before its commit point (``scope_claims.py``); ``write`` here is the *blind* write after a commit point (a
create's initial state, a redo record written before claims): compare-and-set per key, one ``MERGE`` per scope for
all the keys, each source row carrying the version its key was read at (0: absent), never over a claimed row (the
claim is settled first). A key another writer changed in between is not written (the statement writes fewer rows
than keys); its row is read again and the value re-applied — this write comes later in the key's order and wins, as
it would had it come second (logged). ``applied_json`` keeps the ids of the last events applied to the key, so
rolling a crashed append forward never applies its delta twice.

Where the engine's transactions are atomic (DuckDB) a key's row is *replaced* instead — ``DELETE`` of the rows at
the versions read, then ``INSERT`` of the new ones, inside the caller's transaction: DuckDB's ``UPDATE`` of a string
column reads and copies the whole vector (2,048 rows) around the row, so updating a small key stored next to a
20 MB value took 35-45 ms, where delete + insert takes what a small row's does (measured, DuckDB 1.x/2.0). A row
not at its version read is a conflict that aborts the transaction (the caller runs the whole call again). On
Delta each statement commits alone, so a delete and an insert would leave a moment without the key: the ``MERGE``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_agent.storage.sql import SqlEngine, WriteConflictError, affected_rows

from .conflicts import ConflictRetry

logger = logging.getLogger(__name__)

TABLES = {
    # scope: (table, the columns naming the app or user; each row adds ``state_key``)
    "app": ("app_state_keys", ("app_name",)),
    "user": ("user_state_keys", ("app_name", "user_id")),
}
APPLIED_KEPT = 32  # event ids kept per key row in applied_json
BATCH = 200  # keys per statement (a MERGE source row or an IN list entry each)
# Both scopes' live keys of one app and user, in one statement: ("a" | "u", key, value JSON).
SCOPES_SQL = ("SELECT 'a', a.state_key, a.value_json FROM app_state_keys a WHERE a.app_name = :app_name"
              " AND a.value_json IS NOT NULL UNION ALL SELECT 'u', u.state_key, u.value_json FROM user_state_keys u"
              " WHERE u.app_name = :app_name AND u.user_id = :user_id AND u.value_json IS NOT NULL")


@dataclass(frozen=True)
class KeyRow:
    value_json: str | None  # None: the key was deleted (the row is its tombstone)
    version: int  # compare-and-set revision; 0 stands for "no row"
    applied: list[str] = field(default_factory=list)
    claim: str | None = None  # the claim_json of an append holding the key before its commit point (scope_claims.py)

    def value(self) -> Any:
        return None if self.value_json is None else json.loads(self.value_json)


def merge_source(columns: tuple[str, ...], fields: tuple[tuple[str, str], ...], count: int) -> tuple[str, str]:
    """A MERGE's source of ``count`` bound rows (the scope's ``columns``, then ``fields``: (column, parameter prefix),
    parameters numbered per row) and its ON clause on the key: one statement for many keys, on DuckDB and Delta."""
    rows = ["SELECT " + "".join(f":{c} AS {c}, " for c in columns) + ", ".join(f":{p}0 AS {f}" for f, p in fields)]
    rows += ["SELECT " + "".join(f":{c}, " for c in columns) + ", ".join(f":{p}{i}" for _, p in fields)
             for i in range(1, count)]
    return " UNION ALL ".join(rows), " AND ".join(f"t.{c} = s.{c}" for c in (*columns, "state_key"))


def apply_delta(stored: Mapping[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """``stored`` updated by ``delta``, where None deletes (the declared divergence)."""
    result = dict(stored)
    for key, value in delta.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def split_scopes(rows: Iterable[tuple[str, str, str]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``SCOPES_SQL``'s rows as (app state, user state)."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    for kind, key, value_json in rows:
        (app if kind == "a" else user)[key] = json.loads(value_json)
    return app, user


class ScopeWriteConflict(WriteConflictError):
    """A scope key kept changing under an append that had already committed (see ``ScopeRows.write``)."""


def _chunks(items: list[Any]) -> Iterable[list[Any]]:
    for start in range(0, len(items), BATCH):
        yield items[start:start + BATCH]


class ScopeRows:
    def __init__(self, engine: SqlEngine, retry: ConflictRetry, dumps: Callable[[Any], str]) -> None:
        self.engine = engine
        self.retry = retry
        self._dumps = dumps
        self._replace_rows = bool(getattr(engine, "transactional", False))  # see the module docstring
        # Where keys can be claimed (engines without transactions: scope_claims.py), what a blind write does with a
        # claimed row before writing it: the claim is settled (finished, cleared or fenced off), never overwritten.
        self.settle: Callable[[str, Mapping[str, str], dict[str, KeyRow]], None] | None = None

    def read(self, scope: str, keys: Mapping[str, str], names: Iterable[str]) -> dict[str, KeyRow]:
        """The rows of ``names`` (tombstones included; a key never written has none)."""
        table, columns = TABLES[scope]
        found: dict[str, KeyRow] = {}
        for chunk in _chunks(list(dict.fromkeys(names))):
            params: dict[str, Any] = {c: keys[c] for c in columns}
            params.update({f"n{i}": name for i, name in enumerate(chunk)})
            marks = ", ".join(f":n{i}" for i in range(len(chunk)))
            for name, value_json, version, applied_json, claim in self.engine.execute(
                    f"SELECT state_key, value_json, version, applied_json, claim_json FROM {table} WHERE "
                    + " AND ".join(f"{c} = :{c}" for c in columns) + f" AND state_key IN ({marks})", params):
                found[name] = KeyRow(value_json, int(version or 0), json.loads(applied_json) if applied_json else [],
                                     claim or None)
        return found

    def read_all(self, scope: str, keys: Mapping[str, str]) -> dict[str, Any]:
        """The scope's live keys and values."""
        table, columns = TABLES[scope]
        rows = self.engine.execute(f"SELECT state_key, value_json FROM {table} WHERE "
                                   + " AND ".join(f"{c} = :{c}" for c in columns) + " AND value_json IS NOT NULL",
                                   {c: keys[c] for c in columns})
        return {name: json.loads(value_json) for name, value_json in rows}

    def write(self, scope: str, keys: Mapping[str, str], delta: Mapping[str, Any], *, event_id: str, now: float,
              rows: Mapping[str, KeyRow]) -> None:
        """Apply ``delta`` (None deletes) key by key by compare-and-set; ``rows``: its keys' rows as last read.

        On a lost race (fewer rows written than keys, or a Delta conflict) the keys not yet written are read again
        and re-applied, up to ``retry.attempts`` times. A key the other writer changed is logged: this write is
        later in the key's order and wins, as it would had it come second.
        """
        table, columns = TABLES[scope]
        first_read, current = dict(rows), dict(rows)
        todo = list(delta)
        for attempt, delay in enumerate([*self.retry.delays(), None], start=1):
            # A key whose row lists the event has it already (rolled forward by us before a crash, or by another
            # reader, or written by this statement before a lost race on another key).
            todo = [k for k in todo if k not in current or event_id not in current[k].applied]
            if not todo:
                return
            claimed = {k: current[k] for k in todo if k in current and current[k].claim}
            if claimed and self.settle is not None:  # an append holds them before its commit point: settle first
                self.settle(scope, keys, claimed)
                current.update(self.read(scope, keys, list(claimed)))
            written = 0
            write = self._replace if self._replace_rows else self._merge
            try:
                for chunk in _chunks(todo):
                    written += write(table, columns, keys, {k: delta[k] for k in chunk}, current, event_id, now)
            except WriteConflictError as exc:
                if not exc.retryable:  # its transaction was aborted (DuckDB): only the whole append can run again
                    raise
                logger.warning("%s %s: Delta write conflict (%s) on attempt %d", table, dict(keys), exc.error_class,
                               attempt)
                written = -1
            if written == len(todo):
                return
            if delay is None:
                break
            self.retry.sleep(delay)
            current = self.read(scope, keys, todo)
            rivals = [k for k in todo if k in current and event_id not in current[k].applied
                      and current[k].value_json != (first_read[k].value_json if k in first_read else None)]
            if rivals:
                logger.warning("%s %s: keys %s were also written by another session since this append read them; "
                               "this append comes later and wins", table, {c: keys[c] for c in columns}, rivals)
        raise ScopeWriteConflict(
            f"{table} keys {todo} of {({c: keys[c] for c in columns})} changed under every one of "
            f"{self.retry.attempts} attempts to apply event {event_id}'s {scope}: keys. The event itself is stored; "
            f"its {scope}: state is applied by the next get_session or append_event of this session (reload the "
            "session).",
            error_class="SCOPE_ROW_CONTENDED",
        )

    def _replace(self, table: str, columns: tuple[str, ...], keys: Mapping[str, str], delta: Mapping[str, Any],
                 current: Mapping[str, KeyRow], event_id: str, now: float) -> int:
        """Inside the caller's atomic transaction: delete ``delta``'s rows at the versions read, insert the new
        ones; the rows written. A row not at its version raises a non-retryable ``WriteConflictError`` (the
        transaction, and so the whole call, runs again)."""
        params: dict[str, Any] = {c: keys[c] for c in columns}
        owner = " AND ".join(f"{c} = :{c}" for c in columns)
        present = [name for name in delta if name in current]
        if present:
            matches = " OR ".join(f"(state_key = :d{i} AND coalesce(version, 0) = :dv{i})" for i in range(len(present)))
            for i, name in enumerate(present):
                params[f"d{i}"], params[f"dv{i}"] = name, current[name].version
            deleted = affected_rows(self.engine.execute(f"DELETE FROM {table} WHERE {owner} AND ({matches})", params))
            if deleted != len(present):
                raise WriteConflictError(f"{table}: {len(present) - deleted} of keys {present} changed since they "
                                         "were read in this transaction", error_class="SCOPE_KEY_CHANGED",
                                         retryable=False)
        values = []
        for i, (name, value) in enumerate(delta.items()):
            row = current.get(name)
            params.update({f"k{i}": name, f"v{i}": None if value is None else self._dumps(value),
                           f"n{i}": (row.version if row else 0) + 1,
                           f"p{i}": self._dumps([*(row.applied if row else []), event_id][-APPLIED_KEPT:])})
            values.append("(" + "".join(f":{c}, " for c in columns) + f":k{i}, :v{i}, :n{i}, :p{i}, :now)")
        params["now"] = now
        self.engine.execute(f"INSERT INTO {table} ({', '.join(columns)}, state_key, value_json, version, applied_json,"
                            f" update_time) VALUES {', '.join(values)}", params)
        return len(delta)

    def _merge(self, table: str, columns: tuple[str, ...], keys: Mapping[str, str], delta: Mapping[str, Any],
               current: Mapping[str, KeyRow], event_id: str, now: float) -> int:
        """One MERGE writing ``delta``'s keys, each only where its row is still at the version read (or absent, if
        it was); the rows written."""
        params: dict[str, Any] = {c: keys[c] for c in columns}
        params["now"] = now
        for i, (name, value) in enumerate(delta.items()):
            row = current.get(name)
            params.update({f"k{i}": name, f"v{i}": None if value is None else self._dumps(value),
                           f"e{i}": row.version if row else 0,
                           f"p{i}": self._dumps([*(row.applied if row else []), event_id][-APPLIED_KEPT:])})
        source, on = merge_source(columns, (("state_key", "k"), ("value_json", "v"), ("expected", "e"),
                                            ("applied_json", "p")), len(delta))
        inserted = (*columns, "state_key", "value_json", "version", "applied_json", "update_time")
        values = ", ".join(f"s.{c}" for c in (*columns, "state_key", "value_json"))
        return affected_rows(self.engine.execute(
            f"MERGE INTO {table} t USING ({source}) s ON {on}"
            " WHEN MATCHED AND coalesce(t.version, 0) = s.expected AND t.claim_json IS NULL"
            " THEN UPDATE SET value_json = s.value_json,"
            " version = s.expected + 1, applied_json = s.applied_json, update_time = :now"
            f" WHEN NOT MATCHED AND s.expected = 0 THEN INSERT ({', '.join(inserted)})"
            f" VALUES ({values}, 1, s.applied_json, :now)",
            params,
        ))
