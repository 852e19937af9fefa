"""What every target built on the reference agent shares: the turn, the executions, the settings.

``reference`` (local), its Databricks backend (``databricks.py``) and ``legacy`` import these; none of
them imports another's names, so the three stay free of import cycles.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService

from harness.errors import HarnessError
from harness.targets.base import BuiltTarget, TargetEnvironment
from harness.trace.crash import describe_error
from harness.trace.model import OUTPUT_SAMPLE_CHARS, ExecutionRecord, TurnOutcome
from reference_agent.config import AgentSettings
from reference_agent.metrics import iteration_metrics
from reference_agent.registry import ArtifactRegistry
from reference_agent.run import run_conversation

__all__ = ["delta_session_service", "executions_from_registry", "output_sample", "run_turn", "settings_for"]


async def run_turn(runner: Runner, user_id: str, session_id: str, message: str) -> TurnOutcome:
    """One user turn through the reference agent's ``run_conversation``, as the trace records it."""
    outcome = await run_conversation(runner, user_id=user_id, session_id=session_id, message=message)
    return TurnOutcome(termination=outcome.termination, final_answer=outcome.final_answer,
                       delegations=outcome.delegations, error=outcome.error, forced_answer=outcome.forced_answer,
                       crash=describe_error(outcome.exception) if outcome.exception is not None else None)


def executions_from_registry(registry: ArtifactRegistry,
                             read_text: Callable[[str], str]) -> Callable[[str, str, str], list[ExecutionRecord]]:
    def list_executions(app_name: str, user_id: str, session_id: str) -> list[ExecutionRecord]:
        records = []
        for artifact in registry.list_for_session(app_name, user_id, session_id):
            result = {}
            if artifact.result_json_path:
                try:
                    result = json.loads(read_text(artifact.result_json_path))
                except (OSError, ValueError):
                    result = {}
            records.append(ExecutionRecord(
                artifact_id=artifact.artifact_id, session_id=session_id, iteration=artifact.iteration,
                status=artifact.status, result_status=result.get("status"),
                result_json_path=artifact.result_json_path, stdout_bytes=result.get("stdout_bytes"),
                **output_sample(result.get("stdout")),
                sublm_batches=[b for b in result.get("sublm_batches") or [] if isinstance(b, dict)],
                final_answer=result.get("final_answer"), sublm_calls=len(result.get("sublm_calls") or []),
                # With how Job_B ran it: {"mode": "warm" | "one-shot", "blocks": n} (the report's process column).
                metrics={**iteration_metrics(result), "executor_process": result.get("executor_process")}
                if result else {},
            ))
        return records

    return list_executions


def statuses_from_registry(registry: ArtifactRegistry) -> Callable[[str, str, str], dict[str, str]]:
    """The harness's after-every-event status read: one SELECT of ids and statuses, and none at all while the
    registry (the agent's only writer of it) has written nothing since the session's last read."""
    seen: dict[tuple[str, str, str], tuple[int, dict[str, str]]] = {}

    def artifact_statuses(app_name: str, user_id: str, session_id: str) -> dict[str, str]:
        key, revision = (app_name, user_id, session_id), registry.revision
        if key not in seen or seen[key][0] != revision:
            statuses = registry.statuses_for_session(app_name, user_id, session_id)
            seen[key] = (revision, {artifact_id: status.value for artifact_id, status in statuses.items()})
        return dict(seen[key][1])

    return artifact_statuses


def output_sample(stdout: object) -> dict[str, object]:
    """stdout's length, head and tail for the trace: enough to judge a preview, not 10 MB of it."""
    if not isinstance(stdout, str):
        return {}
    return {"stdout_chars": len(stdout), "stdout_head": stdout[:OUTPUT_SAMPLE_CHARS],
            "stdout_tail": stdout[-OUTPUT_SAMPLE_CHARS:]}


def settings_for(env: TargetEnvironment) -> AgentSettings:
    """The agent's settings for one scenario run: its folder, model name and limits."""
    limits = {name: value for name, value in (("max_sublm_calls_per_run", env.max_sublm_calls_per_run),
                                              ("max_sublm_tokens_per_session", env.max_sublm_tokens_per_session),
                                              ("context_budget_tokens", env.context_budget_tokens),
                                              ("preview_chars", env.preview_chars),
                                              ("history_max_entries", env.history_max_entries))
              if value is not None}
    # Confinement from the environment (RLM_EXECUTOR_*), as the agent's own CLI reads it; required also by
    # the run's --require-confinement.
    configured = AgentSettings.from_env()
    confinement = {name: getattr(configured, name) for name in CONFINEMENT_SETTINGS}
    confinement["require_confinement"] = configured.require_confinement or env.require_confinement
    if env.max_iterations is not None:  # else the agent's own bound (AgentSettings' default)
        limits["max_iterations"] = env.max_iterations
    return AgentSettings(home=env.home, model=env.model_name,
                         executor_timeout_s=env.executor_timeout_s, warm_executor=env.warm_executor,
                         **limits, **confinement)


CONFINEMENT_SETTINGS = ("executor_confinement", "require_confinement", "executor_memory_mb", "executor_cpu_s",
                        "executor_file_mb", "executor_max_processes")


def local_services(settings: AgentSettings, engine: Any, **kwargs: Any) -> Any:
    """``build_local_services``, with a machine that cannot confine Job_B under a required confinement turned
    into the run's error (the scenario is not judged: nothing may run unconfined)."""
    from reference_agent.backends.confinement import ConfinementUnavailable
    from reference_agent.wiring import build_local_services

    try:
        return build_local_services(settings, engine=engine, **kwargs)
    except ConfinementUnavailable as exc:
        engine.close()
        raise HarnessError(f"The target's Job_B cannot run here: {exc}") from None


def reference_target(*, name: str, profile: Any, app: Any, session_service: BaseSessionService,
                     run_turn: Callable[..., Any], services: Any, statuses: bool = True) -> BuiltTarget:
    """The ``BuiltTarget`` of every target built on the reference agent's services (reference, legacy, the
    Databricks backend): one assembly. ``statuses=False`` leaves out the after-every-event status read: on a
    workspace each read is a SQL statement of its own (a billed warehouse call, and a request every cassette
    would have to hold); the registry's rows are read once per turn there, with the executions."""
    return BuiltTarget(
        name=name, profile=profile, app=app, session_service=session_service, run_turn=run_turn,
        list_executions=executions_from_registry(services.registry, services.volume.read_text),
        artifact_statuses=statuses_from_registry(services.registry) if statuses else None,
        close=services.close, executor_confinement=executor_confinement(services))


def executor_confinement(services: Any) -> dict[str, Any] | None:
    """What the local Job_B runner says this machine gives its code (None: not confined, or not local)."""
    return getattr(services.runner, "confinement_status", None)


def delta_session_service(path: Path | None) -> BaseSessionService:
    """The reference agent's DeltaSessionService on DuckDB: a file, or in memory (``None``).

    The contract suite's ``delta`` and ``delta-file`` profiles (harness/contract/profiles.py) import this lazily.
    """
    from reference_agent.sessions.delta_session_service import DeltaSessionService

    return DeltaSessionService.duckdb(path)
