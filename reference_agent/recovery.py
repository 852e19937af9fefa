"""A result a crash left unsummarised: found in the session's own events, summarised once on recovery.

A process killed after Job_B's event was stored and before the results processor's summary leaves an
execution nothing summarised: the result JSON and the registry row (``executed``) are there, the invocation's
``temp:`` glue is gone, and the next turn used to go on as if it never ran (the result lost). On the session's
next invocation (the same turn sent again, or the next message):

* ``orphaned_execution`` finds it in the stored events alone (no query, so a normal turn costs nothing): the
  last executor event that names a result, with no summary written after it;
* the analyst stands aside while there is one (``RecoveringAnalyst``), so no new code is written first;
* ``job_builder`` re-opens the stage for that artifact from its stored result (read, never run again), and the
  results processor summarises it and the stage plugin marks it consumed, as after a fresh execution. Its
  summary ends the orphan, so this happens once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event

from . import state_contract as keys


@dataclass(frozen=True)
class Orphan:
    """An execution no summary followed: its artifact, its result and the instruction it was delegated with."""

    artifact_id: str
    result_json_path: str
    instruction: str | None


def _delta(event: Event) -> dict[str, Any]:
    return dict(event.actions.state_delta) if event.actions and event.actions.state_delta else {}


def orphaned_execution(events: Sequence[Event]) -> Orphan | None:
    """The session's last execution when it named a result and no summary was written after it, else None."""
    executed = next((i for i in range(len(events) - 1, -1, -1)
                     if events[i].author == keys.JOB_BUILDER and _delta(events[i])), None)
    if executed is None or not _delta(events[executed]).get(keys.LAST_RESULT_JSON_PATH):
        return None  # none, or the last one could not run at all (nothing to summarise)
    if any(e.author == keys.RESULTS_PROCESSOR and keys.LAST_RESULTS_SUMMARY in _delta(e)
           for e in events[executed + 1:]):
        return None
    artifact_id = next((_delta(e)[keys.LAST_ARTIFACT_ID] for e in reversed(events[:executed])
                        if _delta(e).get(keys.LAST_ARTIFACT_ID)), None)
    if artifact_id is None:
        return None
    instruction = next((call.args.get("instruction") for e in reversed(events[:executed])
                        for call in e.get_function_calls() if call.name == keys.DELEGATE_TOOL and call.args), None)
    return Orphan(artifact_id, str(_delta(events[executed])[keys.LAST_RESULT_JSON_PATH]), instruction)


class RecoveringAnalyst(LlmAgent):
    """The analyst, standing aside while the session holds an execution no summary followed (see module doc)."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        if orphaned_execution(ctx.session.events) is not None:
            return
        async for event in super()._run_async_impl(ctx):
            yield event
