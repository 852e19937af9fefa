"""Broken variants of the reference agent and its store, each wrong in one way a crash shows
(tests/crash/test_crash_matrix.py runs them through ``crash``; each must fail the check that owns its defect).

* ``reruns_blocks``: a retried delegation runs its block again (no claim is honoured, no earlier result adopted);
* ``drops_orphans``: a result computed before the crash is never picked up (no orphan handling on recovery);
* ``leaves_unconsumed``: a crash between the summary and the consumed mark leaves the artifact ``executed``;
* ``reprocesses_stale_results``: recovery takes a result summarised by an earlier invocation for an orphan (it
  sees only the current invocation's summaries) and summarises it again;
* ``drops_idempotency_token`` (``--backend databricks``): Job_B is submitted without an ``idempotency_token``, so
  a retried delegation whose run the crash left unfinished starts a second run of the same code;
* ``resubmits_job_b`` (``--backend databricks``): after a restart Job_B is submitted again as new (no earlier result
  adopted, a token of this process's own, not the delegation's);
* ``write_behind_store`` (a ``--session-service``): acknowledges an append before it is written (written at the
  next append or read), so a crash loses the last acknowledged event.

The switches are set inside the target factory, so they hold in the child process that builds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.adk.events import Event
from google.adk.sessions import Session
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse

from harness.targets.base import BuiltTarget, TargetEnvironment
from reference_agent.conformance.reference import build_reference
from reference_agent.sessions.delta_session_service import DeltaSessionService


def reruns_blocks(env: TargetEnvironment) -> BuiltTarget:
    import reference_agent.backends.jobs as jobs

    jobs.adoptable = lambda *args, **kwargs: False
    jobs.live_claim = lambda *args, **kwargs: None
    built = build_reference(env)
    built.name = "reruns_blocks"
    return built


def drops_orphans(env: TargetEnvironment) -> BuiltTarget:
    import reference_agent.agents.job_builder as job_builder
    import reference_agent.recovery as recovery

    recovery.orphaned_execution = job_builder.orphaned_execution = lambda events: None
    built = build_reference(env)
    built.name = "drops_orphans"
    return built


def drops_idempotency_token(env: TargetEnvironment) -> BuiltTarget:
    import reference_agent.backends.databricks.jobs as databricks_jobs

    databricks_jobs.idempotency_token = lambda **kwargs: None
    built = build_reference(env)
    built.name = "drops_idempotency_token"
    return built


def resubmits_job_b(env: TargetEnvironment) -> BuiltTarget:
    import os

    import reference_agent.backends.databricks.jobs as databricks_jobs

    databricks_jobs.adoptable = lambda *args, **kwargs: False
    databricks_jobs.idempotency_token = lambda **kwargs: f"rlm-jobb-process-{os.getpid()}"
    built = build_reference(env)
    built.name = "resubmits_job_b"
    return built


def reprocesses_stale_results(env: TargetEnvironment) -> BuiltTarget:
    import reference_agent.agents.job_builder as job_builder
    import reference_agent.recovery as recovery
    from reference_agent import state_contract as keys

    finds = recovery.orphaned_execution

    def current_invocation_only(events: Any) -> Any:
        current = events[-1].invocation_id if events else None
        return finds([e for e in events if e.author != keys.RESULTS_PROCESSOR or e.invocation_id == current])

    recovery.orphaned_execution = job_builder.orphaned_execution = current_invocation_only
    built = build_reference(env)
    built.name = "reprocesses_stale_results"
    return built


def leaves_unconsumed(env: TargetEnvironment) -> BuiltTarget:
    from reference_agent.plugins.stage_tracking import RlmStageTrackingPlugin

    async def nothing(self: Any, *, invocation_context: Any) -> None:
        return None

    RlmStageTrackingPlugin.before_run_callback = nothing
    built = build_reference(env)
    built.name = "leaves_unconsumed"
    return built


class WriteBehindStore(BaseSessionService):
    """DeltaSessionService on a file, but an append is acknowledged at once and written only later."""

    def __init__(self, path: Path) -> None:
        self.inner = DeltaSessionService.duckdb(path)
        self._pending: list[tuple[str, str, str, Event]] = []

    async def _write_pending(self) -> None:
        while self._pending:
            app_name, user_id, session_id, event = self._pending.pop(0)
            stored = await self.inner.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
            await self.inner.append_event(stored, event)

    async def create_session(self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> Session:
        await self._write_pending()
        return await self.inner.create_session(app_name=app_name, user_id=user_id, state=state, session_id=session_id)

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> Session | None:
        await self._write_pending()
        return await self.inner.get_session(app_name=app_name, user_id=user_id, session_id=session_id, config=config)

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        await self._write_pending()
        return await self.inner.list_sessions(app_name=app_name, user_id=user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self._write_pending()
        await self.inner.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)

    async def append_event(self, session: Session, event: Event) -> Event:
        await self._write_pending()  # the one before is written now; this one waits for the next call
        event = await super().append_event(session, event)
        if not event.partial:
            self._pending.append((session.app_name, session.user_id, session.id, event))
        return event

    async def close(self) -> None:
        await self._write_pending()


def write_behind_store(folder: Path) -> WriteBehindStore:
    return WriteBehindStore(folder / "write_behind.duckdb")
