"""Targets whose turn raises, to show that a crash is a verdict (``error``) naming where it came from.

* ``plugin_raises_after_run``: the reference agent plus a plugin whose ``after_run_callback`` raises, after
  the loop finished normally: the turn must not pass, nor be labelled ``model_error``.
* ``crashing_app``: a user's App of another layout (no loop, no analyst) whose one agent raises: the
  generic ``module:attr`` path must report the crash too.
* ``store_down_at_summary`` (a ``--session-service``): the session service raises mid-turn.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App
from google.adk.events import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.sessions.session import Session

from harness.targets.base import BuiltTarget, TargetEnvironment
from reference_agent.conformance.reference import build_reference
from reference_agent.sessions.delta_session_service import DeltaSessionService


class ExplodingAfterRunPlugin(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="exploding_after_run")

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        raise ValueError("the audit sink is unreachable")


def plugin_raises_after_run(env: TargetEnvironment) -> BuiltTarget:
    built = build_reference(env)
    built.app = built.app.model_copy(update={"plugins": [*built.app.plugins, ExplodingAfterRunPlugin()]})
    built.name = "plugin_raises_after_run"
    return built


class CrashingAgent(BaseAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        raise KeyError("orders_table")
        yield  # pragma: no cover - makes this an async generator


crashing_app = App(name="crashing_app", root_agent=CrashingAgent(name="crashing_root"))


class StoreDownAtSummary(DeltaSessionService):
    """A store that fails when the processor's summary event is appended (a lost connection, say)."""

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.author == "results_processor" and not event.partial:
            raise ConnectionError("the session store went away")
        return await super().append_event(session, event)


def store_down_at_summary() -> StoreDownAtSummary:
    return StoreDownAtSummary.duckdb(None)
