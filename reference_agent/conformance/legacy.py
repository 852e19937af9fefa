"""The ``legacy`` target: the seeds' before-state (``reference_agent.legacy``), to prove the checks fail."""

from __future__ import annotations

from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService

from harness.targets.base import BuiltTarget, TargetEnvironment
from harness.trace.model import TurnOutcome
from reference_agent.legacy.agent import build_legacy_app
from reference_agent.legacy.run import run_conversation
from reference_agent.storage.duckdb_engine import DuckDBEngine

from .common import (
    local_services,
    reference_target,
    settings_for,
)
from .profile import reference_profile


async def _run_turn(runner: Runner, user_id: str, session_id: str, message: str) -> TurnOutcome:
    outcome = await run_conversation(runner, user_id=user_id, session_id=session_id, message=message)
    return TurnOutcome(termination=outcome.status, delegations=outcome.delegations)


def build_legacy(env: TargetEnvironment) -> BuiltTarget:
    settings = settings_for(env)
    engine = DuckDBEngine(settings.database_path, shared_instance=True)  # one per scenario: see _SharedInstance
    services = local_services(settings, engine, sub_lm=env.sub_lm)
    if env.context is not None:
        services.put_context(env.context)
    service = (env.session_service_factory(env) if env.session_service_factory
               else DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{env.home / 'legacy_sessions.db'}"))
    profile = reference_profile().model_copy(update={"name": "legacy", "target": "legacy", "none_semantics": "delete"})
    return reference_target(name="legacy", profile=profile, app=build_legacy_app(services, model=env.model),
                            session_service=service, run_turn=_run_turn, services=services)
