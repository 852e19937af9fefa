"""Target names: a plugin's (``reference``, ``legacy``: harness/targets/plugins.py), or ``module:attr`` naming a
factory, an App or a root agent."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ..errors import HarnessError
from .base import BuiltTarget, TargetEnvironment, TargetFactory
from .importing import import_named
from .plugins import plugins


class TargetError(HarnessError):
    """A --target that cannot be imported or is not an App, agent or target factory."""


def resolve_target(spec: str) -> TargetFactory:
    named = plugins()
    if spec in named:  # a plugin's build, taken as any factory is: (env) or (), returning a target, App or agent
        build = named[spec].build
        return lambda env: _as_factory(spec, build)(env)  # ADK is imported when it builds, not when it is named
    if ":" not in spec:
        raise TargetError(
            f"--target {spec!r} is not a known target. Use one of {', '.join(named) or '(no plugin installed)'} or "
            f"'package.module:attr' naming an ADK App, a root agent, or a zero-argument factory of either."
        )
    obj = import_named(spec, flag="--target", error=TargetError,
                       wanted="the App, root agent or factory")
    return _as_factory(spec, obj)


def _zero_argument(fn: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters)


def _as_factory(spec: str, obj: Any) -> TargetFactory:
    """An App or a root agent is driven as is; a factory is called for each run (zero arguments, or the env)."""
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.apps import App

    from .generic import generic_target

    if isinstance(obj, App):
        return lambda env: generic_target(spec, obj, env)
    if isinstance(obj, BaseAgent):
        return lambda env: generic_target(spec, App(name=_app_name(obj.name), root_agent=obj), env)
    if callable(obj) and not isinstance(obj, type):
        factory: Callable[..., Any] = obj

        def build(env: TargetEnvironment) -> BuiltTarget:
            built = factory() if _zero_argument(factory) else factory(env)
            if isinstance(built, BuiltTarget):
                return built
            if isinstance(built, (App, BaseAgent)):
                return _as_factory(spec, built)(env)
            raise TargetError(f"--target {spec!r}: the factory returned a {type(built).__name__}; expected an ADK "
                              f"App or a root agent (BaseAgent).")

        return build
    raise TargetError(f"--target {spec!r} is a {type(obj).__name__}; expected an ADK App, a root agent "
                      f"(BaseAgent) or a zero-argument factory returning one.")


def _app_name(agent_name: str) -> str:
    """An App name for a bare agent (App names must be identifiers)."""
    return agent_name if agent_name.isidentifier() else "agent"
