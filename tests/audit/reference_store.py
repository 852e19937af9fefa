"""Reference-agent sessions as stored: run a scenario (scripted model) and read its DuckDB store back.

A test helper standing in for the store readers: ``DeltaSessionService.persisted_rows`` gives the rows (seq,
version, deleted keys) and ``get_session`` the events' tool names and content, as our layout holds them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness.audit.library import stored_session
from harness.audit.model import StoredEvent, StoredSession
from harness.llm.modes import LlmMode
from harness.run.options import RunOptions
from harness.run.runner import run_scenario
from harness.scenario.loader import load_scenario
from reference_agent.sessions.delta_session_service import DeltaSessionService
from reference_agent.storage.duckdb_engine import DuckDBEngine

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def run_reference(scenario: str, work_dir: Path) -> Path:
    """Run ``scenario`` on the reference agent (scripted model); the path of the DuckDB store it left."""
    result = run_scenario(load_scenario(SCENARIOS / f"{scenario}.yaml"),
                          RunOptions(llm_mode=LlmMode.SCRIPTED, work_dir=work_dir))
    assert not [c for c in result.checks if c.failed], result.checks
    return work_dir / "rlm.duckdb"


async def _read(service: DeltaSessionService, app: str, user: str, sid: str) -> StoredSession:
    session = await service.get_session(app_name=app, user_id=user, session_id=sid)
    rows = await service.persisted_rows(app_name=app, user_id=user, session_id=sid)
    assert session is not None
    from_session = stored_session(session, nulls_are_deletes=True)
    events = tuple(
        StoredEvent(position=i, id=row.id, author=row.author, invocation_id=row.invocation_id,
                    timestamp=row.timestamp, state_delta={**row.state_delta, **dict.fromkeys(row.deleted_keys)},
                    seq=row.seq, row=f"events row seq={row.seq}", function_calls=live.function_calls,
                    function_responses=live.function_responses, has_content=live.has_content)
        for i, (row, live) in enumerate(zip(rows.events, from_session.events, strict=True)))
    return StoredSession(layout="rlm", app_name=app, user_id=user, session_id=sid, state=rows.state,
                         app_state=rows.app_state, user_state=rows.user_state, events=events, version=rows.version,
                         nulls_are_deletes=True, row=f"sessions row app={app} user={user} id={sid}")


def read_store(path: Path) -> list[StoredSession]:
    """Every session of the DuckDB store at ``path``."""
    engine = DuckDBEngine(path)
    try:
        service = DeltaSessionService(engine)
        keys = engine.execute("SELECT app_name, user_id, id FROM sessions ORDER BY create_time")
        return [asyncio.run(_read(service, *key)) for key in keys]
    finally:
        engine.close()
