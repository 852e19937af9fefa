"""The agent's own driver: a team's turn function (retries, session bootstrapping, an outcome object) run by the
harness in place of its plain ``Runner.run_async`` loop, so the outcome it reports is what gets judged.

The profile names it (``driver: package.module:function``). The harness calls it once per scenario turn, with the
Runner it built (the run's model, the recording session service, the trace plugin, all still in force), binding
its parameters by name:

====================================================  =====================================================
parameter name                                         value
====================================================  =====================================================
``runner``                                             the harness's ``google.adk.runners.Runner``
``session_service``                                    that Runner's session service (recorded, as ADK's)
``artifact_service``, ``memory_service``               that Runner's services
``app_name``, ``user_id``, ``session_id``              the turn's
``state_delta``                                        the state the turn's message carries (a dict, or None)
``message``, ``prompt``, ``query``, ``text``,          the user's message (``str``)
``user_message``, ``user_input``
``new_message``, ``content``                           the same as ``google.genai.types.Content`` (role user)
any name in the profile's ``driver_args``              that value (e.g. ``timeout_seconds: 60``)
====================================================  =====================================================

Any other parameter must have a default, or the run stops before its first turn, naming it. The function may be
sync (run in a thread, so it may block, e.g. ``Runner.run``) or ``async``. What it returns is read
through the profile's ``driver_outcome`` (outcome field -> attribute or key of the returned object or dict): ``termination``, ``final_answer``, ``delegations``, ``error``. The
returned termination is named through ``driver_terminations`` first (the driver's words -> the scenario's; null
meaning "no termination stored"), then ``termination_map``. A field the driver does not report is read from
storage, as without a driver; ``outcome_from_storage`` compares the rest with the persisted session. A driver
that raises ends its turn with that error, like an agent that raises.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError
from ..trace.model import TurnOutcome
from .profile import TargetProfile

if TYPE_CHECKING:
    from google.adk.runners import Runner

OUTCOME_FIELDS = ("termination", "final_answer", "delegations", "error")
MESSAGE_NAMES = ("message", "prompt", "query", "text", "user_message", "user_input")
CONTENT_NAMES = ("new_message", "content")
RUNNER_NAMES = ("runner", "session_service", "artifact_service", "memory_service", "app_name", "user_id",
                "session_id", "state_delta")
ACCEPTED = (*RUNNER_NAMES, *MESSAGE_NAMES, *CONTENT_NAMES)


class DriverError(HarnessError):
    """A profile ``driver`` that cannot be called, or whose outcome cannot be read; the message says the fix."""


Driver = Callable[..., Any]
"""(runner, user_id, session_id, message, state_delta) -> what the user's function returned (awaited)."""


def bind_driver(spec: str, function: Callable[..., Any], extra: dict[str, Any]) -> Driver:
    """A call of ``function`` with its parameters bound by name, checked now: an unknown required parameter is an
    error before any turn runs, not a ``TypeError`` in the middle of the scenario."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError) as exc:
        raise DriverError(f"driver {spec!r}: its signature cannot be read ({exc}); name a Python function.") from exc
    names = {p.name for p in parameters}
    unknown = sorted(set(extra) - names) if not any(p.kind is p.VAR_KEYWORD for p in parameters) else []
    if unknown:
        raise DriverError(f"driver {spec!r}: driver_args names {', '.join(unknown)}, which the function does not "
                          f"take (its parameters: {', '.join(sorted(names)) or 'none'}). Fix: drop them from "
                          f"driver_args.")
    missing = [p.name for p in parameters if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               and p.name not in ACCEPTED and p.name not in extra]
    if missing:
        raise DriverError(f"driver {spec!r}: the harness cannot fill its parameter(s) {', '.join(missing)}. It "
                          f"passes by name: {', '.join(ACCEPTED)}, and whatever the profile's driver_args give. "
                          f"Fix: give them a default, add them to driver_args, or wrap the function.")
    positional_only = [p.name for p in parameters if p.kind is p.POSITIONAL_ONLY]

    async def call(runner: Runner, user_id: str, session_id: str, message: str,
                   state_delta: dict[str, Any] | None = None) -> Any:
        from google.genai import types

        if state_delta and "state_delta" not in names:
            raise DriverError(f"driver {spec!r}: the scenario's turn sends a state_delta and the function takes no "
                              f"'state_delta' parameter. Fix: add one (passed as ADK's run_async takes it), or drop "
                              f"the turn's state_delta.")

        pool: dict[str, Any] = {
            "runner": runner, "session_service": runner.session_service, "app_name": runner.app_name,
            "artifact_service": runner.artifact_service, "memory_service": runner.memory_service,
            "user_id": user_id, "session_id": session_id,
            **dict.fromkeys(MESSAGE_NAMES, message),
            **dict.fromkeys(CONTENT_NAMES, types.Content(role="user", parts=[types.Part(text=message)])),
            "state_delta": state_delta or None,
            **extra,
        }
        args = [pool[name] for name in positional_only if name in pool]
        kwargs = {p.name: pool[p.name] for p in parameters
                  if p.name in pool and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if not inspect.iscoroutinefunction(function):  # a plain function may block (Runner.run): not on this loop
            result = await asyncio.to_thread(function, *args, **kwargs)
        else:
            result = function(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    return call


def _field(result: Any, name: str) -> tuple[bool, Any]:
    if isinstance(result, dict):
        return (name in result, result.get(name))
    return (hasattr(result, name), getattr(result, name, None))


def outcome_from_driver(spec: str, result: Any, profile: TargetProfile, stored: TurnOutcome) -> TurnOutcome:
    """The outcome the driver reported, each field it does not report taken from ``stored`` (what storage says)."""
    reported: dict[str, Any] = {}
    for field in OUTCOME_FIELDS:
        attribute = profile.driver_outcome.get(field, field)
        present, value = _field(result, attribute)
        if present:
            reported[field] = (attribute, value)
        elif field in profile.driver_outcome:
            shown = sorted(result) if isinstance(result, dict) else sorted(
                n for n in dir(result) if not n.startswith("_") and not callable(getattr(result, n, None)))
            raise DriverError(f"driver {spec!r} returned a {type(result).__name__} without {attribute!r} (profile "
                              f"driver_outcome.{field}); it has: {', '.join(map(str, shown)) or 'nothing'}. Fix: "
                              f"map driver_outcome.{field} to one of those, or drop it.")
    if not reported:
        return stored
    update: dict[str, Any] = {}
    if "termination" in reported:
        value = reported["termination"][1]
        key = value if isinstance(value, str) else str(value)
        update["termination"] = (profile.driver_terminations[key] if key in profile.driver_terminations
                                 else profile.termination_name(value))
    if "final_answer" in reported:
        value = reported["final_answer"][1]
        update["final_answer"] = None if value is None else str(value)
    if "delegations" in reported:
        value = reported["delegations"][1]
        try:
            update["delegations"] = None if value is None else int(value)
        except (TypeError, ValueError):
            raise DriverError(f"driver {spec!r}: its {reported['delegations'][0]!r} is {value!r}, not a count. Fix: "
                              f"map driver_outcome.delegations to a whole number, or drop it.") from None
    if "error" in reported and reported["error"][1] is not None:
        update["error"] = str(reported["error"][1])
    said = ", ".join(f"{field} from {attribute} = {value!r}" for field, (attribute, value) in reported.items())
    update["reported_by"] = f"driver {spec} ({said})"
    return stored.model_copy(update=update)
