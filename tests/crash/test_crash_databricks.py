"""``crash`` on the Databricks workspace fake (``--backend databricks``, scripted): the matrix's own process keeps
the fake per point (harness/crash/workspace.py), and kills the run once the workspace created its Job_B run
(``submitted``), the submit unanswered. The workspace's ledger judges effects_exactly_once: the reference agent
rejoins its run by its idempotency_token; a variant without the token, or one submitting again as new after a
restart, runs the block twice (tests/crash_broken_targets.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.crash.matrix import CrashReport, crash_matrix
from harness.run.options import RunOptions
from harness.scenario.loader import load_scenario

pytestmark = pytest.mark.slow

SCENARIO = load_scenario(Path(__file__).parents[2] / "scenarios" / "single_delegation.yaml")
BROKEN = "tests.crash_broken_targets"


def matrix(only: list, *, target: str = "reference") -> CrashReport:
    report = crash_matrix(SCENARIO, RunOptions(target=target, backend="databricks"), only=only, recovery="retry")
    assert report.error is None and report.not_applicable is None, report.error or report.not_applicable
    assert all(p.error is None for p in report.points), [p.error for p in report.points]
    return report


def failing(report: CrashReport) -> set[str]:
    return {c.name for p in report.points for c in p.checks if c.failed}


def effects(report: CrashReport, point: int = 0):
    [check] = [c for c in report.points[point].checks if c.name == "effects_exactly_once"]
    return check


def test_the_reference_agent_rejoins_its_run_after_a_crash_at_the_submit_and_after_the_execution() -> None:
    report = matrix([("submitted", 0), ("after", "job_builder")])
    assert failing(report) == set(), [(p.point.label, [(c.name, c.evidence) for c in p.checks if c.failed])
                                      for p in report.points]
    assert report.points[0].point.label == "submitted #0 (job_builder)"
    assert "1 submit(s) got an earlier run back by its idempotency_token" in effects(report).explanation
    assert "executed 1 job run(s)" in effects(report, 1).explanation


@pytest.mark.parametrize("broken", ["drops_idempotency_token", "resubmits_job_b"])
def test_a_second_run_of_the_same_code_fails_effects_exactly_once(broken: str) -> None:
    report = matrix([("submitted", 0)], target=f"{BROKEN}:{broken}")
    assert "effects_exactly_once" in failing(report)
    evidence = " ".join(effects(report).evidence)
    assert "the workspace executed one task 2 times (the uncrashed run: 1)" in evidence
    assert ("no idempotency_token" if broken == "drops_idempotency_token" else "rlm-jobb-process-") in evidence


def test_submitted_points_on_a_local_executor_are_not_applicable_saying_why() -> None:
    """The harness keeps no workspace there: it has no generic hook inside the target's executor."""
    report = crash_matrix(SCENARIO, RunOptions(target="reference"), kinds=("submitted",))
    assert report.error is None and report.points == []
    assert "no 'submitted' crash point" in report.not_applicable
