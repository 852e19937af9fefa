"""What ``rlm-conformance init`` drafts for ``session-service``: the session service the agent's own module offers.

A team that keeps its sessions in a store of its own (ADK's ``DatabaseSessionService`` on sqlite, a class of its
own) writes the function or class that builds it next to the App. Without a ``session-service`` line every run
uses ADK's ``InMemorySessionService``, silently; so ``init`` looks in the target's module, without calling
anything, for

* a function whose return annotation is a ``BaseSessionService`` (any parameters: the harness calls it as
  docs/your-agent.md says), or a ``BaseSessionService`` subclass of the team's own: drafted as the line;
* a ``BaseSessionService`` instance (or a Runner holding one): shared by every scenario, so not usable as it is;
  named in a commented line that says what to write instead.

Nothing found: a commented line saying what the setting is for.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ServiceDraft:
    """The drafted ``session-service``: ``spec`` to write (None: the line stays a comment) and why."""

    spec: str | None
    why: str

    @property
    def comment(self) -> str:
        """The TOML line: the setting, or a commented example, each with why."""
        if self.spec is not None:
            return f'session-service = "{self.spec}"  # {self.why}'
        return f'# session-service = "package.module:factory"  # {self.why}'


def _returns_service(fn: Any) -> bool:
    from google.adk.sessions.base_session_service import BaseSessionService

    try:
        returned = typing.get_type_hints(fn).get("return")
    except Exception:  # noqa: BLE001 - an annotation that does not resolve says nothing about the service
        return False
    return isinstance(returned, type) and issubclass(returned, BaseSessionService)


def _own_class(obj: Any) -> bool:
    from google.adk.sessions.base_session_service import BaseSessionService

    return isinstance(obj, type) and issubclass(obj, BaseSessionService) and not obj.__module__.startswith(
        "google.adk.") and not inspect.isabstract(obj)


def draft_session_service(spec: str) -> ServiceDraft:
    """The ``session-service`` line for the target ``spec`` (``module:attr``), from what its module defines."""
    from google.adk.sessions.base_session_service import BaseSessionService

    unset = "unset: every run uses ADK's InMemorySessionService; name your BaseSessionService factory or class here " \
            "(docs/your-agent.md, 'Your own session service')"
    module_name = spec.partition(":")[0]
    try:
        module = importlib.import_module(module_name)
    except Exception:  # noqa: BLE001 - init imported it already; nothing to read if it cannot be imported again
        return ServiceDraft(None, unset)
    factories, instances = [], []
    for name, obj in vars(module).items():
        if name.startswith("_"):
            continue
        held = getattr(obj, "session_service", None) if not isinstance(obj, type) else None
        if isinstance(obj, BaseSessionService) or isinstance(held, BaseSessionService):
            instances.append((name, obj if isinstance(obj, BaseSessionService) else held))
        elif _own_class(obj) or (inspect.isfunction(obj) and _returns_service(obj)):
            factories.append(f"{obj.__module__}:{obj.__qualname__}")
    factories = list(dict.fromkeys(factories))
    if factories:
        others = f"; also: {', '.join(factories[1:])}" if len(factories) > 1 else ""
        return ServiceDraft(factories[0], f"inferred: {module_name} offers it, a factory of your session service, "
                                          f"called once per scenario in its own work folder{others}")
    if instances:
        name, service = instances[0]
        return ServiceDraft(None, f"{module_name}.{name} holds an instance of {type(service).__name__}, which every "
                                  f"scenario would share: name a function that returns a new one; {unset}")
    return ServiceDraft(None, f"{module_name} defines none; {unset}")
