"""solver (tools: AgentTool(coder), run_code) on ADK's DatabaseSessionService over sqlite, from a factory.

An agent shape written as its team would write it, with no harness import: the root LlmAgent asks its coder
sub-agent for code through ``AgentTool`` (the coder is no sub-agent of the tree: ADK runs it in a nested Runner
of its own), runs the code with a ``FunctionTool``, and a ``before_agent_callback`` marks the last result read
when the next turn starts. Sessions live in a sqlite file whose path is relative: ``sessions.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.apps import App
from google.adk.tools import FunctionTool, ToolContext
from google.adk.tools.agent_tool import AgentTool
from google.genai import types

from .sessions import sqlite_sessions  # noqa: F401 - the App's session service, where the team looks for it

MODEL = os.environ.get("MODEL", "gemini-2.5-flash")
PREVIEW = 400
PASSED_ENV = ("PATH", "HOME", "LANG", "PYTHONPATH")


async def run_code(code: str, tool_context: ToolContext) -> dict:
    """Run Python code and return what it printed."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=30)
    artifact = f"code_{uuid.uuid4().hex[:12]}.py"
    await tool_context.save_artifact(artifact, types.Part(text=code))
    output = (done.stdout + done.stderr)[:PREVIEW]
    tool_context.state["last_result"] = output
    tool_context.state["result_status"] = "unread"
    tool_context.state[f"artifact:{artifact}"] = "executed"
    return {"output": output, "artifact": artifact}


def mark_results_read(callback_context: CallbackContext) -> None:
    """A new turn starts from what the last one left: its result counts as read from here on."""
    if callback_context.state.get("result_status") == "unread":
        callback_context.state["result_status"] = "read"


coder = LlmAgent(
    name="coder",
    model=MODEL,
    instruction="Write Python code that does what you are asked. Answer with the code only, no prose.",
)
solver = LlmAgent(
    name="solver",
    model=MODEL,
    instruction="Answer the user's question. Ask the coder for Python code when you need a computation, then run "
                "it with run_code. Last result: {last_result?}",
    tools=[AgentTool(agent=coder), FunctionTool(run_code)],
    before_agent_callback=mark_results_read,
    output_key="answer",
)
app = App(name="agent_tool_rlm", root_agent=solver)
