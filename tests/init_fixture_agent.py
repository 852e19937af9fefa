"""A small RLM-shaped ADK agent for ``rlm-conformance init`` (tests/harness/test_init.py).

    App init_fixture
      SequentialAgent pipeline
        intake         LlmAgent, output_key fx_brief (restates the question)
        LoopAgent rlm_loop
          coder        LlmAgent, tools run_code, exit_loop, save_note; instruction provider showing fx_summary
          code_runner  BaseAgent: runs the delegated code in a subprocess, only at stage "delegated"
          reviewer     LlmAgent, stage-gated (runs only at stage "executed"), output_key fx_summary

Models are plain strings, as in a user's code; the harness puts its own model on every LlmAgent.
Stage gating follows the reference agent: temp: glue, the processor gated in ``_run_async_impl``.
"""

from __future__ import annotations

import subprocess
import sys
from typing import AsyncGenerator

from google.adk.agents import LlmAgent, LoopAgent, SequentialAgent
from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.apps import App
from google.adk.events import Event, EventActions
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools import ToolContext, exit_loop

MODEL = "gemini-2.5-flash"
STAGE, CODE, OUTPUT = "temp:fx_stage", "temp:fx_code", "temp:fx_output"
RUNS, SUMMARY, NOTES = "fx_runs", "fx_summary", "app:fx_notes"
PREVIEW = 400


def run_code(code: str, tool_context: ToolContext) -> dict:
    """Hand Python code over to be run; its output comes back as a summary in your next prompt."""
    tool_context.state[CODE] = code
    tool_context.state[STAGE] = "delegated"
    return {"status": "delegated"}


def save_note(text: str, tool_context: ToolContext) -> dict:
    """Keep a note every user of the app can see."""
    notes = list(tool_context.state.get(NOTES) or [])
    tool_context.state[NOTES] = [*notes, text][-5:]
    return {"saved": True}


def coder_instruction(ctx: ReadonlyContext) -> str:
    summary = ctx.state.get(SUMMARY)
    latest = f"\nLatest results: {summary}" if summary else ""
    return ("Answer the user's question. When it needs computing, call run_code with Python; when you are done, "
            "call exit_loop." + latest)


class CodeRunner(BaseAgent):
    """Runs the delegated code once: only while the stage is 'delegated'."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        state = ctx.session.state
        if state.get(STAGE) != "delegated":
            return
        done = subprocess.run([sys.executable, "-c", state.get(CODE) or ""], capture_output=True, text=True,
                              timeout=30, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        yield Event(author=self.name, invocation_id=ctx.invocation_id, actions=EventActions(state_delta={
            STAGE: "executed", OUTPUT: (done.stdout + done.stderr)[:PREVIEW], RUNS: int(state.get(RUNS) or 0) + 1}))


class GatedReviewer(LlmAgent):
    """Summarises an execution: its model runs only while the stage is 'executed'."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        if ctx.session.state.get(STAGE) != "executed":
            return
        async for event in super()._run_async_impl(ctx):
            yield event
        yield Event(author=self.name, invocation_id=ctx.invocation_id,
                    actions=EventActions(state_delta={STAGE: "processed"}))


def reviewer_instruction(ctx: ReadonlyContext) -> str:
    return f"Summarise this output of the code for the coder, in one sentence:\n{ctx.state.get(OUTPUT) or ''}"


class AuditPlugin(BasePlugin):
    """A harmless plugin (init lists App.plugins, and infers none of them as pruning)."""

    def __init__(self) -> None:
        super().__init__(name="audit")


class FixtureContextPruningPlugin(BasePlugin):
    """A plugin whose class name says it prunes context (for init's pruning_plugins inference)."""

    def __init__(self) -> None:
        super().__init__(name="fixture_pruning")


def build_root() -> SequentialAgent:
    intake = LlmAgent(name="intake", model=MODEL, instruction="Restate the user's question in one sentence.",
                      output_key="fx_brief")
    coder = LlmAgent(name="coder", model=MODEL, instruction=coder_instruction, tools=[run_code, exit_loop, save_note])
    reviewer = GatedReviewer(name="reviewer", model=MODEL, instruction=reviewer_instruction, output_key=SUMMARY)
    loop = LoopAgent(name="rlm_loop", sub_agents=[coder, CodeRunner(name="code_runner"), reviewer], max_iterations=5)
    return SequentialAgent(name="pipeline", sub_agents=[intake, loop])


def build_app() -> App:
    """A zero-argument factory, as a user may export one."""
    build_app.calls += 1  # type: ignore[attr-defined]
    return App(name="init_fixture", root_agent=build_root(), plugins=[AuditPlugin()])


build_app.calls = 0  # type: ignore[attr-defined]

app = App(name="init_fixture", root_agent=build_root(), plugins=[AuditPlugin()])
root_agent = build_root()
app_with_pruning = App(name="init_fixture_pruning", root_agent=build_root(),
                       plugins=[AuditPlugin(), FixtureContextPruningPlugin()])
