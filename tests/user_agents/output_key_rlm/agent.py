"""analyst (output_key pending_code) -> runner (BaseAgent: runs a fenced block) -> processor -> finisher."""
from __future__ import annotations

import asyncio
import os
import re
import sys
from typing import AsyncGenerator

from google.adk.agents import BaseAgent, LlmAgent, LoopAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App
from google.adk.events import Event, EventActions
from google.genai import types

MODEL = "gemini-2.5-flash"
MODEL_VERSION = "output-key-rlm-v1"
_FENCE = re.compile(r"```(?:python|repl|py)?\s*\n(.*?)```", re.S)


def extract_code(text: str) -> str | None:
    if not text:
        return None
    m = _FENCE.search(text)
    return m.group(1) if m else None


async def run_code(code: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-c", code, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=10)
    except asyncio.TimeoutError:
        proc.kill()
        return "ERROR: timeout"
    text = out.decode(errors="replace")
    return text[:2000]


class Runner(BaseAgent):
    """Runs `pending_code` once, writes `last_output`, clears `pending_code`."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        pending = ctx.session.state.get("pending_code")
        code = extract_code(pending) if isinstance(pending, str) else None
        if code is None:
            if pending is not None:
                # plain text answer, not code: consume it without running
                yield Event(author=self.name, invocation_id=ctx.invocation_id,
                            actions=EventActions(state_delta={"pending_code": None}))
            return
        output = await run_code(code)
        delta = {
            "pending_code": None,
            "last_output": output,
            "temp:fresh_output": True,
            "user:runs": int(ctx.session.state.get("user:runs", 0) or 0) + 1,
        }
        if "app:model_version" not in ctx.session.state:
            delta["app:model_version"] = MODEL_VERSION
        m = re.search(r"^FINAL: (.*)$", output, re.M)
        if m:
            delta["final_answer"] = m.group(1)
            delta["temp:final_seen"] = True
        actions = EventActions(state_delta=delta)
        yield Event(author=self.name, invocation_id=ctx.invocation_id, actions=actions)


def gate_processor(callback_context: CallbackContext):
    if not callback_context.state.get("temp:fresh_output"):
        return types.Content(role="model", parts=[types.Part(text="")])
    callback_context.state["temp:fresh_output"] = None
    return None


analyst = LlmAgent(
    name="analyst",
    model=MODEL,
    instruction=(
        "You are a data analyst. Write Python in a ```python block; print your results. "
        "When you know the answer, print a line 'FINAL: <answer>'.\n"
        "Model version: {app:model_version?}\n"
        "Runs so far: {user:runs?}\n"
        "Findings so far:\n{findings?}"
    ),
    output_key="pending_code",
)

runner = Runner(name="runner")

processor = LlmAgent(
    name="processor",
    model=MODEL,
    instruction="Summarise this code output in one or two sentences:\n{last_output?}",
    output_key="findings",
    before_agent_callback=gate_processor,
)


class Finisher(BaseAgent):
    """Ends the loop once this turn's code printed FINAL."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        if ctx.session.state.get("temp:final_seen"):
            yield Event(author=self.name, invocation_id=ctx.invocation_id,
                        actions=EventActions(escalate=True))


loop = LoopAgent(name="main_loop", sub_agents=[analyst, runner, processor, Finisher(name="finisher")], max_iterations=3)

app = App(name="output_key_rlm", root_agent=loop)
