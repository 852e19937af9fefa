"""Audit persisted sessions: the state-mechanics checks over a session store, after the fact (issue #19).

``model`` is what every store reader yields and every audit check reads: one ``StoredSession`` at a time,
whatever table layout it came from.
"""

from .library import SessionAudit, audit_session

__all__ = ["SessionAudit", "audit_session"]
