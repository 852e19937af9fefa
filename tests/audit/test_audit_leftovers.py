"""Crash leftovers in a stored session (harness/audit/leftovers.py): an execution never summarised fails
``summary_persisted``, a delegation never executed fails ``delegations_executed``, an artifact status key left
unanalysed fails ``artifacts_consumed``; a clean session has none. Stores made by a crash: the rows a crash leaves
(a clean session cut after an event), and a real turn SIGKILLed in a child process."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.audit.checks import run_audit_checks
from harness.audit.model import StoredEvent, StoredSession
from harness.checks.base import Status
from harness.targets.profile import TargetProfile
from reference_agent.conformance.profile import reference_profile

from .crashed_store import crashed_store
from .reference_store import read_store, run_reference
from .test_audit_checks import fold

PROFILE = reference_profile()


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> StoredSession:
    store = run_reference("app_snippets_shared", Path(tmp_path_factory.mktemp("clean")))
    return next(s for s in read_store(store) if s.session_id == "app_snippets_shared-1")


def result(stored: StoredSession, name: str, profile: TargetProfile = PROFILE):
    return next(r for r in run_audit_checks(stored, profile) if r.name == name)


def cut_after(stored: StoredSession, event: StoredEvent) -> StoredSession:
    """The session as a crash right after ``event`` was stored leaves it: the rows up to it, the state they fold to."""
    events = stored.events[: event.position + 1]
    cut = dataclasses.replace(stored, events=events, version=events[-1].seq)
    return dataclasses.replace(cut, state=fold(cut))


def delegation(stored: StoredSession) -> StoredEvent:
    return next(e for e in stored.events if "delegate_code_results" in e.function_responses and e.state_delta)


def test_a_clean_session_has_no_leftovers(clean: StoredSession) -> None:
    assert result(clean, "summary_persisted").status is Status.PASS
    assert result(clean, "delegations_executed").status is Status.PASS


def test_an_execution_never_summarised_fails_summary_persisted(clean: StoredSession) -> None:
    job = next(e for e in clean.events if e.author == "job_builder")
    crashed = cut_after(clean, job)
    found = result(crashed, "summary_persisted")
    assert found.status is Status.FAIL, found
    text = "\n".join(found.evidence)
    assert job.id in text and "never summarised" in text and crashed.key in text
    assert result(crashed, "delegations_executed").status is Status.PASS
    assert not [r.name for r in run_audit_checks(crashed, PROFILE)
                if r.failed and r.name not in ("summary_persisted",)]


def test_a_delegation_never_executed_fails_delegations_executed(clean: StoredSession) -> None:
    handed_over = delegation(clean)
    crashed = cut_after(clean, handed_over)
    found = result(crashed, "delegations_executed")
    assert found.status is Status.FAIL, found
    assert handed_over.id in "\n".join(found.evidence)
    assert result(crashed, "summary_persisted").status is Status.NOT_APPLICABLE  # no execution to summarise


def test_delegations_executed_is_na_without_a_mapped_delegation(clean: StoredSession) -> None:
    blind = PROFILE.model_copy(update={"delegate_tool": None, "delegation_key": None})
    assert result(clean, "delegations_executed", blind).status is Status.NOT_APPLICABLE


ARTIFACTS = TargetProfile(job_builder="executor", results_processor="processor", summary_key="summary",
                          artifact_status_prefix="artifact:")


def _artifact_session(*deltas: dict) -> StoredSession:
    events = tuple(StoredEvent(i, f"e{i}", author, "inv1", float(i), delta, seq=i + 1, has_content=True)
                   for i, (author, delta) in enumerate([("user", {}), *deltas]))
    state = {k: v for _, d in deltas for k, v in d.items()}
    return StoredSession("rlm", "app", "u", "s1", state, None, None, events, version=len(events),
                         nulls_are_deletes=True, row="sessions row app=app user=u id=s1")


def test_an_artifact_left_executed_without_analysis_fails_artifacts_consumed() -> None:
    analysed = _artifact_session(("executor", {"artifact:a1": "executed"}),
                                 ("processor", {"summary": "two rows", "artifact:a1": "consumed"}))
    assert result(analysed, "artifacts_consumed", ARTIFACTS).status is Status.PASS
    crashed = _artifact_session(("executor", {"artifact:a1": "executed"}))
    found = result(crashed, "artifacts_consumed", ARTIFACTS)
    assert found.status is Status.FAIL, found
    assert "'artifact:a1'" in "\n".join(found.evidence) and "unanalysed" in "\n".join(found.evidence)


@pytest.mark.slow
@pytest.mark.parametrize(("kill_after", "failing"), [("job_builder", "summary_persisted"),
                                                     ("databricks_analyst", "delegations_executed")])
def test_a_turn_killed_mid_way_leaves_what_the_audit_names(tmp_path: Path, kill_after: str, failing: str) -> None:
    [stored] = read_store(crashed_store(tmp_path / "home", kill_after=kill_after))
    failed = [r.name for r in run_audit_checks(stored, PROFILE) if r.failed]
    assert failed == [failing], [r for r in run_audit_checks(stored, PROFILE) if r.failed]
