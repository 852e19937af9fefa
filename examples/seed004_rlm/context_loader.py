"""context_loader: prepares the session for this turn, in one appended event.

* ``context`` is the session's task data (give it as initial session state); a session without
  one gets this turn's user message as its context.
* ``context_description`` tells the code generator what ``context`` is (type, size, a glimpse).
* The previous turn's flags (``final_answer``, ``rlm_status``) are cleared, and the turn's
  history and execution count restart -- all through the event's state delta, never by
  writing to ``ctx.session.state`` (such a write is seen by this run but never stored).
"""

from __future__ import annotations

import json
from typing import Any, AsyncGenerator

from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event, EventActions

from . import keys


def describe(context: Any) -> str:
    """One line for the prompt: the type and size of ``context``, and how it starts."""
    text = context if isinstance(context, str) else json.dumps(context, ensure_ascii=False, default=str)
    kind = type(context).__name__
    size = f"{len(context)} items" if isinstance(context, (list, dict)) else f"{len(text)} characters"
    if isinstance(context, dict):
        size += f" (keys: {', '.join(map(str, list(context)[:10]))})"
    glimpse = text[:200] + ("..." if len(text) > 200 else "")
    return f"`context` is a {kind} of {size}, {len(text)} characters as JSON. It starts: {glimpse}"


def user_text(ctx: InvocationContext) -> str:
    parts = ctx.user_content.parts if ctx.user_content and ctx.user_content.parts else []
    return "\n".join(part.text for part in parts if part.text)


class ContextLoader(BaseAgent):
    """Loads the task context and resets the per-turn keys, once per invocation."""

    def clear_turn_flags(self, ctx: InvocationContext) -> dict[str, Any]:
        """The delta that clears the previous turn's flags (None: no value, whatever the service does with it)."""
        return {key: None for key in keys.TURN_FLAGS if ctx.session.state.get(key) is not None}

    def turn_reset(self, ctx: InvocationContext) -> dict[str, Any]:
        """Keys to reset at the start of a turn: the previous turn's flags and its history."""
        state = ctx.session.state
        delta = self.clear_turn_flags(ctx)
        if state.get(keys.ITERATION_HISTORY):
            delta[keys.ITERATION_HISTORY] = []
        if state.get(keys.ITERATION):
            delta[keys.ITERATION] = 0
        return delta

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        state = ctx.session.state
        delta = self.turn_reset(ctx)
        context = state.get(keys.CONTEXT)
        if context is None:
            context = delta[keys.CONTEXT] = user_text(ctx)
        description = describe(context)
        if state.get(keys.CONTEXT_DESCRIPTION) != description:
            delta[keys.CONTEXT_DESCRIPTION] = description
        yield Event(invocation_id=ctx.invocation_id, author=self.name, branch=ctx.branch,
                    actions=EventActions(state_delta=delta))
