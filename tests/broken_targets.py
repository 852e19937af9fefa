"""Purpose-built broken targets: each one is the reference agent with ONE deliberate defect.

They are ``module:attr`` factories (``tests.broken_targets:no_stage_gate``), so they
also prove that the harness's ``--target module:attr`` path works. Each reproduces
one bug the seeds describe (or one the design brief warns about) and exists so
that ``tests/harness/test_checks_fail_on_broken_targets.py`` can show the check
guarding against it really FAILS. ``legacy`` reproduces most of the seeds'
before-state at once; these isolate the defects ``legacy`` does not trip (or trips
only together with others).

Defect -> the check that must catch it:

==================================  ============================
factory                             check
==================================  ============================
analyst_fstring_prompt              instructions_render
analyst_transfers                   loop_without_transfers
temp_leaking_service                no_temp_persisted
null_storing_service                none_deletes
direct_mutation                     no_unpersisted_mutation
whole_state_delta                   minimal_deltas
no_stage_gate                       stage_gating
unconsumed_artifacts                artifacts_consumed
processor_injected_via_before_agent processor_model_runs
outcome_from_yielded_temp_flags     outcome_from_storage
bloated_state                       state_budget
stale_flags_by_mutation             stale_flags_cleared
summary_not_in_prompt               summary_reaches_prompt
no_output_key                       summary_persisted
history_by_mutation                 history_folded_by_event
history_in_app_scope                user_history_scoped
snippets_in_user_scope              app_data_shared
budget_ignored                      context_budget
summary_only_in_history             summary_reaches_prompt
preview_off_by_one                  previews_bounded
consumed_at_execution               artifacts_consumed
history_keeps_oldest                history_keeps_newest
sublm_one_at_a_time                 sublm_batch_concurrent
batch_one_by_one_in_executor        sublm_batch_concurrent
batch_split_untimed_in_executor     sublm_batch_concurrent
executor_env_leak                   executor_env_clean
executor_env_leak_one_shot          executor_env_clean
executor_env_leak_warm              executor_env_clean
unconfined_executor                 executor_confined
executor_without_limits             executor_confined
==================================  ============================
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import stat
import sys
import warnings
from pathlib import Path
from collections.abc import AsyncGenerator, Callable
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent, LoopAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.apps import App
from google.adk.events import Event, EventActions
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService
from google.adk.tools import FunctionTool, transfer_to_agent
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from harness.targets.base import BuiltTarget, TargetEnvironment
from harness.targets.profile import TargetProfile
from reference_agent.conformance.common import executions_from_registry, settings_for
from reference_agent.conformance.common import run_turn as reference_run_turn
from reference_agent.conformance.profile import reference_profile
from harness.trace.model import TurnOutcome
from reference_agent import history as turn_history
from reference_agent import state_contract as keys
from reference_agent.agents.job_builder import JobBuilderAgent, preview
from reference_agent.plugins.turn_log import turn_log_plugin
from reference_agent.agents.results_processor import StageGatedLlmAgent
from reference_agent.app import ROOT_AGENT_NAME
from reference_agent.backends.confinement import ConfinementPolicy
from reference_agent.context_assembly import assemble, snippets_from_state
from reference_agent.plugins.context_injection import (
    RlmContextInjectionPlugin,
    stage_is_current,
)
from reference_agent.plugins.stage_tracking import RlmStageTrackingPlugin
from reference_agent.plugins.turn_log import RlmTurnLogPlugin
from reference_agent.prompts import (
    _ANALYST_BASE,
    analyst_instruction,
    make_analyst_instruction,
    results_processor_instruction,
    summary_section,
)
from reference_agent.registry import ArtifactRegistry, IllegalTransitionError
from reference_agent.run import STALE_TURN_KEYS
from reference_agent.wiring import RuntimeServices, build_local_services
from reference_agent.sessions.delta_session_service import DeltaSessionService
from reference_agent.storage.duckdb_engine import DuckDBEngine
from reference_agent.tools.delegate import exit_loop, make_delegate_tool
from reference_agent.tools.snippets import make_snippet_tool

PluginsFactory = Callable[[RuntimeServices], list[BasePlugin]]


# --- assembling a reference agent with one piece swapped --------------------------------------


def _analyst(services: RuntimeServices, model: Any, **overrides: Any) -> LlmAgent:
    kwargs: dict[str, Any] = {
        "name": keys.ANALYST, "model": model,
        "description": "Writes Python for the executor and decides when the question is answered.",
        "instruction": make_analyst_instruction(services),
        "tools": [make_delegate_tool(services), exit_loop, make_snippet_tool(services)],
    }
    kwargs.update(overrides)
    return LlmAgent(**kwargs)


def _processor(services: RuntimeServices, model: Any, **overrides: Any) -> LlmAgent:
    kwargs: dict[str, Any] = {
        "name": keys.RESULTS_PROCESSOR, "model": model, "description": "Summarises the latest execution results.",
        "instruction": results_processor_instruction, "include_contents": "none",
        "output_key": keys.LAST_RESULTS_SUMMARY,
    }
    kwargs.update(overrides)
    return StageGatedLlmAgent(**kwargs)


def _reference_plugins(services: RuntimeServices) -> list[BasePlugin]:
    return [RlmContextInjectionPlugin(services), RlmStageTrackingPlugin(services),
            RlmTurnLogPlugin(history_max_entries=services.settings.history_max_entries)]


def _build(
    name: str,
    env: TargetEnvironment,
    *,
    analyst: Callable[[RuntimeServices, Any], BaseAgent] | None = None,
    job_builder: type[JobBuilderAgent] = JobBuilderAgent,
    processor: Callable[[RuntimeServices, Any], BaseAgent] | None = None,
    plugins: PluginsFactory = _reference_plugins,
    session_service: Callable[[TargetEnvironment, DuckDBEngine], Any] | None = None,
    run_turn: Any = reference_run_turn,
    profile: TargetProfile | None = None,
    adapt_services: Callable[[RuntimeServices], None] | None = None,
) -> BuiltTarget:
    """The reference target (as ``reference_agent.conformance.reference.build_reference``) with the given pieces swapped."""
    settings = settings_for(env)
    engine = DuckDBEngine(settings.database_path)
    services = build_local_services(settings, sub_lm=env.sub_lm, engine=engine, count_tokens=env.count_tokens)
    if env.context is not None:
        services.put_context(env.context)
    if adapt_services is not None:
        adapt_services(services)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        root = LoopAgent(
            name=ROOT_AGENT_NAME,
            max_iterations=settings.max_iterations,
            sub_agents=[
                (analyst or _analyst)(services, env.model),
                job_builder(name=keys.JOB_BUILDER, description="Runs delegated code on Job_B.", services=services),
                (processor or _processor)(services, env.model),
            ],
        )
    app = App(name=settings.app_name, root_agent=root, plugins=plugins(services))
    if session_service is not None:
        service = session_service(env, engine)
    elif env.session_service_factory is not None:
        service = env.session_service_factory(env)
    else:
        service = DeltaSessionService(engine)
    return BuiltTarget(
        name=name, app=app, session_service=service, run_turn=run_turn, profile=profile or reference_profile(),
        list_executions=executions_from_registry(services.registry, services.volume.read_text), close=engine.close,
    )


# --- instructions_render: an f-string example in a STRING instruction ------------------------


def analyst_fstring_prompt(env: TargetEnvironment) -> BuiltTarget:
    """The analyst's prompt is a string with a code example ``{tbl}``: ADK templates it and raises
    ``KeyError: Context variable not found: `tbl``` before the first model call."""
    prompt = _ANALYST_BASE + "\nTo list tables: `for tbl in tables: print(f\"table {tbl}\")`.\n"
    return _build("analyst_fstring_prompt", env,
                  analyst=lambda services, model: _analyst(services, model, instruction=prompt))


# --- loop_without_transfers: the analyst transfers to job_builder ------------------------------


def _transfer_first() -> Callable[..., Any]:
    """A before_model_callback: the analyst's 'model' answers its first request with
    transfer_to_agent(job_builder), as the seeds' prompt told it to; later requests reach the real model."""
    calls = {"n": 0}

    async def callback(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse | None:
        calls["n"] += 1
        if calls["n"] > 1:
            return None
        call = types.FunctionCall(name="transfer_to_agent", args={"agent_name": keys.JOB_BUILDER})
        return LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))

    return callback


def analyst_transfers(env: TargetEnvironment) -> BuiltTarget:
    """The analyst hands over to job_builder with transfer_to_agent instead of letting the loop sequence it."""
    def analyst(services: RuntimeServices, model: Any) -> LlmAgent:
        return _analyst(services, model, tools=[make_delegate_tool(services), exit_loop, transfer_to_agent],
                        before_model_callback=_transfer_first())

    return _build("analyst_transfers", env, analyst=analyst)


# --- no_temp_persisted: a session service that skips the base temp: trimming ------------------


class TempLeakingSessionService(DeltaSessionService):
    """An 'optimised' service whose append_event path never trims temp: keys (the base helper is bypassed)."""

    def _trim_temp_delta_state(self, event: Event) -> Event:  # type: ignore[override]
        return event


def temp_leaking_service(env: TargetEnvironment) -> BuiltTarget:
    return _build("temp_leaking_service", env, session_service=lambda env, engine: TempLeakingSessionService(engine))


# --- none_deletes: a service that stores None as null, while the target claims delete semantics ------


def null_storing_service(env: TargetEnvironment) -> BuiltTarget:
    """The reference agent on ADK's DatabaseSessionService, which stores a None in a delta as null —
    while the profile declares delete semantics (what run_conversation's cleanup relies on)."""
    return _build("null_storing_service", env,
                  session_service=lambda env, engine: DatabaseSessionService(
                      db_url=f"sqlite+aiosqlite:///{env.home / 'null_storing.db'}"),
                  profile=reference_profile().model_copy(update={"none_semantics": "delete"}))


# --- no_unpersisted_mutation: job_builder writes ctx.session.state directly ------------------


class MutatingJobBuilder(JobBuilderAgent):
    """Puts rlm:last_execution_success into ctx.session.state instead of its event's state_delta."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in super()._run_async_impl(ctx):
            delta = event.actions.state_delta
            if keys.LAST_EXECUTION_SUCCESS in delta:
                ctx.session.state[keys.LAST_EXECUTION_SUCCESS] = delta.pop(keys.LAST_EXECUTION_SUCCESS)
            yield event


def direct_mutation(env: TargetEnvironment) -> BuiltTarget:
    return _build("direct_mutation", env, job_builder=MutatingJobBuilder)


# --- minimal_deltas: job_builder emits dict(ctx.session.state) --------------------------------


class WholeStateJobBuilder(JobBuilderAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in super()._run_async_impl(ctx):
            event.actions.state_delta = {**dict(ctx.session.state), **event.actions.state_delta}
            yield event


def whole_state_delta(env: TargetEnvironment) -> BuiltTarget:
    return _build("whole_state_delta", env, job_builder=WholeStateJobBuilder)


def _stuck_on_a_full_pipe() -> None:
    """What upstream's local executor does on ~200 KB of output (issue 51): it waits for a child that waits for
    it to read; here, a lock taken twice. Nothing returns, nothing raises."""
    import threading

    lock = threading.Lock()
    lock.acquire()
    lock.acquire()


class DeadlockedJobBuilder(JobBuilderAgent):
    """Hangs on every delegation it is given to run."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        if ctx.session.state.get(keys.ARTIFACT_ID):
            _stuck_on_a_full_pipe()
        async for event in super()._run_async_impl(ctx):
            yield event


def deadlocked_executor(env: TargetEnvironment) -> BuiltTarget:
    return _build("deadlocked_executor", env, job_builder=DeadlockedJobBuilder)


def prompt_reads_state_key(env: TargetEnvironment) -> BuiltTarget:
    """Two defects, one masking the other (the seeds' upstream agent, issue 51): the analyst's string instruction
    reads ``{silo}``, a key the app sets before the first turn — every turn of a session that does not start with
    it raises ADK's ``KeyError: Context variable not found`` — and job_builder writes whole states
    (minimal_deltas), which only a turn that gets past the prompt shows."""
    prompt = _ANALYST_BASE + "\nYou answer for the {silo} silo.\n"
    return _build("prompt_reads_state_key", env, job_builder=WholeStateJobBuilder,
                  analyst=lambda services, model: _analyst(services, model, instruction=prompt))


# --- stage_gating: job_builder trusts any artifact id in state ---------------------------------


class UngatedJobBuilder(JobBuilderAgent):
    """Runs whenever temp:rlm:artifact_id is set — stale or fresh — like the seeds' dual-read job_builder."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        state = ctx.session.state
        if state.get(keys.ARTIFACT_ID):
            # Re-open the gate by hand: no check that a fresh delegation happened.
            state[keys.STAGE] = keys.STAGE_DELEGATED
            state[keys.ACTIVE_ARTIFACT_ID] = state[keys.ARTIFACT_ID]
        async for event in super()._run_async_impl(ctx):
            yield event


class LenientRegistry(ArtifactRegistry):
    """The seeds' registry update: an unconditional UPDATE, so a re-run of a consumed artifact goes through."""

    def mark_executed(self, artifact_id: str, **kwargs: Any) -> Any:
        try:
            return super().mark_executed(artifact_id, **kwargs)
        except IllegalTransitionError:
            return self.get(artifact_id)


def _lenient_registry(services: RuntimeServices) -> None:
    services.registry = LenientRegistry(services.engine)


def no_stage_gate(env: TargetEnvironment) -> BuiltTarget:
    return _build("no_stage_gate", env, job_builder=UngatedJobBuilder, adapt_services=_lenient_registry)


# --- artifacts_consumed: the stage/consumed plugin removed ------------------------------------


def unconsumed_artifacts(env: TargetEnvironment) -> BuiltTarget:
    """The pruning plugin was removed, and its consumed-marking job with it: nothing marks artifacts consumed."""
    return _build("unconsumed_artifacts", env, plugins=lambda services: [RlmContextInjectionPlugin(services)])


# --- processor_model_runs: results injected by returning Content from before_agent_callback ------


class BeforeAgentInjectionPlugin(BasePlugin):
    """The seeds' injection: returns the results as Content from before_agent_callback — which skips the agent."""

    def __init__(self, services: RuntimeServices) -> None:
        super().__init__(name=keys.INJECTION_PLUGIN)
        self._renderer = RlmContextInjectionPlugin(services)

    async def before_agent_callback(self, *, agent: BaseAgent, callback_context: CallbackContext
                                    ) -> types.Content | None:
        if agent.name != keys.RESULTS_PROCESSOR or not stage_is_current(callback_context.state, keys.STAGE_EXECUTED):
            return None
        return types.Content(role="user", parts=[types.Part(text=self._renderer._render(callback_context.state))])


def processor_injected_via_before_agent(env: TargetEnvironment) -> BuiltTarget:
    return _build("processor_injected_via_before_agent", env,
                  plugins=lambda services: [BeforeAgentInjectionPlugin(services), RlmStageTrackingPlugin(services)])


# --- outcome_from_storage: outcome read from temp: flags of yielded events ---------------------


async def _outcome_from_yielded_events(runner: Runner, user_id: str, session_id: str, message: str) -> TurnOutcome:
    service = runner.session_service
    if await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id) is None:
        await service.create_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    final_found, final_answer, escalated = False, None, False
    async for event in runner.run_async(user_id=user_id, session_id=session_id,
                                        new_message=types.Content(role="user", parts=[types.Part(text=message)])):
        delta = event.actions.state_delta if event.actions else {}
        final_found = final_found or bool(delta.get(keys.FINAL_FOUND))  # already stripped by ADK: always False
        final_answer = delta.get(keys.PENDING_FINAL_ANSWER, final_answer)  # likewise: always None
        escalated = escalated or bool(event.actions and event.actions.escalate)
    termination = "final_answer" if final_found else "exit_loop" if escalated else "max_iterations"
    return TurnOutcome(termination=termination, final_answer=final_answer)


def outcome_from_yielded_temp_flags(env: TargetEnvironment) -> BuiltTarget:
    return _build("outcome_from_yielded_temp_flags", env, run_turn=_outcome_from_yielded_events)


# --- state_budget: full stdout kept in session state -----------------------------------------

LAST_STDOUT = "rlm:last_stdout"


class BloatedJobBuilder(JobBuilderAgent):
    """Also keeps the whole stdout (up to Job_B's 1 MB cap) in durable session state."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in super()._run_async_impl(ctx):
            path = event.actions.state_delta.get(keys.RESULT_JSON_PATH)
            if path:
                result = json.loads(self.services.volume.read_text(path))
                event.actions.state_delta[LAST_STDOUT] = result.get("stdout") or ""
            yield event


def bloated_state(env: TargetEnvironment) -> BuiltTarget:
    return _build("bloated_state", env, job_builder=BloatedJobBuilder)


# --- stale_flags_cleared: flags cleared by mutating the fetched session -----------------------


async def _clear_by_mutation(runner: Runner, user_id: str, session_id: str, message: str) -> TurnOutcome:
    service = runner.session_service
    session = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    if session is None:
        session = await service.create_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    for key in STALE_TURN_KEYS:
        session.state.pop(key, None)  # seed 002 "A": a fetched copy; never persisted
    error = None
    try:
        async for _ in runner.run_async(user_id=user_id, session_id=session_id,
                                        new_message=types.Content(role="user", parts=[types.Part(text=message)])):
            pass
    except Exception as exc:  # noqa: BLE001 - reported as the turn's error
        error = f"{type(exc).__name__}: {exc}"
    stored = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    state = stored.state if stored else {}
    return TurnOutcome(termination=state.get(keys.TERMINATION_REASON), final_answer=state.get(keys.FINAL_ANSWER),
                       error=error)


def stale_flags_by_mutation(env: TargetEnvironment) -> BuiltTarget:
    return _build("stale_flags_by_mutation", env, run_turn=_clear_by_mutation)


# --- summary_reaches_prompt: the summary is persisted but never shown to the analyst -----------


def _analyst_without_summary(ctx: ReadonlyContext) -> str:
    return _ANALYST_BASE


def summary_not_in_prompt(env: TargetEnvironment) -> BuiltTarget:
    """The summary is persisted, but the analyst's instruction never shows it and the analyst runs without
    conversation history (include_contents='none'), so nothing carries it into the analyst's prompt."""
    return _build("summary_not_in_prompt", env,
                  analyst=lambda services, model: _analyst(services, model, instruction=_analyst_without_summary,
                                                           include_contents="none"))


def summary_only_in_history(env: TargetEnvironment) -> BuiltTarget:
    """The analyst's instruction keeps ``{rlm:last_results_summary?}`` verbatim (a string prompt would), but the
    conversation history still quotes the processor's answer: the summary is in the request, not handed over."""
    return _build("summary_only_in_history", env, analyst=lambda services, model: _analyst(
        services, model, instruction=lambda ctx: _ANALYST_BASE + "\nLatest results: {rlm:last_results_summary?}"))


# --- previews_bounded: a stdout preview one character too long ----------------------------------


class OffByOnePreviewJobBuilder(JobBuilderAgent):
    """Cuts the stdout preview at preview_chars + 1 (a `<=` written where `<` was meant, or the like)."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        async for event in super()._run_async_impl(ctx):
            path = event.actions.state_delta.get(keys.RESULT_JSON_PATH)
            if path:
                stdout = json.loads(self.services.volume.read_text(path)).get("stdout") or ""
                limit = self.services.settings.preview_chars + 1
                event.actions.state_delta[keys.EXECUTION_STDOUT] = preview(stdout, limit)[0]
            yield event


def preview_off_by_one(env: TargetEnvironment) -> BuiltTarget:
    return _build("preview_off_by_one", env, job_builder=OffByOnePreviewJobBuilder)


# --- artifacts_consumed: consumed at execution, before any summary -------------------------------


class ConsumedAtExecutionJobBuilder(JobBuilderAgent):
    """Marks the artifact consumed as soon as Job_B ran it, before results_processor analysed it."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        artifact_id = ctx.session.state.get(keys.ARTIFACT_ID)
        async for event in super()._run_async_impl(ctx):
            if event.actions.state_delta.get(keys.RESULT_JSON_PATH) and artifact_id:
                self.services.registry.mark_consumed(artifact_id)
            yield event


def consumed_at_execution(env: TargetEnvironment) -> BuiltTarget:
    return _build("consumed_at_execution", env, job_builder=ConsumedAtExecutionJobBuilder)


# --- history_keeps_newest: the fold keeps the oldest entries ------------------------------------


async def _fold_keeping_oldest(runner: Runner, user_id: str, session_id: str, message: str) -> TurnOutcome:
    service = runner.session_service
    before = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    kept = list((before.state.get(keys.USER_HISTORY) or []) if before else [])
    outcome = await reference_run_turn(runner, user_id, session_id, message)
    stored = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    newest = (stored.state.get(keys.USER_HISTORY) or [])[-1:]
    limit = turn_log_plugin(runner).history_max_entries
    oldest_first = [*kept, *newest][:limit]  # the bug: the first N entries kept, the new one dropped once full
    await service.append_event(stored, Event(invocation_id="history-fix", author=keys.RUN_CONVERSATION,
                                             actions=EventActions(state_delta={keys.USER_HISTORY: oldest_first})))
    return outcome


def history_keeps_oldest(env: TargetEnvironment) -> BuiltTarget:
    return _build("history_keeps_oldest", env, run_turn=_fold_keeping_oldest)


# --- sublm_batch_concurrent: the host answers a batch one prompt at a time ------------------------


def _one_sublm_call_at_a_time(services: RuntimeServices) -> None:
    answer, lock = services.sub_lm, asyncio.Lock()

    async def queued(prompt: str) -> str:
        async with lock:  # the bug: llm_query_batched's prompts wait for each other
            return await answer(prompt)

    services.sub_lm = queued


def sublm_one_at_a_time(env: TargetEnvironment) -> BuiltTarget:
    return _build("sublm_one_at_a_time", env, adapt_services=_one_sublm_call_at_a_time)


# --- sublm_batch_concurrent: the executor splits a batch into single calls, one after another ------------

BROKEN_EXECUTOR = Path(__file__).with_name("broken_executor.py")


def _executor_with(defect: str, home: Path) -> Callable[[RuntimeServices], None]:
    """Job_B started through ``broken_executor.py DEFECT`` (a shell script as the runner's Python), warm or one-shot."""
    def adapt(services: RuntimeServices) -> None:
        script = home / f"python-{defect}"
        script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(BROKEN_EXECUTOR))} "
                          f"{defect} \"$@\"\n", encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        services.runner.python = str(script)

    return adapt


def batch_one_by_one_in_executor(env: TargetEnvironment) -> BuiltTarget:
    """The REPL's llm_query_batched calls llm_query once per prompt: the right answers, the sum of the latencies."""
    return _build("batch_one_by_one_in_executor", env, adapt_services=_executor_with("batch_one_by_one", env.home))


def batch_split_untimed_in_executor(env: TargetEnvironment) -> BuiltTarget:
    """The same split where the code finds llm_query_batched, so the result JSON reports no batch at all."""
    return _build("batch_split_untimed_in_executor", env,
                  adapt_services=_executor_with("batch_one_by_one_untimed", env.home))


# --- executor_env_clean: Job_B inherits the host's environment ----------------------------------


def _leaky_executor_env(*paths: str) -> Callable[..., Any]:
    """A run_turn during which the named paths' ``scrubbed_env`` ("jobs": one-shot, "warm": the warm pool) also
    passes the host's environment on, as ``subprocess`` does by default."""

    async def run_turn(runner: Runner, user_id: str, session_id: str, message: str) -> TurnOutcome:
        from contextlib import ExitStack
        from unittest import mock

        from reference_agent.backends import jobs, process, warm

        def leaky(workdir: str) -> dict[str, str]:  # the bug: the host's whole environment, keys and tokens included
            return {**os.environ, **process.scrubbed_env(workdir)}

        with ExitStack() as stack:
            for module in (m for m, name in ((jobs, "jobs"), (warm, "warm")) if name in paths):
                stack.enter_context(mock.patch.object(module, "scrubbed_env", leaky))
            return await reference_run_turn(runner, user_id, session_id, message)

    return run_turn


def executor_env_leak(env: TargetEnvironment) -> BuiltTarget:
    return _build("executor_env_leak", env, run_turn=_leaky_executor_env("jobs", "warm"))


def executor_env_leak_one_shot(env: TargetEnvironment) -> BuiltTarget:
    """Only the one-shot path leaks: a warm run of executor_environment never sees it."""
    return _build("executor_env_leak_one_shot", env, run_turn=_leaky_executor_env("jobs"))


def executor_env_leak_warm(env: TargetEnvironment) -> BuiltTarget:
    """Only the warm pool leaks: executor_environment_one_shot never sees it."""
    return _build("executor_env_leak_warm", env, run_turn=_leaky_executor_env("warm"))


# --- executor_confined: Job_B runs the model's code as a plain process ----------------------------


def _confined_by(policy: ConfinementPolicy) -> Callable[[RuntimeServices], None]:
    def adapt(services: RuntimeServices) -> None:
        services.runner.confinement = policy  # type: ignore[attr-defined]

    return adapt


def unconfined_executor(env: TargetEnvironment) -> BuiltTarget:
    """Job_B as it was before issue #20: a subprocess with a timeout and a scrubbed environment, nothing more —
    the code may write and read wherever the user may, reach any local port, take memory, disk and processes."""
    return _build("unconfined_executor", env, adapt_services=_confined_by(ConfinementPolicy(enabled=False)))


def executor_without_limits(env: TargetEnvironment) -> BuiltTarget:
    """Landlock without the rlimits and the process cap: files and network stay shut, the machine's memory, disk
    and process table do not."""
    return _build("executor_without_limits", env, adapt_services=_confined_by(
        ConfinementPolicy(memory_bytes=None, file_bytes=None, processes=None)))


# --- summary_persisted: results_processor without output_key ------------------------------------


def no_output_key(env: TargetEnvironment) -> BuiltTarget:
    """Phase 2 not done: results_processor's answer is only carried in prompt history, never persisted."""
    return _build("no_output_key", env,
                  processor=lambda services, model: _processor(services, model, output_key=None))


# --- history_folded_by_event: the history written into session.state directly ------------------------


class HistoryByMutationPlugin(BasePlugin):
    """The seed's fold: at the end of the run, the turn's log goes into ``session.state['user:...']`` directly —
    visible for the rest of the invocation, never persisted (no event carries it)."""

    def __init__(self, services: RuntimeServices) -> None:
        super().__init__(name="history_by_mutation")
        self._limit = services.settings.history_max_entries

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        state = invocation_context.session.state
        content = invocation_context.user_content
        question = "".join(p.text or "" for p in (content.parts or [])) if content else ""
        entry = turn_history.history_entry(session_id=invocation_context.session.id, question=question,
                                           termination=str(state.get(keys.TERMINATION_REASON)), answer=None,
                                           turn_log=state.get(keys.TURN_LOG) or [])
        state[keys.USER_HISTORY] = turn_history.fold_turn(state.get(keys.USER_HISTORY), entry,
                                                          max_entries=self._limit)


async def _run_without_history_event(runner: Runner, user_id: str, session_id: str, message: str) -> TurnOutcome:
    """run_conversation's cleanup and outcome, but no history event (the plugin above 'takes care of it')."""
    service = runner.session_service
    session = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    if session is None:
        session = await service.create_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    stale = {key: None for key in STALE_TURN_KEYS if key in session.state}
    if stale:
        await service.append_event(session, Event(invocation_id="cleanup", author=keys.RUN_CONVERSATION,
                                                  actions=EventActions(state_delta=stale)))
    async for _ in runner.run_async(user_id=user_id, session_id=session_id,
                                    new_message=types.Content(role="user", parts=[types.Part(text=message)])):
        pass
    stored = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    state = stored.state if stored else {}
    return TurnOutcome(termination=state.get(keys.TERMINATION_REASON), final_answer=state.get(keys.FINAL_ANSWER))


def history_by_mutation(env: TargetEnvironment) -> BuiltTarget:
    return _build("history_by_mutation", env, run_turn=_run_without_history_event,
                  plugins=lambda services: [*_reference_plugins(services), HistoryByMutationPlugin(services)])


# --- user_history_scoped: the history kept in app: scope, one list for every user ----------------------

APP_HISTORY = "app:rlm:history"


async def _history_in_app_state(runner: Runner, user_id: str, session_id: str, message: str) -> TurnOutcome:
    """run_conversation, then the turn's history entry moved from user: to one app-wide list."""
    outcome = await reference_run_turn(runner, user_id, session_id, message)
    service = runner.session_service
    session = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    shared = [*(session.state.get(APP_HISTORY) or []), *(session.state.get(keys.USER_HISTORY) or [])]
    await service.append_event(session, Event(invocation_id="history", author=keys.RUN_CONVERSATION,
                                              actions=EventActions(state_delta={APP_HISTORY: shared[-16:],
                                                                                keys.USER_HISTORY: None})))
    return outcome


def _app_history_instruction(services: RuntimeServices) -> Callable[[ReadonlyContext], Any]:
    async def provider(ctx: ReadonlyContext) -> str:
        assembled = await assemble(instruction=_ANALYST_BASE, summary=summary_section(ctx),
                                   history=ctx.state.get(APP_HISTORY) or [],
                                   snippets=snippets_from_state(ctx.state.get(keys.SNIPPETS)),
                                   budget=services.settings.context_budget_tokens, count=services.count_tokens)
        return assembled.text

    return provider


def history_in_app_scope(env: TargetEnvironment) -> BuiltTarget:
    return _build("history_in_app_scope", env, run_turn=_history_in_app_state,
                  analyst=lambda services, model: _analyst(services, model,
                                                           instruction=_app_history_instruction(services)))


# --- app_data_shared: save_snippet writes user: state -----------------------------------------------

USER_SNIPPETS = "user:rlm:snippets"


def _user_scoped_snippet_tool() -> FunctionTool:
    def save_snippet(name: str, code: str, description: str, tool_context: ToolContext) -> dict[str, Any]:
        """Save reusable Python code for later tasks.

        Args:
          name: Short identifier.
          code: The Python source to keep.
          description: What the code does.
        """
        current = tool_context.state.get(USER_SNIPPETS) or {}
        tool_context.state[USER_SNIPPETS] = {**current, name: {"code": code, "description": description}}
        return {"status": "saved", "name": name}

    return FunctionTool(save_snippet)


def snippets_in_user_scope(env: TargetEnvironment) -> BuiltTarget:
    """'App-wide' snippets saved in user: state: only the user who saved them ever sees them."""
    return _build("snippets_in_user_scope", env, analyst=lambda services, model: _analyst(
        services, model, tools=[make_delegate_tool(services), exit_loop, _user_scoped_snippet_tool()]))


# --- context_budget: the prompt assembled whole, its count ignored ------------------------------------


def _unbudgeted_instruction(services: RuntimeServices) -> Callable[[ReadonlyContext], Any]:
    async def provider(ctx: ReadonlyContext) -> str:
        text = analyst_instruction(ctx)  # every history entry and snippet, no cut
        if services.count_tokens is not None:
            await services.count_tokens(text)  # measured for the logs, then ignored
        return text

    return provider


def budget_ignored(env: TargetEnvironment) -> BuiltTarget:
    return _build("budget_ignored", env, analyst=lambda services, model: _analyst(
        services, model, instruction=_unbudgeted_instruction(services)))


def adk_case_off_by_one() -> Any:
    """tests/user_agents/adk_case with its ``add`` tool storing ``a + b + 1``: the session no longer equals the
    one ADK recorded for the imported case (tests/user_agents/adk_case/scenarios/tools_add_numbers.yaml)."""
    from google.adk.apps import App

    from tests.user_agents.adk_case.agent import app, calculator

    def add(a: int, b: int, tool_context) -> dict:  # noqa: ANN001 - ADK finds tool_context by its name
        """Add two numbers and remember the sum."""
        tool_context.state["last_sum"] = a + b + 1
        tool_context.state["sums"] = int(tool_context.state.get("sums", 0)) + 1
        return {"sum": a + b}

    return App(name=app.name, root_agent=calculator.model_copy(update={"tools": [add]}))


BROKEN_TARGETS: dict[str, str] = {
    "analyst_fstring_prompt": "instructions_render",
    "analyst_transfers": "loop_without_transfers",
    "temp_leaking_service": "no_temp_persisted",
    "null_storing_service": "none_deletes",
    "direct_mutation": "no_unpersisted_mutation",
    "whole_state_delta": "minimal_deltas",
    "no_stage_gate": "stage_gating",
    "unconsumed_artifacts": "artifacts_consumed",
    "processor_injected_via_before_agent": "processor_model_runs",
    "outcome_from_yielded_temp_flags": "outcome_from_storage",
    "bloated_state": "state_budget",
    "stale_flags_by_mutation": "stale_flags_cleared",
    "summary_not_in_prompt": "summary_reaches_prompt",
    "no_output_key": "summary_persisted",
    "history_by_mutation": "history_folded_by_event",
    "history_in_app_scope": "user_history_scoped",
    "snippets_in_user_scope": "app_data_shared",
    "budget_ignored": "context_budget",
    "summary_only_in_history": "summary_reaches_prompt",
    "preview_off_by_one": "previews_bounded",
    "consumed_at_execution": "artifacts_consumed",
    "history_keeps_oldest": "history_keeps_newest",
    "sublm_one_at_a_time": "sublm_batch_concurrent",
    "batch_one_by_one_in_executor": "sublm_batch_concurrent",
    "batch_split_untimed_in_executor": "sublm_batch_concurrent",
    "executor_env_leak": "executor_env_clean",
    "executor_env_leak_one_shot": "executor_env_clean",
    "executor_env_leak_warm": "executor_env_clean",
    "unconfined_executor": "executor_confined",
    "executor_without_limits": "executor_confined",
    "adk_case_off_by_one": "adk_recording_matches",
}
"""Each broken target -> the check it is built to fail."""
