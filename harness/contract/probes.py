"""Service probes: short session-level scenarios the differential runs on every service.

Agent scenarios only exercise what the agent happens to do (one writer, few
``None`` values). The probes drive the service directly through what the
contract cares about — scopes, ``temp:``, ``None``, a stale second writer,
unicode and large values — and are normalised like a scenario's trace, so a
difference is reported the same way (scenario ``probe:<name>``, event index, key).
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session
from pydantic_core import to_jsonable_python

from ..run.capture import persisted_snapshot
from ..targets.session_services import aclose_service
from .case import Clock, event
from .normalize import NormalizedRun, build_run
from .profiles import ServiceProfile

APP = "probe-app"
ACCEPTED, STALE = "accepted", "StaleSessionError"


class ProbeRecorder:
    """Drives one service and records appended events and named step outcomes."""

    def __init__(self, service: BaseSessionService) -> None:
        self.service = service
        self.clock = Clock()
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []
        self.outcomes: dict[str, Any] = {}
        self.sessions: dict[str, str] = {}  # session id -> user id

    async def create(self, user: str, session_id: str, state: dict[str, Any] | None = None) -> Session:
        self.sessions[session_id] = user
        return await self.service.create_session(app_name=APP, user_id=user, session_id=session_id, state=state)

    async def reload(self, session: Session) -> Session:
        got = await self.service.get_session(app_name=APP, user_id=session.user_id, session_id=session.id)
        assert got is not None, f"probe: session {session.id!r} vanished"
        return got

    async def append(self, session: Session, delta: dict[str, Any], *, author: str = "writer",
                     step: str | None = None) -> bool:
        """Append; with ``step``, a refusal (StaleSessionError or any error) is recorded as that step's outcome instead of raised."""
        try:
            appended = await self.service.append_event(session, event(self.clock, delta, author=author))
        except Exception:  # noqa: BLE001 - a home-made service may refuse with its own error; what was stored
            if step is None:  # (the snapshots compared) tells a refusal from a crash
                raise
            self.outcomes[step] = STALE
            return False
        if step is not None:
            self.outcomes[step] = ACCEPTED
        delta_left = to_jsonable_python(dict(appended.actions.state_delta or {}), fallback=repr)
        self.events.append((len(self.events), session.id, author, delta_left))
        return True


async def scoped_state_and_temp(p: ProbeRecorder) -> None:
    s1 = await p.create("u1", "p-s1", {"k": 1, "app:a": 1, "user:b": 1, "temp:at_create": 1})
    await p.append(s1, {"k": 2, "temp:scratch": "x", "user:b": 2})
    s2 = await p.create("u2", "p-s2")
    await p.append(s2, {"app:a": 2, "own": "s2"})


async def none_values(p: ProbeRecorder) -> None:
    session = await p.create("u", "p-none", {"cleared": 1, "app:cleared": 1, "user:cleared": 1, "kept": 1})
    await p.append(session, {"cleared": None, "app:cleared": None, "user:cleared": None, "temp:t": None})


async def stale_writers(p: ProbeRecorder) -> None:
    created = await p.create("u", "p-stale", {"base": 0})
    writer_a, writer_b = await p.reload(created), await p.reload(created)
    await p.append(writer_a, {"writer_a": "A"}, author="writer_a")
    if not await p.append(writer_b, {"writer_b": "B"}, author="writer_b", step="stale append by writer_b"):
        await p.append(await p.reload(created), {"writer_b": "B"}, author="writer_b")  # reload and retry


async def unicode_and_large(p: ProbeRecorder) -> None:
    session = await p.create("ユーザー", "p-unicode", {"初期": "値", "user:ユーザー": "✓"})
    await p.append(session, {"ключ": "значение", "键🔑": "🚀 e\u0301", "big": "x" * 200_000})


PROBES: dict[str, Callable[[ProbeRecorder], Awaitable[None]]] = {
    f.__name__: f for f in (scoped_state_and_temp, none_values, stale_writers, unicode_and_large)
}


async def run_probe(name: str, profile: ServiceProfile, folder: Path, *, service_name: str | None = None) -> NormalizedRun:
    """Run probe ``name`` on a fresh service from ``profile``; errors end up in ``NormalizedRun.error``."""
    service = profile.build(folder)
    recorder = ProbeRecorder(service)
    label = service_name or profile.name
    try:
        await PROBES[name](recorder)
        snapshots = {sid: await persisted_snapshot(service, app_name=APP, user_id=user, session_id=sid, turn=0)
                     for sid, user in recorder.sessions.items()}
    except Exception as exc:  # noqa: BLE001  a crash is a difference: reported with its type and where it was raised
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        run = NormalizedRun(scenario=f"probe:{name}", service=label,
                            error=f"{type(exc).__name__}: {exc} (at {frame.filename}:{frame.lineno})")
        run.outcomes = dict(recorder.outcomes)
        return run
    finally:
        await aclose_service(service)
    return build_run(f"probe:{name}", label, recorder.events, snapshots, recorder.outcomes)
