"""The same loop on other ADK code executors: a model-side one (BuiltInCodeExecutor) and a home-made
BaseCodeExecutor with delimiters of its own (init must recognise both by type, not by name)."""
from __future__ import annotations

import contextlib
import io

from google.adk.agents import LlmAgent, LoopAgent
from google.adk.apps import App
from google.adk.code_executors import BaseCodeExecutor, BuiltInCodeExecutor
from google.adk.code_executors.code_execution_utils import CodeExecutionInput, CodeExecutionResult

from .agent import MODEL, Digest, instruction_for


class TagRunner(BaseCodeExecutor):
    """Runs <run>...</run> blocks in this process (a toy: enough for a test)."""

    code_block_delimiters: list[tuple[str, str]] = [("<run>\n", "\n</run>")]

    def execute_code(self, invocation_context, code_execution_input: CodeExecutionInput) -> CodeExecutionResult:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code_execution_input.code, {})  # noqa: S102 - the test's own one-liners
        return CodeExecutionResult(stdout=out.getvalue())


def _app(executor: BaseCodeExecutor, name: str) -> App:
    analyst = LlmAgent(name="analyst", model=MODEL, instruction=instruction_for(None), code_executor=executor)
    return App(name=name, root_agent=LoopAgent(name="rlm_loop", sub_agents=[analyst, Digest(name="digest")],
                                               max_iterations=4))


builtin_app = _app(BuiltInCodeExecutor(), "builtin_rlm")
custom_app = _app(TagRunner(), "tag_rlm")
