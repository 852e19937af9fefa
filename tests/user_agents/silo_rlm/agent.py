"""analyst (tool run_code) -> bookkeeper (BaseAgent) in a LoopAgent; the prompt reads {silo}."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import AsyncGenerator

from google.adk.agents import BaseAgent, LlmAgent, LoopAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App
from google.adk.events import Event
from google.adk.tools import ToolContext

MODEL = "gemini-2.5-flash"


async def run_code(code: str, tool_context: ToolContext) -> dict:
    """Run Python code and return what it printed."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-I", "-c", code, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=10)
    except asyncio.TimeoutError:
        proc.kill()
        return {"output": "ERROR: timeout"}
    output = out.decode(errors="replace")[:2000]
    tool_context.state["last_output"] = output
    return {"output": output}


analyst = LlmAgent(
    name="analyst",
    model=MODEL,
    instruction=("You analyse the {silo} silo's data. Call run_code with Python that prints what you need.\n"
                 "Last output:\n{last_output?}"),
    tools=[run_code],
)


class Bookkeeper(BaseAgent):
    """Counts the turn's iterations — by writing session.state directly: nothing is appended, nothing persists."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        ctx.session.state["iterations"] = int(ctx.session.state.get("iterations", 0) or 0) + 1
        if False:  # an async generator that yields nothing
            yield


loop = LoopAgent(name="silo_loop", sub_agents=[analyst, Bookkeeper(name="bookkeeper")], max_iterations=2)

app = App(name="silo_rlm", root_agent=loop)
