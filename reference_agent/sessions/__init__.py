"""ADK session service on the project's SQL engines."""

from .delta_session_service import DeltaSessionService, PersistedEvent, PersistedSession
from .schema import ensure_schema

__all__ = ["DeltaSessionService", "PersistedEvent", "PersistedSession", "ensure_schema"]
