"""Rows no session owns, found with one bounded statement each (``LIMIT``): event rows whose session row is
gone (orphans), and app/user state rows of an app or user that has no session row.

The per-session facts (a session, app or user row stored twice; event rows sharing a key; events past the
session's version) are read with the session (``reader.py``, ``extra["duplicate_rows"]``) and judged by the
``store_integrity`` check; these are the rows the per-session reading never reaches.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import SessionFilter, SqlSource
from .layouts import Layout

LIMIT = 100  # findings per kind; the statement asks for one more to say there are more


@dataclass(frozen=True)
class Finding:
    check: str  # "store_integrity" (orphan events) or "scope_rows_owned"
    key: tuple[str, ...]  # (app, user, session), (app, user) or (app,)
    evidence: str


def _filters(selection: SessionFilter, columns: dict[str, str]) -> tuple[str, dict[str, str]]:
    """`` AND alias.column = :f_x`` for each filter the table has a column for."""
    sql, params = "", {}
    for name, value in (("app", selection.app), ("user", selection.user), ("session", selection.session)):
        if value is not None and name in columns:
            sql += f" AND {columns[name]} = :f_{name}"
            params[f"f_{name}"] = value
    return sql, params


def _unowned(table: str, owner: str, n: int, counted: str) -> str:
    """How a finding names the unowned row(s), with the verb: "... row app=A belongs" / "... rows app=A (3 keys) belong"."""
    if counted == "keys":
        return f"{table} rows {owner} ({n} key{'s' if n != 1 else ''}) belong"
    return f"{table} row {owner}" + (f" (stored {n} times)" if n > 1 else "") + " belongs"


def unowned_rows(source: SqlSource, layout: Layout, selection: SessionFilter | None = None) -> list[Finding]:
    """Orphan event rows (per session key) and scope rows without a session, honouring the app/user/session
    filters (a scope row belongs to no session, so ``--session`` leaves them out; times do not apply)."""
    selection = selection or SessionFilter()
    sid = layout.session_id
    findings: list[Finding] = []
    where, params = _filters(selection, {"app": "e.app_name", "user": "e.user_id", "session": "e.session_id"})
    rows = source.rows(
        "SELECT e.app_name, e.user_id, e.session_id, count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM sessions"
        f" s WHERE s.app_name = e.app_name AND s.user_id = e.user_id AND s.{sid} = e.session_id){where}"
        f" GROUP BY e.app_name, e.user_id, e.session_id ORDER BY e.app_name, e.user_id, e.session_id"
        f" LIMIT {LIMIT + 1}", params)
    findings += [Finding("store_integrity", (str(a), str(u), str(s)),
                         f"{n} events row(s) app={a} user={u} session_id={s} have no sessions row (orphans: the "
                         "session was deleted without its events, or they were written past the service)")
                 for a, u, s, n in rows[:LIMIT]]
    app_table, user_table = layout.scope_tables
    # Per-key layouts: the count is of key rows; one row per app/user: a count above 1 is a duplicate.
    counted = "keys" if layout.scope_key else "times"
    if selection.session is None:
        where, params = _filters(selection, {"app": "u.app_name", "user": "u.user_id"})
        rows = source.rows(
            f"SELECT u.app_name, u.user_id, count(*) FROM {user_table} u WHERE NOT EXISTS (SELECT 1 FROM sessions s"
            f" WHERE s.app_name = u.app_name AND s.user_id = u.user_id){where} GROUP BY u.app_name, u.user_id"
            f" ORDER BY u.app_name, u.user_id LIMIT {LIMIT + 1}", params)
        findings += [Finding("scope_rows_owned", (str(a), str(u)),
                             _unowned(user_table, f"app={a} user={u}", n, counted) + " to a user with no session row")
                     for a, u, n in rows[:LIMIT]]
    if selection.session is None and selection.user is None:
        where, params = _filters(selection, {"app": "a.app_name"})
        rows = source.rows(
            f"SELECT a.app_name, count(*) FROM {app_table} a WHERE NOT EXISTS (SELECT 1 FROM sessions s"
            f" WHERE s.app_name = a.app_name){where} GROUP BY a.app_name ORDER BY a.app_name"
            f" LIMIT {LIMIT + 1}", params)
        findings += [Finding("scope_rows_owned", (str(a),),
                             _unowned(app_table, f"app={a}", n, counted) + " to an app with no session row")
                     for a, n in rows[:LIMIT]]
    return findings
