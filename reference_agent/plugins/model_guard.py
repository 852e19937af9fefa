"""``RlmModelGuardPlugin``: a blocked model answer ends the turn, it is not retried.

ADK turns a SAFETY (or other block) finish reason into an event with an error
code and no content, and the LoopAgent would then ask the same model the same
thing again — blocked again — until max_iterations. A block is not transient,
so the guard raises instead: ``run_conversation`` reports the turn as a clean
``model_error`` naming the reason, and the session stays as it was.
"""

from __future__ import annotations

from typing import Optional

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin

BLOCKING_REASONS = frozenset({"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION",
                              "IMAGE_SAFETY", "MODEL_ARMOR"})


class ModelAnswerBlocked(RuntimeError):
    """The model refused to answer (a block finish reason); retrying would be refused the same way."""


class RlmModelGuardPlugin(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="rlm_model_guard")

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> Optional[LlmResponse]:
        code = getattr(llm_response.error_code, "name", llm_response.error_code)
        reason = getattr(llm_response.finish_reason, "name", llm_response.finish_reason)
        blocked = next((str(r) for r in (code, reason) if r and str(r) in BLOCKING_REASONS), None)
        if blocked:
            raise ModelAnswerBlocked(f"the model's answer to {callback_context.agent_name} was blocked "
                                     f"(finish reason {blocked}); the turn ends instead of asking again")
        return None
