"""What each ``Session`` object this service returned saw of the ``app:``/``user:`` keys (``_check_scope_keys``).

ADK's ``State`` writes a tool's change through to ``session.state`` before ``append_event``, so the live dict
cannot say what the writer had seen; this does. A view belongs to the *object*: the ``Session`` a
``get_session``/``create_session`` returned, updated by that object's own appends. Another ``get_session`` of
the same id (a UI, a second worker) makes a new object with its own view and leaves the writer's as it was, so
a writer holding an older object is still stale on a key another session changed since it loaded it.

Held weakly: a view goes when its ``Session`` is garbage-collected, so memory follows the live sessions. A copy
(``model_copy``, ``deepcopy``) or a ``Session`` built elsewhere has no view and writes its scope keys blind, as
ADK's own services do.
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from pydantic_core import to_jsonable_python


def fingerprint(value: Any) -> str:
    """A short digest of a value's canonical JSON: what a session saw of a scope key."""
    text = json.dumps(to_jsonable_python(value), sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


@dataclass
class ScopeView:
    marker: str  # the session's _storage_update_marker when the view was last updated
    seen: dict[str, str] = field(default_factory=dict)  # "app:k"/"user:k" -> fingerprint of the value seen

    def apply(self, app_state: Mapping[str, Any], user_state: Mapping[str, Any]) -> None:
        for prefix, state in ((State.APP_PREFIX, app_state), (State.USER_PREFIX, user_state)):
            for name, value in state.items():
                if value is None:
                    self.seen.pop(prefix + name, None)
                else:
                    self.seen[prefix + name] = fingerprint(value)


class ScopeViews:
    """``Session`` object -> ``ScopeView``, keyed by identity and held weakly (a ``Session`` is not hashable)."""

    def __init__(self) -> None:
        self._views: dict[int, tuple[weakref.ref[Session], ScopeView]] = {}
        # Appends update views from worker threads, the GC drops them from any: re-entrant, as a collection may run
        # the drop callback in the thread that holds it.
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._views)

    def get(self, session: Session) -> ScopeView | None:
        entry = self._views.get(id(session))
        if entry is None or entry[0]() is not session:  # (an id reused by a newer object)
            return None
        return entry[1]

    def load(self, session: Session, app_state: Mapping[str, Any], user_state: Mapping[str, Any]) -> None:
        """``session`` was just built from storage with these scope states: its view starts from them."""
        view = ScopeView(str(session._storage_update_marker))
        view.apply(app_state, user_state)
        key = id(session)
        ref = weakref.ref(session, lambda gone, key=key: self._drop(key, gone))
        with self._lock:
            self._views[key] = (ref, view)

    def wrote(self, session: Session, marker: str, app_delta: Mapping[str, Any],
              user_delta: Mapping[str, Any]) -> None:
        """``session``'s own append committed these scope deltas (None deletes) and moved it to ``marker``."""
        view = self.get(session)
        if view is None:
            return  # no view: its appends write blind
        view.apply(app_delta, user_delta)
        view.marker = marker

    def _drop(self, key: int, gone: weakref.ref[Session]) -> None:
        with self._lock:
            entry = self._views.get(key)
            if entry is not None and entry[0] is gone:
                del self._views[key]
