"""A session-service factory that keeps what it built, so a test can read the sessions a run stored."""

from __future__ import annotations

from google.adk.sessions import InMemorySessionService

KEPT: list[InMemorySessionService] = []


def kept_memory() -> InMemorySessionService:
    service = InMemorySessionService()
    KEPT.append(service)
    return service
