"""A resumable RLM: planner (tools run_python, finish) -> summarizer in a LoopAgent, on a resumable App.

``App(resumability_config=ResumabilityConfig(is_resumable=True))``: ADK writes where each agent of an invocation
stands (``agent_state`` / ``end_of_agent`` events), so a process that dies mid-turn can be followed by one that
resumes the same invocation (``Runner.run_async(invocation_id=...)``, no new message) where it stopped. Two things
make that safe here:

* all it needs between agents is in persisted state (no ``temp:`` key), so a resumed invocation has what the dead
  one had;
* a step ADK may run again is idempotent by state: ADK re-runs an agent whose ``end_of_agent`` event was not
  stored, so the summarizer records which run it summarised in its own event and skips its model call when that
  run is summarised already;
* the loop's stop is in persisted state too: ADK's LoopAgent does not see an escalate from before the crash when it
  resumes, so ``finish`` records the invocation it ended and a last step escalates again in that invocation.

``broken.py`` holds the same agent with each of those undone.
"""

from __future__ import annotations

import os
import subprocess
import sys

from typing import AsyncGenerator

from google.adk.agents import BaseAgent, LlmAgent, LoopAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event, EventActions
from google.adk.apps import App, ResumabilityConfig
from google.adk.models import LlmRequest, LlmResponse
from google.adk.tools import ToolContext
from google.genai import types

MODEL = os.environ.get("MODEL", "gemini-2.5-flash")
PREVIEW = 500
PASSED_ENV = ("PATH", "HOME", "LANG", "PYTHONPATH")


def run_code(code: str) -> str:
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, env=env, timeout=60)
    return (done.stdout + done.stderr)[:PREVIEW]


def run_python(code: str, tool_context: ToolContext) -> dict:
    """Run Python code; returns what it printed."""
    output = run_code(code)
    tool_context.state["runs"] = int(tool_context.state.get("runs", 0)) + 1
    tool_context.state["last_output"] = output
    return {"output": output}


def finish(answer: str, tool_context: ToolContext) -> dict:
    """Give the final answer and stop."""
    tool_context.state["answer"] = answer
    tool_context.state["status"] = "done"
    tool_context.state["finished_in"] = tool_context.invocation_id
    tool_context.actions.escalate = True
    return {"ok": True}


def build_planner() -> LlmAgent:
    return LlmAgent(name="planner", model=MODEL, tools=[run_python, finish],
                    instruction="Answer the user's question by writing Python and running it with run_python. "
                                "Notes so far: {notes?}. When you know the answer, call finish.")


def skip_if_summarised(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse | None:
    """No model call for a run summarised already (ADK re-running the summarizer on resume): an answer with no
    text, which output_key does not store."""
    state = callback_context.state
    if state.get("runs") is not None and state.get("summarised_run") == state.get("runs"):
        return LlmResponse(content=types.Content(role="model", parts=[]))
    return None


def mark_summarised(callback_context: CallbackContext, llm_response: LlmResponse) -> None:
    """Which run this summary is of, written in the summary's own event (after_model_callback's delta lands there)."""
    callback_context.state["summarised_run"] = callback_context.state.get("runs")


def build_summarizer(**callbacks: object) -> LlmAgent:
    return LlmAgent(name="summarizer", model=MODEL, output_key="notes",
                    instruction="Summarise the last output for the planner: {last_output?}", **callbacks)


IDEMPOTENT = {"before_model_callback": skip_if_summarised, "after_model_callback": mark_summarised}


class Stopper(BaseAgent):
    """Escalates again when ``finish`` already ended this invocation (a resumed loop forgot that escalate)."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        if ctx.session.state.get("finished_in") == ctx.invocation_id:
            yield Event(author=self.name, invocation_id=ctx.invocation_id, actions=EventActions(escalate=True))


def build_app(summarizer: LlmAgent) -> App:
    loop = LoopAgent(name="solve_loop", sub_agents=[build_planner(), summarizer, Stopper(name="stopper")],
                     max_iterations=4)
    return App(name="resumable_rlm", root_agent=loop, resumability_config=ResumabilityConfig(is_resumable=True))


app = build_app(build_summarizer(**IDEMPOTENT))
