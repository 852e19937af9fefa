"""Claims: an append's compare-and-set on its ``app:``/``user:`` keys *before* its commit point, where every
statement commits alone (Databricks SQL on Delta tables; DuckDB commits an append in one transaction and needs none).

Why: a key row is shared by every session of the app or user, and the append's commit point is its *session* row.
Checking the key before the commit point and writing it after leaves a window: two sessions that both read the key
at version v both commit, and the later write overwrites the earlier (a lost read-modify-write, 3 of 3 rounds with
two processes on the workspace fake). A claim closes it: the key row itself records, by compare-and-set, which
append will write it, before that append commits; whoever finds a claim settles it before touching the key.

A claim (``claim_json`` on the key row) names its *intent*: the claimer's session (app, user, id, create_time),
the session version it expects (``v``: it commits ``v + 1``), the session row's ``fence`` it read (``f``), its
event id and when it claimed. The session row's ``fence`` is bumped by whoever fences off an intent; an append's
commit compares it, so after a fence no intent taken under the old one can ever commit.

**The append** (``DeltaSessionService._append_claimed``), statement by statement, and what a crash after each
leaves:

1. ``SELECT`` the key rows the event writes (per scope). Read only. A row holding a claim is *settled* first (below),
   then read again. Crash: nothing written.
2. The keys are checked against what the ``Session`` object saw (``StaleSessionError``, nothing written).
3. ``MERGE`` per scope: claim each key only ``WHERE version = <read> AND claim_json IS NULL`` (or insert a claimed
   row with no value where none was read), bumping the version. Fewer rows claimed than keys: another writer got
   in between; this append releases what it claimed (``UPDATE ... SET claim_json = NULL WHERE claim_json = <its
   claim>``) and raises ``StaleSessionError`` — nothing acknowledged, no value changed. Crash: claims whose session
   is still at ``v`` with fence ``f``; they look in flight, never committed, and are settled by the next writer of
   the key (below); the values are untouched.
4. ``UPDATE sessions ... WHERE version = v AND create_time = <ct> AND fence = f``, carrying the redo record
   (``pending_json``: the event, its deltas and the claim). **The commit point.** No row: the session moved on or
   the intent was fenced off: release, ``StaleSessionError``. Crash: committed; the claims stand for a committed
   append and are finished by anyone (below), or by the next read of this session (roll-forward).
5. ``MERGE`` per scope: *finish* each key: its value written, ``claim_json`` cleared, version bumped, the event in
   ``applied_json`` — only ``WHERE claim_json = <its claim>``, so a key someone else finished already is left
   alone. Crash: the rest is finished by the next read of the session or by the key's next writer.
6. The event row (insert-if-absent): the append is complete. Then the caller is told (acknowledged).

**Settling a claim** found on a key (``settle``): the claimer's session row is read and decides.

* Its version is ``v + 1`` with this claim in its redo record, or its event at seq ``v + 1`` is the claimer's:
  committed. The key is finished with the claimer's value (from the redo record or the event row), then this writer
  reads it again — and is stale if it saw the value before.
* The row is gone or recreated (another ``create_time``), or its version is past ``v`` with another append at
  ``v + 1``, or it is still at ``v`` under another fence: the intent can never commit (its compare-and-set expects
  ``v``, the create time and ``f``). The claim is cleared (``WHERE claim_json = <that claim>``), the value untouched.
* Still at ``v`` under fence ``f``: in flight, or its writer died. An append of another session *loses*:
  ``StaleSessionError`` (the first claimer wins, as the first compare-and-set would) — unless the claim is older
  than the lease (``lease_s``, 30 s; the claimer's clock), when it fences the claimer off (``UPDATE sessions SET
  fence = fence + 1 WHERE version = v AND fence = f AND create_time = <ct>``) and settles again: the intent is now
  dead, or it committed first and is finished. An append of the *same* session at the same version and fence (a
  double submit, or the retry of a turn whose writer died) fences at once: only one of them could commit ``v + 1``
  anyway. A write after its own commit point (a create's initial state, an old redo record) fences at once too: it
  must land, and it comes later.

Why nothing acknowledged is lost and no conflict goes unseen: a key changes value only by *finishing* a claim, and
only a claim whose append committed is finished; it is cleared only when its append can no longer commit (the
session compare-and-set and the fence are one row, so commit and fence exclude each other: Delta fails one of two
concurrent writes of a row, and the retry re-checks its guard). Two appends that read a key at one version cannot
both claim it (one compare-and-set on the key row wins), so the loser raises ``StaleSessionError`` before its commit
point, having written no value; an append that reads a key while another holds it settles first and compares what
its session saw with the settled value. A claim left by a dead writer blocks the key for other sessions at most for
the lease; its own session's next append fences it at once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from adk_compat import StaleSessionError
from google.adk.sessions.state import State

from reference_agent.storage.sql import SqlEngine, WriteConflictError, affected_rows

from .conflicts import ConflictRetry
from .scope_rows import APPLIED_KEPT, BATCH, TABLES, KeyRow, merge_source

logger = logging.getLogger(__name__)

LEASE_S = 30.0  # a claim older than this (by the claimer's clock) may be fenced off by another session's append
_SESSION = "app_name = :app_name AND user_id = :user_id AND id = :session_id"
_PREFIX = {"app": State.APP_PREFIX, "user": State.USER_PREFIX}


@dataclass(frozen=True)
class Intent:
    """An append that claims scope keys: the session version it expects to replace, and the fence it read."""

    app_name: str
    user_id: str
    session_id: str
    create_time: float
    version: int
    fence: int
    event_id: str
    time: float

    def text(self) -> str:
        return json.dumps({"s": [self.app_name, self.user_id, self.session_id], "ct": self.create_time,
                           "v": self.version, "f": self.fence, "e": self.event_id, "t": self.time},
                          separators=(",", ":"))

    @classmethod
    def parse(cls, text: str) -> Intent:
        d = json.loads(text)
        return cls(*d["s"], d["ct"], d["v"], d["f"], d["e"], d["t"])

    def keys(self) -> dict[str, Any]:
        return {"app_name": self.app_name, "user_id": self.user_id, "session_id": self.session_id,
                "version": self.version, "fence": self.fence, "create_time": self.create_time}

    def same_base(self, other: Intent) -> bool:
        """The same session at the same version, create time and fence: only one of the two can commit."""
        return (self.app_name, self.user_id, self.session_id, self.create_time, self.version, self.fence) == (
            other.app_name, other.user_id, other.session_id, other.create_time, other.version, other.fence)


def _chunks(items: list[Any]) -> Iterable[list[Any]]:
    for start in range(0, len(items), BATCH):
        yield items[start:start + BATCH]


def _owner(columns: tuple[str, ...], keys: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    return " AND ".join(f"{c} = :{c}" for c in columns), {c: keys[c] for c in columns}


class ScopeClaims:
    """The claim statements (see the module docstring); ``clock`` and ``lease_s`` only decide when a claim that
    looks in flight may be fenced off, never whether a value is kept."""

    def __init__(self, engine: SqlEngine, retry: ConflictRetry, dumps: Callable[[Any], str], *,
                 lease_s: float = LEASE_S, clock: Callable[[], float]) -> None:
        self.engine, self.retry, self._dumps = engine, retry, dumps
        self.lease_s, self.clock = lease_s, clock

    # --- the claimer ------------------------------------------------------------------------------------------

    def take(self, keys: Mapping[str, str], scoped: Mapping[str, Mapping[str, Any]],
             rows: Mapping[str, Mapping[str, KeyRow]], claim: str, now: float) -> None:
        """Claim every key of ``scoped`` at the version read (step 3); on a lost key release them and raise
        ``StaleSessionError``."""
        taken: dict[str, list[str]] = {}
        try:
            for scope, delta in scoped.items():
                table, columns = TABLES[scope]
                for chunk in _chunks(list(delta)):
                    taken.setdefault(scope, []).extend(chunk)  # released by claim, so a key not taken is no harm
                    got = self.retry.run(f"claiming {scope}: keys", lambda t=table, c=columns, n=chunk, s=scope: (
                        self._claim(t, c, keys, n, rows[s], claim, now)))
                    if got != len(chunk):
                        raise StaleSessionError(
                            f"{_PREFIX[scope]}keys {chunk} changed or were claimed by another session's append since "
                            "this append read them; nothing was written (reload the session)")
        except (StaleSessionError, WriteConflictError) as exc:
            self.release(keys, taken, claim)
            if isinstance(exc, StaleSessionError):
                raise
            raise StaleSessionError(f"claiming scope keys lost a write conflict {self.retry.attempts} times "
                                    f"({exc.error_class}); nothing was written (reload the session)") from exc

    def _claim(self, table: str, columns: tuple[str, ...], keys: Mapping[str, str], names: list[str],
               read: Mapping[str, KeyRow], claim: str, now: float) -> int:
        params: dict[str, Any] = {c: keys[c] for c in columns}
        params.update(claim=claim, now=now)
        for i, name in enumerate(names):
            params[f"k{i}"], params[f"e{i}"] = name, read[name].version if name in read else 0
        source, on = merge_source(columns, (("state_key", "k"), ("expected", "e")), len(names))
        inserted = (*columns, "state_key", "value_json", "version", "applied_json", "update_time", "claim_json")
        values = ", ".join(f"s.{c}" for c in (*columns, "state_key"))
        return affected_rows(self.engine.execute(
            f"MERGE INTO {table} t USING ({source}) s ON {on}"
            " WHEN MATCHED AND coalesce(t.version, 0) = s.expected AND t.claim_json IS NULL"
            " THEN UPDATE SET claim_json = :claim, version = s.expected + 1, update_time = :now"
            f" WHEN NOT MATCHED AND s.expected = 0 THEN INSERT ({', '.join(inserted)})"
            f" VALUES ({values}, NULL, 1, NULL, :now, :claim)", params))

    def finish(self, keys: Mapping[str, str], scope: str, delta: Mapping[str, Any], rows: Mapping[str, KeyRow],
               claim: str, event_id: str, now: float) -> int:
        """Write the claimed keys' values and clear the claim, only where the row still holds ``claim`` (step 5);
        the rows written (fewer: someone finished them already). ``rows``: as read while claimed or before."""
        table, columns = TABLES[scope]
        written = 0
        for chunk in _chunks(list(delta)):
            owner, params = _owner(columns, keys)
            params.update(claim=claim, now=now)
            for i, name in enumerate(chunk):
                row = rows.get(name)
                params.update({f"k{i}": name, f"v{i}": None if delta[name] is None else self._dumps(delta[name]),
                               f"p{i}": self._dumps([*(row.applied if row else []), event_id][-APPLIED_KEPT:])})
            source, on = merge_source(columns, (("state_key", "k"), ("value_json", "v"), ("applied_json", "p")),
                                      len(chunk))
            sql = (f"MERGE INTO {table} t USING ({source}) s ON {on}"
                   " WHEN MATCHED AND t.claim_json = :claim THEN UPDATE SET value_json = s.value_json,"
                   " claim_json = NULL, version = coalesce(t.version, 0) + 1, applied_json = s.applied_json,"
                   " update_time = :now")
            written += affected_rows(self.retry.run(f"finishing claimed {scope}: keys",
                                                    lambda q=sql, p=params: self.engine.execute(q, p)))
        return written

    def release(self, keys: Mapping[str, str], names: Mapping[str, list[str]], claim: str) -> None:
        """Clear ``claim`` from the keys it holds, values untouched (an append that will not commit). Best effort: a
        claim left behind is dead and settled by the next writer (after the lease, or at once by its session)."""
        try:
            for scope, listed in names.items():
                self._clear(scope, keys, listed, claim)
        except Exception as exc:  # noqa: BLE001 - the caller is raising StaleSessionError; this must not mask it
            logger.warning("could not release the claim %s (%s): the next writer of its keys settles it", claim, exc)

    def _clear(self, scope: str, keys: Mapping[str, str], names: list[str], claim: str) -> None:
        table, columns = TABLES[scope]
        for chunk in _chunks(list(dict.fromkeys(names))):
            owner, params = _owner(columns, keys)
            params["claim"] = claim
            params.update({f"n{i}": name for i, name in enumerate(chunk)})
            marks = ", ".join(f":n{i}" for i in range(len(chunk)))
            sql = (f"UPDATE {table} SET claim_json = NULL, version = coalesce(version, 0) + 1 WHERE {owner}"
                   f" AND claim_json = :claim AND state_key IN ({marks})")
            self.retry.run(f"clearing a claim on {scope}: keys", lambda q=sql, p=params: self.engine.execute(q, p))

    # --- whoever finds a claim ---------------------------------------------------------------------------------

    def settle(self, scope: str, keys: Mapping[str, str], claimed: Mapping[str, KeyRow], *,
               mine: Intent | None = None, force: bool = False) -> Intent | None:
        """Settle the claims on ``claimed`` (rows of ``scope`` holding one; see the module docstring).

        ``mine``: the base of the append settling them (its session, version, fence); a claim in flight on that
        same base is fenced off at once, and the base with its new fence is returned. ``force``: a write after its
        own commit point, which fences off any claim in flight. Otherwise a claim in flight of another session,
        younger than the lease, raises ``StaleSessionError``."""
        by_claim: dict[str, list[str]] = {}
        for name, row in claimed.items():
            if row.claim:
                by_claim.setdefault(row.claim, []).append(name)
        for claim, names in by_claim.items():
            intent = Intent.parse(claim)
            for _ in range(3):  # in flight -> fenced -> dead or committed
                verdict, values = self._judge(intent, claim)
                if verdict == "committed":
                    logger.warning("%s: keys %s: finishing the claim of event %s, whose append committed (its writer "
                                   "died, or has not got to them yet)", scope, names, intent.event_id)
                    mine_values = values.get(scope, {})  # the claimer's record holds every key it claimed
                    delta = {n: mine_values[n] for n in names if n in mine_values}
                    self.finish(keys, scope, delta, claimed, claim, intent.event_id, self.clock())
                    break
                if verdict == "dead":
                    logger.warning("%s: keys %s: clearing the claim of event %s, whose append can no longer commit",
                                   scope, names, intent.event_id)
                    self._clear(scope, keys, names, claim)
                    break
                own = mine is not None and mine.same_base(intent)
                age = self.clock() - intent.time
                if not (own or force or age > self.lease_s):
                    raise StaleSessionError(
                        f"{', '.join(_PREFIX[scope] + n for n in names)}: another session's append "
                        f"({intent.session_id}, event {intent.event_id}, claimed {age:.1f} s ago) is writing "
                        "them; nothing was written (reload the session)")
                fenced = self._fence(intent)
                if own:
                    if not fenced:  # the session row moved (another append committed, or fenced it): this one is stale
                        raise StaleSessionError("The session changed while this append settled a claim on its "
                                                "keys; nothing was written (reload the session)")
                    mine = Intent(mine.app_name, mine.user_id, mine.session_id, mine.create_time, mine.version,
                                  mine.fence + 1, mine.event_id, mine.time)
            else:
                raise StaleSessionError(f"{scope}: keys {names}: a claim could not be settled; nothing was written")
        return mine

    def _judge(self, intent: Intent, claim: str) -> tuple[str, dict[str, Any]]:
        """("committed", the intent's scope deltas {scope: {key: value}}), ("dead", {}) or ("in_flight", {})."""
        rows = self.engine.execute(
            f"SELECT version, coalesce(fence, 0), pending_json FROM sessions WHERE {_SESSION}"
            " AND create_time = :create_time",
            {k: v for k, v in intent.keys().items() if k not in ("version", "fence")})
        if not rows:  # deleted, or deleted and made again: the compare-and-set (create_time) can never match
            return "dead", {}
        version, fence, pending_json = rows[0]
        if version == intent.version:
            return ("in_flight" if fence == intent.fence else "dead"), {}
        if version == intent.version + 1 and pending_json:
            pending = json.loads(pending_json)
            if pending.get("claim") == claim:
                return "committed", dict(pending.get("scopes", {}))
        if version > intent.version:
            found = self.engine.execute(
                "SELECT id, state_delta_json, deleted_keys_json FROM events WHERE app_name = :app_name"
                " AND user_id = :user_id AND session_id = :session_id AND seq = :seq",
                {"app_name": intent.app_name, "user_id": intent.user_id, "session_id": intent.session_id,
                 "seq": intent.version + 1})
            if found and found[0][0] == intent.event_id:
                delta = json.loads(found[0][1] or "{}")
                delta.update({k: None for k in json.loads(found[0][2] or "[]")})
                scopes = {s: {k.removeprefix(p): v for k, v in delta.items() if k.startswith(p)}
                          for s, p in _PREFIX.items()}
                return "committed", scopes
        return "dead", {}

    def _fence(self, intent: Intent) -> bool:
        """Fence off every intent on the claimer's session at its version and fence; whether this did it."""
        return bool(affected_rows(self.retry.run("fencing off a claim", lambda: self.engine.execute(
            f"UPDATE sessions SET fence = coalesce(fence, 0) + 1 WHERE {_SESSION} AND version = :version"
            " AND coalesce(fence, 0) = :fence AND create_time = :create_time", intent.keys()))))

