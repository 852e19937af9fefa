"""``crash`` on an agent shape of its own: ADK's code executor runs the analyst's code (its answer is an
executable_code part, its result the agent's next event), and the session service init drafted keeps nothing across
processes (a subclass of ADK's in-memory one). The matrix finds that out by probing, crashes on ADK's sqlite
service instead (saying so), and the retried turn does not run the code a second time."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.crash.matrix import crash_matrix
from harness.run.options import RunOptions
from harness.scenario.loader import load_scenario
from harness.targets.profile import load_profile

pytestmark = pytest.mark.slow

AGENT_DIR = Path(__file__).resolve().parents[1] / "user_agents" / "code_executor_rlm"
MODULE = "tests.user_agents.code_executor_rlm.agent"


def test_a_service_that_keeps_nothing_is_probed_and_the_code_run_before_the_crash_is_not_run_again() -> None:
    report = crash_matrix(load_scenario(AGENT_DIR / "scenarios" / "code_twice.yaml"),
                          RunOptions(target=f"{MODULE}:app", session_service=f"{MODULE}:KeepsTempSessionService",
                                     profile=load_profile(AGENT_DIR / "rlm-profile.yaml")),
                          only=[("after", 2)], recovery="retry")
    assert report.error is None and report.not_applicable is None, report.error or report.not_applicable
    assert "KeepsTempSessionService kept nothing across processes" in report.note
    assert report.session_service == "DatabaseSessionService"
    [point] = report.points
    assert point.error is None and point.not_applicable is None
    failing = {c.name: c.evidence for c in point.checks if c.failed}
    assert failing == {}, failing  # before the fix the code answer, never counted as answered, was served again
    assert {c.name: c.status.value for c in point.checks}["effects_exactly_once"] == "pass"
