"""``--session-service``: which BaseSessionService a target runs on.

The choice, in the words every help text quotes (harness/targets/service_choice.py):
``delta`` (the default) is the target's own — DeltaSessionService on DuckDB for
the reference agent, ADK's InMemorySessionService for an App or agent the
harness builds; ``adk-memory`` and ``adk-sqlite`` are ADK's own services;
``module:attr`` is a user's: a function, a class, or an object with a
``factory`` attribute (such as a ``harness.contract.ServiceProfile``).

How ``module:attr`` is called, once per scenario, in that scenario's private
work folder (also the current directory while it runs):

1. the target profile's ``session_service_args`` given: as keyword arguments,
   every ``{work}`` in a string value replaced by that folder
   (``db_path: "{work}/sessions.duckdb"``);
2. else a first parameter named ``env`` or annotated ``TargetEnvironment``: the
   whole TargetEnvironment;
3. else a first parameter without a default, or annotated ``pathlib.Path``: the
   folder, as a ``pathlib.Path``;
4. else with no argument (a class whose parameters all have defaults gets them).

The same ``module:attr`` works for ``--session-service`` and for the contract
suite (``harness.contract.profile_from_spec``).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError
from .base import SessionServiceFactory, TargetEnvironment

if TYPE_CHECKING:  # imported where a service is checked: the `run -j N` parent resolves names without ADK
    from google.adk.sessions.base_session_service import BaseSessionService

FolderFactory = Callable[[Path], "BaseSessionService"]


class SessionServiceError(HarnessError):
    """A --session-service that does not import or does not build a BaseSessionService."""


def adk_memory(folder: Path) -> BaseSessionService:
    from google.adk.sessions import InMemorySessionService

    return InMemorySessionService()


def adk_sqlite(folder: Path) -> BaseSessionService:
    from google.adk.sessions import DatabaseSessionService

    return DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{Path(folder) / 'adk_sessions.db'}")


BUILTIN_SERVICES: dict[str, SessionServiceFactory | None] = {
    "delta": None,
    "adk-memory": lambda env: adk_memory(env.home),
    "adk-sqlite": lambda env: adk_sqlite(env.home),
}
# Only meaningful for scenario runs, where the runner turns it into --backend databricks.
_NOT_YET = {"delta-databricks": "is DeltaSessionService on the Databricks SQL engine: use it with `rlm-conformance run` "
                                "(same as --backend databricks); for the contract suite use the Databricks engine's "
                                "tests in tests/databricks"}


def import_factory(spec: str, *, flag: str = "--session-service") -> Any:
    """The object ``module:attr`` names (a factory, or an object with a ``factory``), or a clear error."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SessionServiceError(f"{flag} {spec!r}: expected 'package.module:factory'.")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # report any import failure against the flag that named it
        raise SessionServiceError(f"{flag} {spec!r}: cannot import module {module_name!r} ({type(exc).__name__}: "
                                  f"{exc}). Check the module path (python -c 'import {module_name}').") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SessionServiceError(f"{flag} {spec!r}: module {module_name!r} has no attribute {attr!r}. "
                                      f"Name a function returning a google.adk BaseSessionService.")
        obj = getattr(obj, part)
    if not callable(obj) and not callable(getattr(obj, "factory", None)):
        raise SessionServiceError(f"{flag} {spec!r} names a {type(obj).__name__}, not a factory. Name a function "
                                  f"returning a google.adk BaseSessionService (called with no argument or a folder).")
    return obj


def _wants_env(factory: Callable[..., Any]) -> bool:
    params = list(inspect.signature(factory).parameters.values())
    return bool(params) and (params[0].name == "env" or params[0].annotation in (TargetEnvironment, "TargetEnvironment"))


def _wants_folder(factory: Callable[..., Any]) -> bool:
    params = list(inspect.signature(factory).parameters.values())
    first = params[0] if params else None
    return first is not None and first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD) and (
        first.default is first.empty or first.annotation in (Path, "Path", "pathlib.Path"))


def expand_args(args: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``session_service_args`` with every ``{work}`` in a string value replaced by the scenario's folder."""
    return {k: v.replace("{work}", str(folder)) if isinstance(v, str) else v for k, v in args.items()}


def call_factory(spec: str, factory: Callable[..., Any], folder: Path, env: TargetEnvironment | None = None,
                 *, flag: str = "--session-service", args: dict[str, Any] | None = None) -> BaseSessionService:
    """Call a user's factory as the module docstring says, and check what it built."""
    from google.adk.sessions.base_session_service import BaseSessionService

    factory = getattr(factory, "factory", factory)
    try:
        inspect.signature(factory)
        signed = True
    except (TypeError, ValueError):  # builtins without a signature: call them bare
        signed = False
    if args:
        service = factory(**expand_args(args, folder))
    elif signed and _wants_env(factory):
        if env is None:
            raise SessionServiceError(f"{flag} {spec!r} takes a TargetEnvironment, which only a target run has. "
                                      f"Make it take a folder (pathlib.Path) or no argument.")
        service = factory(env)
    else:
        service = factory(folder) if signed and _wants_folder(factory) else factory()
    if not isinstance(service, BaseSessionService):
        raise SessionServiceError(f"{flag} {spec!r} returned a {type(service).__name__}, not a google.adk "
                                  f"BaseSessionService. Return an instance of a BaseSessionService subclass.")
    return service


def resolve_session_service(name: str, args: dict[str, Any] | None = None) -> SessionServiceFactory | None:
    """The factory ``--session-service name`` means (None: the target's own); ``args``: the target profile's
    ``session_service_args`` for a ``module:attr``."""
    if name in BUILTIN_SERVICES:
        return BUILTIN_SERVICES[name]
    if name in _NOT_YET:
        raise SessionServiceError(f"--session-service {name!r} {_NOT_YET[name]}.")
    if ":" not in name:
        raise SessionServiceError(f"--session-service {name!r} is unknown. Use one of {', '.join(BUILTIN_SERVICES)} "
                                  f"or 'package.module:factory'.")
    factory = import_factory(name)
    return lambda env: call_factory(name, factory, env.home, env, args=args)


async def aclose_service(service: BaseSessionService) -> None:
    """Close a session service whatever its ``close`` looks like (sync, async or absent)."""
    close = getattr(service, "close", None)
    if close is None:
        return
    result = close()
    if inspect.isawaitable(result):
        await result
