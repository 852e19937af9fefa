"""coder (tool run_code) -> runner (BaseAgent: runs the code) -> digest (BaseAgent: no model; digests the output into
the user:-scoped summary and a per-artifact status key), in a LoopAgent; ``run_conversation`` is the team's own
turn function. Written as a user would write it (no harness import)."""

from __future__ import annotations

import subprocess
import sys
from typing import AsyncGenerator

from google.adk.agents import BaseAgent, LlmAgent, LoopAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App
from google.adk.events import Event, EventActions
from google.adk.runners import Runner
from google.adk.tools import ToolContext, exit_loop
from google.genai import types

MODEL = "gemini-2.5-flash"
CODE, OUTPUT, RUN = "temp:code", "temp:output", "run_count"
SUMMARY = "user:summary"


def run_code(code: str, tool_context: ToolContext) -> dict:
    """Hand Python code over to be run; a digest of its output comes back in your next prompt."""
    tool_context.state[CODE] = code
    return {"status": "delegated"}


class CodeRunner(BaseAgent):
    """Runs the delegated code once."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        code = ctx.session.state.get(CODE)
        if not code:
            return
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                              env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        run = int(ctx.session.state.get(RUN) or 0) + 1
        yield Event(author=self.name, invocation_id=ctx.invocation_id, actions=EventActions(state_delta={
            CODE: None, OUTPUT: (done.stdout + done.stderr)[:400], RUN: run, f"artifact:{run}": "executed"}))


class Digest(BaseAgent):
    """Digests the latest output in code (no model): the summary the coder sees next, and the artifact consumed."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        output = ctx.session.state.get(OUTPUT)
        if output is None:
            return
        lines = output.strip().splitlines()
        digest = f"{len(lines)} line(s); last: {lines[-1] if lines else '(none)'}"
        yield Event(author=self.name, invocation_id=ctx.invocation_id, actions=EventActions(state_delta={
            SUMMARY: digest, OUTPUT: None, f"artifact:{ctx.session.state.get(RUN)}": "consumed"}))


def build_coder() -> LlmAgent:
    return LlmAgent(name="coder", model=MODEL, tools=[run_code, exit_loop],
                    instruction="Answer with Python through run_code; call exit_loop when done. Last digest: "
                                "{user:summary?}")


coder = build_coder()
root_agent = LoopAgent(name="digest_loop", sub_agents=[coder, CodeRunner(name="runner"), Digest(name="digest")],
                       max_iterations=3)
app = App(name="digest_rlm", root_agent=root_agent)


async def run_conversation(runner: Runner, user_id: str, session_id: str, message: str) -> dict:
    """The team's turn function: runs the turn, then reads what it reports back from the stored session."""
    async for _ in runner.run_async(user_id=user_id, session_id=session_id,
                                    new_message=types.Content(role="user", parts=[types.Part(text=message)])):
        pass
    session = await runner.session_service.get_session(app_name=runner.app_name, user_id=user_id,
                                                       session_id=session_id)
    return {"final_answer": session.state.get(SUMMARY)}
