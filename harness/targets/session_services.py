"""``--session-service``: which BaseSessionService a target runs on.

``delta`` (the default) is the target's own choice — DeltaSessionService on
DuckDB for the reference agent; ``adk-memory`` and ``adk-sqlite`` are ADK's
own services; ``module:factory`` is a user's (called with the
TargetEnvironment, or with no argument).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService

from ..errors import HarnessError
from .base import SessionServiceFactory, TargetEnvironment


class SessionServiceError(HarnessError):
    """A --session-service that does not import or does not build a BaseSessionService."""


def _adk_memory(env: TargetEnvironment) -> BaseSessionService:
    from google.adk.sessions import InMemorySessionService

    return InMemorySessionService()


def _adk_sqlite(env: TargetEnvironment) -> BaseSessionService:
    from google.adk.sessions import DatabaseSessionService

    return DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{env.home / 'adk_sessions.db'}")


BUILTIN_SERVICES: dict[str, SessionServiceFactory | None] = {
    "delta": None,
    "adk-memory": _adk_memory,
    "adk-sqlite": _adk_sqlite,
}


def resolve_session_service(name: str) -> SessionServiceFactory | None:
    if name in BUILTIN_SERVICES:
        return BUILTIN_SERVICES[name]
    if ":" not in name:
        raise SessionServiceError(f"--session-service {name!r} is unknown. Use one of {', '.join(BUILTIN_SERVICES)} "
                                  f"or 'package.module:factory'.")
    module_name, _, attr = name.partition(":")
    try:
        factory: Any = getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # report any import failure against the flag that named it
        raise SessionServiceError(f"--session-service {name!r}: cannot import {attr!r} from {module_name!r} "
                                  f"({type(exc).__name__}: {exc}).") from exc

    def build(env: TargetEnvironment) -> BaseSessionService:
        wants_env = bool(inspect.signature(factory).parameters) if callable(factory) else False
        service = factory(env) if wants_env else factory()
        if not isinstance(service, BaseSessionService):
            raise SessionServiceError(f"--session-service {name!r} returned a {type(service).__name__}, not a "
                                      f"google.adk BaseSessionService.")
        return service

    return build
