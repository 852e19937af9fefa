"""asker (a BaseAgent calling google-genai in-process, in the shape the user names) -> reporter (an LlmAgent)."""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator

from google import genai
from google.adk.agents import BaseAgent, LlmAgent, SequentialAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App
from google.adk.events import Event, EventActions

MODEL = os.environ.get("MODEL", "gemini-2.5-flash")
SHAPES = ("sync", "async", "stream", "async_stream")


def prompt_for(shape: str) -> str:
    return f"[{shape}] What is six times seven? Answer with a number."


async def ask(shape: str) -> str:
    """One model call in ``shape``, on a client made from the environment (GOOGLE_GEMINI_BASE_URL, GOOGLE_API_KEY)."""
    client = genai.Client()
    prompt = prompt_for(shape)
    if shape == "sync":
        return client.models.generate_content(model=MODEL, contents=prompt).text or ""
    if shape == "async":
        return (await client.aio.models.generate_content(model=MODEL, contents=prompt)).text or ""
    if shape == "stream":
        return "".join(chunk.text or "" for chunk in client.models.generate_content_stream(model=MODEL,
                                                                                           contents=prompt))
    if shape == "async_stream":
        chunks = await client.aio.models.generate_content_stream(model=MODEL, contents=prompt)
        return "".join([chunk.text or "" async for chunk in chunks])
    raise ValueError(f"unknown call shape {shape!r}: use one of {', '.join(SHAPES)}")


class Asker(BaseAgent):
    """Asks the model in the shape named by the user's message and writes the answer into state."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        shape = "".join(part.text or "" for part in (ctx.user_content.parts or [])).strip()
        answer = await ask(shape)
        yield Event(invocation_id=ctx.invocation_id, author=self.name,
                    actions=EventActions(state_delta={"answer": answer, "shape": shape, "status": "done"}))


asker = Asker(name="asker")
reporter = LlmAgent(name="reporter", model=MODEL, instruction="Report the answer {answer?} in one sentence.",
                    output_key="report")
app = App(name="inprocess_genai", root_agent=SequentialAgent(name="ask_pipeline", sub_agents=[asker, reporter]))
