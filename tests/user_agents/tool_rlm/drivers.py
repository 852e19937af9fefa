"""Turn functions a team writes around its Runner, as the profile's ``driver`` (no harness import).

``run_conversation`` reads its outcome back from the stored session, as it should; ``upstream_style`` computes it
from the events the Runner yields, looking for a ``temp:`` exit flag there, the way the upstream Databricks RLM
agent's ``run_conversation`` did — so it reports "success" after the loop was ended by ``finish``.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.adk.runners import Runner
from google.genai import types


@dataclass
class ConversationResult:
    response_text: str
    status: str
    delegation_count: int


def _message(prompt: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=prompt)])


async def run_conversation(runner: Runner, session_service, user_id: str, session_id: str, prompt: str,
                           timeout_seconds: float | None = None) -> ConversationResult:
    delegations = 0
    async for event in runner.run_async(user_id=user_id, session_id=session_id, new_message=_message(prompt)):
        delegations += sum(call.name == "run_python" for call in event.get_function_calls())
    session = await session_service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    return ConversationResult(response_text=session.state.get("answer") or "", delegation_count=delegations,
                              status=session.state.get("status") or "success")


async def upstream_style(runner: Runner, user_id: str, session_id: str, query: str) -> ConversationResult:
    exit_requested, delegations, text = False, 0, ""
    async for event in runner.run_async(user_id=user_id, session_id=session_id, new_message=_message(query)):
        delegations += sum(call.name == "run_python" for call in event.get_function_calls())
        if event.actions and event.actions.escalate:
            exit_requested = exit_requested or bool(event.actions.state_delta.get("temp:exit_requested"))
    return ConversationResult(response_text=text, status="done" if exit_requested else "success",
                              delegation_count=delegations)


def sync_driver(runner: Runner, user_id: str, session_id: str, message: str, label: str) -> dict:
    """A plain function: ``label`` comes from the profile's driver_args."""
    for _ in runner.run(user_id=user_id, session_id=session_id, new_message=_message(message)):
        pass
    return {"status": "success", "label": label}


async def needs_a_tenant(runner: Runner, tenant: str, user_id: str, session_id: str, prompt: str) -> None:
    raise AssertionError("never called: the harness cannot fill 'tenant'")


async def reports_done_blindly(runner: Runner, user_id: str, session_id: str, query: str) -> ConversationResult:
    """Says "done" with an answer of its own making, whatever the turn did: what no stored key can expose when the
    team's outcome lives only in what its turn function returns."""
    async for _ in runner.run_async(user_id=user_id, session_id=session_id, new_message=_message(query)):
        pass
    return ConversationResult(response_text="negative", status="done", delegation_count=1)
