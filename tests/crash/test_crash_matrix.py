"""``crash`` on single_delegation: the reference agent green at the points that matter, and each broken variant
(tests/crash_broken_targets.py) failing the check that owns its defect. Each point is two real processes, the
first killed with SIGKILL (harness/crash/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.crash.matrix import CrashReport, crash_matrix
from harness.run.options import RunOptions
from harness.scenario.loader import load_scenario

pytestmark = pytest.mark.slow

SCENARIO = load_scenario(Path(__file__).parents[2] / "scenarios" / "single_delegation.yaml")
BROKEN = "tests.crash_broken_targets"


def matrix(only: list, *, target: str = "reference", recovery: str = "retry", **options: object) -> CrashReport:
    report = crash_matrix(SCENARIO, RunOptions(target=target, **options), only=only, recovery=recovery)
    assert report.error is None, report.error
    return report


def failing(report: CrashReport) -> set[str]:
    assert all(p.error is None for p in report.points), [p.error for p in report.points]
    return {c.name for p in report.points for c in p.checks if c.failed}


@pytest.mark.parametrize("recovery", ["retry", "next_turn"])
def test_the_reference_agent_recovers_at_each_stage_of_a_delegation(recovery: str) -> None:
    """Killed after the delegation, before and after the execution's event, after the summary: nothing lost,
    nothing run twice, the uncrashed outcome reached."""
    report = matrix([("after", 2), ("before", "job_builder"), ("after", "job_builder"),
                     ("after", "results_processor")], recovery=recovery)
    assert failing(report) == set(), [(p.point.label, [(c.name, c.evidence) for c in p.checks if c.failed])
                                      for p in report.points]
    outcome = {c.name: c.status.value for p in report.points for c in p.checks if c.name == "recovered_outcome"}
    assert outcome == {"recovered_outcome": "pass"}


def test_a_block_run_again_after_the_crash_fails_effects_exactly_once() -> None:
    report = matrix([("before", "job_builder")], target=f"{BROKEN}:reruns_blocks")
    assert failing(report) == {"effects_exactly_once"}
    [check] = [c for c in report.points[0].checks if c.name == "effects_exactly_once"]
    assert "ran again" in " ".join(check.evidence)


def test_a_result_no_recovery_picks_up_fails_result_not_lost() -> None:
    report = matrix([("after", "job_builder")], target=f"{BROKEN}:drops_orphans")
    assert {"result_not_lost", "recovered_outcome"} <= failing(report)
    assert "effects_exactly_once" not in failing(report)


def test_a_result_summarised_again_on_recovery_fails_result_not_lost() -> None:
    report = matrix([("after", "results_processor")], target=f"{BROKEN}:reprocesses_stale_results")
    assert "result_not_lost" in failing(report)
    [check] = [c for c in report.points[0].checks if c.name == "result_not_lost"]
    assert "processed again" in " ".join(check.evidence), check.evidence


def test_an_artifact_left_executed_after_its_summary_fails_consume_once() -> None:
    report = matrix([("after", "results_processor")], target=f"{BROKEN}:leaves_unconsumed")
    assert failing(report) == {"consume_once"}


def test_a_store_that_acknowledges_before_it_writes_fails_session_readable_prefix() -> None:
    report = matrix([("after", "job_builder")], session_service=f"{BROKEN}:write_behind_store")
    assert "session_readable_prefix" in failing(report)
    [check] = [c for c in report.points[0].checks if c.name == "session_readable_prefix"]
    assert "not in the store" in " ".join(check.evidence)


def test_an_in_memory_session_service_makes_the_matrix_not_applicable() -> None:
    report = crash_matrix(SCENARIO, RunOptions(session_service="adk-memory"))
    assert report.error is None and report.points == []
    assert "keeps nothing across processes" in report.not_applicable
