"""A result a crash left unsummarised: found in the session's own events, summarised once on recovery.

A process killed after Job_B's event was stored and before the results processor's summary leaves an
execution nothing summarised: the result JSON and the registry row (``executed``) are there, the invocation's
``temp:`` glue is gone, and the next turn used to go on as if it never ran (the result lost). On the session's
next invocation (the same turn sent again, or the next message):

* ``orphaned_execution`` finds it in the stored events alone (no query, so a normal turn costs nothing): the
  last executor event that names a result, with no summary written after it — or the last delegation, with no
  execution stored after it (killed before or while Job_B ran);
* the analyst stands aside while there is one (``RecoveringAnalyst``), so no new code is written first;
* ``job_builder`` re-opens the stage for that artifact from its stored result (read, never run again), and the
  results processor summarises it and the stage plugin marks it consumed, as after a fresh execution. Its
  summary ends the orphan, so this happens once. A delegation never stored as executed is run through the
  idempotent runner: a result its Job_B wrote after the crash is adopted, a Databricks run it started is
  rejoined (``backends/idempotency.py``), and a local Job_B still running is waited for (``backends/claims.py``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event

from . import state_contract as keys


@dataclass(frozen=True)
class Orphan:
    """An execution no summary followed, or a delegation no execution followed (``result_json_path`` None)."""

    artifact_id: str
    result_json_path: str | None
    instruction: str | None


def _delta(event: Event) -> dict[str, Any]:
    return dict(event.actions.state_delta) if event.actions and event.actions.state_delta else {}


def _last(events: Sequence[Event], found: Callable[[Event], bool]) -> int | None:
    return next((i for i in range(len(events) - 1, -1, -1) if found(events[i])), None)


def orphaned_execution(events: Sequence[Event]) -> Orphan | None:
    """The session's last delegation when no execution of it was stored (``result_json_path`` None), or its last
    execution when it named a result and no summary was written after it; else None."""
    delegated = _last(events, lambda e: bool(_delta(e).get(keys.LAST_ARTIFACT_ID)))
    if delegated is None:
        return None
    executed = _last(events, lambda e: e.author == keys.JOB_BUILDER and bool(_delta(e)))
    artifact_id = str(_delta(events[delegated])[keys.LAST_ARTIFACT_ID])
    instruction = next((call.args.get("instruction") for e in reversed(events[:delegated + 1])
                        for call in e.get_function_calls() if call.name == keys.DELEGATE_TOOL and call.args), None)
    if executed is None or executed < delegated:
        return Orphan(artifact_id, None, instruction)
    result = _delta(events[executed]).get(keys.LAST_RESULT_JSON_PATH)
    if not result:
        return None  # the last one could not run at all: nothing to summarise
    if any(e.author == keys.RESULTS_PROCESSOR and keys.LAST_RESULTS_SUMMARY in _delta(e)
           for e in events[executed + 1:]):
        return None
    return Orphan(artifact_id, str(result), instruction)


def summarised_artifact(events: Sequence[Event]) -> str | None:
    """The artifact of the session's last delegation when its execution was stored and summarised after it (a crash
    between the summary and the consumed mark leaves it ``executed``: the stage plugin marks it on the next run)."""
    delegated = _last(events, lambda e: bool(_delta(e).get(keys.LAST_ARTIFACT_ID)))
    executed = _last(events, lambda e: e.author == keys.JOB_BUILDER and bool(_delta(e)))
    if delegated is None or executed is None or executed < delegated:
        return None
    summarised = any(e.author == keys.RESULTS_PROCESSOR and keys.LAST_RESULTS_SUMMARY in _delta(e)
                     for e in events[executed + 1:])
    return str(_delta(events[delegated])[keys.LAST_ARTIFACT_ID]) if summarised else None


class RecoveringAnalyst(LlmAgent):
    """The analyst, standing aside while the session holds an execution no summary followed (see module doc)."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        if orphaned_execution(ctx.session.events) is not None:
            return
        async for event in super()._run_async_impl(ctx):
            yield event
