"""What a session service the harness does not know *does*: observed, not assumed.

Two choices a service may legitimately make either way: whether ``None`` in a delta deletes the key or stores
null, and whether a stale writer's append is rejected (optimistic concurrency) or accepted. For ADK's services
and the reference's the answer is declared (harness/contract/profiles.py); for any other class — a user's own,
or one a user's factory returns — two short writes to that very service, in an app name of their own, say what
it does. A target profile can require an answer instead (``none_semantics``, ``stale_writes``): then what the
service does is judged against it. Each of the two is observed only when nothing says it (declaring one never
requires declaring the other), and an error while observing names the profile field that skips it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..errors import CalledCodeError
from ..run.failures import blamed
from .case import Clock, event

if TYPE_CHECKING:
    from google.adk.sessions.base_session_service import BaseSessionService
    from google.adk.sessions.session import Session

OBSERVE_APP = "rlm-conformance-observe"


NONE_FIX = ("say none_semantics: delete (or store) in the target profile, or give the service class a "
            "none_semantics = 'delete' | 'store' attribute, and the harness does not observe it")
STALE_FIX = ("say stale_writes: reject (or accept) in the target profile, or give the service class a "
             "rejects_stale_writes = True | False attribute, and the harness does not observe it")


async def observe_none_semantics(service: BaseSessionService) -> Literal["delete", "store"]:
    """Write ``None`` to a key and read the session back: the key gone is a delete, the key kept a stored null."""
    with blamed(f"the session service {type(service).__name__} while the harness observed what None in a delta "
                f"does ({NONE_FIX})"):
        clock = Clock()
        session = await service.create_session(app_name=OBSERVE_APP, user_id="observer", state={"cleared": 1})
        await service.append_event(session, event(clock, {"cleared": None}))
        kept = "cleared" in (await _read(service, session, NONE_FIX)).state
        await service.delete_session(app_name=OBSERVE_APP, user_id="observer", session_id=session.id)
    return "store" if kept else "delete"


async def observe_rejects_stale_writes(service: BaseSessionService) -> bool:
    """Let two writers append to one fetched session: the second one refused (StaleSessionError, or any error of
    the service's own) is a rejection. Whether it refused *cleanly* (nothing stored, the session readable) is the
    contract case's to judge (harness/contract/cases_concurrency.py), by name."""
    with blamed(f"the session service {type(service).__name__} while the harness observed what it does with a "
                f"stale writer's append ({STALE_FIX})"):
        clock = Clock()
        created = await service.create_session(app_name=OBSERVE_APP, user_id="observer")
        first, second = await _read(service, created, STALE_FIX), await _read(service, created, STALE_FIX)
        await service.append_event(first, event(clock, {"first": 1}))
    try:
        await service.append_event(second, event(clock, {"second": 1}))
        rejects = False
    except Exception:  # noqa: BLE001 - the refusal, whatever its class
        rejects = True
    with blamed(f"the session service {type(service).__name__} while the harness deleted the session it observed "
                f"stale writes on ({STALE_FIX})"):
        await service.delete_session(app_name=OBSERVE_APP, user_id="observer", session_id=created.id)
    return rejects


async def _read(service: BaseSessionService, session: Session, fix: str) -> Session:
    got = await service.get_session(app_name=session.app_name, user_id=session.user_id, session_id=session.id)
    if got is None:
        raise CalledCodeError(f"the session service {type(service).__name__} returned None from get_session for the "
                              f"session {session.id!r} it had just created, while the harness observed it ({fix})")
    return got
