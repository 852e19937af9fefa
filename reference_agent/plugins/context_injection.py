"""``RlmContextInjectionPlugin``: puts the execution results into results_processor's model request.

It adds them to the ``LlmRequest`` in ``before_model_callback``. It does NOT
return Content from ``before_agent_callback`` as the seeds' plugin did: that
skips the agent, so no model would ever write the summary. Stage-gated: it
injects only at stage ``executed`` for the active artifact. The full output is
read from the result JSON in the volume (the canonical copy); the state preview
is the fallback.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Optional

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from .. import state_contract as keys
from ..agents.job_builder import preview, stderr_for_analyst
from ..wiring import RuntimeServices

logger = logging.getLogger(__name__)

# How much of the full stdout/stderr the processor's model sees.
INJECTED_OUTPUT_CHARS = 20_000


def stage_is_current(state: Any, stage: str) -> bool:
    """True when the glue in ``state`` belongs to the active artifact at ``stage``."""
    artifact = state.get(keys.ARTIFACT_ID)
    return bool(artifact) and state.get(keys.STAGE) == stage and artifact == state.get(keys.ACTIVE_ARTIFACT_ID)


class RlmContextInjectionPlugin(BasePlugin):
    def __init__(self, services: RuntimeServices, *, target_agent: str = keys.RESULTS_PROCESSOR) -> None:
        super().__init__(name=keys.INJECTION_PLUGIN)
        self._services = services
        self._target_agent = target_agent

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> Optional[LlmResponse]:
        if callback_context.agent_name != self._target_agent:
            return None
        state = callback_context.state
        if not stage_is_current(state, keys.STAGE_EXECUTED):
            return None
        llm_request.contents.append(
            types.Content(role="user", parts=[types.Part.from_text(text=self._render(state))])
        )
        return None

    def _render(self, state: Any) -> str:
        stdout, stderr = self._full_output(state)
        stdout, stdout_cut = preview(stdout, INJECTED_OUTPUT_CHARS)
        stderr, stderr_cut = preview(stderr, INJECTED_OUTPUT_CHARS)
        return (
            "EXECUTION RESULTS\n"
            f"artifact: {state.get(keys.ARTIFACT_ID)}  iteration: {state.get(keys.ITERATION)}  "
            f"status: {state.get(keys.EXECUTION_STATUS)}\n"
            f"instruction: {state.get(keys.SUBLM_INSTRUCTION) or '(none)'}\n"
            f"--- stdout{' (truncated)' if stdout_cut or state.get(keys.STDOUT_TRUNCATED) else ''} ---\n{stdout}\n"
            f"--- stderr{' (truncated)' if stderr_cut or state.get(keys.STDERR_TRUNCATED) else ''} ---\n{stderr}\n"
        )

    def _full_output(self, state: Any) -> tuple[str, str]:
        path = state.get(keys.RESULT_JSON_PATH)
        if path:
            try:
                result = json.loads(self._services.volume.read_text(path))
                return result.get("stdout") or "", stderr_for_analyst(result)
            except (OSError, ValueError) as exc:
                logger.warning("result JSON %s unreadable (%s); using the state preview", path, exc)
        return state.get(keys.EXECUTION_STDOUT) or "", state.get(keys.EXECUTION_STDERR) or ""
