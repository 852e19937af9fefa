"""digest_rlm with one planted defect each (for tests/harness/test_digest_processor.py)."""

from __future__ import annotations

from typing import AsyncGenerator

from google.adk.agents import LoopAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App
from google.adk.events import Event, EventActions

from .agent import OUTPUT, RUN, SUMMARY, CodeRunner, Digest, build_coder


class StaleDigest(Digest):
    """Never clears the output it digested: the next iteration digests the same output again."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        output = ctx.session.state.get(OUTPUT)
        if output is None:
            return
        yield Event(author=self.name, invocation_id=ctx.invocation_id, actions=EventActions(state_delta={
            SUMMARY: f"digest of: {output.strip()[:40]}", f"artifact:{ctx.session.state.get(RUN)}": "consumed"}))


class UnmarkingDigest(Digest):
    """Digests, but never marks the artifact consumed."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        output = ctx.session.state.get(OUTPUT)
        if output is None:
            return
        yield Event(author=self.name, invocation_id=ctx.invocation_id,
                    actions=EventActions(state_delta={SUMMARY: f"digest of: {output.strip()[:40]}", OUTPUT: None}))


def _app(digest: Digest) -> App:
    return App(name="digest_rlm", root_agent=LoopAgent(name="digest_loop", max_iterations=3, sub_agents=[
        build_coder(), CodeRunner(name="runner"), digest]))


def stale_app() -> App:
    return _app(StaleDigest(name="digest"))


def unmarking_app() -> App:
    return _app(UnmarkingDigest(name="digest"))
