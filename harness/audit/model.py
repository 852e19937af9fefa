"""One persisted session as a store holds it, independent of the table layout it was read from.

Store readers (``stores/``) yield these one at a time; the audit checks (``checks.py``) read only these; the
library entry point turns an ADK ``Session`` into one. Everything is as *stored*: a layout that cannot
represent something says so with ``None`` (e.g. ``version`` on ADK's tables), and the checks that need it are
``n/a`` with that reason instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StoredEvent:
    """One event row. ``state_delta`` is the delta as persisted, app:/user: keys with their prefixes, and a
    deleted key as ``{key: None}`` where the layout stores deletions (ours: ``deleted_keys_json``); a layout
    that stores None values (ADK's) shows them as None too — ``nulls_are_deletes`` on the session says which."""

    position: int  # 0-based order as the store returns the session's events (by its order column)
    id: str
    author: str | None
    invocation_id: str | None
    timestamp: float | None
    state_delta: dict[str, Any]
    seq: int | None = None  # the store's own sequence number, where it has one (ours: seq; seeds: sequence_num)
    row: str = ""  # where it is, for evidence: e.g. "events row id=<id> (seq 7)"
    function_calls: tuple[str, ...] = ()  # names of the tools this event called (from the event payload)
    function_responses: tuple[str, ...] = ()  # names of the tools whose responses this event carries
    # Whether the event carries model content (text or function parts); None: the reader did not say. Tells a
    # results_processor run from a plugin's state-only event of a gated agent (summary_persisted).
    has_content: bool | None = None
    # The event's content as stored (role and parts, JSON), for what replays a session (``capture``); None: the
    # event had none, or the reader did not keep it.
    content: Any = None


@dataclass(frozen=True)
class StoredSession:
    """A session with its events and the app/user state rows it reads (keys without their prefixes)."""

    layout: str  # "adk", "rlm" / "rlm-scope-rows" (ours) or "seed" (the seeds' Delta service)
    app_name: str
    user_id: str
    session_id: str
    state: dict[str, Any]  # the session row's own state (no app:/user: keys)
    app_state: dict[str, Any] | None  # None: no app state row (or key rows)
    user_state: dict[str, Any] | None  # None: no user state row (or key rows)
    events: tuple[StoredEvent, ...]
    version: int | None = None  # the optimistic-concurrency version, where the layout has one
    update_time: float | None = None
    nulls_are_deletes: bool = False  # the writer's None semantics: True for ours (a None never persists)
    row: str = ""  # where it is, for evidence: e.g. "sessions row app=… user=… id=…"
    extra: dict[str, Any] = field(default_factory=dict)  # layout-specific facts a check may use (documented there)
    # Where the app and user state are, for evidence (e.g. "user_states row app=… user=…"); "" = the reader did not
    # say (the checks then name app_states / user_states rows).
    app_row: str = ""
    user_row: str = ""

    @property
    def key(self) -> str:
        return f"{self.app_name}/{self.user_id}/{self.session_id}"
