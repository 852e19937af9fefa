"""``job_builder``: runs Job_B for the delegated artifact, and nothing else.

Stage-gated: acts only when ``temp:rlm:stage`` is ``delegated`` and the
artifact matches ``temp:rlm:active_artifact_id``, so a loop iteration without a
fresh delegation re-runs nothing — except to recover an execution a crash left
unsummarised (``recovery.py``): the stage is re-opened from its stored result,
which is read, never run again. The result JSON in the volume is the
canonical stdout/stderr; state gets pointers, the success flag and bounded
previews, through one *minimal* ``EventActions(state_delta=...)`` holding only
keys this agent owns (never ``dict(ctx.session.state)``).
"""

from __future__ import annotations

import json
import logging
from typing import Any, AsyncGenerator

from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event, EventActions
from google.adk.sessions.state import State
from google.genai import types
from pydantic import ConfigDict

from .. import history
from .. import state_contract as keys
from ..backends.jobs import JobRequest
from ..metrics import iteration_metrics, session_totals
from ..recovery import Orphan, orphaned_execution
from ..wiring import RuntimeServices

logger = logging.getLogger(__name__)


def preview(text: str | None, limit: int) -> tuple[str, bool]:
    """Head and tail of ``text`` within ``limit`` characters, and whether it was cut."""
    text = text or ""
    if len(text) <= limit:
        return text, False
    head = limit * 3 // 4
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n... [{omitted} characters omitted] ...\n{text[-tail:]}", True


def result_json_path(services: RuntimeServices, code_path: str, run_id: str, iteration: int) -> str:
    """Where Job_B writes its result: next to the executed artifact (seed 002's path math)."""
    directory = code_path.rsplit("/", 1)[0] if "/" in code_path else ""
    name = f"result_{run_id}_iter{iteration}.json"
    return f"{directory}/{name}" if directory else name


class JobBuilderAgent(BaseAgent):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    services: RuntimeServices

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        state = ctx.session.state
        artifact_id = state.get(keys.ARTIFACT_ID)
        if state.get(keys.STAGE) != keys.STAGE_DELEGATED or not artifact_id or artifact_id != state.get(
            keys.ACTIVE_ARTIFACT_ID
        ):
            orphan = orphaned_execution(ctx.session.events)
            if orphan is None:
                logger.debug("job_builder: no fresh delegation (stage=%s); nothing to run", state.get(keys.STAGE))
            elif orphan.result_json_path is not None:
                yield self._recover(ctx, orphan)
            else:  # delegated, never recorded as executed: run it now, through the idempotent runner
                async for event in self._run_orphaned_delegation(ctx, orphan):
                    yield event
            return
        async for event in self._execute(ctx, artifact_id, state.get(keys.CODE), int(state.get(keys.ITERATION, 0))):
            yield event

    async def _run_orphaned_delegation(self, ctx: InvocationContext, orphan: Orphan) -> AsyncGenerator[Event, None]:
        """A delegation a crash left before its execution was stored: run it (a result its Job_B already wrote
        is adopted and a Databricks run it started is rejoined, by the runner's idempotency), then summarise."""
        record = self.services.registry.get(orphan.artifact_id)
        glue = {keys.ARTIFACT_ID: orphan.artifact_id, keys.ACTIVE_ARTIFACT_ID: orphan.artifact_id,
                keys.SUBLM_INSTRUCTION: orphan.instruction}
        async for event in self._execute(ctx, orphan.artifact_id, record.code_path if record else None,
                                         record.iteration if record else int(ctx.session.state.get(keys.ITERATION, 0)),
                                         glue=glue, marked=record is not None and record.status != "pending"):
            yield event

    async def _execute(self, ctx: InvocationContext, artifact_id: str, code_path: str | None, iteration: int, *,
                       glue: dict[str, Any] | None = None, marked: bool = False) -> AsyncGenerator[Event, None]:
        """Run Job_B for the artifact and put its result in front of the processor (``glue``: stage keys a
        recovery re-opens; ``marked``: the registry already holds it as executed)."""
        state = ctx.session.state
        services = self.services
        settings = services.settings
        run_id = ctx.session.id
        totals = state.get(keys.METRICS) or {}
        tokens_left = max(0, settings.max_sublm_tokens_per_session - int(totals.get("sublm_tokens", 0)))
        request = JobRequest(
            artifact_path=code_path,
            run_id=run_id,
            iteration=iteration,
            context_path=services.context_path,
            timeout_s=settings.executor_timeout_s,
            output_cap_bytes=settings.output_cap_bytes,
            max_sublm_calls=settings.max_sublm_calls_per_run,
            max_sublm_tokens=tokens_left,
            # One snapshot per session: variables built in iteration n are there in n+1.
            namespace_path=services.volume.path("artifacts", f"namespace_{run_id}.pkl"),
            # A retry of this delegation (after a crash) finds its result or its Databricks run, never runs it twice.
            delegation_id=artifact_id,
        )
        delta: dict[str, Any] = {keys.STAGE: keys.STAGE_EXECUTED, keys.RUN_ID: run_id, **(glue or {})}
        try:
            if not code_path:
                raise LookupError(f"artifact {artifact_id} is not in the registry: its code cannot be found")
            outcome = await services.runner.run(request, sub_lm=services.sub_lm)
            result = json.loads(services.volume.read_text(outcome.result_json_path))
        except Exception as exc:  # the executor could not be run at all: a fatal error the analyst sees
            logger.exception("job_builder: Job_B could not run artifact %s", artifact_id)
            if code_path and not marked:
                services.registry.mark_failed(artifact_id, f"{type(exc).__name__}: {exc}")
            message = f"Job_B could not run: {type(exc).__name__}: {exc}"
            delta.update(
                {
                    keys.EXECUTION_SUCCESS: False,
                    keys.EXECUTION_STATUS: "infrastructure_error",
                    keys.EXECUTION_STDOUT: "",
                    keys.EXECUTION_STDERR: message[: settings.preview_chars],
                    keys.LAST_EXECUTION_SUCCESS: False,
                    keys.TURN_LOG: history.logged(state, history.executed(artifact_id, "infrastructure_error")),
                }
            )
            yield self._event(ctx, message, delta)
            return

        metrics = iteration_metrics(result)
        if not marked:
            services.registry.mark_executed(
                artifact_id,
                result_json_path=outcome.result_json_path,
                metadata={**metrics, "stdout_bytes": result.get("stdout_bytes")},
            )
        delta.update(result_delta(result, outcome.result_json_path, settings.preview_chars, also={
            keys.METRICS: session_totals(totals, metrics),
            keys.TURN_LOG: history.logged(state, history.executed(artifact_id, result.get("status"))),
        }))
        yield self._event(ctx, f"Job_B run {run_id} iteration {iteration}: {result.get('status')}", delta)

    def _recover(self, ctx: InvocationContext, orphan: Orphan) -> Event:
        """Re-open the stage for an execution a crash left unsummarised, from its stored result (not run again).

        Its metrics and registry row were written when it ran, so neither is written twice.
        """
        try:
            result = json.loads(self.services.volume.read_text(orphan.result_json_path))
        except (OSError, ValueError) as exc:
            logger.warning("job_builder: the result %s of artifact %s is unreadable (%s); it cannot be summarised",
                           orphan.result_json_path, orphan.artifact_id, exc)
            # Dropping the result pointer closes the orphan, so the analyst goes on.
            return self._event(ctx, f"Job_B result of artifact {orphan.artifact_id} is gone; not summarised",
                               {keys.LAST_RESULT_JSON_PATH: None})
        # temp: keys only: the durable pointers are the crashed execution's own, and an event without a durable
        # key is no second execution in the stored session (only the invocation's glue is re-opened).
        delta: dict[str, Any] = {
            keys.STAGE: keys.STAGE_EXECUTED,
            keys.ARTIFACT_ID: orphan.artifact_id,
            keys.ACTIVE_ARTIFACT_ID: orphan.artifact_id,
            keys.RUN_ID: ctx.session.id,
            keys.SUBLM_INSTRUCTION: orphan.instruction,
            **{key: value for key, value in result_delta(
                result, orphan.result_json_path, self.services.settings.preview_chars, also={
                    keys.TURN_LOG: history.logged(ctx.session.state, history.executed(orphan.artifact_id,
                                                                                      result.get("status")))},
            ).items() if key.startswith(State.TEMP_PREFIX)},
        }
        return self._event(ctx, f"Job_B result of artifact {orphan.artifact_id} recovered (computed before a "
                                f"restart, not run again): {result.get('status')}", delta)

    def _event(self, ctx: InvocationContext, text: str, delta: dict[str, Any]) -> Event:
        return Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            branch=ctx.branch,
            content=types.Content(role="model", parts=[types.Part.from_text(text=text)]),
            actions=EventActions(state_delta=delta),
        )


def result_delta(result: dict[str, Any], result_json_path: str, preview_chars: int, *,
                 also: dict[str, Any]) -> dict[str, Any]:
    """The state an execution's result puts in front of the processor: previews, status, pointers, ``also``,
    FINAL (in the order the events have always held them)."""
    stdout, stdout_cut = preview(result.get("stdout"), preview_chars)
    stderr, stderr_cut = preview(stderr_for_analyst(result), preview_chars)
    success = result.get("status") == "success"
    delta: dict[str, Any] = {
        keys.EXECUTION_SUCCESS: success,
        keys.EXECUTION_STATUS: result.get("status"),
        keys.EXECUTION_STDOUT: stdout,
        keys.EXECUTION_STDERR: stderr,
        keys.STDOUT_TRUNCATED: stdout_cut or bool(result.get("stdout_truncated")),
        keys.STDERR_TRUNCATED: stderr_cut or bool(result.get("stderr_truncated")),
        keys.RESULT_JSON_PATH: result_json_path,
        keys.LAST_RESULT_JSON_PATH: result_json_path,
        keys.LAST_EXECUTION_SUCCESS: success,
        **also,
    }
    if result.get("final_answer") is not None:
        delta[keys.FINAL_FOUND] = True
        delta[keys.PENDING_FINAL_ANSWER] = str(result["final_answer"])
    return delta


def stderr_for_analyst(result: dict[str, Any]) -> str:
    """stderr plus the executor's error line and FINAL_VAR problem, which the analyst must see."""
    parts = [result.get("stderr") or ""]
    error = result.get("error")
    if error:
        parts.append(f"{error.get('type')}: {error.get('message')}")
    if result.get("final_error"):
        parts.append(str(result["final_error"]))
    lost = (result.get("namespace") or {}).get("unpicklable") or {}
    if lost:
        names = ", ".join(f"{name} ({why.split(':')[0]})" for name, why in sorted(lost.items()))
        # True on both kinds of Job_B: a warm process still holds them, a new process (a restart, every
        # Databricks run) does not.
        parts.append(f"Note: these variables cannot be pickled, so the namespace snapshot does not keep them; "
                     f"if a later step finds them undefined (a new executor process), rebuild them: {names}")
    return "\n".join(p for p in parts if p)
