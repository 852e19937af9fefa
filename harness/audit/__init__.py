"""Audit persisted sessions: the state-mechanics checks over a session store, after the fact (issue #19).

``model`` is what every store reader yields and every audit check reads: one ``StoredSession`` at a time,
whatever table layout it came from. The library is imported on first use (PEP 562), so the CLI's parser, which
imports ``command`` for the sub-command's arguments, does not load the checks and the trace model with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .library import SessionAudit, audit_session

__all__ = ["SessionAudit", "audit_session"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import library

    return getattr(library, name)
