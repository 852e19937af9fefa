"""DeltaSessionService and ArtifactRegistry on DatabricksSqlEngine (the fake's DuckDB behind the Statement API).

Besides the basic checks here, the DuckDB suite's contract tests that only
need ``svc``/``engine`` run again on this engine: pytest collects the imported
functions in this module, where ``engine`` is the Databricks one (no
transactions, every statement an HTTP round trip, results in 3-row chunks).
"""

from __future__ import annotations

import pytest
from adk_compat import StaleSessionError

from reference_agent.registry import (
    ArtifactRegistry,
    ArtifactStatus,
    IllegalTransitionError,
)
from reference_agent.sessions import DeltaSessionService
from tests.sessions.test_delta_session_service import (  # noqa: F401 - collected here, on this module's fixtures
    ev,
    test_already_exists_and_not_found,
    test_create_get_list_delete,
    test_event_fields_round_trip,
    test_get_session_config_filters,
    test_markerless_session_falls_back_to_update_time,
    test_none_deletes_in_every_scope,
    test_none_in_create_state_is_not_stored,
    test_partial_event_not_persisted,
    test_scopes_across_two_users_and_two_sessions,
    test_stale_writer_gets_stale_session_error_and_nothing_is_lost,
    test_temp_is_live_but_never_persisted,
    test_unicode_and_large_values_round_trip,
)

APP = "app"


@pytest.fixture
def svc(engine) -> DeltaSessionService:
    return DeltaSessionService(engine)


async def test_create_append_get_none_deletes_and_stale(svc: DeltaSessionService, fake) -> None:
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s", state={"k": 1, "app:a": "x"})
    assert s.state == {"k": 1, "app:a": "x"} and s._storage_update_marker == "0"
    await svc.append_event(s, ev({"k": 2, "user:lang": "fr", "gone": 1}, text="hi"))
    await svc.append_event(s, ev({"gone": None, "app:a": None}))
    got = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert got.state == {"k": 2, "user:lang": "fr"} == s.state
    assert [e.actions.state_delta for e in got.events][1] == {"gone": None, "app:a": None}
    assert got.events[0].content.parts[0].text == "hi" and got._storage_update_marker == "2"

    stale = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    await svc.append_event(got, ev({"k": 3}))
    with pytest.raises(StaleSessionError):
        await svc.append_event(stale, ev({"k": 4}))
    p = await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert (p.state, p.user_state, p.app_state, p.version) == ({"k": 3}, {"lang": "fr"}, {}, 3)
    # The tables were created with Delta DDL, and everything went through the Statement Execution API.
    assert any(st.sql.endswith("USING DELTA") and "CREATE TABLE IF NOT EXISTS sessions" in st.sql
               for st in fake.sql.statements.values())


def test_artifact_registry_lifecycle(engine) -> None:
    clock = iter(range(1, 100))
    registry = ArtifactRegistry(engine, clock=lambda: float(next(clock)))
    record = registry.register(app_name=APP, user_id="u", session_id="s", iteration=1,
                               code_path="/Volumes/main/rlm/vol/rlm/artifacts/a.py", metadata={"why": "test"})
    assert record.status is ArtifactStatus.PENDING
    executed = registry.mark_executed(record.artifact_id, result_json_path="/Volumes/main/rlm/vol/rlm/r.json",
                                      metadata={"status": "success"})
    assert executed.status is ArtifactStatus.EXECUTED and executed.stdout_path is None  # a NULL parameter
    assert executed.metadata == {"why": "test", "status": "success"} and executed.executed_at == 2.0
    assert registry.mark_consumed(record.artifact_id) is True
    assert registry.mark_consumed(record.artifact_id) is False
    with pytest.raises(IllegalTransitionError):
        registry.mark_failed(record.artifact_id, "late")
    other = registry.register(app_name=APP, user_id="u", session_id="s", iteration=2, code_path="b.py")
    registry.mark_failed(other.artifact_id, "no compute")
    listed = registry.list_for_session(APP, "u", "s")
    assert [(r.iteration, r.status) for r in listed] == [(1, ArtifactStatus.CONSUMED), (2, ArtifactStatus.FAILED)]
    assert listed[1].metadata["error"] == "no compute"
