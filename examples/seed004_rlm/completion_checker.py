"""completion_checker: ends the loop when executed code called FINAL, after marking what it analysed.

Every iteration it marks the code artifact of the execution it just looked at as consumed
(``artifact:<id>: "consumed"``). When ``final_answer`` is set it writes ``rlm_status: "done"``
and escalates, which ends the LoopAgent. On the loop's last iteration without an answer it
writes ``rlm_status: "max_iterations"``; when the REPL itself could not run, ``"failed"`` and
escalates.
"""

from __future__ import annotations

from typing import Any, AsyncGenerator

from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event, EventActions

from . import keys


class CompletionChecker(BaseAgent):
    """Detects FINAL (``final_answer`` in state) and escalates to leave the loop."""

    max_iterations: int = 10

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        state = ctx.session.state
        history = state.get(keys.ITERATION_HISTORY) or []
        last = history[-1] if history else {}
        delta: dict[str, Any] = {}
        if last.get("code_artifact"):
            delta[keys.artifact_key(last["code_artifact"])] = keys.CONSUMED
        escalate = False
        if state.get(keys.FINAL_ANSWER) is not None:
            delta[keys.STATUS], escalate = keys.STATUS_DONE, True
        elif last.get("fatal"):
            delta[keys.STATUS], escalate = keys.STATUS_FAILED, True
        elif int(state.get(keys.ITERATION) or 0) >= self.max_iterations:
            delta[keys.STATUS] = keys.STATUS_MAX_ITERATIONS
        yield Event(invocation_id=ctx.invocation_id, author=self.name, branch=ctx.branch,
                    actions=EventActions(state_delta=delta, escalate=escalate or None))
