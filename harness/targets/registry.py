"""Target names: ``reference``, ``legacy``, or ``module:attr`` naming a factory, an App or a root agent."""

from __future__ import annotations

import importlib
from typing import Any, Callable

from ..errors import HarnessError
from .base import BuiltTarget, TargetEnvironment, TargetFactory


class TargetError(HarnessError):
    """A --target that cannot be imported or is not an App, agent or target factory."""


def _reference(env: TargetEnvironment) -> BuiltTarget:
    from .reference import build_reference

    return build_reference(env)


def _legacy(env: TargetEnvironment) -> BuiltTarget:
    from .legacy import build_legacy

    return build_legacy(env)


BUILTIN_TARGETS: dict[str, TargetFactory] = {"reference": _reference, "legacy": _legacy}


def resolve_target(spec: str) -> TargetFactory:
    if spec in BUILTIN_TARGETS:
        return BUILTIN_TARGETS[spec]
    if ":" not in spec:
        raise TargetError(
            f"--target {spec!r} is not a known target. Use one of {', '.join(BUILTIN_TARGETS)} or "
            f"'package.module:attr' naming an ADK App, a root agent, or a factory(env) -> BuiltTarget."
        )
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure is the user's to fix; say which module
        raise TargetError(
            f"--target {spec!r}: importing module {module_name!r} failed with {type(exc).__name__}: {exc}. "
            f"Check the module path and that it imports on its own (python -c 'import {module_name}')."
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TargetError(f"--target {spec!r}: module {module_name!r} has no attribute {attr!r}. "
                              f"Name the App, root agent or factory defined in it.")
        obj = getattr(obj, part)
    return _as_factory(spec, obj)


def _as_factory(spec: str, obj: Any) -> TargetFactory:
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.apps import App

    from .generic import generic_target

    if isinstance(obj, App):
        return lambda env: generic_target(spec, obj, env)
    if isinstance(obj, BaseAgent):
        return lambda env: generic_target(spec, App(name=obj.name, root_agent=obj), env)
    if callable(obj):
        factory: Callable[[TargetEnvironment], Any] = obj

        def build(env: TargetEnvironment) -> BuiltTarget:
            built = factory(env)
            if isinstance(built, BuiltTarget):
                return built
            return _as_factory(spec, built)(env)

        return build
    raise TargetError(f"--target {spec!r} is a {type(obj).__name__}; expected an ADK App, a root agent "
                      f"(BaseAgent) or a factory(env) returning a BuiltTarget.")
