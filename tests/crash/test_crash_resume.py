"""``crash --recovery resume`` on an outside resumable agent (tests/user_agents/resumable_rlm, ADK's own SQLite
session service): ADK resumes the killed invocation, green at each stage; the planted resume defect
(resumable_rlm/broken.py) fails the check that owns it; a target that cannot resume is n/a saying what is missing.
Each point is two real processes, the first killed with SIGKILL (harness/crash/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.crash.matrix import CrashReport, crash_matrix
from harness.run.options import RunOptions
from harness.scenario.loader import load_scenario

pytestmark = pytest.mark.slow

AGENTS = Path(__file__).parents[1] / "user_agents"
SCENARIO = load_scenario(AGENTS / "resumable_rlm" / "scenarios" / "resume_run_twice.yaml")
BROKEN = "tests.user_agents.resumable_rlm.broken"


def matrix(only: list, *, target: str | None = None, scenario=SCENARIO) -> CrashReport:
    options = RunOptions(session_service="adk-sqlite", **({"target": target} if target else {}))
    report = crash_matrix(scenario, options, only=only, jobs=2)  # recovery: the profile's (resume)
    assert report.error is None, report.error
    assert all(p.error is None for p in report.points), [p.error for p in report.points]
    return report


def failing(report: CrashReport) -> set[str]:
    return {c.name for p in report.points for c in p.checks if c.failed}


def test_a_resumable_agent_resumes_its_invocation_at_each_stage() -> None:
    """Killed after the run_python call (its tool ran, its response never stored), after the execution, after the
    summary (its end_of_agent not stored: ADK runs the summarizer again), after the finish's answer (the resumed
    loop does not see that escalate): nothing lost, nothing run twice, the uncrashed outcome reached."""
    report = matrix([("before", 3), ("after", 3), ("after", 7), ("after", 12)])
    assert {p.recovery for p in report.points} == {"resume"}
    assert failing(report) == set(), [(p.point.label, [(c.name, c.evidence) for c in p.checks if c.failed])
                                      for p in report.points]
    outcomes = {p.point.label: c.status.value for p in report.points for c in p.checks if c.name == "recovered_outcome"}
    assert set(outcomes.values()) == {"pass"}, outcomes


def test_a_step_resume_runs_again_without_a_guard_fails_result_not_lost() -> None:
    """ADK re-runs an agent whose end_of_agent event was not stored: an unguarded summarizer summarises again."""
    report = matrix([("after", 7)], target=f"{BROKEN}:resummarises")
    assert failing(report) == {"result_not_lost"}
    [check] = [c for c in report.points[0].checks if c.name == "result_not_lost"]
    assert "summarised 2 times" in " ".join(check.evidence)


def test_an_app_that_is_not_resumable_makes_resume_not_applicable_naming_the_fix() -> None:
    scenario = load_scenario(AGENTS / "tool_rlm" / "scenarios" / "llm_query_tool.yaml")
    report = crash_matrix(scenario, RunOptions(session_service="adk-sqlite"), recovery="resume")
    assert report.error is None and report.points == []
    assert "is not resumable" in report.not_applicable
    assert "ResumabilityConfig(is_resumable=True)" in report.not_applicable
