"""An RLM built the most natural ADK way: ADK's own code executor runs the analyst's code.

rlm_loop (LoopAgent) -> analyst (LlmAgent, code_executor=UnsafeLocalCodeExecutor(): it answers in ```python
blocks, ADK runs each and asks it again) -> digest (BaseAgent: digests each new execution result into
user:-scoped state and an artifact:<id> status, or ends the loop when no code ran).

Written as a user would write it (no harness import). ``build_app(defect)`` plants one defect:

* ``direct_mutation``: the digest also writes ``ctx.session.state`` directly (never persisted);
* ``stale_redigest``: with no new result the digest re-digests the last one instead of ending the loop;
* ``summary_unseen``: the analyst's instruction reads the summary under the wrong key (it never reaches the prompt);
* ``temp:`` persisted: not the agent's but its service's: ``KeepsTempSessionService`` skips ADK's temp: trimming.
"""
from __future__ import annotations

import os
from typing import AsyncGenerator

from google.adk.agents import BaseAgent, LlmAgent, LoopAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.apps import App
from google.adk.code_executors import UnsafeLocalCodeExecutor
from google.adk.events import Event, EventActions
from google.adk.sessions import InMemorySessionService
from google.genai import types

MODEL = os.environ.get("MODEL", "gemini-2.5-flash")
ANALYST = "analyst"
SUMMARY = "user:last_summary"
DEFECTS = ("direct_mutation", "stale_redigest", "summary_unseen")


def instruction_for(defect: str | None):
    key = "last_summary" if defect == "summary_unseen" else SUMMARY

    def analyst_instruction(ctx: ReadonlyContext) -> str:
        summary = ctx.state.get(key)
        return ("You are a data analyst. To compute, answer with Python in a ```python block and print the "
                "result; when you know the answer, reply in plain text.\n"
                f"Result of your last code: {summary or '(none yet)'}")

    return analyst_instruction


def results(ctx: InvocationContext) -> list[str]:
    """The output of each code execution ADK ran for the analyst in this session, oldest first."""
    found = []
    for event in ctx.session.events:
        parts = event.content.parts if event.author == ANALYST and event.content and event.content.parts else []
        found += [p.code_execution_result.output or "" for p in parts if p.code_execution_result]
    return found


class Digest(BaseAgent):
    """Digests each new execution result; with none (the analyst answered in text), ends the loop."""

    defect: str | None = None

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        state = ctx.session.state
        outputs = results(ctx)
        done = int(state.get("digested", 0) or 0)
        fresh = outputs[done:]
        if not fresh and self.defect == "stale_redigest":
            fresh = outputs[-1:]
        if not fresh:
            yield Event(author=self.name, invocation_id=ctx.invocation_id, actions=EventActions(escalate=True))
            return
        runs = int(state.get("user:runs", 0) or 0)
        delta: dict = {}
        for n, _output in enumerate(fresh, start=runs + 1):
            delta[f"artifact:run{n}"] = "consumed"
        last = fresh[-1].strip()
        delta.update({SUMMARY: f"Run {runs + len(fresh)} printed: {last[:300]}", "user:runs": runs + len(fresh),
                      "digested": len(outputs), "temp:digested_now": True})
        if self.defect == "direct_mutation":
            state["user:last_output"] = last  # straight into the session: never persisted
        text = f"Digested {len(fresh)} result(s)."
        yield Event(author=self.name, invocation_id=ctx.invocation_id,
                    content=types.Content(role="model", parts=[types.Part(text=text)]),
                    actions=EventActions(state_delta=delta))


def build_app(defect: str | None = None) -> App:
    analyst = LlmAgent(name=ANALYST, model=MODEL, instruction=instruction_for(defect),
                       code_executor=UnsafeLocalCodeExecutor())
    loop = LoopAgent(name="rlm_loop", sub_agents=[analyst, Digest(name="digest", defect=defect)], max_iterations=4)
    return App(name="code_executor_rlm", root_agent=loop)


class KeepsTempSessionService(InMemorySessionService):
    """A home-made service that forgot ADK's temp: trimming: temp: keys reach storage."""

    def _trim_temp_delta_state(self, event: Event) -> Event:
        return event


app = build_app()
direct_mutation = build_app("direct_mutation")
stale_redigest = build_app("stale_redigest")
summary_unseen = build_app("summary_unseen")
