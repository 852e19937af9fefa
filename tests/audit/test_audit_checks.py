"""The audit checks on stored sessions: clean reference-agent sessions pass; each injected violation fails
exactly its check, naming the session and the key, and leaves every other check as on the clean session."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness.audit.checks import AUDIT_CHECK_NAMES, STORE_CHECK_NAMES, run_audit_checks
from harness.audit.model import StoredEvent, StoredSession
from harness.checks.base import Status
from harness.targets.profile import TargetProfile
from reference_agent.conformance.profile import reference_profile

from .reference_store import read_store, run_reference

PROFILE = reference_profile()


@pytest.fixture(scope="module")
def reference_sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, StoredSession]:
    """The reference agent's own sessions (the service probe's contract-* sessions left out), by session id."""
    sessions: dict[str, StoredSession] = {}
    for scenario in ("app_snippets_shared", "final_answer_then_new_turn"):
        store = run_reference(scenario, Path(tmp_path_factory.mktemp(scenario)))
        sessions.update({s.session_id: s for s in read_store(store) if not s.app_name.startswith("contract-")})
    return sessions


@pytest.fixture(scope="module")
def clean(reference_sessions: dict[str, StoredSession]) -> StoredSession:
    """One execution summarised by results_processor, an app: and a user: key: app_snippets_shared's 2nd session."""
    return reference_sessions["app_snippets_shared-1"]


def statuses(stored: StoredSession, profile: TargetProfile = PROFILE) -> dict[str, Status]:
    return {r.name: r.status for r in run_audit_checks(stored, profile)}


def fold(stored: StoredSession) -> dict[str, Any]:
    """The session state its events' deltas make (what a service that bypasses nothing stores)."""
    state: dict[str, Any] = {}
    for event in stored.events:
        for key, value in event.state_delta.items():
            if key.startswith(("app:", "user:", "temp:")):
                continue
            if value is None and stored.nulls_are_deletes:
                state.pop(key, None)
            else:
                state[key] = value
    return state


def with_event(stored: StoredSession, position: int, *, consistent: bool = True, **changes: Any) -> StoredSession:
    """``stored`` with one event changed; ``consistent``: the session state refolded, as a writer would store it."""
    events = list(stored.events)
    events[position] = dataclasses.replace(events[position], **changes)
    changed = dataclasses.replace(stored, events=tuple(events))
    return dataclasses.replace(changed, state=fold(changed)) if consistent else changed


def assert_only(stored: StoredSession, clean: StoredSession, check: str, *needles: str,
                profile: TargetProfile = PROFILE) -> None:
    """Exactly ``check`` fails on ``stored`` (every other check as on ``clean``); its evidence names the session
    and each of ``needles``."""
    before, after = statuses(clean, profile), statuses(stored, profile)
    assert before[check] is not Status.FAIL
    assert after[check] is Status.FAIL, after
    assert {k: v for k, v in after.items() if k != check} == {k: v for k, v in before.items() if k != check}
    result = next(r for r in run_audit_checks(stored, profile) if r.name == check)
    text = "\n".join(result.evidence)
    assert stored.key in text
    for needle in needles:
        assert needle in text, text


@pytest.mark.slow
def test_clean_reference_sessions_pass(reference_sessions: dict[str, StoredSession]) -> None:
    assert len(reference_sessions) >= 3
    for stored in reference_sessions.values():
        results = run_audit_checks(stored, PROFILE)
        # Every check but those judged on rows no session owns (each such finding is a row of its own).
        assert [r.name for r in results] == [n for n in AUDIT_CHECK_NAMES if n not in STORE_CHECK_NAMES]
        assert not [r for r in results if r.failed], (stored.key, [r for r in results if r.failed])
    judged = statuses(reference_sessions["app_snippets_shared-1"])
    assert judged["summary_persisted"] is Status.PASS
    assert judged["minimal_deltas"] is Status.PASS
    assert judged["state_matches_events"] is Status.PASS
    assert judged["artifacts_consumed"] is Status.NOT_APPLICABLE  # the registry is not in the session store


def test_only_selects_checks_and_unknown_names_are_refused(clean: StoredSession) -> None:
    assert [r.name for r in run_audit_checks(clean, PROFILE, only={"state_budget"})] == ["state_budget"]
    with pytest.raises(ValueError, match="unknown audit check.*nope"):
        run_audit_checks(clean, PROFILE, only=["nope"])


# --- temp: -------------------------------------------------------------------------------------------------------

def test_temp_key_in_session_state(clean: StoredSession) -> None:
    broken = dataclasses.replace(clean, state={**clean.state, "temp:rlm:code": "print(1)"})
    assert_only(broken, clean, "no_temp_persisted", "'temp:rlm:code'", "session state")


def test_temp_key_in_user_state_row(clean: StoredSession) -> None:
    broken = dataclasses.replace(clean, user_state={**(clean.user_state or {}), "temp:glue": 1})
    assert_only(broken, clean, "no_temp_persisted", "'temp:glue'", "user_states row")


def test_temp_key_in_an_event_delta(clean: StoredSession) -> None:
    job = next(e for e in clean.events if e.author == "job_builder")
    broken = with_event(clean, job.position, state_delta={**job.state_delta, "temp:rlm:execution_stdout": "x"})
    assert_only(broken, clean, "no_temp_persisted", "'temp:rlm:execution_stdout'", job.id, f"seq {job.seq}")


# --- null ----------------------------------------------------------------------------------------------------------

def test_null_in_session_state(clean: StoredSession) -> None:
    broken = dataclasses.replace(clean, state={**clean.state, "rlm:fatal_error": None})
    assert_only(broken, clean, "none_deletes", "'rlm:fatal_error' = null")


def test_null_in_app_state_row(clean: StoredSession) -> None:
    broken = dataclasses.replace(clean, app_state={**(clean.app_state or {}), "rlm:snippets": None})
    assert_only(broken, clean, "none_deletes", "app_states row", "'rlm:snippets' = null")


def test_a_delete_in_our_event_rows_is_not_a_null(reference_sessions: dict[str, StoredSession]) -> None:
    deleting = reference_sessions["final_answer_then_new_turn-0"]
    assert any(v is None for e in deleting.events for v in e.state_delta.values())
    assert statuses(deleting)["none_deletes"] is Status.PASS


def _adk_stored(clean: StoredSession) -> StoredSession:
    """The clean session as a None-storing service (ADK's) holds it: a delete is a stored null."""
    job = next(e for e in clean.events if e.author == "job_builder")
    adk = dataclasses.replace(clean, layout="adk", nulls_are_deletes=False, version=None,
                              events=tuple(dataclasses.replace(e, seq=None) for e in clean.events))
    return with_event(adk, job.position, state_delta={**job.state_delta, "rlm:fatal_error": None})


def test_nulls_a_none_storing_service_wrote_are_its_contract(clean: StoredSession) -> None:
    adk = _adk_stored(clean)
    assert adk.state["rlm:fatal_error"] is None
    result = next(r for r in run_audit_checks(adk, PROFILE) if r.name == "none_deletes")
    assert result.status is Status.PASS and "keeps None as a value" in result.explanation
    assert not [r for r in run_audit_checks(adk, PROFILE) if r.failed]


def test_a_null_no_event_wrote_fails_on_a_none_storing_service(clean: StoredSession) -> None:
    adk = _adk_stored(clean)
    broken = dataclasses.replace(adk, user_state={**(adk.user_state or {}), "rlm:history": None})
    assert_only(broken, adk, "none_deletes", "'rlm:history' = null", "no event's delta set to None")


def test_profile_none_semantics_delete_judges_a_none_storing_store(clean: StoredSession) -> None:
    adk = _adk_stored(clean)
    strict = PROFILE.model_copy(update={"none_semantics": "delete"})
    result = next(r for r in run_audit_checks(adk, strict) if r.name == "none_deletes")
    assert result.failed and "'rlm:fatal_error'" in "\n".join(result.evidence)


# --- summary, artifacts --------------------------------------------------------------------------------------------

def test_processed_execution_without_persisted_summary(clean: StoredSession) -> None:
    summary = next(e for e in clean.events if "rlm:last_results_summary" in e.state_delta)
    job = next(e for e in clean.events if e.author == "job_builder")
    broken = with_event(clean, summary.position, state_delta={})
    assert_only(broken, clean, "summary_persisted", "'rlm:last_results_summary'", job.id)


def test_summary_written_by_another_author_is_named(clean: StoredSession) -> None:
    summary = next(e for e in clean.events if "rlm:last_results_summary" in e.state_delta)
    analyst = [e for e in clean.events if e.author == "databricks_analyst"][-1]
    moved = with_event(clean, summary.position, state_delta={})
    broken = with_event(moved, analyst.position,
                        state_delta={**analyst.state_delta, "rlm:last_results_summary": "written late"})
    result = next(r for r in run_audit_checks(broken, PROFILE) if r.name == "summary_persisted")
    assert result.failed and "author databricks_analyst" in "\n".join(result.evidence)


ARTIFACTS = TargetProfile(job_builder="executor", results_processor="processor", summary_key="summary",
                          artifact_status_prefix="artifact:")


def _artifact_session(final_status: str) -> StoredSession:
    events = (
        StoredEvent(0, "e0", "user", "inv1", 1.0, {}, seq=1, has_content=True),
        StoredEvent(1, "e1", "executor", "inv1", 2.0, {"artifact:a1": "executed"}, seq=2, has_content=True),
        StoredEvent(2, "e2", "processor", "inv1", 3.0, {"summary": "two rows", "artifact:a1": final_status},
                    seq=3, has_content=True),
    )
    state = {"summary": "two rows", "artifact:a1": final_status}
    return StoredSession("rlm", "app", "u", "s1", state, None, None, events, version=3, nulls_are_deletes=True,
                         row="sessions row app=app user=u id=s1")


def test_analysed_artifact_consumed_passes_and_one_left_executed_fails() -> None:
    clean = _artifact_session("consumed")
    assert statuses(clean, ARTIFACTS)["artifacts_consumed"] is Status.PASS
    assert not [r for r in run_audit_checks(clean, ARTIFACTS) if r.failed]
    assert_only(_artifact_session("executed"), clean, "artifacts_consumed", "artifact a1", "'artifact:a1'",
                profile=ARTIFACTS)


# --- contract, budget ----------------------------------------------------------------------------------------------

def test_key_written_outside_its_authors_contract(clean: StoredSession) -> None:
    job = next(e for e in clean.events if e.author == "job_builder")
    broken = with_event(clean, job.position, state_delta={**job.state_delta, "rlm:iteration": 7})
    assert_only(broken, clean, "minimal_deltas", "'rlm:iteration'", "written by job_builder", job.id)


def test_keys_outside_the_contract_are_not_judged(clean: StoredSession) -> None:
    job = next(e for e in clean.events if e.author == "job_builder")
    other = with_event(clean, job.position, state_delta={**job.state_delta, "team:own_key": 1})
    assert statuses(other) == statuses(clean)


def test_state_over_the_byte_budget(clean: StoredSession) -> None:
    job = next(e for e in clean.events if e.author == "job_builder")
    broken = with_event(clean, job.position, state_delta={**job.state_delta, "rlm:metrics": "x" * 20_000})
    assert_only(broken, clean, "state_budget", "'rlm:metrics'", job.id, "budget 16384")
    assert [r.status for r in run_audit_checks(broken, PROFILE, only=["state_budget"],
                                               state_budget_bytes=100_000)] == [Status.PASS]


# --- order, sequence, version --------------------------------------------------------------------------------------

def test_timestamps_going_back(clean: StoredSession) -> None:
    third = clean.events[2]
    broken = with_event(clean, 2, timestamp=clean.events[1].timestamp - 10)
    assert_only(broken, clean, "events_ordered", third.id, "earlier than")


def test_seq_gap_duplicate_and_version(clean: StoredSession) -> None:
    last = clean.events[-1]
    gap = with_event(clean, last.position, seq=last.seq + 1)
    assert_only(gap, clean, "events_ordered", f"missing {last.seq}")
    duplicate = with_event(clean, last.position, seq=last.seq - 1)
    assert_only(duplicate, clean, "events_ordered", last.id, "duplicates")
    assert_only(dataclasses.replace(clean, version=clean.version + 2), clean, "events_ordered",
                f"version {clean.version + 2}", clean.row)


def test_an_append_awaiting_roll_forward_is_not_a_violation(clean: StoredSession) -> None:
    pending = dataclasses.replace(clean, version=clean.version + 1, extra={"pending_append": True})
    assert statuses(pending) == statuses(clean)


def test_duplicate_event_id(clean: StoredSession) -> None:
    broken = with_event(clean, 2, id=clean.events[1].id)
    assert_only(broken, clean, "events_ordered", f"event id {clean.events[1].id} is stored 2 times")


# --- state = fold of the deltas ------------------------------------------------------------------------------------

def test_direct_write_that_bypassed_events(clean: StoredSession) -> None:
    broken = dataclasses.replace(clean, state={**clean.state, "rlm:iteration": 99})
    assert_only(broken, clean, "state_matches_events", "'rlm:iteration'", "holds 99", "fold to 1")


def test_deleted_key_still_stored(reference_sessions: dict[str, StoredSession]) -> None:
    deleting = reference_sessions["final_answer_then_new_turn-0"]
    deleted = next(k for e in deleting.events for k, v in e.state_delta.items() if v is None
                   and k not in deleting.state)
    broken = dataclasses.replace(deleting, state={**deleting.state, deleted: "stale"})
    assert_only(broken, deleting, "state_matches_events", repr(deleted), "fold to absent")


def test_keys_no_event_wrote_are_creation_state_unless_it_is_known(clean: StoredSession) -> None:
    created = dataclasses.replace(clean, state={**clean.state, "context": "given at create_session"})
    result = next(r for r in run_audit_checks(created, PROFILE) if r.name == "state_matches_events")
    assert result.status is Status.PASS and "'context'" in result.explanation
    known = dataclasses.replace(created, extra={"initial_state": {}})
    assert_only(known, clean, "state_matches_events", "'context'", "written by no event")


def test_a_contract_key_no_event_wrote_is_not_creation_state(clean: StoredSession) -> None:
    """A summary in the state with the processor's event row gone: the contract says who writes it, no one did."""
    summary = next(e for e in clean.events if "rlm:last_results_summary" in e.state_delta)
    dropped = dataclasses.replace(clean, events=tuple(
        dataclasses.replace(e, position=i) for i, e in enumerate(e for e in clean.events if e is not summary)))
    result = next(r for r in run_audit_checks(dropped, PROFILE) if r.name == "state_matches_events")
    assert result.failed
    assert "'rlm:last_results_summary'" in result.evidence[0] and "results_processor" in result.evidence[0]
