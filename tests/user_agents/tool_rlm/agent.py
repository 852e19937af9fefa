"""planner (tools run_python, finish) -> summarizer, in a LoopAgent; state keys of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from google.adk.agents import LlmAgent, LoopAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.apps import App
from google.adk.tools import ToolContext
from google.genai import types

WORKER = r"""
import os, sys
from google import genai
def llm_query(prompt):
    client = genai.Client()
    return client.models.generate_content(model=os.environ.get("SUBLM_MODEL", "gemini-2.5-flash"),
                                          contents=prompt).text
code = sys.stdin.read()
exec(compile(code, "<planner code>", "exec"), {"llm_query": llm_query, "__name__": "__main__"})
"""
PREVIEW = 500
# What the code's process may see: enough to run Python and reach the model the way google-genai does.
PASSED_ENV = ("PATH", "HOME", "LANG", "PYTHONPATH", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL")


async def run_python(code: str, tool_context: ToolContext) -> dict:
    """Run Python code; llm_query(prompt) asks a language model. Returns stdout and stderr."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    done = subprocess.run([sys.executable, "-c", WORKER], input=code, capture_output=True, text=True, env=env,
                          timeout=60)
    artifact = f"code_{uuid.uuid4().hex[:12]}.py"
    await tool_context.save_artifact(artifact, types.Part(text=code))
    runs = int(tool_context.state.get("runs", 0)) + 1
    tool_context.state["runs"] = runs
    tool_context.state["last_output"] = (done.stdout + done.stderr)[:PREVIEW]
    tool_context.state[f"artifact:{artifact}"] = "executed"
    return {"stdout": done.stdout[:PREVIEW], "stderr": done.stderr[:PREVIEW], "artifact": artifact}


def finish(answer: str, tool_context: ToolContext) -> dict:
    """Give the final answer and stop."""
    tool_context.state["answer"] = answer
    tool_context.state["status"] = "done"
    tool_context.actions.escalate = True
    return {"ok": True}


def clear_last_turn(callback_context: CallbackContext) -> None:
    """A new turn starts clean: the last turn's answer and status are removed through this event's delta."""
    for key in ("answer", "status"):
        if callback_context.state.get(key) is not None:
            callback_context.state[key] = None


planner = LlmAgent(
    name="planner",
    model=os.environ.get("MODEL", "gemini-2.5-flash"),
    instruction="Answer the user's question by writing Python and running it with run_python. "
                "Notes so far: {notes?}. When you know the answer, call finish.",
    tools=[run_python, finish],
)
summarizer = LlmAgent(
    name="summarizer",
    model=os.environ.get("MODEL", "gemini-2.5-flash"),
    instruction="Summarise the last output for the planner: {last_output?}",
    output_key="notes",
)
root_agent = LoopAgent(name="solve_loop", sub_agents=[planner, summarizer], max_iterations=4,
                       before_agent_callback=clear_last_turn)
app = App(name="tool_rlm", root_agent=root_agent)
