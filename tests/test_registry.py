"""ArtifactRegistry: lifecycle pending -> executed -> consumed (or failed) and its guards."""

from __future__ import annotations

import itertools

import pytest

from reference_agent.registry import (
    ArtifactExistsError,
    ArtifactNotFoundError,
    ArtifactRegistry,
    ArtifactStatus,
    IllegalTransitionError,
)
from reference_agent.storage import DuckDBEngine


@pytest.fixture
def registry():
    engine = DuckDBEngine(None)
    ticks = itertools.count(100)
    yield ArtifactRegistry(engine, clock=lambda: float(next(ticks)))
    engine.close()


def register(reg: ArtifactRegistry, artifact_id: str, *, session_id: str = "s", iteration: int = 1):
    return reg.register(app_name="app", user_id="u", session_id=session_id, iteration=iteration,
                        code_path=f"/vol/{artifact_id}.py", artifact_id=artifact_id, metadata={"lang": "python"})


def test_lifecycle(registry):
    rec = register(registry, "a1")
    assert rec.status is ArtifactStatus.PENDING and rec.created_at == 100.0
    assert registry.get("a1") == rec

    executed = registry.mark_executed("a1", result_json_path="/vol/result_1.json", stdout_path="/vol/out.txt",
                                      metadata={"status": "success", "ünïcode": "✓"})
    assert executed.status is ArtifactStatus.EXECUTED
    assert (executed.result_json_path, executed.stdout_path, executed.stderr_path) == (
        "/vol/result_1.json", "/vol/out.txt", None)
    assert executed.executed_at is not None and executed.consumed_at is None
    assert executed.metadata == {"lang": "python", "status": "success", "ünïcode": "✓"}

    # Executed but not analysed is visible as not consumed.
    assert registry.get("a1").status is ArtifactStatus.EXECUTED
    assert registry.mark_consumed("a1") is True
    consumed = registry.get("a1")
    assert consumed.status is ArtifactStatus.CONSUMED and consumed.consumed_at > consumed.executed_at
    assert registry.mark_consumed("a1") is False  # idempotent
    assert registry.get("a1") == consumed


def test_failed_when_job_b_could_not_run(registry):
    register(registry, "a1")
    failed = registry.mark_failed("a1", "RuntimeError: no cluster")
    assert failed.status is ArtifactStatus.FAILED
    assert failed.metadata["error"] == "RuntimeError: no cluster" and "failed_at" in failed.metadata


@pytest.mark.parametrize(
    ("setup", "action"),
    [
        ([], "consume"),  # pending: nothing was analysed
        (["execute"], "execute"),
        (["execute"], "fail"),
        (["execute", "consume"], "execute"),
        (["execute", "consume"], "fail"),
        (["fail"], "execute"),
        (["fail"], "consume"),
        (["fail"], "fail"),
    ],
)
def test_illegal_transitions(registry, setup, action):
    register(registry, "a1")
    do = {
        "execute": lambda: registry.mark_executed("a1", result_json_path="/r.json"),
        "consume": lambda: registry.mark_consumed("a1"),
        "fail": lambda: registry.mark_failed("a1", "x"),
    }
    for step in setup:
        do[step]()
    before = registry.get("a1")
    with pytest.raises(IllegalTransitionError, match="a1"):
        do[action]()
    assert registry.get("a1") == before  # nothing changed


def test_unknown_and_duplicate_ids(registry):
    assert registry.get("nope") is None
    for call in (lambda: registry.mark_consumed("nope"),
                 lambda: registry.mark_failed("nope", "x"),
                 lambda: registry.mark_executed("nope", result_json_path="/r.json")):
        with pytest.raises(ArtifactNotFoundError):
            call()
    register(registry, "a1")
    with pytest.raises(ArtifactExistsError):
        register(registry, "a1")


def test_list_for_session(registry):
    register(registry, "b", iteration=2)
    register(registry, "a", iteration=1)
    register(registry, "other", session_id="s2")
    generated = registry.register(app_name="app", user_id="u", session_id="s", iteration=3, code_path="/c.py")
    assert generated.artifact_id.startswith("art_")
    assert [r.artifact_id for r in registry.list_for_session("app", "u", "s")] == ["a", "b", generated.artifact_id]
    assert registry.list_for_session("app", "someone-else", "s") == []


def test_shares_engine_with_session_service_and_survives_reopen(tmp_path):
    from reference_agent.sessions import DeltaSessionService

    path = tmp_path / "db" / "rlm.duckdb"
    engine = DuckDBEngine(path)
    DeltaSessionService(engine)  # both schemas on one engine
    register(ArtifactRegistry(engine), "a1")
    engine.close()
    with DuckDBEngine(path) as again:
        rec = ArtifactRegistry(again).get("a1")
        assert rec is not None and rec.status is ArtifactStatus.PENDING and rec.metadata == {"lang": "python"}


def test_statuses_for_session_and_revision(registry):
    register(registry, "a1")
    register(registry, "a2")
    register(registry, "other", session_id="s2")
    assert registry.revision == 3
    registry.mark_executed("a1", result_json_path="/vol/r.json")
    assert registry.statuses_for_session("app", "u", "s") == {"a1": ArtifactStatus.EXECUTED,
                                                              "a2": ArtifactStatus.PENDING}
    assert registry.revision == 4
    with pytest.raises(IllegalTransitionError):  # a refused write changes nothing, and is not counted
        registry.mark_consumed("a2")
    with pytest.raises(ArtifactExistsError):
        register(registry, "a1")
    assert registry.revision == 4
    assert registry.mark_consumed("a1") and not registry.mark_consumed("a1")
    assert registry.revision == 5
