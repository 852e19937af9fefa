"""The ``reference`` target: the reference agent on its embedded defaults (DuckDB, local Job_B)."""

from __future__ import annotations

from harness.targets.base import BuiltTarget, TargetEnvironment
from reference_agent.app import build_app
from reference_agent.sessions.delta_session_service import DeltaSessionService
from reference_agent.storage.duckdb_engine import DuckDBEngine

from .common import (
    local_services,
    reference_target,
    run_turn,
    settings_for,
)
from .profile import reference_profile


def build_reference(env: TargetEnvironment) -> BuiltTarget:
    if env.backend == "databricks":  # tables on a SQL warehouse, a UC volume, Job_B as a job run
        from .databricks import build_reference_on_databricks

        return build_reference_on_databricks(env)
    settings = settings_for(env)
    engine = DuckDBEngine(settings.database_path, shared_instance=True)  # one per scenario: see _SharedInstance
    services = local_services(settings, engine, sub_lm=env.sub_lm, count_tokens=env.count_tokens)
    if env.context is not None:
        services.put_context(env.context)
    session_service = env.session_service_factory(env) if env.session_service_factory else DeltaSessionService(engine)
    return reference_target(name="reference", profile=reference_profile(), app=build_app(services, model=env.model),
                            session_service=session_service, run_turn=run_turn, services=services)
