"""The three table layouts the audit reads, each as data (tables, columns, order) plus two row converters.

* ``adk``: ADK's ``DatabaseSessionService`` (schema v1, the default of ADK 1.22+ and 2.x): ``sessions.state``,
  ``events.event_data`` (the whole event as JSON, its delta under ``actions.state_delta``), ``app_states`` /
  ``user_states.state``. Events in ADK's own read order: ``timestamp, id``. No version, no sequence number.
  ADK stores a None as null (``nulls_are_deletes`` False).
* ``rlm``: this project's ``DeltaSessionService`` (reference_agent/sessions/schema.py): ``sessions.state_json,
  version, pending_json``; ``events.seq`` (1..n), ``state_delta_json`` (keys set) + ``deleted_keys_json`` (keys
  deleted, shown as ``{key: None}``), ``event_json``. A None deletes (``nulls_are_deletes`` True).
  ``extra["pending_append"]``: the last append committed (version above the last seq) and its redo record
  (``pending_json``) is there, so the service rolls it forward on the next read: not a lost event.
  ``state_json`` is a snapshot as of the event with seq ``state_version`` (where the column is there and
  set); the session state is that snapshot with the later events' session-scope deltas applied. ``app:``/``user:``
  state one row per key: ``app_state_keys`` / ``user_state_keys`` (``state_key``, ``value_json``; a NULL value is
  a deleted key, kept as a tombstone, not state).
* ``rlm-scope-rows``: the same service before per-key rows: one ``app_states`` / ``user_states`` row per app / user
  holding the scope as one JSON object (``state_json``). The current service moves such rows on open; a store no
  current service has opened still reads as this.
* ``seed``: the seeds' Delta ``DeltaSessionService`` (databricks_rlm_agent): ``sessions.session_id, state_json,
  version`` (1 at creation, +1 per append), ``is_deleted`` (soft-deleted sessions are skipped, as its
  ``get_session`` does); ``events.event_id, sequence_num`` (``version_after_append * 1000 + n``),
  ``event_data_json`` (a ``by_alias`` dump), ``state_delta_json``, ``has_state_delta``, ``is_after_rewind``
  (rewound events are left out, as its ``get_session`` does; ``extra["rewound_events"]`` counts them,
  ``extra["rewind_to_event_id"]`` is the row's pointer). Order: ``sequence_num, created_time, event_id``.
  Its design (seed docs 001, and its local twin's "delete-on-None semantics") makes a None a deletion, so
  ``nulls_are_deletes`` is True: a null in a state row is the bug those docs describe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model import StoredEvent
from .values import epoch, field, has_content, json_object, json_value, tool_names

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Layout:
    name: str
    title: str
    session_id: str  # the sessions table's id column
    state: str  # the state column of sessions, app_states and user_states
    session_columns: tuple[str, ...]  # besides app_name, user_id and the id
    event_columns: tuple[str, ...]  # besides app_name, user_id, session_id
    event_order: tuple[str, ...]
    scope_columns: tuple[str, ...]  # besides the keys and the state (or key and value) columns
    nulls_are_deletes: bool
    event: Callable[[Row, int], StoredEvent]
    session_facts: Callable[[Row], tuple[int | None, float | None, dict[str, Any]]]  # version, update time, extra
    # Read when the store has them (a newer schema): e.g. ours' state_version, the snapshot's seq.
    optional_session_columns: tuple[str, ...] = ()
    skip_session: Callable[[Row], bool] = lambda row: False
    skip_event: Callable[[Row], bool] = lambda row: False
    # The app and the user state tables.
    scope_tables: tuple[str, str] = ("app_states", "user_states")
    # Where a scope is one row per key: the key's column and its value's (JSON; NULL = a deleted key, not state).
    # None: one row per app / user, its ``state`` column the whole scope as a JSON object.
    scope_key: str | None = None
    scope_value: str | None = None

    def scope_row_columns(self) -> tuple[str, ...]:
        """The state columns of a scope row (besides app_name and user_id)."""
        if self.scope_key is None:
            return (self.state, *self.scope_columns)
        return (self.scope_key, self.scope_value or "", *self.scope_columns)

    def required(self) -> dict[str, tuple[str, ...]]:
        """Every column the reader selects, by table: a store holds this layout when it has all of them."""
        app, user = self.scope_tables
        return {"sessions": ("app_name", "user_id", self.session_id, self.state, *self.session_columns),
                "events": ("app_name", "user_id", "session_id", *self.event_columns),
                app: ("app_name", *self.scope_row_columns()),
                user: ("app_name", "user_id", *self.scope_row_columns())}


def _where(table: str, row: Row, id_column: str, seq: int | None = None) -> str:
    return f"{table} row id={row[id_column]}" + (f" (seq {seq})" if seq is not None else "")


def _adk_event(row: Row, position: int) -> StoredEvent:
    data = json_object(row["event_data"], _where("events", row, "id") + " event_data")
    actions = data.get("actions") if isinstance(data.get("actions"), Mapping) else {}
    calls, responses = tool_names(data)
    return StoredEvent(position=position, id=str(row["id"]), author=data.get("author"),
                       invocation_id=row["invocation_id"] or data.get("invocation_id"),
                       timestamp=epoch(data.get("timestamp")) or epoch(row["timestamp"]),
                       state_delta=dict(actions.get("state_delta") or {}), row=_where("events", row, "id"),
                       function_calls=calls, function_responses=responses, has_content=has_content(data),
                       content=data.get("content"))


def _rlm_event(row: Row, position: int) -> StoredEvent:
    where = _where("events", row, "id", row["seq"])
    delta = json_object(row["state_delta_json"], f"{where} state_delta_json")
    deleted = json_value(row["deleted_keys_json"], f"{where} deleted_keys_json") or []
    delta.update({str(key): None for key in deleted})
    payload = json_object(row["event_json"], f"{where} event_json")
    calls, responses = tool_names(payload)
    return StoredEvent(position=position, id=str(row["id"]), author=row["author"], invocation_id=row["invocation_id"],
                       timestamp=epoch(row["timestamp"]), state_delta=delta, seq=row["seq"], row=where,
                       function_calls=calls, function_responses=responses, has_content=has_content(payload),
                       content=payload.get("content"))


def _seed_event(row: Row, position: int) -> StoredEvent:
    where = _where("events", row, "event_id", row["sequence_num"])
    data = json_object(row["event_data_json"], f"{where} event_data_json")
    delta = json_object(row["state_delta_json"], f"{where} state_delta_json")
    if not delta and row["state_delta_json"] is None:  # the queryable copy is missing: the payload's own delta
        actions = data.get("actions") if isinstance(data.get("actions"), Mapping) else {}
        delta = dict(field(actions, "state_delta", "stateDelta") or {})
    calls, responses = tool_names(data)
    return StoredEvent(position=position, id=str(row["event_id"]), author=row["author"],
                       invocation_id=row["invocation_id"],
                       timestamp=epoch(data.get("timestamp")) or epoch(row["event_timestamp"]), state_delta=delta,
                       seq=row["sequence_num"], row=where, function_calls=calls, function_responses=responses,
                       has_content=has_content(data), content=data.get("content"))


def _rlm_facts(row: Row) -> tuple[int | None, float | None, dict[str, Any]]:
    pending = json_object(row["pending_json"], f"sessions row id={row['id']} pending_json")
    event = pending.get("event") if isinstance(pending.get("event"), Mapping) else {}
    return row["version"], epoch(row["update_time"]), {"pending_event_id": event.get("id")}


def _seed_facts(row: Row) -> tuple[int | None, float | None, dict[str, Any]]:
    return row["version"], epoch(row["update_time"]), {"rewind_to_event_id": row["rewind_to_event_id"]}


ADK = Layout(
    name="adk", title="ADK DatabaseSessionService, schema v1",
    session_id="id", state="state", session_columns=("update_time",),
    event_columns=("id", "invocation_id", "timestamp", "event_data"), event_order=("timestamp", "id"),
    scope_columns=(), nulls_are_deletes=False, event=_adk_event,
    session_facts=lambda row: (None, epoch(row["update_time"]), {}))

_RLM_COMMON: dict[str, Any] = dict(
    session_id="id", state="state_json", session_columns=("version", "update_time", "pending_json"),
    event_columns=("seq", "id", "invocation_id", "author", "timestamp", "state_delta_json", "deleted_keys_json",
                   "event_json"),
    event_order=("seq", "id"), scope_columns=("version",), nulls_are_deletes=True, event=_rlm_event,
    session_facts=_rlm_facts, optional_session_columns=("state_version",))

RLM = Layout(name="rlm", title="rlm-conformance DeltaSessionService", **_RLM_COMMON,
             scope_tables=("app_state_keys", "user_state_keys"), scope_key="state_key", scope_value="value_json")

RLM_SCOPE_ROWS = Layout(name="rlm-scope-rows", title="rlm-conformance DeltaSessionService before per-key scope rows",
                        **_RLM_COMMON)
OURS = ("rlm", "rlm-scope-rows")  # the layouts of this project's service: seq 1..n, version = the last seq

SEED = Layout(
    name="seed", title="the seeds' Delta DeltaSessionService",
    session_id="session_id", state="state_json",
    session_columns=("version", "update_time", "is_deleted", "rewind_to_event_id"),
    event_columns=("event_id", "invocation_id", "author", "event_timestamp", "sequence_num", "event_data_json",
                   "state_delta_json", "has_state_delta", "created_time", "is_after_rewind"),
    event_order=("sequence_num", "created_time", "event_id"), scope_columns=("version",), nulls_are_deletes=True,
    event=_seed_event, session_facts=_seed_facts,
    skip_session=lambda row: bool(row["is_deleted"]), skip_event=lambda row: bool(row["is_after_rewind"]))

LAYOUTS: tuple[Layout, ...] = (RLM, RLM_SCOPE_ROWS, SEED, ADK)
"""In detection order: the most specific column sets first."""
