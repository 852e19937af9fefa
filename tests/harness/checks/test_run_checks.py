"""run_checks: selection, skip reasons, unknown names, and a crashing check that does not crash the run."""

from __future__ import annotations

import pytest

from harness.checks import ALL_CHECK_NAMES, run_checks
from harness.checks import base
from harness.checks.base import Status
from tests.harness.checks.trace_builder import happy_trace, make_context

EXPECTED = {
    "no_pruning_plugin", "summary_persisted", "no_temp_persisted", "stage_gating", "artifacts_consumed",
    "minimal_deltas", "none_deletes", "no_unpersisted_mutation", "summary_reaches_prompt", "state_budget",
    "stale_flags_cleared", "processor_model_runs", "instructions_render", "outcome_from_storage",
    "loop_without_transfers", "scenario_expectations", "adk_recording_matches",
    "user_history_scoped", "history_folded_by_event", "app_data_shared", "context_budget",
    "stale_writer_rejected", "get_session_config_honoured", "event_order_preserved", "session_service_contract",
    "previews_bounded", "history_keeps_newest", "sublm_batch_concurrent", "executor_env_clean", "executor_confined",
}


def test_all_checks_registered_with_metadata() -> None:
    assert set(ALL_CHECK_NAMES) == EXPECTED
    specs = base.registered_checks()
    for name in ALL_CHECK_NAMES:
        assert specs[name].title and specs[name].why


def test_runs_every_check_in_order_by_default() -> None:
    results = run_checks(make_context(happy_trace()))
    assert tuple(r.name for r in results) == ALL_CHECK_NAMES


def test_only_runs_the_selection() -> None:
    results = run_checks(make_context(happy_trace()), only=["state_budget", "no_pruning_plugin"])
    assert [r.name for r in results] == ["no_pruning_plugin", "state_budget"]


def test_skip_reports_not_applicable_with_the_reason() -> None:
    results = run_checks(make_context(happy_trace()), skip={"stage_gating": "the legacy target re-runs on purpose"})
    skipped = next(r for r in results if r.name == "stage_gating")
    assert skipped.status is Status.NOT_APPLICABLE
    assert "the legacy target re-runs on purpose" in skipped.explanation
    assert len(results) == len(ALL_CHECK_NAMES)


@pytest.mark.parametrize("kwargs", [{"only": ["no_such_check"]}, {"skip": {"no_such_check": "why"}}])
def test_unknown_name_raises_naming_the_known_checks(kwargs) -> None:
    with pytest.raises(ValueError) as excinfo:
        run_checks(make_context(happy_trace()), **kwargs)
    message = str(excinfo.value)
    assert "'no_such_check'" in message and "stage_gating" in message and "summary_persisted" in message


def test_a_crashing_check_is_a_failure_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(ctx):
        raise KeyError("boom")

    monkeypatch.setitem(base._REGISTRY, "exploding", base.CheckSpec(name="exploding", title="t", why="w", fn=explode))
    results = run_checks(make_context(happy_trace()))
    crashed = next(r for r in results if r.name == "exploding")
    assert crashed.status is Status.FAIL
    assert "KeyError" in crashed.explanation and "this is a bug in the check" in crashed.explanation
    assert any("explode" in line for line in crashed.evidence)  # the traceback is kept
    assert {r.name for r in results if r.status is Status.PASS} >= {"no_pruning_plugin", "state_budget"}


def test_a_check_returning_garbage_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(base._REGISTRY, "garbage",
                        base.CheckSpec(name="garbage", title="t", why="w", fn=lambda ctx: "ok"))
    [result] = run_checks(make_context(happy_trace()), only=["garbage"])
    assert result.status is Status.FAIL and "this is a bug in the check" in result.explanation
