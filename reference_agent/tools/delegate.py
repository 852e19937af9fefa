"""``delegate_code_results``: the analyst hands code to Job_B.

Registers the artifact (status ``pending``), stores the code in the volume, and
opens a new stage: ``temp:rlm:stage = delegated`` for this artifact. Durable
breadcrumbs (iteration, last artifact id) go to session scope. All writes go
through ``tool_context.state`` so they land in the tool's event delta.
"""

from __future__ import annotations

import uuid
from typing import Any

from google.adk.tools import FunctionTool
from google.adk.tools.tool_context import ToolContext

from .. import history
from .. import state_contract as keys
from ..wiring import RuntimeServices


def code_artifact_path(services: RuntimeServices, *, session_id: str, iteration: int, artifact_id: str) -> str:
    return services.volume.path("artifacts", f"agent_code_{session_id}_iter{iteration}_{artifact_id}.py")


def make_delegate_tool(services: RuntimeServices) -> FunctionTool:
    def delegate_code_results(code: str, instruction: str, tool_context: ToolContext) -> dict[str, Any]:
        """Run Python code on the executor (Job_B) and have its output summarised.

        Args:
          code: Python source to execute. `context`, `llm_query`, `llm_query_batched`,
            `FINAL` and `FINAL_VAR` are available in it.
          instruction: What the results processor should look for in the output.
        """
        if not code.strip():
            return {"status": "rejected", "error": "code is empty; pass the Python source to run"}
        session = tool_context.session
        iteration = int(tool_context.state.get(keys.ITERATION, 0)) + 1
        artifact_id = uuid.uuid4().hex[:12]
        path = code_artifact_path(services, session_id=session.id, iteration=iteration, artifact_id=artifact_id)
        services.volume.write_text(path, code)
        services.registry.register(
            artifact_id=artifact_id,
            app_name=session.app_name,
            user_id=session.user_id,
            session_id=session.id,
            iteration=iteration,
            code_path=path,
        )
        state = tool_context.state
        state[keys.ITERATION] = iteration
        state[keys.LAST_ARTIFACT_ID] = artifact_id
        state[keys.ARTIFACT_ID] = artifact_id
        state[keys.ACTIVE_ARTIFACT_ID] = artifact_id
        state[keys.CODE] = path
        state[keys.SUBLM_INSTRUCTION] = instruction
        state[keys.STAGE] = keys.STAGE_DELEGATED
        state[keys.TURN_LOG] = history.logged(state, history.delegated(artifact_id, iteration))
        # End the analyst's turn here so the loop moves on to job_builder (otherwise the
        # LLM flow would ask the model again before the code has run).
        tool_context.actions.skip_summarization = True
        return {"status": "delegated", "artifact_id": artifact_id, "iteration": iteration}

    return FunctionTool(delegate_code_results)


def exit_loop(tool_context: ToolContext) -> dict[str, str]:
    """End the analysis loop. Call it once the question is answered."""
    tool_context.actions.escalate = True
    tool_context.actions.skip_summarization = True
    tool_context.state[keys.EXIT_REQUESTED] = True
    tool_context.state[keys.TERMINATION_REASON] = "exit_loop"
    return {"status": "exiting"}
