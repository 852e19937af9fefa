"""``RlmStageTrackingPlugin``: closes the stage after ``results_processor`` has run.

After the processor's model has written ``rlm:last_results_summary`` (its
``output_key``), this plugin advances ``temp:rlm:stage`` to ``processed`` and
marks the artifact ``consumed`` — seed 000's Option 2, analysis-consumed: an
artifact is consumed once its output has been analysed, so an executed but
unanalysed artifact stays visible as ``executed``. When the executed code gave
a FINAL answer, the answer becomes durable (``rlm:final_answer``) and the loop
ends by escalation. This replaces both jobs of the old pruning plugin.

A process killed between the summary's event and the mark leaves the artifact ``executed`` with its summary
stored: the next invocation of the session marks it (``before_run_callback``, reference_agent/recovery.py).
"""

from __future__ import annotations

from typing import Optional

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from .. import state_contract as keys
from ..recovery import summarised_artifact
from ..wiring import RuntimeServices
from .context_injection import stage_is_current


class RlmStageTrackingPlugin(BasePlugin):
    def __init__(self, services: RuntimeServices, *, processor_agent: str = keys.RESULTS_PROCESSOR) -> None:
        super().__init__(name=keys.STAGE_PLUGIN)
        self._services = services
        self._processor_agent = processor_agent

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> Optional[types.Content]:
        artifact_id = summarised_artifact(invocation_context.session.events)
        artifact = self._services.registry.get(artifact_id) if artifact_id else None
        if artifact is not None and artifact.status == "executed":
            self._services.registry.mark_consumed(artifact.artifact_id)
        return None

    async def after_agent_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext
    ) -> Optional[types.Content]:
        if agent.name != self._processor_agent:
            return None
        state = callback_context.state
        if not stage_is_current(state, keys.STAGE_EXECUTED):
            return None
        state[keys.STAGE] = keys.STAGE_PROCESSED
        artifact = self._services.registry.get(state.get(keys.ARTIFACT_ID))
        # A run that never happened (status failed) was analysed too, but there is nothing to consume.
        if artifact is not None and artifact.status == "executed":
            self._services.registry.mark_consumed(artifact.artifact_id)
        if state.get(keys.FINAL_FOUND):
            state[keys.FINAL_ANSWER] = state.get(keys.PENDING_FINAL_ANSWER)
            state[keys.TERMINATION_REASON] = "final_answer"
            callback_context.actions.escalate = True
        return None
