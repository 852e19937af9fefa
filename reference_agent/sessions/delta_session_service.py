"""``DeltaSessionService``: an ADK session service on a ``SqlEngine``.

One SQL code path for DuckDB (embedded, the default) and Databricks SQL. It
follows ADK's ``DatabaseSessionService`` contract with one declared divergence:

**A ``None`` value in a state delta deletes the key** — in session, ``user:``
and ``app:`` scope alike (and ``temp:`` in the live session). ADK's own
services store ``None``. Persisted state therefore never holds a null at top
level: an event row keeps the keys it set in ``state_delta_json`` and the keys
it deleted in ``deleted_keys_json``; reading the event back restores
``{key: None}`` in ``actions.state_delta`` so the event round-trips.

Other rules:

* ``temp:`` keys are applied to the live session and never persisted (the
  base class helpers do the applying and trimming).
* Values must be JSON-native (``values.py``): a set, bytes, a datetime, an
  object, NaN... is refused with ``StateValueError`` naming the key path,
  before anything is written, and the caller's session is left unchanged.
* Returned sessions are built from storage on each call, so they are copies.

**Concurrency and crashes.** DuckDB runs each call in one transaction; on
Databricks ``transaction()`` is a no-op (every statement commits alone, on
Delta tables that detect conflicting concurrent commits). The same code is
correct on both because no step relies on the transaction:

* *Session row, compare-and-set.* Every session row has a ``version``
  (carried on the returned ``Session`` as ``_storage_update_marker``);
  ``append_event`` updates it only ``WHERE version = :expected``. A stale
  writer gets ADK's ``StaleSessionError`` and nothing is written. This
  ``UPDATE`` is the append's **commit point**: on an engine without
  transactions it also stores the append's redo record (``pending_json``: the
  event row and its ``app:``/``user:`` deltas).
* *Scope keys, compare-and-set per key.* ``app:``/``user:`` state is one row
  per key (``app_state_keys``/``user_state_keys``, ``scope_rows.py``), so an
  append reads and writes only the rows of the keys it sets or deletes,
  whatever else the scope holds. Before the commit point those rows are read;
  if a key the event sets or deletes holds, in storage, another value than the
  writer's session was loaded with (another session changed it since), the
  append is stale: ``StaleSessionError``, nothing written. (What a session saw
  is kept by this service per ``Session`` *object* — ADK's ``State`` writes
  through to ``session.state`` before ``append_event``, so the live dict
  cannot tell; another ``get_session`` of the same id makes a new object and
  does not refresh the writer's view (``scope_views.py``); a ``Session`` this
  service did not return writes its scope keys blind, as ADK's services do.)
  Keys the event does not touch are not read or written. On DuckDB the check
  and the write are in the append's transaction. Where statements commit
  alone (Databricks) the append **claims** its keys before the commit point —
  a compare-and-set on each key row at the version read, naming the append —
  and commits only if the claims still stand (the session row's ``fence``);
  then writes the values where its claim stands. Of two sessions that read a
  key at one version only one can claim it; the other is stale before it has
  written anything. A claim that another writer finds is settled: finished if
  its append committed, cleared if it never can, fenced off if it is older
  than the lease or on the same session. The protocol, statement by
  statement, with what a crash after each leaves and who completes or undoes
  it: ``scope_claims.py``. Stores of the layout before (one
  ``app_states``/``user_states`` row per app or user) are moved to key rows on
  open (``scope_migration.py``).
* *Roll-forward.* After the commit point come the scope writes, then the
  event ``INSERT``, which comes last: an event row with ``seq = version``
  means the append is complete. A writer that dies (or whose statement fails)
  after the commit point leaves a session row whose last append has no event
  row; the next ``get_session`` or ``append_event`` of that session (any
  process) finds that, and completes it from ``pending_json``: the scope
  writes (the keys still holding its claim; in a record written before claims,
  skipped where the row's ``applied_json`` already lists the event) and the
  event row (insert-if-absent). The next writer of a key it claimed finishes
  that key too. A writer that dies *before* the
  commit point has written nothing. So a session always reads back as a
  whole number of appends, and an acknowledged append (``append_event``
  returned) is never lost. ``create_session`` works the same way: its
  session row (version 0) is its commit point and carries the initial
  ``app:``/``user:`` state as a redo record, cleared once the scope rows are
  written; a writer that dies in between leaves a record the next read of
  the session — or the retried create, which then raises
  ``AlreadyExistsError`` — completes. ``list_sessions`` and ``get_user_state`` read the
  scope rows as stored (a crashed append's ``app:``/``user:`` keys appear
  once the session is next read).
* *Delta conflicts.* A statement that FAILED with a Delta concurrent-write
  error (``WriteConflictError``, e.g. ``DELTA_CONCURRENT_APPEND``) did not
  commit. Retried (bounded, logged, backoff with an injectable sleep —
  ``ConflictRetry``) where that is safe: the session compare-and-set (its
  guard re-checks; once the attempts are used up: ``StaleSessionError``), the
  insert-if-absent ``MERGE`` of ``create_session`` (re-checks; then
  ``AlreadyExistsError`` if another writer made it), scope-row writes
  (re-read and re-applied), the event row (an insert-if-absent ``MERGE`` on
  Databricks, where a reader may have completed the append already: it
  re-checks), ``DELETE``s and DDL (idempotent).
  Reads never conflict.

**State as snapshot + tail.** An append does not rewrite the session's state:
its event row carries the delta, and the session row's ``state_json`` is a
snapshot as of the append with seq ``state_version`` (NULL in rows written
before that column: the row's version). Readers fold the later events'
session-scope deltas in (from the events they read anyway, else one more
``SELECT``). An append whose service knows the snapshot writes a new one, in
the same compare-and-set, once the tail has outgrown it (``COMPACT_MIN_CHARS``
at least): the state is written once per as many delta bytes, so an append's
cost follows its delta, not the state's size (one 20 MB value no longer makes
every later append rewrite 20 MB).

**Keys.** Each table has its key (``schema.KEYS``: a session, an event per
seq, an app row, a user row). DuckDB enforces them with unique indexes, added
to older files on open, so no writer — this service on any connection, or a
direct ``INSERT`` — can store a duplicate; Delta enforces none, so there the
MERGE insert-if-absent and the compare-and-set writes above keep them unique
(a MERGE reads the table, so of two racing ones Delta fails one with a
conflict; it is retried and re-checks).

**DuckDB.** Every engine on one file in a process shares one connection (see
``DuckDBEngine``), so services on one file take turns as one service's calls
do. A conflict DuckDB still reports (another connection to the file, e.g. a
user's own ``duckdb.connect``: "Conflict on update!", a duplicate key at
commit) aborts the call's transaction; the call runs again whole (bounded by
``retry``): a create then finds the row (``AlreadyExistsError``), an append
re-checks its version and keys. Once the attempts are used up the call
raises ``StaleSessionError`` ("lost a write conflict"): DuckDB's own
exceptions never reach the caller.
Its ``transaction()`` is atomic, so the session row and the event
row commit together and no redo record is written (``pending_json`` NULL);
roll-forward is still read (older rows, and engines without transactions):
the row is read without its last event's seq, which is read apart only for a
row that carries a redo record.
The service's storage work runs in a worker thread where the engine says it
is thread-safe (``thread_safe``; DuckDB's engine holds a lock per statement and
transaction), so an append never blocks the event loop.

The happy path: on DuckDB per scope written one ``SELECT``, one ``DELETE`` and
one ``INSERT``, the session ``UPDATE`` and the event ``INSERT``, inside one
transaction (``BEGIN``/``COMMIT``); on Databricks per scope one ``SELECT``,
one claim ``MERGE`` and one ``MERGE`` of the values, the session ``UPDATE``
and the event ``MERGE``; an append that writes no ``app:``/``user:`` key is
those last two statements.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from adk_compat import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse
from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from pydantic_core import to_jsonable_python
from typing_extensions import override

from reference_agent.storage.sql import SqlEngine, WriteConflictError, affected_rows

from .conflicts import ConflictRetry
from .schema import ensure_schema
from .scope_claims import LEASE_S, Intent, ScopeClaims
from .scope_migration import migrate_scope_rows
from .scope_rows import SCOPES_SQL, KeyRow, ScopeRows, apply_delta, split_scopes
from .scope_views import ScopeViews, fingerprint
from .values import StateValueError, check_storable, refused_value, unencodable_text

logger = logging.getLogger(__name__)
T = TypeVar("T")

_STALE_MESSAGE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)


# --- persisted read-back (for the conformance harness) ------------------------


@dataclass(frozen=True)
class PersistedEvent:
    seq: int
    id: str
    author: str | None
    invocation_id: str | None
    timestamp: float
    state_delta: dict[str, Any]  # parsed state_delta_json: only non-None values
    deleted_keys: list[str]


@dataclass(frozen=True)
class PersistedSession:
    """What storage holds for one session, read from the tables, not memory."""

    state: dict[str, Any]  # the session row's state_json (no app:/user: keys)
    app_state: dict[str, Any]  # un-prefixed keys, as stored
    user_state: dict[str, Any]  # un-prefixed keys, as stored
    version: int
    events: list[PersistedEvent]


# --- JSON and state helpers ---------------------------------------------------


def _dumps(value: Any) -> str:
    # Values were checked by check_storable; to_jsonable_python only turns str/int enums and the like into
    # their plain JSON form. allow_nan=False: a NaN that slipped through fails here, before it is stored.
    return json.dumps(to_jsonable_python(value), ensure_ascii=False, allow_nan=False)


def _loads(text: str | None, default: Any) -> Any:
    return default if text is None or text == "" else json.loads(text)


def _split_scopes(delta: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Split a (temp-free) delta into app/user/session parts, prefixes removed."""
    scopes: dict[str, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}
    for key, value in delta.items():
        if key.startswith(State.APP_PREFIX):
            scopes["app"][key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            scopes["user"][key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            scopes["session"][key] = value
    return scopes


_apply_delta = apply_delta


def _merge(session_state: dict[str, Any], app_state: Mapping[str, Any], user_state: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(session_state)
    merged.update({State.APP_PREFIX + k: v for k, v in app_state.items()})
    merged.update({State.USER_PREFIX + k: v for k, v in user_state.items()})
    return merged


def _event_to_json(event: Event) -> str:
    # The delta lives in its own columns (nulls split out), so it is left out here.
    data = event.model_dump(mode="json", exclude_none=True, exclude={"actions": {"state_delta"}})
    text = json.dumps(data, ensure_ascii=False)
    found = None if text.isascii() else unencodable_text(data, "event")
    if found is not None:  # the engine would refuse the statement, naming nothing
        raise StateValueError(found[0], "", found[1])
    return text


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a session's events are built.

    Every object made here stays alive, so each collection the allocations
    trigger only walks them and promotes them: at 10,000 events that made
    get_session grow faster than linearly (bench/store.py; 590 ms -> 400 ms).
    Re-enabled only if it was on, so a caller's own gc.disable() holds.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _event_from_row(row: tuple) -> Event:
    seq, event_id, invocation_id, author, timestamp, delta_json, deleted_json, event_json = row
    data = _loads(event_json, {})
    delta = _loads(delta_json, {})
    delta.update({key: None for key in _loads(deleted_json, [])})
    data.setdefault("actions", {})["state_delta"] = delta
    data.update(id=event_id, invocation_id=invocation_id, author=author, timestamp=timestamp)
    return Event.model_validate(data)


_EVENT_COLUMNS = "seq, id, invocation_id, author, timestamp, state_delta_json, deleted_keys_json, event_json"
_SESSION_KEY = "app_name = :app_name AND user_id = :user_id AND id = :session_id"
_EVENT_KEY = "app_name = :app_name AND user_id = :user_id AND session_id = :session_id"
_KNOWN_ROWS = 1024  # sessions whose row append_event may write without reading it first
# An append folds the delta tail into a new state_json snapshot once the tail outgrows the snapshot (and this):
# each compaction writes the state once per as many delta bytes, so an append's cost follows its delta, not the
# state's size, and reading a session folds at most about a snapshot's worth of deltas.
COMPACT_MIN_CHARS = 64 * 1024
_NOT_SESSION_SCOPE = (State.APP_PREFIX, State.USER_PREFIX, State.TEMP_PREFIX)
# The last event's seq; equal to the row's version once its last append is complete (see the module docstring).
_LAST_SEQ = ("(SELECT max(e.seq) FROM events e WHERE e.app_name = :app_name AND e.user_id = :user_id"
             " AND e.session_id = :session_id)")


def _session_with_scopes(last_seq: str) -> str:
    """The session row and its app and user keys in one statement (one round trip, not three): the row is the
    one tagged 's' (``_split_session_rows``), the keys those of ``SCOPES_SQL``, padded to the row's columns."""
    return ("SELECT 's', NULL, s.state_json, s.version, s.update_time, s.pending_json, "
            f"{last_seq}, s.create_time, coalesce(s.state_version, s.version), coalesce(s.fence, 0)"
            " FROM sessions s WHERE s.app_name = :app_name AND s.user_id = :user_id AND s.id = :session_id"
            " UNION ALL SELECT k.*, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM (" + SCOPES_SQL + ") k")


def _split_session_rows(rows: list[tuple]) -> tuple[tuple | None, dict[str, Any], dict[str, Any]]:
    """``_session_with_scopes``'s rows as (the session row: state_json, version, update_time, pending_json,
    last_seq, create_time, state_version, fence — None if absent; app state; user state)."""
    session = next((tuple(row[2:]) for row in rows if row[0] == "s"), None)
    app, user = split_scopes(row[:3] for row in rows if row[0] != "s")
    return session, app, user


def _session_row(last_seq: str) -> str:
    """What an append needs of a row it does not know: not state_json (an append writes its delta, not the state)."""
    return (f"SELECT version, update_time, pending_json, {last_seq}, create_time, coalesce(s.fence, 0) FROM sessions s"
            " WHERE s.app_name = :app_name AND s.user_id = :user_id AND s.id = :session_id")


# The deltas of the events after a snapshot (the state's tail), when the events read do not cover them.
_TAIL = (f"SELECT state_delta_json, deleted_keys_json FROM events WHERE {_EVENT_KEY}"
         " AND seq > :state_version AND seq <= :version ORDER BY seq")
_INSERT_EVENT = (f"INSERT INTO events (app_name, user_id, session_id, {_EVENT_COLUMNS})"
                 " VALUES (:app_name, :user_id, :session_id, :seq, :id, :invocation_id, :author, :timestamp,"
                 " :state_delta_json, :deleted_keys_json, :event_json)")
_INSERT_EVENT_IF_ABSENT = (
    "MERGE INTO events t USING (SELECT :app_name AS app_name, :user_id AS user_id, :session_id AS session_id,"
    " :seq AS seq) s ON t.app_name = s.app_name AND t.user_id = s.user_id AND t.session_id = s.session_id"
    f" AND t.seq = s.seq WHEN NOT MATCHED THEN INSERT (app_name, user_id, session_id, {_EVENT_COLUMNS})"
    " VALUES (:app_name, :user_id, :session_id, :seq, :id, :invocation_id, :author, :timestamp,"
    " :state_delta_json, :deleted_keys_json, :event_json)"
)


@dataclass
class _KnownRow:
    """A session row as this service last read or wrote it (see ``_write_session_row``)."""

    version: int
    create_time: float
    snapshot: str | None  # state_json as stored; None: not read by this service (it then does not compact)
    tail: list[tuple[str, str]]  # (state_delta_json, deleted_keys_json) of the session-scope deltas since
    tail_chars: int
    fence: int = 0  # the row's fence (scope_claims.py): a claimed append's compare-and-set expects it
    known: bool = False  # as an append's base: taken from what this service knew, not read (_append_claimed)


class _BaseMoved(Exception):
    """A claimed append's commit matched nothing on a base it had not read: it runs again on the row read."""


def _fold_tail(state: dict[str, Any], tail: Iterable[tuple[str | None, str | None]]) -> dict[str, Any]:
    """``state`` (a snapshot) with the session-scope part of each later event's delta applied, in order."""
    for delta_json, deleted_json in tail:
        for key, value in _loads(delta_json, {}).items():
            if not key.startswith(_NOT_SESSION_SCOPE):  # app:/user: live in their rows; temp: is never stored
                state[key] = value
        for key in _loads(deleted_json, []):
            if not key.startswith(_NOT_SESSION_SCOPE):
                state.pop(key, None)
    return state


def _incomplete(version: int, pending_json: str | None, last_seq: int | None) -> bool:
    """Whether the row's last append committed but its event row was never stored (its writer died), or, at version
    0, its create committed the row but its redo record (the initial app:/user: state) was never cleared."""
    if not pending_json:
        return False
    return not version or (last_seq or 0) < version


class DeltaSessionService(BaseSessionService):
    """ADK ``BaseSessionService`` on a ``SqlEngine`` (see the module docstring)."""

    # None in a delta deletes the key (ADK's own services store None); conformance harnesses read this.
    none_semantics = "delete"
    rejects_stale_writes = True  # optimistic concurrency: a stale writer's append raises StaleSessionError

    # Engines without transactions: an append claims its app:/user: keys before its commit point (scope_claims.py).
    # False only in the tests' broken variant, which checks the keys before the commit point and writes them after.
    claims_before_commit = True

    def __init__(self, engine: SqlEngine, *, retry: ConflictRetry | None = None, claim_lease_s: float = LEASE_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self._owns_engine = False
        # Bounded retries of statements that lost a Delta write conflict (see the module docstring).
        self.retry = retry or ConflictRetry()
        self._scopes = ScopeRows(engine, self.retry, _dumps)
        # claim_lease_s, clock: when another session's claim that looks in flight may be fenced off (a writer that
        # died); they never decide whether a value is kept.
        self._claims = ScopeClaims(engine, self.retry, _dumps, lease_s=claim_lease_s, clock=clock)
        # A write after its own commit point (a create's initial state, an old redo record) settles a claim it
        # finds, fencing off one in flight: it must land, and it comes later.
        self._scopes.settle = lambda scope, keys, rows: self._claims.settle(scope, keys, rows, force=True)
        # (app, user, session) -> the row as this service last read or wrote it. append_event uses it instead
        # of reading the row first; its UPDATE compares version and create_time, so a row changed by anyone
        # else (even deleted and recreated at the same version) falls back to reading it.
        self._known_rows: OrderedDict[tuple[str, str, str], _KnownRow] = OrderedDict()
        # An engine with real transactions (DuckDB) commits the session row and the event row together: no redo
        # record is needed. One that may be used from a worker thread lets the calls leave the event loop free.
        self._atomic = bool(getattr(engine, "transactional", False))
        # Where transaction() is atomic no append writes a redo record, so the row is read without the last seq
        # (on DuckDB that subquery was ~40 % of the statement); a row with a record all the same gets it apart
        # (_needs_roll_forward).
        last_seq = "NULL" if self._atomic else _LAST_SEQ
        self._row_with_scopes, self._row = _session_with_scopes(last_seq), _session_row(last_seq)
        self._offload = bool(getattr(engine, "thread_safe", False))
        # Each returned Session object -> the app:/user: values it was loaded with, plus its own writes since
        # (scope_views.py; see _check_scope_keys). Per object, not per session id: another read of the id
        # does not refresh a writer's view.
        self._views = ScopeViews()
        self.retry.run("creating the session tables", lambda: ensure_schema(engine))
        migrate_scope_rows(engine, self.retry, _dumps)  # app_states/user_states rows of the previous layout, if any

    @classmethod
    def duckdb(cls, path: str | Path | None = None) -> DeltaSessionService:
        """A service on its own DuckDB engine (None = in memory)."""
        from reference_agent.storage.duckdb_engine import DuckDBEngine

        service = cls(DuckDBEngine(path))
        service._owns_engine = True
        return service

    def close(self) -> None:
        """Close the engine if this service created it."""
        if self._owns_engine:
            self.engine.close()

    # --- scoped state ---------------------------------------------------------

    def _scoped_states(self, app_name: str, user_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return split_scopes(self.engine.execute(SCOPES_SQL, {"app_name": app_name, "user_id": user_id}))

    # --- the session row as last seen ------------------------------------------

    def _remember_row(self, keys: Mapping[str, str], row: _KnownRow) -> None:
        key = (keys["app_name"], keys["user_id"], keys["session_id"])
        self._known_rows[key] = row
        self._known_rows.move_to_end(key)
        while len(self._known_rows) > _KNOWN_ROWS:
            self._known_rows.popitem(last=False)

    def _forget_known(self, keys: Mapping[str, str]) -> None:
        self._known_rows.pop((keys["app_name"], keys["user_id"], keys["session_id"]), None)

    def _forget_row(self, keys: Mapping[str, str]) -> None:
        self._known_rows.pop((keys["app_name"], keys["user_id"], keys["session_id"]), None)

    async def _in_worker(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` in a worker thread where the engine allows it, so the event loop stays free."""
        if self._offload:
            return await asyncio.to_thread(call, *args)
        return call(*args)

    def _whole(self, what: str, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` (one ``engine.transaction()``), run whole again after a write conflict that aborted it.

        Only on engines whose transactions are atomic (DuckDB): the conflict rolled everything back, so running the
        call again re-reads and re-checks from scratch (an append's compare-and-set and scope-key check, a
        create's insert-if-absent). Bounded by ``retry``; then ``StaleSessionError`` — the driver's error never
        reaches the caller. On other engines each statement is retried where that is safe (see the module
        docstring), so the call runs once.
        """
        if not self._atomic:
            return call(*args)
        delays = self.retry.delays()
        for attempt, delay in enumerate([*delays, None], start=1):
            try:
                return call(*args)
            except WriteConflictError as exc:
                logger.warning("%s lost a write conflict with another connection to the store (%s, attempt %d of "
                               "%d): %s", what, exc.error_class, attempt, self.retry.attempts, exc)
                if delay is None:
                    raise StaleSessionError(
                        f"{_STALE_MESSAGE} ({what} lost a write conflict with another connection to the store "
                        f"{self.retry.attempts} times: {exc.error_class}; nothing was written)") from exc
                self.retry.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    # --- BaseSessionService ---------------------------------------------------

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        session_id = session_id or platform_uuid.new_uuid()
        check_storable(state or {})
        scopes = _split_scopes(state or {})
        try:
            session_state_json = _dumps(_apply_delta({}, scopes["session"]))
            for scope in ("app", "user"):
                _dumps(scopes[scope])  # (written by the scope rows inside the transaction: refused here, before it)
        except (ValueError, TypeError, RecursionError) as exc:
            raise refused_value(state or {}, _dumps, exc) from exc
        now = platform_time.get_time()
        keys = {"app_name": app_name, "user_id": user_id, "session_id": session_id}
        app_state, user_state = await self._in_worker(self._whole, "create_session", self._create_rows, keys, scopes,
                                                      session_state_json, now)
        self._remember_row(keys, _KnownRow(0, now, session_state_json, [], 0))
        # Built from the JSON written, so the result equals what a later get_session returns.
        session = self._build_session(keys, _loads(session_state_json, {}), app_state, user_state, 0, now, [])
        self._views.load(session, app_state, user_state)
        return session

    def _create_rows(self, keys: Mapping[str, str], scopes: Mapping[str, dict[str, Any]], session_state_json: str,
                     now: float) -> tuple[dict[str, Any], dict[str, Any]]:
        session_id = keys["session_id"]
        # The applied_json token of this create's scope writes (unique per creation; no uuid drawn, so ids made
        # after it and the recordings that hold them stay as they were).
        token = f"create:{session_id}:{now!r}"
        scoped = {scope: scopes[scope] for scope in ("app", "user") if scopes[scope]}
        # Where the engine cannot commit the rows together (Databricks), the session row carries the create's redo
        # record: its initial app:/user: state. The row is the create's commit point; a writer that dies after it
        # leaves a record the next reader (or a retried create) completes, so the session never reads back
        # without its initial state. Cleared once the scope rows are written.
        pending = None if self._atomic or not scoped else _dumps({"create": scoped, "token": token, "time": now})
        with self.engine.transaction():
            # MERGE ... WHEN NOT MATCHED is an atomic insert-if-absent on both engines (no enforced keys on Delta);
            # run again after a Delta conflict, it re-checks, so a session another writer made is not overwritten.
            inserted = affected_rows(self.retry.run("creating a session row", lambda: self.engine.execute(
                "MERGE INTO sessions t USING (SELECT :app_name AS app_name, :user_id AS user_id,"
                " :session_id AS id) s ON t.app_name = s.app_name AND t.user_id = s.user_id AND t.id = s.id"
                " WHEN NOT MATCHED THEN INSERT (app_name, user_id, id, state_json, version, create_time, update_time,"
                " state_version, tail_bytes, pending_json) VALUES (s.app_name, s.user_id, s.id, :state_json, 0, :now,"
                " :now, 0, 0, :pending)",
                {**keys, "state_json": session_state_json, "now": now, "pending": pending},
            )))
            if not inserted:
                if not self._atomic:  # a create its writer left unfinished (this caller's own, retried): completed
                    self._complete_unfinished(keys)
                raise AlreadyExistsError(f"Session with id {session_id} already exists.")
            # Initial app:/user: state is a blind write (ADK's semantics), applied by compare-and-set.
            for scope, delta in scoped.items():
                self._scopes.write(scope, keys, delta, event_id=token, now=now,
                                   rows=self._scopes.read(scope, keys, delta))
            if pending is not None:
                self._clear_create_record(keys, pending)
            return self._scoped_states(keys["app_name"], keys["user_id"])

    def _clear_create_record(self, keys: Mapping[str, str], pending: str) -> None:
        """The create whose redo record is ``pending`` is whole: its record goes (only that record, only at
        version 0: an append since has replaced it, a session deleted and made again has its own)."""
        self.retry.run("completing a session row", lambda: self.engine.execute(
            f"UPDATE sessions SET pending_json = NULL WHERE {_SESSION_KEY} AND version = 0 AND pending_json = :pending",
            {**keys, "pending": pending}))

    def _complete_unfinished(self, keys: Mapping[str, str]) -> None:
        """Roll forward the row's last create or append if its writer left it unfinished."""
        rows = self.engine.execute(self._row, keys)
        if rows:
            version, _, pending_json, last_seq, _, _ = rows[0]
            if self._needs_roll_forward(keys, version, pending_json, last_seq):
                self._roll_forward(keys, version, pending_json)

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        keys = {"app_name": app_name, "user_id": user_id, "session_id": session_id}
        return await self._in_worker(self._whole, "get_session", self._load_session, keys, config)

    def _load_session(self, keys: Mapping[str, str], config: GetSessionConfig | None) -> Session | None:
        # One transaction = one consistent snapshot of the row, its events and scoped state.
        with self.engine.transaction():
            row, app_state, user_state = _split_session_rows(self.engine.execute(self._row_with_scopes, keys))
            if row is None:
                return None
            _, version, _, pending_json, last_seq, *_ = row
            if self._needs_roll_forward(keys, version, pending_json, last_seq):
                self._roll_forward(keys, version, pending_json)
                row, app_state, user_state = _split_session_rows(self.engine.execute(self._row_with_scopes, keys))
                if row is None:
                    return None
            state_json, version, update_time, _, _, create_time, state_version, fence = row
            event_rows = self._read_events(keys, config)
            tail = self._tail(keys, event_rows, config, version, state_version)
        state = _fold_tail(_loads(state_json, {}), tail)
        with _gc_paused():
            events = [_event_from_row(row) for row in event_rows]
        self._remember_row(keys, _KnownRow(version, create_time, state_json or "{}", tail,
                                           sum(len(a or "") + len(b or "") for a, b in tail), fence))
        session = self._build_session(keys, state, app_state, user_state, version, update_time, events)
        self._views.load(session, app_state, user_state)
        return session

    def _tail(self, keys: Mapping[str, str], event_rows: list[tuple], config: GetSessionConfig | None,
              version: int, state_version: int) -> list[tuple[str, str]]:
        """The (state_delta_json, deleted_keys_json) of the events after the snapshot, oldest first.

        Taken from the events read when they are all of them (no config); otherwise one more statement.
        """
        if version <= state_version:
            return []
        if config is None or (config.num_recent_events is None and config.after_timestamp is None):
            return [(row[5], row[6]) for row in event_rows if state_version < row[0] <= version]
        return [tuple(row) for row in self.engine.execute(
            _TAIL, {**keys, "state_version": state_version, "version": version})]

    def _read_events(self, keys: Mapping[str, str], config: GetSessionConfig | None) -> list[tuple]:
        """The event rows, oldest first."""
        if config and config.num_recent_events == 0:
            return []
        params: dict[str, Any] = dict(keys)
        sql = f"SELECT {_EVENT_COLUMNS} FROM events WHERE {_EVENT_KEY}"
        if config and config.after_timestamp is not None:
            sql += " AND timestamp >= :after_timestamp"
            params["after_timestamp"] = config.after_timestamp
        # seq is the append order: unlike timestamps it has no ties.
        sql += " ORDER BY seq DESC"
        if config and config.num_recent_events is not None:
            sql += f" LIMIT {int(config.num_recent_events)}"  # an int, validated by GetSessionConfig
        return list(reversed(self.engine.execute(sql, params)))

    @staticmethod
    def _build_session(
        keys: Mapping[str, str],
        session_state: dict[str, Any],
        app_state: Mapping[str, Any],
        user_state: Mapping[str, Any],
        version: int,
        update_time: float,
        events: list[Event],
    ) -> Session:
        session = Session(
            app_name=keys["app_name"],
            user_id=keys["user_id"],
            id=keys["session_id"],
            state=_merge(session_state, app_state, user_state),
            events=events,
            last_update_time=update_time,
        )
        session._storage_update_marker = str(version)
        return session

    @override
    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        params = {"app_name": app_name}
        user_filter = ""
        if user_id is not None:
            params["user_id"] = user_id
            user_filter = " AND user_id = :user_id"
        with self.engine.transaction():
            rows = self.engine.execute(
                "SELECT user_id, id, state_json, version, update_time FROM sessions"
                f" WHERE app_name = :app_name{user_filter} ORDER BY update_time, user_id, id",
                params,
            )
            # The deltas after each session's snapshot (see the schema), oldest first.
            tails: dict[tuple[str, str], list[tuple[str, str]]] = {}
            for uid, sid, delta_json, deleted_json in self.engine.execute(
                "SELECT e.user_id, e.session_id, e.state_delta_json, e.deleted_keys_json FROM events e"
                " JOIN sessions s ON e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.id"
                " WHERE s.app_name = :app_name" + (" AND s.user_id = :user_id" if user_id is not None else "") +
                " AND e.seq > coalesce(s.state_version, s.version) AND e.seq <= s.version"
                " ORDER BY e.user_id, e.session_id, e.seq", params,
            ):
                tails.setdefault((uid, sid), []).append((delta_json, deleted_json))
            user_states: dict[str, dict[str, Any]] = {}
            for uid, name, value_json in self.engine.execute(
                    "SELECT user_id, state_key, value_json FROM user_state_keys WHERE app_name = :app_name"
                    f"{user_filter} AND value_json IS NOT NULL", params):
                user_states.setdefault(uid, {})[name] = json.loads(value_json)
            app_state = self._scopes.read_all("app", params)
        sessions = [
            self._build_session(
                {"app_name": app_name, "user_id": uid, "session_id": sid},
                _fold_tail(_loads(state_json, {}), tails.get((uid, sid), ())), app_state, user_states.get(uid, {}),
                version, update_time, [],
            )
            for uid, sid, state_json, version, update_time in rows
        ]
        return ListSessionsResponse(sessions=sessions)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        keys = {"app_name": app_name, "user_id": user_id, "session_id": session_id}
        self._whole("delete_session", self._delete_rows, keys)
        self._forget_row(keys)

    def _delete_rows(self, keys: Mapping[str, str]) -> None:
        with self.engine.transaction():  # idempotent DELETEs: safe to run again after a conflict
            self.retry.run("deleting a session's events",
                           lambda: self.engine.execute(f"DELETE FROM events WHERE {_EVENT_KEY}", keys))
            self.retry.run("deleting a session row",
                           lambda: self.engine.execute(f"DELETE FROM sessions WHERE {_SESSION_KEY}", keys))

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return self._scopes.read_all("user", {"app_name": app_name, "user_id": user_id})

    # --- appending --------------------------------------------------------------

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        # Persist a copy trimmed by the base helper; the caller's event and the live
        # session are only touched once the write has succeeded.
        persisted = event.model_copy(update={"actions": event.actions.model_copy()})
        self._trim_temp_delta_state(persisted)
        delta = dict(persisted.actions.state_delta or {})
        # Before any statement: a refused value leaves storage and the session as they were.
        check_storable(delta)
        scopes = _split_scopes(delta)
        keys = {"app_name": session.app_name, "user_id": session.user_id, "session_id": session.id}
        try:
            event_row = {
                "id": event.id,
                "invocation_id": event.invocation_id,
                "author": event.author,
                "timestamp": event.timestamp,
                "state_delta_json": _dumps({k: v for k, v in delta.items() if v is not None}),
                "deleted_keys_json": _dumps([k for k, v in delta.items() if v is None]),
                "event_json": _event_to_json(persisted),
            }
            scoped = {scope: scopes[scope] for scope in ("app", "user") if scopes[scope]}
            if not scopes["session"]:
                tail_entry = None  # nothing for the session state's tail
            elif not scoped:
                tail_entry = (event_row["state_delta_json"], event_row["deleted_keys_json"])
            else:
                tail_entry = (_dumps({k: v for k, v in scopes["session"].items() if v is not None}),
                              _dumps([k for k, v in scopes["session"].items() if v is None]))
        except (ValueError, TypeError, RecursionError) as exc:  # what check_storable let through: still named
            if isinstance(exc, StateValueError):
                raise
            raise refused_value(delta, _dumps, exc) from exc

        version, known = await self._in_worker(self._whole, "append_event", self._append_rows, session, keys,
                                               event_row, scoped, tail_entry)
        self._remember_row(keys, known)  # committed: the row is now as written
        self._views.wrote(session, str(version + 1), scopes["app"], scopes["user"])
        # Base class: apply temp: to the live session, trim it from the event, then
        # commit the rest (through _update_session_state below) and append.
        await super().append_event(session, event)
        session.last_update_time = event.timestamp
        session._storage_update_marker = str(version + 1)
        return event

    def _append_rows(self, session: Session, keys: Mapping[str, str], event_row: Mapping[str, Any],
                     scoped: Mapping[str, dict[str, Any]], tail_entry: tuple[str, str] | None) -> tuple[int, _KnownRow]:
        """The append's statements: (the version it replaced, the row as now known)."""
        if scoped and not self._atomic and self.claims_before_commit:
            return self._append_claimed(session, keys, event_row, scoped, tail_entry)
        with self.engine.transaction():
            # Reads only, before the commit point: the scope rows as they are, checked against what this session saw.
            # Only the keys the event writes are read (one row each), whatever else the scope holds.
            rows = {scope: self._scopes.read(scope, keys, delta) for scope, delta in scoped.items()}
            self._check_scope_keys(session, scoped, rows)
            # The redo record, where the engine cannot commit the rows below together (Databricks).
            pending = None if self._atomic else _dumps({"event": event_row, "scopes": scoped})
            # The commit point: the session row's compare-and-set, carrying the redo record.
            version, known = self._write_session_row(session, keys, tail_entry, event_row["timestamp"], pending)
            for scope, scope_delta in scoped.items():
                self._scopes.write(scope, keys, scope_delta, event_id=event_row["id"], now=event_row["timestamp"],
                                   rows=rows[scope])
            # Last: the event row marks the append complete. Where rows commit apart (Databricks), a reader may have
            # completed this append from its redo record in between: insert-if-absent, or the event is stored twice
            # (Delta enforces no key). In one transaction nobody can, and the plain INSERT is one statement less work.
            insert = _INSERT_EVENT if self._atomic else _INSERT_EVENT_IF_ABSENT
            self.retry.run("inserting an event row", lambda: self.engine.execute(
                insert, {**keys, "seq": version + 1, **event_row}))  # seq = the version this append made
        return version, known

    def _append_claimed(self, session: Session, keys: Mapping[str, str], event_row: Mapping[str, Any],
                        scoped: Mapping[str, dict[str, Any]],
                        tail_entry: tuple[str, str] | None) -> tuple[int, _KnownRow]:
        """An append writing app:/user: keys where statements commit alone: the keys claimed before the commit
        point (the protocol, statement by statement, is scope_claims.py's docstring).

        Its base is the row as this service knows it, without a statement; if anyone else wrote the row since, the
        commit matches nothing, the claims are released and the append runs once more on the row read (a previous
        append rolled forward, staleness checked), as ``_write_session_row`` falls back."""
        try:
            return self._append_claimed_on(self._session_base(session, keys), session, keys, event_row, scoped,
                                           tail_entry)
        except _BaseMoved:
            self._forget_known(keys)
            return self._append_claimed_on(self._session_base(session, keys), session, keys, event_row, scoped,
                                           tail_entry)

    def _append_claimed_on(self, base: _KnownRow, session: Session, keys: Mapping[str, str],
                           event_row: Mapping[str, Any], scoped: Mapping[str, dict[str, Any]],
                           tail_entry: tuple[str, str] | None) -> tuple[int, _KnownRow]:
        mine = Intent(keys["app_name"], keys["user_id"], keys["session_id"], base.create_time, base.version,
                      base.fence, event_row["id"], self._claims.clock())
        # 1. The key rows, each claim found on them settled (finished, cleared or fenced off) and read again.
        rows = {scope: self._scopes.read(scope, keys, delta) for scope, delta in scoped.items()}
        for attempt in range(self.retry.attempts + 1):
            held = {scope: {k: r for k, r in found.items() if r.claim} for scope, found in rows.items()}
            if not any(held.values()):
                break
            if attempt == self.retry.attempts:
                raise StaleSessionError(f"{_STALE_MESSAGE} (its app:/user: keys were claimed again and again by "
                                        "other appends; nothing was written)")
            for scope, claimed in held.items():
                if claimed:
                    mine = self._claims.settle(scope, keys, claimed, mine=mine) or mine
                    rows[scope].update(self._scopes.read(scope, keys, list(claimed)))
        base = replace(base, fence=mine.fence)  # a claim on this very base was fenced off: ours expects the new fence
        # 2. What this session saw, against the keys as they are.
        self._check_scope_keys(session, scoped, rows)
        # 3. The claims (released, and StaleSessionError, if another writer got any key first).
        claim = mine.text()
        self._claims.take(keys, scoped, rows, claim, event_row["timestamp"])
        # 4. The commit point, carrying the redo record with the claim.
        pending = _dumps({"event": event_row, "scopes": scoped, "claim": claim})
        committed = self._commit_claimed(keys, base, tail_entry, event_row["timestamp"], pending)
        if committed is None:
            self._claims.release(keys, {scope: list(delta) for scope, delta in scoped.items()}, claim)
            if base.known:
                raise _BaseMoved
            raise StaleSessionError(_STALE_MESSAGE)
        # 5. The values, where the claim still stands; 6. the event row (insert-if-absent: a reader may have
        # completed the append from its redo record already).
        for scope, delta in scoped.items():
            self._claims.finish(keys, scope, delta, rows[scope], claim, event_row["id"], event_row["timestamp"])
        self.retry.run("inserting an event row", lambda: self.engine.execute(
            _INSERT_EVENT_IF_ABSENT, {**keys, "seq": base.version + 1, **event_row}))
        return committed

    def _current_row(self, session: Session, keys: Mapping[str, str]) -> tuple[int, Any, Any]:
        """The session row as stored, a previous append left incomplete rolled forward, staleness checked:
        (version, create_time, fence)."""
        rows = self.engine.execute(self._row, keys)
        if not rows:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        version, stored_update_time, pending_json, last_seq, create_time, fence = rows[0]
        if self._needs_roll_forward(keys, version, pending_json, last_seq):
            self._roll_forward(keys, version, pending_json)
        self._check_not_stale(session, keys, version, stored_update_time)
        return version, create_time, fence

    def _session_base(self, session: Session, keys: Mapping[str, str]) -> _KnownRow:
        """The session row an append will compare-and-set, before it claims anything: as known when the session
        was fetched (no statement), else read — a previous append left incomplete rolled forward, staleness
        checked. A base that was not read has snapshot None and no tail: nothing to compact."""
        known = self._known_rows.get((keys["app_name"], keys["user_id"], keys["session_id"]))
        if known is not None and session._storage_update_marker == str(known.version):
            return replace(known, known=True)
        version, create_time, fence = self._current_row(session, keys)
        return _KnownRow(version, create_time, None, [], 0, fence)

    def _commit_claimed(self, keys: Mapping[str, str], base: _KnownRow, tail_entry: tuple[str, str] | None,
                        update_time: float, pending: str) -> tuple[int, _KnownRow] | None:
        """The session row's compare-and-set on version, create_time and fence (None: it moved, or the claims were
        fenced off): (the version replaced, the row as now known)."""
        tail_chars = len(tail_entry[0]) + len(tail_entry[1]) if tail_entry else 0
        tail = [*base.tail, tail_entry] if tail_entry else base.tail
        snapshot = None
        if base.snapshot is not None and base.tail_chars + tail_chars > max(len(base.snapshot), COMPACT_MIN_CHARS):
            snapshot = _dumps(_fold_tail(_loads(base.snapshot, {}), tail))
        if not self._update_row(keys, base.version, update_time, pending, tail_chars, snapshot=snapshot,
                                create_time=base.create_time, fence=base.fence):
            return None
        if snapshot is not None:
            return base.version, _KnownRow(base.version + 1, base.create_time, snapshot, [], 0, base.fence)
        if base.snapshot is None:
            return base.version, _KnownRow(base.version + 1, base.create_time, None, [], 0, base.fence)
        return base.version, _KnownRow(base.version + 1, base.create_time, base.snapshot, tail,
                                       base.tail_chars + tail_chars, base.fence)

    def _check_scope_keys(self, session: Session, scoped: Mapping[str, Mapping[str, Any]],
                          rows: Mapping[str, Mapping[str, KeyRow]]) -> None:
        """StaleSessionError if a scope key the event writes holds, in storage, another value than ``session`` saw.

        What the session saw is this service's view of that Session object (scope_views.py: set when
        get_session/create_session returned it, updated by its own appends; another read of the same id makes
        another object and leaves this one's view alone). A Session this service did not return (built
        elsewhere, a copy) writes its scope keys blind, as ADK's own services do.
        """
        view = self._views.get(session)
        if view is None or view.marker != session._storage_update_marker:
            return
        seen = view.seen
        changed = []
        for scope, delta in scoped.items():
            prefix = State.APP_PREFIX if scope == "app" else State.USER_PREFIX
            stored = rows[scope]
            for key in delta:
                now = fingerprint(stored[key].value()) if key in stored and stored[key].value_json is not None else None
                if now != seen.get(prefix + key):
                    changed.append(prefix + key)
        if changed:
            raise StaleSessionError(
                f"{_STALE_MESSAGE} (another session changed {', '.join(sorted(changed))} since this one "
                "loaded it; this append would overwrite that change)")

    def _write_session_row(self, session: Session, keys: Mapping[str, str], tail_entry: tuple[str, str] | None,
                           update_time: float, pending: str | None) -> tuple[int, _KnownRow]:
        """Commit the append on the session row by compare-and-set: (the version replaced, the row as now known).

        The row's state is not rewritten: the event row carries the delta, and the state is its snapshot plus
        the later deltas (see the schema). Only when this service knows the snapshot and the tail has outgrown
        it does the same UPDATE write a new snapshot (compaction). When the row is known as the session was
        fetched, the UPDATE alone does it (one statement); it compares version and create_time, so if anyone
        else wrote the row since (or deleted and recreated it), it matches nothing and the row is read (and a
        previous append its writer left incomplete is rolled forward first). The guard holds where
        transaction() is a no-op (Databricks).
        """
        tail_chars = len(tail_entry[0]) + len(tail_entry[1]) if tail_entry else 0
        known = self._known_rows.get((keys["app_name"], keys["user_id"], keys["session_id"]))
        if known is not None and session._storage_update_marker == str(known.version):
            tail = [*known.tail, tail_entry] if tail_entry else known.tail
            snapshot = None
            if known.snapshot is not None and known.tail_chars + tail_chars > max(len(known.snapshot),
                                                                                  COMPACT_MIN_CHARS):
                snapshot = _dumps(_fold_tail(_loads(known.snapshot, {}), tail))
            if self._update_row(keys, known.version, update_time, pending, tail_chars, snapshot=snapshot,
                                create_time=known.create_time):
                after = (_KnownRow(known.version + 1, known.create_time, snapshot, [], 0, known.fence)
                         if snapshot is not None
                         else _KnownRow(known.version + 1, known.create_time, known.snapshot, tail,
                                        known.tail_chars + tail_chars, known.fence))
                return known.version, after
        version, create_time, fence = self._current_row(session, keys)
        if not self._update_row(keys, version, update_time, pending, tail_chars):
            raise StaleSessionError(_STALE_MESSAGE)
        # The snapshot was not read: this service does not compact the row until a get_session reads it.
        return version, _KnownRow(version + 1, create_time, None, [], 0, fence)

    def _update_row(self, keys: Mapping[str, str], version: int, update_time: float, pending: str | None,
                    tail_chars: int, *, snapshot: str | None = None, create_time: float | None = None,
                    fence: int | None = None) -> bool:
        """Whether the row still had ``version`` (and ``create_time``, if given) and was advanced by one.

        ``snapshot``: the new state_json, the tail folded in. After a Delta conflict the UPDATE runs again:
        its WHERE re-checks, so it writes only if no one else did. Once the attempts are used up the append is
        treated as having lost the race (False).
        """
        sets = "version = version + 1, update_time = :update_time, pending_json = :pending"
        if snapshot is None:  # state_version: NULL in rows written before it meant "the row's version"
            sets += (", state_version = coalesce(state_version, version),"
                     " tail_bytes = coalesce(tail_bytes, 0) + :tail_chars")
        else:
            sets += ", state_json = :state_json, state_version = version + 1, tail_bytes = 0"
        guard = " AND create_time = :create_time" if create_time is not None else ""
        if fence is not None:  # a claimed append: no commit once its claims were fenced off (scope_claims.py)
            guard += " AND coalesce(fence, 0) = :fence"
        try:
            updated = affected_rows(self.retry.run("updating a session row", lambda: self.engine.execute(
                f"UPDATE sessions SET {sets} WHERE {_SESSION_KEY} AND version = :expected{guard}",
                {**keys, "update_time": update_time, "expected": version, "pending": pending,
                 "tail_chars": tail_chars, "state_json": snapshot, "create_time": create_time, "fence": fence},
            )))
        except WriteConflictError as exc:
            if not exc.retryable:  # its transaction was aborted (DuckDB): _whole runs the append again
                raise
            logger.warning("session %s: gave up after %d write conflicts (%s); reporting the append as stale",
                           keys["session_id"], self.retry.attempts, exc.error_class)
            return False
        return bool(updated)

    def _needs_roll_forward(self, keys: Mapping[str, str], version: int, pending_json: str | None,
                            last_seq: int | None) -> bool:
        """``_incomplete`` of a row as read; its last seq is read here where the row query left it out (atomic
        engines: only a row carrying a redo record needs it, and none of theirs does unless written elsewhere)."""
        if self._atomic and version and pending_json:
            last_seq = self.engine.execute(f"SELECT {_LAST_SEQ}", keys)[0][0]
        return _incomplete(version, pending_json, last_seq)

    def _roll_forward(self, keys: Mapping[str, str], version: int, pending_json: str) -> None:
        """Complete the append that made ``version`` from its redo record (its writer stopped after committing)."""
        pending = json.loads(pending_json)
        if "create" in pending:  # a create's initial app:/user: state (see _create_rows)
            logger.warning("session %s: completing its creation (initial app:/user: state) that its writer left "
                           "unfinished", keys["session_id"])
            for scope, delta in pending["create"].items():
                self._scopes.write(scope, keys, delta, event_id=pending["token"], now=pending["time"],
                                   rows=self._scopes.read(scope, keys, delta))
            self._clear_create_record(keys, pending_json)
            return
        event_row = pending["event"]
        logger.warning("session %s: completing append %d (event %s) that its writer left unfinished",
                       keys["session_id"], version, event_row["id"])
        if "claim" in pending:  # its keys were claimed before the commit point: finish those still claimed
            for scope, delta in pending["scopes"].items():
                rows = self._scopes.read(scope, keys, delta)
                still = {k: v for k, v in delta.items() if k in rows and rows[k].claim == pending["claim"]}
                if still:
                    self._claims.finish(keys, scope, still, rows, pending["claim"], event_row["id"],
                                        event_row["timestamp"])
        for scope, delta in ({} if "claim" in pending else pending.get("scopes", {})).items():
            self._scopes.write(scope, keys, delta, event_id=event_row["id"], now=event_row["timestamp"],
                               rows=self._scopes.read(scope, keys, delta))
        # Insert-if-absent: a second reader completing the same append at once writes no duplicate.
        self.retry.run("completing an event row", lambda: self.engine.execute(
            _INSERT_EVENT_IF_ABSENT, {**keys, "seq": version, **event_row}))

    def _check_not_stale(self, session: Session, keys: Mapping[str, str], version: int, update_time: float) -> None:
        if session._storage_update_marker is not None:
            if session._storage_update_marker != str(version):
                raise StaleSessionError(_STALE_MESSAGE)
            return
        # Marker-less session (built elsewhere): ADK's fallback — stale only if storage
        # advanced past it and its last event is not storage's last event.
        if update_time <= session.last_update_time:
            return
        rows = self.engine.execute(f"SELECT id FROM events WHERE {_EVENT_KEY} ORDER BY seq DESC LIMIT 1", keys)
        latest = rows[0][0] if rows else None
        if latest != (session.events[-1].id if session.events else None):
            raise StaleSessionError(_STALE_MESSAGE)

    @override
    def _apply_temp_state(self, session: Session, event: Event) -> None:
        super()._apply_temp_state(session, event)
        # None deletes in temp: scope too, so the live session never holds a None-valued key.
        for key, value in (event.actions.state_delta or {}).items():
            if value is None and key.startswith(State.TEMP_PREFIX):
                session.state.pop(key, None)

    @override
    def _update_session_state(self, session: Session, event: Event) -> None:
        # The declared divergence, in memory: None removes the key instead of storing None.
        if not event.actions or not event.actions.state_delta:
            return
        for key, value in event.actions.state_delta.items():
            if value is None:
                session.state.pop(key, None)
            else:
                session.state[key] = value

    # --- read-back --------------------------------------------------------------

    async def persisted_rows(self, *, app_name: str, user_id: str, session_id: str) -> PersistedSession:
        """The stored rows of one session (raises SessionNotFoundError if absent)."""
        keys = {"app_name": app_name, "user_id": user_id, "session_id": session_id}
        with self.engine.transaction():
            row, app_state, user_state = _split_session_rows(self.engine.execute(self._row_with_scopes, keys))
            if row is None:
                raise SessionNotFoundError(f"Session {session_id} not found.")
            event_rows = self.engine.execute(
                f"SELECT {_EVENT_COLUMNS} FROM events WHERE {_EVENT_KEY} ORDER BY seq", keys
            )
        state_json, version, *_, state_version, _ = row
        state = _fold_tail(_loads(state_json, {}), [(row[5], row[6]) for row in event_rows
                                                    if state_version < row[0] <= version])
        events = [
            PersistedEvent(
                seq=seq, id=eid, author=author, invocation_id=inv, timestamp=ts,
                state_delta=_loads(delta_json, {}), deleted_keys=_loads(deleted_json, []),
            )
            for seq, eid, inv, author, ts, delta_json, deleted_json, _ in event_rows
        ]
        return PersistedSession(
            state=state, app_state=app_state, user_state=user_state, version=version, events=events,
        )
