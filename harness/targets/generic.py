"""Any ADK App or root agent as a target, with no glue: the harness supplies what the agent expects.

* the run's model under every ``LlmAgent`` of the tree, agents behind an ``AgentTool`` too (replay, scripted or
  live), put back afterwards;
  the agent's own google-genai clients reach the same model through the model gateway (harness/llm/gateway.py);
* the scenario's ``max_iterations``, when it sets one, on the profile's loop agent (every ``LoopAgent`` when it
  names none; a scenario that sets none runs the agent's own bound),
  and its ``context`` in each new session's state under the profile's ``context_key``;
* a Runner with an artifact and a memory service (in memory) besides the chosen session service
  (ADK's ``InMemorySessionService`` unless ``--session-service`` says otherwise);
* turns driven as ``adk run`` drives them, or by the profile's ``driver`` (the agent's own turn function,
  harness/targets/driver.py), whose returned outcome is then the turn's; what it does not report is read from
  the persisted session through the profile (its termination and final-answer keys, the termination mapped
  through ``termination_map``); a turn that raised keeps its error, and with no stored termination ends as
  ``model_error`` or ``agent_error``;
* with no driver, an interrupted invocation resumed as ADK does it (``resume_turn``: ``run_async(invocation_id=...)``
  with no new message; ``crash``'s recovery ``resume``, which needs the App to be resumable).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.adk.agents import LlmAgent, LoopAgent
from google.adk.agents.base_agent import BaseAgent
from google.adk.apps import App
from google.adk.artifacts import InMemoryArtifactService
from google.adk.memory import InMemoryMemoryService
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from ..trace.crash import describe_error
from ..trace.model import TurnOutcome
from .agent_tree import tree_agents
from .base import BuiltTarget, TargetEnvironment
from .driver import Driver, DriverError, bind_driver, outcome_from_driver
from .importing import import_named
from .profile import TargetProfile


def walk_agents(root: BaseAgent) -> list[BaseAgent]:
    """Every agent of the tree, agents behind an ``AgentTool`` included (harness/targets/agent_tree.py)."""
    return tree_agents(root)


@dataclass
class _Overrides:
    """Attributes the harness set on the user's agents, to put back when the target closes."""

    saved: list[tuple[Any, str, Any]] = field(default_factory=list)

    def set(self, obj: Any, name: str, value: Any) -> None:
        self.saved.append((obj, name, getattr(obj, name)))
        object.__setattr__(obj, name, value)  # pydantic models: no re-validation of the user's tree

    def restore(self) -> None:
        for obj, name, value in reversed(self.saved):
            object.__setattr__(obj, name, value)
        self.saved.clear()


def _apply_environment(app: App, env: TargetEnvironment, profile: TargetProfile) -> _Overrides:
    overrides = _Overrides()
    for agent in walk_agents(app.root_agent):
        if isinstance(agent, LlmAgent):
            overrides.set(agent, "model", env.model)
        own_bound = env.max_iterations is None  # the scenario sets none: the agent's own LoopAgent bound
        if isinstance(agent, LoopAgent) and profile.loop_agent in (None, agent.name) and not own_bound:
            overrides.set(agent, "max_iterations", env.max_iterations)
    return overrides


def _termination(state: dict[str, Any], profile: TargetProfile, crash: Any) -> Any:
    stored = state.get(profile.termination_key) if profile.termination_key else None
    if stored is not None:
        return profile.termination_name(stored)
    if crash is not None:
        return "model_error" if crash.origin.startswith("model") else "agent_error"
    return None


def _driver(profile: TargetProfile) -> Driver | None:
    """The profile's driver, imported and its signature checked (a bad one stops the run before any turn)."""
    if profile.driver is None:
        return None
    function = import_named(profile.driver, flag="profile driver", error=DriverError,
                            wanted="the agent's turn function")
    return bind_driver(profile.driver, function, profile.driver_args)


def generic_target(name: str, app: App, env: TargetEnvironment, *, profile: TargetProfile | None = None) -> BuiltTarget:
    profile = profile or env.profile or TargetProfile(name=name)
    name = profile.name or name
    # What can raise (the driver's import, the user's service factory) comes before the agents are changed, so a
    # failure leaves the user's tree as it was (nothing would put it back: no target, no close).
    driver = _driver(profile)
    service = env.session_service_factory(env) if env.session_service_factory else InMemorySessionService()
    overrides = _apply_environment(app, env, profile)

    async def outcome_of(runner: Runner, user_id: str, session_id: str, turn: Any) -> TurnOutcome:
        """Drive ``turn()`` (the events of one invocation), then read its outcome from the persisted session."""
        error = crash = None
        returned: Any = None
        try:
            returned = await turn()
        except Exception as exc:  # the turn's error (a verdict of its own); the checks still judge the session
            error, crash = f"{type(exc).__name__}: {exc}", describe_error(exc)
        stored = await runner.session_service.get_session(app_name=runner.app_name, user_id=user_id,
                                                          session_id=session_id)
        state = stored.state if stored else {}
        final = state.get(profile.final_answer_key) if profile.final_answer_key else None
        outcome = TurnOutcome(termination=_termination(state, profile, crash), final_answer=final, error=error,
                              crash=crash)
        if driver is None or crash is not None:
            return outcome
        return outcome_from_driver(profile.driver or "", returned, profile, outcome)

    async def run_turn(runner: Runner, user_id: str, session_id: str, message: str,
                       state_delta: dict[str, Any] | None = None) -> TurnOutcome:
        async def turn() -> Any:
            if driver is not None:
                return await driver(runner, user_id, session_id, message, state_delta)
            async for _ in runner.run_async(user_id=user_id, session_id=session_id, new_message=types.Content(
                    role="user", parts=[types.Part(text=message)]), state_delta=state_delta):
                pass
            return None

        return await outcome_of(runner, user_id, session_id, turn)

    async def resume_turn(runner: Runner, user_id: str, session_id: str, invocation_id: str) -> TurnOutcome:
        """ADK resuming an interrupted invocation: no new message, its id (a resumable App's Runner)."""
        async def turn() -> None:
            async for _ in runner.run_async(user_id=user_id, session_id=session_id, invocation_id=invocation_id):
                pass

        return await outcome_of(runner, user_id, session_id, turn)

    initial = {profile.context_key: env.context} if profile.context_key and env.context is not None else {}
    # A driver is the agent's own turn function: the harness cannot hand it an invocation to resume.
    return BuiltTarget(name=name, app=app, session_service=service, run_turn=run_turn, profile=profile,
                       resume_turn=resume_turn if driver is None else None,
                       artifact_service=InMemoryArtifactService(), memory_service=InMemoryMemoryService(),
                       initial_state=initial, close=overrides.restore, routes_model_environment=True)
