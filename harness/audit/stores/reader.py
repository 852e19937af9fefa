"""Read a store one page of sessions at a time and yield each as a ``StoredSession`` with its events.

Per page: one statement for the page's keys and update times (filtered by app/user/session in SQL, by time
here: times are typed differently in each layout and engine), then one each for the kept sessions' rows,
their events, and their app and user state rows. Pages follow the key order with a keyset condition, so
every statement is bounded and memory does not grow with the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..model import StoredSession
from .base import SessionFilter, SqlSource, StoreError
from .layouts import Layout
from .values import epoch, json_object, json_value

PAGE_SIZE = 100
Key = tuple[str, str, str]
OnUnreadable = Callable[[Key, str], None]


def iter_sessions(source: SqlSource, layout: Layout, selection: SessionFilter | None = None, *,
                  page_size: int = PAGE_SIZE, on_unreadable: OnUnreadable | None = None) -> Iterator[StoredSession]:
    """``on_unreadable(key, message)``: a session whose rows cannot be decoded (JSON a direct write broke) is
    reported there and skipped; without it, the ``StoreError`` ends the reading."""
    selection = selection or SessionFilter()
    sid = layout.session_id
    conditions, params = [], {}
    for column, value in (("app_name", selection.app), ("user_id", selection.user), (sid, selection.session)):
        if value is not None:
            conditions.append(f"{column} = :f_{column}")
            params[f"f_{column}"] = value
    after: Key | None = None
    while True:
        where = list(conditions)
        page_params = dict(params)
        if after is not None:
            where.append(f"(app_name > :k_a OR (app_name = :k_a AND (user_id > :k_u OR (user_id = :k_u AND "
                         f"{sid} > :k_s))))")
            page_params.update(k_a=after[0], k_u=after[1], k_s=after[2])
        sql = (f"SELECT app_name, user_id, {sid}, update_time FROM sessions"
               + (f" WHERE {' AND '.join(where)}" if where else "")
               + f" ORDER BY app_name, user_id, {sid} LIMIT {int(page_size)}")
        page = source.rows(sql, page_params)
        if not page:
            return
        after = tuple(page[-1][:3])  # type: ignore[assignment]
        # A key stored twice (a duplicate session row) is judged once; _load counts its rows.
        kept = list(dict.fromkeys(tuple(row[:3]) for row in page if selection.keeps_time(epoch(row[3]))))
        if kept:
            yield from _load(source, layout, kept, on_unreadable)  # type: ignore[arg-type]
        if len(page) < page_size:
            return


def _any_of(keys: Sequence[Sequence[str]], columns: Sequence[str], prefix: str) -> tuple[str, dict[str, Any]]:
    """``(a = :p0_0 AND b = :p0_1) OR ...``: one exact match per key (every engine, no row-value syntax)."""
    clauses, params = [], {}
    for i, key in enumerate(keys):
        parts = []
        for j, (column, value) in enumerate(zip(columns, key, strict=True)):
            params[f"{prefix}{i}_{j}"] = value
            parts.append(f"{column} = :{prefix}{i}_{j}")
        clauses.append("(" + " AND ".join(parts) + ")")
    return " OR ".join(clauses), params


def _select(source: SqlSource, table: str, columns: Sequence[str], keys: Sequence[Sequence[str]],
            key_columns: Sequence[str], order: Sequence[str] = ()) -> list[dict[str, Any]]:
    where, params = _any_of(keys, key_columns, "p")
    sql = f"SELECT {', '.join(columns)} FROM {table} WHERE {where}" + (f" ORDER BY {', '.join(order)}" if order else "")
    return [dict(zip(columns, row, strict=True)) for row in source.rows(sql, params)]


def _load(source: SqlSource, layout: Layout, keys: list[Key], on_unreadable: OnUnreadable | None
          ) -> Iterator[StoredSession]:
    sid = layout.session_id
    present = source.columns("sessions") or () if layout.optional_session_columns else ()
    session_columns = ("app_name", "user_id", sid, layout.state, *layout.session_columns,
                       *(c for c in layout.optional_session_columns if c in present))
    sessions: dict[Key, dict[str, Any]] = {}
    copies: dict[tuple, int] = {}  # key -> rows holding it, for the keys (sessions, app and user rows) read here
    for r in _select(source, "sessions", session_columns, keys, ("app_name", "user_id", sid)):
        key = (r["app_name"], r["user_id"], r[sid])
        sessions.setdefault(key, r)  # a duplicate: the first row is judged, the count reported
        copies[("sessions", *key)] = copies.get(("sessions", *key), 0) + 1
    event_columns = ("app_name", "user_id", "session_id", *layout.event_columns)
    events: dict[Key, list[dict[str, Any]]] = {}
    for row in _select(source, "events", event_columns, keys, ("app_name", "user_id", "session_id"),
                       ("app_name", "user_id", "session_id", *layout.event_order)):
        events.setdefault((row["app_name"], row["user_id"], row["session_id"]), []).append(row)
    app_rows, user_rows = _scope_rows(source, layout, keys, copies)
    app_table, user_table = layout.scope_tables
    repeated: dict[tuple, dict[str, int]] = {}  # (table, owner) -> {scope row named: copies}, where more than one
    for (table, *owner, state_key), n in copies.items():
        if n > 1 and table in (app_table, user_table):
            repeated.setdefault((table, tuple(owner)), {})[_scope_where(layout, table, tuple(owner), state_key)] = n
    for key in keys:
        row = sessions.get(key)
        if row is None or layout.skip_session(row):  # deleted since the page was read, or soft-deleted
            continue
        duplicates = {"sessions": copies.get(("sessions", *key), 1)} if copies.get(("sessions", *key), 1) > 1 else {}
        duplicates.update(repeated.get((app_table, key[:1]), {}))
        duplicates.update(repeated.get((user_table, key[:2]), {}))
        try:
            stored = _session(layout, key, row, events.get(key, []), app_rows.get(key[:1]), user_rows.get(key[:2]))
            if duplicates:
                stored.extra["duplicate_rows"] = duplicates
        except StoreError as exc:
            if on_unreadable is None:
                raise
            on_unreadable(key, str(exc))
            continue
        yield stored


def _scope_rows(source: SqlSource, layout: Layout, keys: list[Key], copies: dict[tuple, int]
                ) -> tuple[dict[tuple, list[dict[str, Any]]], dict[tuple, list[dict[str, Any]]]]:
    """The app and user state rows of the sessions ``keys``, by (app,) and (app, user): one row each, or (per-key
    layouts) one per key. ``copies`` counts the rows per key (a scope row's, or a state key's)."""
    found: list[dict[tuple, list[dict[str, Any]]]] = []
    for table, owner in zip(layout.scope_tables, (("app_name",), ("app_name", "user_id")), strict=True):
        rows: dict[tuple, list[dict[str, Any]]] = {}
        owners = sorted({k[:len(owner)] for k in keys})
        for r in _select(source, table, (*owner, *layout.scope_row_columns()), owners, owner):
            who = tuple(r[c] for c in owner)
            if layout.scope_key is None and who in rows:  # a duplicate: the first row is judged, the count reported
                copies[(table, *who, None)] += 1
                continue
            rows.setdefault(who, []).append(r)
            state_key = None if layout.scope_key is None else r[layout.scope_key]
            copies[(table, *who, state_key)] = copies.get((table, *who, state_key), 0) + 1
        found.append(rows)
    return found[0], found[1]


def _scope_where(layout: Layout, table: str, owner: tuple, state_key: str | None) -> str:
    """How evidence names a scope row: ``user_states row app=A user=U`` or ``user_state_keys row app=A user=U
    key=K``."""
    names = ("app", "user")
    return (f"{table} row " + " ".join(f"{n}={v}" for n, v in zip(names, owner))
            + ("" if state_key is None else f" key={state_key}"))


def _scope_state(layout: Layout, table: str, owner: tuple, rows: list[dict[str, Any]] | None
                 ) -> dict[str, Any] | None:
    """The scope's state from its row(s); None: the store has no row for it."""
    if rows is None:
        return None
    if layout.scope_key is None:
        return json_object(rows[0][layout.state], f"{_scope_where(layout, table, owner, None)} {layout.state}")
    state: dict[str, Any] = {}
    for r in rows:
        if r[layout.scope_value] is not None:  # NULL: a deleted key (a tombstone), not state
            where = f"{_scope_where(layout, table, owner, r[layout.scope_key])} {layout.scope_value}"
            state[str(r[layout.scope_key])] = json_value(r[layout.scope_value], where)
    return state


def _session(layout: Layout, key: Key, row: dict[str, Any], event_rows: list[dict[str, Any]],
             app_rows: list[dict[str, Any]] | None, user_rows: list[dict[str, Any]] | None) -> StoredSession:
    app, user, session_id = key
    where = f"sessions row app={app} user={user} id={session_id}"
    kept = [r for r in event_rows if not layout.skip_event(r)]
    version, update_time, extra = layout.session_facts(row)
    if "pending_event_id" in extra:  # ours: see layouts.py
        last_seq = max((r["seq"] for r in kept if r["seq"] is not None), default=0)
        extra["pending_append"] = bool(extra.pop("pending_event_id")) and (version or 0) > last_seq
    if len(kept) != len(event_rows):
        extra["rewound_events"] = len(event_rows) - len(kept)
    if layout.scope_key is None:
        for name, scope_rows in (("app", app_rows), ("user", user_rows)):
            if scope_rows and "version" in scope_rows[0]:
                extra[f"{name}_state_version"] = scope_rows[0]["version"]
    state = json_object(row[layout.state], f"{where} {layout.state}")
    events = tuple(layout.event(r, i) for i, r in enumerate(kept))
    if row.get("state_version") is not None:  # ours: a snapshot; the later events' deltas complete it
        for event in events:
            if event.seq is not None and event.seq > row["state_version"]:
                for key, value in event.state_delta.items():
                    if not key.startswith(("app:", "user:", "temp:")):
                        if value is None:
                            state.pop(key, None)
                        else:
                            state[key] = value
    app_table, user_table = layout.scope_tables
    rows_word = "row" if layout.scope_key is None else "rows"
    return StoredSession(
        layout=layout.name, app_name=app, user_id=user, session_id=session_id,
        state=state,
        app_state=_scope_state(layout, app_table, (app,), app_rows),
        user_state=_scope_state(layout, user_table, (app, user), user_rows),
        events=events, version=version, update_time=update_time,
        nulls_are_deletes=layout.nulls_are_deletes, row=where, extra=extra,
        app_row=f"{app_table} {rows_word} app={app}", user_row=f"{user_table} {rows_word} app={app} user={user}")
