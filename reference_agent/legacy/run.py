"""LEGACY run_conversation: mutates a fetched session and reads temp: flags from yielded events."""

from __future__ import annotations

from dataclasses import dataclass

from google.adk.runners import Runner
from google.genai import types

from .agent import EXIT_REQUESTED

STALE_FLAGS = ("rlm:exit_requested", "rlm:fatal_error", "rlm:fatal_error_msg")


@dataclass(frozen=True)
class LegacyOutcome:
    status: str
    delegations: int


async def run_conversation(runner: Runner, *, user_id: str, session_id: str, message: str) -> LegacyOutcome:
    service = runner.session_service
    session = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    if session is None:
        session = await service.create_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    for key in STALE_FLAGS:
        session.state[key] = None  # seed 002 "A": never persisted
    exit_requested = False
    delegations = 0
    async for event in runner.run_async(user_id=user_id, session_id=session_id,
                                        new_message=types.Content(role="user", parts=[types.Part(text=message)])):
        delta = event.actions.state_delta if event.actions else {}
        exit_requested = exit_requested or bool(delta.get(EXIT_REQUESTED))  # already stripped by ADK
        delegations += sum(1 for call in event.get_function_calls() if call.name == "delegate_code_results")
    return LegacyOutcome(status="exit_requested" if exit_requested else "success", delegations=delegations)
