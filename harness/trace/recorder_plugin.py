"""``TraceRecorderPlugin``: an ordinary ADK plugin that records model traffic and live state.

Wired last in the App's plugin list so it sees each ``LlmRequest`` after every
other plugin (the injection plugin included) has shaped it. At the end of each
invocation it records the live session state next to a fresh read from the
session service, which is what check (h) compares.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.sessions.base_session_service import BaseSessionService
from pydantic_core import to_jsonable_python

from .model import LiveStateRecord, LlmRequestRecord, LlmResponseRecord

RECORDER_NAME = "rlm_conformance_recorder"


def content_text(content: Any) -> str:
    """The text parts of a Content (or a plain string), joined by newlines: what the trace keeps of a prompt."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = getattr(content, "parts", None) or []
    return "\n".join(p.text for p in parts if getattr(p, "text", None))


class TraceRecorderPlugin(BasePlugin):
    def __init__(self, *, store: BaseSessionService, current_turn: Callable[[], int],
                 clock: Callable[[], int] = lambda: -1) -> None:
        super().__init__(name=RECORDER_NAME)
        self._store = store
        self._current_turn = current_turn
        self._clock = clock
        self.requests: list[LlmRequestRecord] = []
        self.responses: list[LlmResponseRecord] = []
        self.live_states: list[LiveStateRecord] = []

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> Optional[LlmResponse]:
        config = llm_request.config
        tools = [t for t in (llm_request.tools_dict or {})] if hasattr(llm_request, "tools_dict") else []
        self.requests.append(
            LlmRequestRecord(
                index=len(self.requests),
                seq=self._clock(),
                agent=callback_context.agent_name,
                turn=self._current_turn(),
                invocation_id=callback_context.invocation_id,
                system_instruction=content_text(config.system_instruction if config else None),
                contents_text="\n".join(content_text(c) for c in llm_request.contents),
                tools=sorted(tools),
            )
        )
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> Optional[LlmResponse]:
        if llm_response.partial:
            return None
        content = llm_response.content
        calls = [p.function_call.name for p in (content.parts or []) if p.function_call] if content else []
        self.responses.append(
            LlmResponseRecord(
                index=len(self.responses),
                agent=callback_context.agent_name,
                text="".join(p.text for p in (content.parts or []) if p.text and not p.thought) if content else "",
                function_calls=calls,
                error=llm_response.error_message,
                error_code=str(llm_response.error_code) if llm_response.error_code else None,
            )
        )
        return None

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        session = invocation_context.session
        fresh = await self._store.get_session(app_name=session.app_name, user_id=session.user_id,
                                              session_id=session.id)
        if fresh is None and invocation_context.session_service is not None:
            # A nested Runner's session (ADK's AgentTool runs its agent in one, on a service of its own, and passes
            # on the plugins): its storage is that service, not the harness's, which never held the session.
            fresh = await invocation_context.session_service.get_session(
                app_name=session.app_name, user_id=session.user_id, session_id=session.id)
        self.live_states.append(
            LiveStateRecord(
                session_id=session.id,
                turn=self._current_turn(),
                invocation_id=invocation_context.invocation_id,
                state=to_jsonable_python(dict(session.state), fallback=repr),
                persisted_state=to_jsonable_python(dict(fresh.state) if fresh else {}, fallback=repr),
            )
        )
