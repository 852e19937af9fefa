"""Builds the reference App: a LoopAgent over analyst -> job_builder -> results_processor.

No pruning plugin: stage gating replaces its correctness job and the stage
plugin its consumed marking (seed 000, target end-state).
"""

from __future__ import annotations

import warnings

from google.adk.agents import LoopAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm

from . import state_contract as keys
from .agents.job_builder import JobBuilderAgent
from .agents.results_processor import StageGatedLlmAgent
from .plugins.context_injection import RlmContextInjectionPlugin
from .plugins.model_guard import RlmModelGuardPlugin
from .plugins.stage_tracking import RlmStageTrackingPlugin
from .plugins.turn_log import RlmTurnLogPlugin
from .prompts import make_analyst_instruction, results_processor_instruction
from .recovery import RecoveringAnalyst
from .wiring import RuntimeServices
from .tools.delegate import exit_loop, make_delegate_tool
from .tools.snippets import make_snippet_tool

ROOT_AGENT_NAME = "orchestrator_loop"


def build_root_agent(services: RuntimeServices, *, model: BaseLlm | str) -> LoopAgent:
    # Stands aside while an execution a crash left unsummarised is recovered (recovery.py).
    analyst = RecoveringAnalyst(
        name=keys.ANALYST,
        model=model,
        description="Writes Python for the executor and decides when the question is answered.",
        instruction=make_analyst_instruction(services),
        tools=[make_delegate_tool(services), exit_loop, make_snippet_tool(services)],
    )
    job_builder = JobBuilderAgent(
        name=keys.JOB_BUILDER, description="Runs delegated code on Job_B.", services=services
    )
    processor = StageGatedLlmAgent(
        name=keys.RESULTS_PROCESSOR,
        model=model,
        description="Summarises the latest execution results.",
        instruction=results_processor_instruction,
        include_contents="none",
        output_key=keys.LAST_RESULTS_SUMMARY,
    )
    with warnings.catch_warnings():
        # LoopAgent is deprecated in favour of Workflow in ADK 2.x; the seeds' design is a LoopAgent.
        warnings.simplefilter("ignore", DeprecationWarning)
        return LoopAgent(
            name=ROOT_AGENT_NAME,
            max_iterations=services.settings.max_iterations,
            sub_agents=[analyst, job_builder, processor],
        )


def build_app(services: RuntimeServices, *, model: BaseLlm | str) -> App:
    return App(
        name=services.settings.app_name,
        root_agent=build_root_agent(services, model=model),
        plugins=[RlmContextInjectionPlugin(services), RlmStageTrackingPlugin(services), RlmModelGuardPlugin(),
                 RlmTurnLogPlugin(history_max_entries=services.settings.history_max_entries)],
    )
