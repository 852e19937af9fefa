"""The seed-004 RLM agent: SequentialAgent(context_loader, LoopAgent(generate, execute, check), formatter).

Models are Gemini names: RLM_MODEL for the two LlmAgents (default gemini-2.5-flash), and
RLM_SUBLM_MODEL for llm_query in the REPL worker. Run it with ``adk run examples/seed004_rlm``
or ``adk web examples`` (GOOGLE_API_KEY set).
"""

from __future__ import annotations

import os

from google.adk.agents import BaseAgent, LlmAgent, LoopAgent, SequentialAgent
from google.adk.apps import App
from google.adk.models import BaseLlm

from . import keys
from .code_executor import CodeExecutor
from .completion_checker import CompletionChecker
from .context_loader import ContextLoader
from .prompts import code_generator_instruction, result_formatter_instruction

APP_NAME = "seed004_rlm"
DEFAULT_MODEL = "gemini-2.5-flash"
MAX_ITERATIONS = 8


def build_root_agent(*, model: str | BaseLlm | None = None, max_iterations: int = MAX_ITERATIONS,
                     context_loader: BaseAgent | None = None, executor_timeout_s: float = 30.0) -> SequentialAgent:
    """The whole pipeline; ``model`` and ``context_loader`` replace the defaults (for tests and variants)."""
    model = model or os.environ.get("RLM_MODEL") or DEFAULT_MODEL
    code_generator = LlmAgent(
        name="code_generator",
        model=model,
        description="Writes the next Python block for the RLM REPL.",
        instruction=code_generator_instruction,
        output_key=keys.GENERATED_CODE,
    )
    code_executor = CodeExecutor(name="code_executor", description="Runs the generated block in the REPL.",
                                 timeout_s=executor_timeout_s)
    completion_checker = CompletionChecker(name="completion_checker", max_iterations=max_iterations,
                                           description="Ends the loop once FINAL was called.")
    result_formatter = LlmAgent(
        name="result_formatter",
        model=model,
        description="Presents the final answer to the user.",
        instruction=result_formatter_instruction,
        output_key=keys.FORMATTED_ANSWER,
    )
    return SequentialAgent(
        name="rlm_pipeline",
        description="Recursive Language Model: load context, iterate code in a REPL until FINAL, format.",
        sub_agents=[
            context_loader or ContextLoader(name="context_loader", description="Loads the task context."),
            LoopAgent(name="rlm_loop", max_iterations=max_iterations,
                      sub_agents=[code_generator, code_executor, completion_checker]),
            result_formatter,
        ],
    )


root_agent = build_root_agent()
app = App(name=APP_NAME, root_agent=root_agent)
