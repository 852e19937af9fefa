"""LEGACY agent: see the package docstring. Every oddity here is deliberate."""

from __future__ import annotations

import json
import uuid
import warnings
from typing import Any, AsyncGenerator, Optional

from google.adk.agents import BaseAgent, LlmAgent, LoopAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App
from google.adk.events import Event, EventActions
from google.adk.models.base_llm import BaseLlm
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools import FunctionTool
from google.adk.tools.exit_loop_tool import exit_loop
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import ConfigDict

from ..backends.jobs import JobRequest
from ..wiring import RuntimeServices

# The seeds' key names, spelled out as the old code did.
ARTIFACT_ID = "temp:rlm:artifact_id"
LEGACY_ARTIFACT_ID = "rlm:artifact_id"
SUBLM_INSTRUCTION = "temp:rlm:sublm_instruction"
CODE_PATH = "temp:rlm:code_artifact_key"
ITERATION = "rlm:iteration"
STDOUT = "rlm:execution_stdout"
STDERR = "rlm:execution_stderr"
SUCCESS = "rlm:execution_success"
RUN_ID = "rlm:databricks_run_id"
RESULT_PATH = "rlm:result_json_path"
EXIT_REQUESTED = "temp:rlm:exit_requested"
INVOCATION_KEYS_TO_CLEAR = (ARTIFACT_ID, SUBLM_INSTRUCTION, CODE_PATH)
LEGACY_KEYS_TO_CLEAR = (LEGACY_ARTIFACT_ID, STDERR, SUCCESS)

ROOT_AGENT_INSTRUCTION = """You are a data analyst. Delegate Python with delegate_code_results(code, instruction);
call exit_loop when done.
Last results: {rlm:last_results_summary?}
"""


def make_legacy_delegate(services: RuntimeServices) -> FunctionTool:
    def delegate_code_results(code: str, instruction: str, tool_context: ToolContext) -> dict[str, Any]:
        """Run Python code on the executor."""
        session = tool_context.session
        iteration = int(tool_context.state.get(ITERATION, 0)) + 1
        artifact_id = uuid.uuid4().hex[:12]
        path = services.volume.path("artifacts", f"agent_code_{session.id}_iter{iteration}_{artifact_id}.py")
        services.volume.write_text(path, code)
        services.registry.register(artifact_id=artifact_id, app_name=session.app_name, user_id=session.user_id,
                                   session_id=session.id, iteration=iteration, code_path=path)
        tool_context.state[ITERATION] = iteration
        tool_context.state[ARTIFACT_ID] = artifact_id
        tool_context.state[LEGACY_ARTIFACT_ID] = artifact_id
        tool_context.state[SUBLM_INSTRUCTION] = instruction
        tool_context.state[CODE_PATH] = path
        tool_context.actions.skip_summarization = True
        return {"status": "delegated", "artifact_id": artifact_id}

    return FunctionTool(delegate_code_results)


class LegacyJobBuilder(BaseAgent):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    services: RuntimeServices

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        state = ctx.session.state
        artifact_id = state.get(ARTIFACT_ID) or state.get(LEGACY_ARTIFACT_ID)  # dual read, no stage gate
        if not artifact_id:
            return
        settings = self.services.settings
        request = JobRequest(artifact_path=state.get(CODE_PATH) or self.services.registry.get(artifact_id).code_path,
                             run_id=ctx.session.id, iteration=int(state.get(ITERATION, 0)),
                             context_path=self.services.context_path, timeout_s=settings.executor_timeout_s,
                             output_cap_bytes=settings.output_cap_bytes,
                             max_sublm_calls=settings.max_sublm_calls_per_run)
        outcome = await self.services.runner.run(request, sub_lm=self.services.sub_lm)
        result = json.loads(self.services.volume.read_text(outcome.result_json_path))
        self.services.registry.mark_executed(artifact_id, result_json_path=outcome.result_json_path)
        # Direct mutation of the live session (seed 002 "B").
        state[STDOUT] = result.get("stdout") or ""
        state[STDERR] = result.get("stderr") or ""
        state[SUCCESS] = result.get("status") == "success"
        state[RESULT_PATH] = outcome.result_json_path
        if result.get("status") != "success":
            # _create_error_event: no state_delta, so the mutations above are never persisted.
            yield Event(invocation_id=ctx.invocation_id, author=self.name, branch=ctx.branch,
                        content=types.Content(role="model", parts=[types.Part(text=f"error: {result.get('error')}")]))
            return
        yield Event(invocation_id=ctx.invocation_id, author=self.name, branch=ctx.branch,
                    content=types.Content(role="model", parts=[types.Part(text="executed")]),
                    actions=EventActions(state_delta=dict(state)))  # whole-state delta
        state[RUN_ID] = ctx.session.id  # written after the final event: never persisted


class LegacyContextInjectionPlugin(BasePlugin):
    """Returns the results as Content from before_agent_callback — which skips results_processor."""

    def __init__(self) -> None:
        super().__init__(name="rlm_context_injection")

    async def before_agent_callback(self, *, agent: BaseAgent, callback_context: CallbackContext) -> Optional[types.Content]:
        if agent.name != "results_processor" or not callback_context.state.get(ARTIFACT_ID):
            return None
        text = (f"EXECUTION RESULTS\nstdout:\n{callback_context.state.get(STDOUT, '')}\n"
                f"stderr:\n{callback_context.state.get(STDERR, '')}")
        return types.Content(role="user", parts=[types.Part(text=text)])


class RlmContextPruningPlugin(BasePlugin):
    """The plugin the migration removes: clears glue with None and marks the artifact consumed."""

    def __init__(self, services: RuntimeServices) -> None:
        super().__init__(name="rlm_context_pruning")
        self._services = services

    async def after_agent_callback(self, *, agent: BaseAgent, callback_context: CallbackContext) -> Optional[types.Content]:
        if agent.name != "results_processor":
            return None
        artifact_id = callback_context.state.get(ARTIFACT_ID)
        if artifact_id:
            record = self._services.registry.get(artifact_id)
            if record is not None and record.status == "executed":
                self._services.registry.mark_consumed(artifact_id)
        for key in INVOCATION_KEYS_TO_CLEAR + LEGACY_KEYS_TO_CLEAR:
            if key in callback_context.state:
                callback_context.state[key] = None
        return None


def build_legacy_app(services: RuntimeServices, *, model: BaseLlm | str) -> App:
    analyst = LlmAgent(name="databricks_analyst", model=model, instruction=ROOT_AGENT_INSTRUCTION,
                       tools=[make_legacy_delegate(services), exit_loop])
    processor = LlmAgent(name="results_processor", model=model,
                         instruction="Summarise the execution results for the analyst.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loop = LoopAgent(name="orchestrator_loop", max_iterations=services.settings.max_iterations,
                         sub_agents=[analyst, LegacyJobBuilder(name="job_builder", services=services), processor])
    return App(name=services.settings.app_name, root_agent=loop,
               plugins=[LegacyContextInjectionPlugin(), RlmContextPruningPlugin(services)])
