"""A user's own App as a target: driven turn by turn, the outcome read from the persisted session."""

from __future__ import annotations

from google.adk.apps import App
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from ..trace.crash import describe_error
from ..trace.model import TurnOutcome
from .base import BuiltTarget, TargetEnvironment
from .profile import TargetProfile


def generic_target(name: str, app: App, env: TargetEnvironment, *, profile: TargetProfile | None = None) -> BuiltTarget:
    profile = profile or TargetProfile()

    async def run_turn(runner: Runner, user_id: str, session_id: str, message: str) -> TurnOutcome:
        service = runner.session_service
        if await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id) is None:
            await service.create_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
        error = crash = None
        try:
            async for _ in runner.run_async(user_id=user_id, session_id=session_id,
                                            new_message=types.Content(role="user", parts=[types.Part(text=message)])):
                pass
        except Exception as exc:  # the turn's error (a verdict of its own); the checks still judge the session
            error, crash = f"{type(exc).__name__}: {exc}", describe_error(exc)
        stored = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
        state = stored.state if stored else {}
        return TurnOutcome(termination=state.get(profile.termination_key), final_answer=state.get(profile.final_answer_key),
                           error=error, crash=crash)

    service = env.session_service_factory(env) if env.session_service_factory else InMemorySessionService()
    return BuiltTarget(name=name, app=app, session_service=service, run_turn=run_turn, profile=profile)
