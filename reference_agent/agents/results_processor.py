"""``results_processor``: an LlmAgent that summarises the latest execution, only when there is one.

Its ``output_key`` makes the summary durable (``rlm:last_results_summary``,
session scope). The stage gate lives in ``_run_async_impl`` rather than in a
``before_agent_callback`` returning Content, because that would skip the agent
*and* overwrite the output_key with the returned content.
"""

from __future__ import annotations

from typing import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event

from .. import state_contract as keys
from ..plugins.context_injection import stage_is_current


class StageGatedLlmAgent(LlmAgent):
    """An LlmAgent that runs only while ``temp:rlm:stage`` is ``executed`` for the active artifact."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        if not stage_is_current(ctx.session.state, keys.STAGE_EXECUTED):
            return
        async for event in super()._run_async_impl(ctx):
            yield event
