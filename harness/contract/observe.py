"""What a session service the harness does not know *does*: observed, not assumed.

Two choices a service may legitimately make either way: whether ``None`` in a delta deletes the key or stores
null, and whether a stale writer's append is rejected (optimistic concurrency) or accepted. For ADK's services
and the reference's the answer is declared (harness/contract/profiles.py); for any other class — a user's own,
or one a user's factory returns — two short writes to that very service, in an app name of their own, say what
it does. A target profile can require an answer instead (``none_semantics``, ``stale_writes``): then what the
service does is judged against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from adk_compat import is_stale_session_error

from .case import Clock, event, reload

if TYPE_CHECKING:
    from google.adk.sessions.base_session_service import BaseSessionService

OBSERVE_APP = "rlm-conformance-observe"


@dataclass(frozen=True)
class ObservedBehaviour:
    none_semantics: Literal["delete", "store"]
    rejects_stale_writes: bool

    def describe(self) -> str:
        return (f"observed: None {'deletes the key' if self.none_semantics == 'delete' else 'is stored as null'}, "
                f"a stale writer's append is {'rejected' if self.rejects_stale_writes else 'accepted'}")


async def observe(service: BaseSessionService) -> ObservedBehaviour:
    """Write ``None`` and read it back; let two writers append to one fetched session (a dozen statements)."""
    clock = Clock()
    session = await service.create_session(app_name=OBSERVE_APP, user_id="observer", state={"cleared": 1})
    await service.append_event(session, event(clock, {"cleared": None}))
    none_semantics: Literal["delete", "store"] = "store" if "cleared" in (await reload(service, session)).state \
        else "delete"
    created = await service.create_session(app_name=OBSERVE_APP, user_id="observer")
    first, second = await reload(service, created), await reload(service, created)
    await service.append_event(first, event(clock, {"first": 1}))
    try:
        await service.append_event(second, event(clock, {"second": 1}))
        rejects = False
    except ValueError as error:  # StaleSessionError is a ValueError; ADK 1.x raises a bare one
        if not is_stale_session_error(error):
            raise
        rejects = True
    for done in (session, created):
        await service.delete_session(app_name=OBSERVE_APP, user_id="observer", session_id=done.id)
    return ObservedBehaviour(none_semantics, rejects)
