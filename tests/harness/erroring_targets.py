"""A target factory and session services that raise, for "nothing escapes as a traceback"
(tests/harness/test_no_traceback.py): each is named by ``module:attr`` as a user would name their own.

* ``raising_factory`` (a ``--target``): the factory raises before it builds anything.
* ``BrokenConstructorService`` (a ``--session-service``): its constructor raises, however it is called.
* ``StoreGoesDown`` (a ``--session-service``): fine until its 3rd ``append_event`` (mid-turn), then every
  call raises, as a store whose connection was lost: the harness's own reads after the turn meet it too.
"""

from __future__ import annotations

from typing import Any

from google.adk.events import Event
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.session import Session

from harness.targets.base import BuiltTarget, TargetEnvironment


def raising_factory(env: TargetEnvironment) -> BuiltTarget:
    raise ValueError("the factory cannot find its configuration")


class BrokenConstructorService(InMemorySessionService):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise OSError("cannot open the session store: Is a directory")


class StoreGoesDown(InMemorySessionService):
    # Declared, so the harness does not observe it with writes of its own: the third append is the scenario's.
    none_semantics = "store"
    rejects_stale_writes = False

    def __init__(self) -> None:
        super().__init__()
        self.appends = 0

    def _down(self) -> None:
        if self.appends >= 3:
            raise ConnectionError("the session store went away")

    async def append_event(self, session: Session, event: Event) -> Event:
        self.appends += 1
        self._down()
        return await super().append_event(session, event)

    async def get_session(self, **kwargs: Any) -> Session | None:
        self._down()
        return await super().get_session(**kwargs)

    async def create_session(self, **kwargs: Any) -> Session:
        self._down()
        return await super().create_session(**kwargs)

    async def list_sessions(self, **kwargs: Any) -> Any:
        self._down()
        return await super().list_sessions(**kwargs)
