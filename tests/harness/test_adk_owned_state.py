"""What ADK writes into session.state without an event, measured on the installed ADK line (both lines run it).

A real ``LlmAgent`` with a code executor on ADK's ``InMemoryRunner`` (``UnsafeLocalCodeExecutor``'s runs, with
``optimize_data_file``, which it refuses itself, so that ADK's input-file bookkeeping runs too):
a first invocation answered in plain text, then a CSV file in the user's message and a model that answers code that
fails, then code that works, then text. After each invocation the live ``session.state`` (a plugin's
after_run_callback, as the harness's recorder reads it) is compared with a fresh read of storage: every key that
differs was written without an event. That set is ``ADK_WRITES_WITHOUT_EVENT``, exactly.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.code_executors import BaseCodeExecutor, UnsafeLocalCodeExecutor
from google.adk.code_executors.code_execution_utils import CodeExecutionInput, CodeExecutionResult
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import PrivateAttr

from harness.trace.adk_state import ADK_WRITES_WITHOUT_EVENT, adk_note, is_adk_owned


class Replies(BaseLlm):
    """Answers each request with the next scripted text."""

    model: str = "replies"
    _replies: list[str] = PrivateAttr(default_factory=list)

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        text = self._replies.pop(0)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part.from_text(text=text)]),
                          turn_complete=True)


class FileAwareLocal(BaseCodeExecutor):
    """Runs code as UnsafeLocalCodeExecutor does; any BaseCodeExecutor may take the user's data files."""

    optimize_data_file: bool = True

    def execute_code(self, invocation_context: Any, code_execution_input: CodeExecutionInput) -> CodeExecutionResult:
        return UnsafeLocalCodeExecutor().execute_code(invocation_context, code_execution_input)


class LiveState(BasePlugin):
    """Keeps, per invocation, the live state and a fresh read of storage (what the recorder compares)."""

    def __init__(self) -> None:
        super().__init__(name="live_state")
        self.seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.runner: InMemoryRunner | None = None

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        session = invocation_context.session
        assert self.runner is not None
        fresh = await self.runner.session_service.get_session(app_name=session.app_name, user_id=session.user_id,
                                                              session_id=session.id)
        self.seen.append((copy.deepcopy(dict(session.state)), dict(fresh.state)))


def written_without_an_event() -> set[str]:
    model = Replies()
    model._replies = ["Nothing to run yet.", "```python\nraise ValueError('boom')\n```",
                      "```python\nprint(2 + 2)\n```", "It is 4."]
    agent = LlmAgent(name="analyst", model=model, instruction="Answer with Python.",
                     code_executor=FileAwareLocal())
    live = LiveState()
    runner = InMemoryRunner(agent=agent, app_name="adk_state", plugins=[live])
    live.runner = runner
    csv = types.Part(inline_data=types.Blob(mime_type="text/csv", data=b"a,b\n1,2\n"))

    async def go() -> None:
        session = await runner.session_service.create_session(app_name="adk_state", user_id="u")
        for message in (types.Content(role="user", parts=[types.Part.from_text(text="Hello.")]),
                        types.Content(role="user", parts=[types.Part.from_text(text="Sum a and b."), csv])):
            async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
                pass

    asyncio.run(go())
    assert len(live.seen) == 2
    return {key for memory, stored in live.seen for key in set(memory) | set(stored)
            if memory.get(key) != stored.get(key)}


def test_adk_writes_exactly_these_keys_without_an_event() -> None:
    assert written_without_an_event() == set(ADK_WRITES_WITHOUT_EVENT)


def test_the_note_names_each_key_once() -> None:
    note = adk_note(["_code_execution_context", "_code_execution_context"])
    assert note.count("'_code_execution_context'") == 1 and "without an event" in note
    assert adk_note([]) == "" and is_adk_owned("_code_execution_results") and not is_adk_owned("user:summary")
