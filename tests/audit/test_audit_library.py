"""``audit_session`` on ADK sessions from ``InMemorySessionService`` and ``DatabaseSessionService``: clean, and
with one violation each."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import DatabaseSessionService
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from google.genai import types

from harness.audit import SessionAudit, audit_session
from harness.checks.base import Status
from reference_agent.conformance.profile import reference_profile


def _event(author: str, invocation: str, delta: dict, *, text: str | None = "ok") -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)]) if text else None
    return Event(author=author, invocation_id=invocation, content=content,
                 actions=EventActions(state_delta=delta))


async def _session(service: BaseSessionService) -> Session:
    """A reference-shaped turn: delegation, execution, summary, exit; an app: and a user: write; read back."""
    session = await service.create_session(app_name="app", user_id="u", session_id="s1")
    for event in (
        _event("user", "i1", {}),
        _event("databricks_analyst", "i1", {"rlm:iteration": 1, "rlm:last_artifact_id": "a1",
                                            "temp:rlm:code": "print(1)"}),
        _event("job_builder", "i1", {"rlm:last_execution_success": True, "temp:rlm:execution_stdout": "1"}),
        _event("results_processor", "i1", {"rlm:last_results_summary": "printed 1"}),
        _event("databricks_analyst", "i1", {"rlm:exit_requested": True, "app:rlm:snippets": {"s": "x"}}),
        _event("run_conversation", "i1", {"user:rlm:history": ["q"], "rlm:exit_requested": None}, text=None),
    ):
        await service.append_event(session, event)
    stored = await service.get_session(app_name="app", user_id="u", session_id="s1")
    assert stored is not None
    return stored


@pytest.fixture(params=["memory", "database"])
def session(request: pytest.FixtureRequest, tmp_path: Path) -> Session:
    """The turn as ADK's in-memory service and its DatabaseSessionService (SQLite) hold it."""
    if request.param == "memory":
        return asyncio.run(_session(InMemorySessionService()))

    async def on_database() -> Session:
        service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}")
        try:
            return await _session(service)
        finally:
            await service.close()

    return asyncio.run(on_database())


def test_clean_session_passes_with_the_neutral_and_the_reference_profile(session: Session) -> None:
    neutral = audit_session(session)
    assert isinstance(neutral, SessionAudit) and neutral.ok and neutral.session_key == "app/u/s1"
    neutral.assert_clean()
    statuses = {r.name: r.status for r in neutral.results}
    assert statuses["summary_persisted"] is Status.NOT_APPLICABLE  # the neutral profile maps no roles
    assert statuses["state_matches_events"] is Status.PASS
    profiled = audit_session(session, profile=reference_profile())
    assert profiled.ok, profiled.message()
    assert {r.name: r.status for r in profiled.results}["summary_persisted"] is Status.PASS
    # ADK's service stores the None the last event wrote: its contract, not a lost delete.
    assert session.state["rlm:exit_requested"] is None


def _failing(audit: SessionAudit) -> list[str]:
    return [r.name for r in audit.failed]


def test_temp_key_in_state_fails_with_a_readable_assertion(session: Session) -> None:
    session.state["temp:rlm:code"] = "print(1)"
    audit = audit_session(session)
    assert _failing(audit) == ["no_temp_persisted"]
    with pytest.raises(AssertionError, match=r"(?s)app/u/s1.*no_temp_persisted.*'temp:rlm:code'"):
        audit.assert_clean()


def test_null_no_event_wrote_fails(session: Session) -> None:
    session.state["rlm:fatal_error"] = None
    assert _failing(audit_session(session)) == ["none_deletes"]


def test_null_under_delete_semantics_fails(session: Session) -> None:
    audit = audit_session(session, nulls_are_deletes=True)
    assert _failing(audit) == ["none_deletes"]
    assert "'rlm:exit_requested' = null" in audit.message()


def test_write_that_bypassed_events_fails(session: Session) -> None:
    session.state["rlm:iteration"] = 5
    audit = audit_session(session)
    assert _failing(audit) == ["state_matches_events"]
    with pytest.raises(AssertionError, match=r"'rlm:iteration' holds 5 but the events' deltas fold to 1"):
        audit.raise_for_violations()


def test_contract_breach_needs_the_profile(session: Session) -> None:
    session.events[2].actions.state_delta["rlm:iteration"] = 1  # job_builder writes the analyst tool's key
    assert audit_session(session).ok  # the neutral profile has no contract
    audit = audit_session(session, profile=reference_profile())
    assert _failing(audit) == ["minimal_deltas"]
    assert "written by job_builder" in audit.message()


def test_only_runs_the_named_checks(session: Session) -> None:
    assert [r.name for r in audit_session(session, only=["no_temp_persisted"]).results] == ["no_temp_persisted"]
