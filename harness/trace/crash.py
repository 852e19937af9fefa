"""``describe_error``: which part of a target ended a turn by raising, read from the exception itself.

A turn that raises is a verdict of its own (``error``), and the user's first question is *where* it came
from. The answer is in the traceback: the innermost frame that runs a method of an ADK building block
(a model, a plugin, a tool, a session service, an agent) is the part that raised. Chained exceptions are
read innermost first, because ADK wraps a plugin's exception in a ``RuntimeError`` raised by its plugin
manager (``raise ... from e``): the plugin's own frames are on the cause.

Nothing here knows the reference agent: the kinds are ADK's base classes, the names are the objects' own.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from types import TracebackType

from .model import TurnError

TRACEBACK_LINES = 12
"""Lines of the innermost traceback kept as evidence."""


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes/contexts, outermost first, without cycles."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return chain


def _frames(tb: TracebackType | None) -> Iterator[object]:
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return reversed(frames)  # innermost (where it was raised) first


def _owner(frame: object) -> str | None:
    """What ADK building block the frame runs a method of: ``plugin rlm_model_guard``, ``model``, ..."""
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.sessions.base_session_service import BaseSessionService
    from google.adk.tools.base_tool import BaseTool

    module = frame.f_globals.get("__name__", "")  # type: ignore[attr-defined]
    if module.startswith("google.genai"):
        return "model"
    owner = frame.f_locals.get("self")  # type: ignore[attr-defined]
    if owner is None:
        return None
    if isinstance(owner, BaseLlm):
        return f"model {getattr(owner, 'model', '')}".strip()
    if isinstance(owner, BasePlugin):
        return f"plugin {owner.name}"
    if isinstance(owner, BaseTool):
        return f"tool {owner.name}"
    if isinstance(owner, BaseSessionService):
        return f"session service {type(owner).__name__}"
    if isinstance(owner, BaseAgent):
        return f"agent {owner.name}"
    return None


def origin_of(exc: BaseException) -> str:
    """The innermost ADK building block that raised ``exc`` (or its cause); ``unknown`` when none did."""
    for link in reversed(exception_chain(exc)):
        for frame in _frames(link.__traceback__):
            owner = _owner(frame)
            if owner is not None:
                return owner
    return "unknown"


def describe_error(exc: BaseException) -> TurnError:
    """The turn's error as plain data: type and message of what was raised, where it came from, the traceback."""
    innermost = exception_chain(exc)[-1]
    lines = "".join(traceback.format_exception(type(innermost), innermost, innermost.__traceback__)).splitlines()
    return TurnError(type=type(exc).__name__, message=str(exc) or "(no message)", origin=origin_of(exc),
                     cause=f"{type(innermost).__name__}: {innermost}" if innermost is not exc else None,
                     traceback=lines[-TRACEBACK_LINES:])
