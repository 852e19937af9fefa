"""A contract case, its registry, and the small helpers every case uses.

A case is ``async (service, profile) -> None`` that raises ``AssertionError``
with a message naming the key or call that broke the contract. Cases register
with ``@contract_case`` (in the order they are defined) and get a fresh
service each.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
)
from google.adk.sessions.session import Session
from google.genai import types

from .profiles import ServiceProfile

CaseFn = Callable[[BaseSessionService, ServiceProfile], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    name: str
    fn: CaseFn
    description: str

    async def __call__(self, service: BaseSessionService, profile: ServiceProfile) -> None:
        await self.fn(service, profile)


CASES: dict[str, Case] = {}


class CaseNotApplicable(Exception):
    """A case that cannot judge this service says why (the pytest paths skip with it; the run's probe records n/a)."""


def contract_case(fn: CaseFn) -> CaseFn:
    """Register ``fn`` as a contract case named after it; its docstring's first line describes it."""
    CASES[fn.__name__] = Case(fn.__name__, fn, (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else "")
    return fn


class Clock:
    """Strictly increasing event timestamps after 'now' (no case depends on wall-clock ties)."""

    def __init__(self, step: float = 0.01) -> None:
        self._start = time.time() + 1.0
        self._ticks = itertools.count(1)
        self._step = step

    def next(self) -> float:
        return self._start + next(self._ticks) * self._step


def event(clock: Clock, delta: dict[str, Any] | None = None, *, author: str = "agent", text: str | None = None,
          **fields: Any) -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)]) if text is not None else None
    return Event(invocation_id="contract", author=author, content=content,
                 actions=EventActions(state_delta=dict(delta or {})), timestamp=clock.next(), **fields)


async def reload(service: BaseSessionService, session: Session, config: GetSessionConfig | None = None) -> Session:
    got = await service.get_session(app_name=session.app_name, user_id=session.user_id, session_id=session.id,
                                    config=config)
    assert got is not None, f"get_session({session.app_name!r}, {session.user_id!r}, {session.id!r}) returned None " \
                            f"for a session that was created and not deleted"
    return got


def texts(session: Session) -> list[str]:
    """The text of each event, in the order get_session returned them."""
    return ["".join(p.text or "" for p in e.content.parts) if e.content and e.content.parts else "" for e in session.events]


def short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


def expect_state(state: dict[str, Any], expected: dict[str, Any], where: str) -> None:
    """Every key of ``expected`` is in ``state`` with that exact value; names each key that is not."""
    problems = [f"{key!r}: expected {short(value)}, got {short(state[key]) if key in state else '<absent>'}"
                for key, value in expected.items() if key not in state or state[key] != value]
    assert not problems, f"{where}: " + "; ".join(problems)


def expect_absent(state: dict[str, Any], keys: list[str], where: str) -> None:
    present = [f"{key!r} (= {short(state[key])})" for key in keys if key in state]
    assert not present, f"{where}: must not hold " + ", ".join(present)
