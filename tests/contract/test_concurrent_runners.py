"""Concurrent runners on real session services, judged by the history check (harness/contract/runners.py,
runner_processes.py, history_check.py).

The reference store must pass; its broken variant appending without a version check must fail by name, with a
witness. ADK's own services are declared evidence (google/adk-python #4751, #5244): what they do is measured
and kept in docs/session-store.md ("Concurrent runners"), not gated here — these tests only hold that the run
completes, the runners raced, and each finding names its witness.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.contract.profiles import get_profile
from harness.contract.runner_processes import run_processes
from harness.contract.runners import RunnersResult, run_tasks
from harness.databricks_fake import DEFAULT_WAREHOUSE, FakeWorkspace
from harness.targets.session_services import aclose_service

HERE = "tests.contract.concurrent_services"


async def _tasks(spec: str, folder: Path) -> RunnersResult:
    service = get_profile(spec).build(folder)
    try:
        return await run_tasks(service, spec)
    finally:
        await aclose_service(service)


def _phases_with(result: RunnersResult, name: str) -> set[str]:
    """The shapes (one_session, two_sessions) whose apps the anomalies called ``name`` are in."""
    return {("one_session" if "one-session" in a.witness[0].app else "two_sessions")
            for a in result.verdict.anomalies if a.name == name}


async def test_reference_store_passes_with_two_runners_on_one_file(tmp_path):
    result = await _tasks("delta-file", tmp_path)
    assert result.overlapped, "the runners never raced: the test proves nothing"
    assert result.verdict.ok, result.describe()
    assert result.verdict.refused > 0, "no stale append was refused: nothing conflicted"


async def test_appending_without_a_version_check_fails_with_a_witness(tmp_path):
    result = await _tasks(f"{HERE}:unchecked_delta_file", tmp_path)
    assert result.overlapped
    assert "lost_update" in result.verdict.names(), result.describe()
    lost = next(a for a in result.verdict.anomalies if a.name == "lost_update")
    lost_append, *_, final = lost.witness
    kinds = [op.kind for op in lost.witness]
    # the lost append, the read the overwriter built on, the overwriter, the final read
    assert kinds == ["append", "read", "append", "read"] and final.process == "final", lost.describe()
    assert lost_append.ok and lost.witness[2].ok and lost_append.process != lost.witness[2].process
    assert lost_append.event not in (lost.witness[1].state or {}).get(lost.key, []), \
        "the overwriter's read must show what it built on: the lost element missing"
    assert "minimal witness" in result.describe()


async def test_adk_in_memory_service_as_declared_evidence(tmp_path):
    """#5244: InMemorySessionService merges a stale runner's append — the check names the lost updates."""
    result = await _tasks("adk-memory", tmp_path)
    assert result.overlapped
    assert result.verdict.refused == 0 and "lost_update" in result.verdict.names(), result.describe()


@pytest.mark.slow
async def test_a_store_one_process_at_a_time_is_not_judged_across_processes(tmp_path):
    result = await run_processes("delta-file", tmp_path)
    assert result.not_judged and "DatabaseLockedError" in result.not_judged, result.describe()
    assert "nothing raced" in result.describe()


@pytest.fixture
def workspace_store(tmp_path):
    """The workspace fake on loopback, its address where the runners' factory reads it."""
    with FakeWorkspace(tmp_path / "workspace") as fake:
        store = tmp_path / "runs" / "store"
        store.mkdir(parents=True)
        (store / "workspace.json").write_text(json.dumps(
            {"host": fake.host, "token": fake.token, "warehouse": DEFAULT_WAREHOUSE}), encoding="utf-8")
        yield store.parent


@pytest.mark.slow
async def test_reference_store_across_processes_on_databricks_sql(workspace_store):
    """Two OS processes on the reference store's one engine they can share (Databricks SQL, the workspace fake).
    A double submit on one session: the session row's compare-and-set refuses the stale runner. Two sessions of
    one user: each append claims its user:/app: keys before its commit point, so the one that loses a key is stale
    before writing anything. Nothing acknowledged is lost."""
    result = await run_processes(f"{HERE}:delta_on_workspace", workspace_store)
    assert result.overlapped and result.verdict.refused > 0, result.describe()
    assert result.verdict.ok, result.describe()


@pytest.mark.slow
async def test_without_claims_before_the_commit_point_two_sessions_lose_updates(workspace_store):
    """The same store checking its user:/app: keys before the commit point and writing them after it (as it did
    before the claims): two sessions of one user lose read-modify-writes, named with a witness (every round of
    3 when measured)."""
    result = await run_processes(f"{HERE}:unclaimed_delta_on_workspace", workspace_store)
    assert result.overlapped
    assert "two_sessions" in _phases_with(result, "lost_update"), result.describe()
    lost = next(a for a in result.verdict.anomalies if a.name == "lost_update")
    assert lost.key.startswith(("user:", "app:")) and [op.kind for op in lost.witness] == [
        "append", "read", "append", "read"], lost.describe()


@pytest.mark.slow
async def test_unchecked_variant_across_processes_fails(workspace_store):
    result = await run_processes(f"{HERE}:unchecked_delta_on_workspace", workspace_store)
    assert result.overlapped
    # Which shape loses depends on how two processes interleave (tox at -n 3 saw only two_sessions): one must.
    assert _phases_with(result, "lost_update"), result.describe()


@pytest.mark.slow
async def test_adk_database_service_across_processes_as_declared_evidence(tmp_path):
    """#4751/#5244: ADK's DatabaseSessionService on one SQLite file, two processes: the run completes and every
    anomaly it shows names its witness (lost user:/app: updates across two sessions were seen on every run)."""
    result = await run_processes("adk-sqlite", tmp_path)
    assert result.overlapped and not result.not_judged, result.describe()
    assert all(a.witness and a.witness[-1].process == "final" or a.name == "read_failed"
               for a in result.verdict.anomalies), result.describe()


# --- the gate: the contract case `concurrent_runners` ------------------------------------------------------------


@pytest.mark.slow
async def test_the_contract_case_fails_the_unchecked_variant_by_name(tmp_path):
    """Through the contract suite, as a user runs it on `module:attr`: DuckDB refuses the second process, so the
    case runs the two runners in one process on one service, and names the lost update with its witness."""
    from harness.contract import contract_cases, profile_from_spec, run_case

    (case,) = [c for c in contract_cases() if c.name == "concurrent_runners"]
    with pytest.raises(AssertionError) as caught:
        await run_case(case, profile_from_spec(f"{HERE}:unchecked_delta_file"), tmp_path)
    message = str(caught.value)
    assert "lost_update" in message and "minimal witness" in message, message
    assert "DatabaseLockedError" in message and "run as two runners in one process" in message, message


async def test_a_scenario_runs_probe_says_n_a_for_the_concurrent_case():
    """The probe of a run holds the run's own instance: no second process can build it, and it says so."""
    from google.adk.sessions import InMemorySessionService

    from harness.run.service_probe import probe_service
    from harness.targets.profile import TargetProfile

    record = await probe_service(InMemorySessionService(), spec="tests.user_session_services:adk_in_memory",
                                 backend="local", target=TargetProfile())
    (case,) = [c for c in record.cases if c.case == "concurrent_runners"]
    assert case.status == "n/a" and "make_contract_tests(profile_from_spec(" in case.message, case
