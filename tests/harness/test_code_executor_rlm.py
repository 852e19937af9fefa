"""tests/user_agents/code_executor_rlm, by its scripted scenario: the correct agent fails nothing, and each planted
defect fails the check that owns it (and what follows from it), on ADK's own code executor.

The profile is init's draft with its TODOs filled in (summary_key, artifact_status_prefix).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.targets.profile import load_profile

AGENT_DIR = Path(__file__).resolve().parents[1] / "user_agents" / "code_executor_rlm"
MODULE = "tests.user_agents.code_executor_rlm.agent"


@pytest.mark.parametrize(("target", "service", "failing"), [
    ("app", "delta", set()),
    ("direct_mutation", "delta", {"no_unpersisted_mutation"}),
    ("stale_redigest", "delta", {"stage_gating", "artifacts_consumed"}),  # the phantom re-digest marks an artifact
    ("summary_unseen", "delta", {"summary_reaches_prompt"}),
    ("app", f"{MODULE}:KeepsTempSessionService", {"no_temp_persisted", "session_service_contract"}),
])
def test_each_planted_defect_fails_its_own_check_and_the_correct_agent_nothing(target: str, service: str,
                                                                                failing: set[str]) -> None:
    result = run_scenario(load_scenario(AGENT_DIR / "scenarios" / "code_twice.yaml"),
                          RunOptions(llm_mode=LlmMode.SCRIPTED, target=f"{MODULE}:{target}", session_service=service,
                                     profile=load_profile(AGENT_DIR / "rlm-profile.yaml")))
    assert result.error is None and not result.crashed_turns
    failed = {c.name: c.evidence for c in result.checks if c.status.value == "fail"}
    assert set(failed) == failing, failed
    judged = {c.name for c in result.checks if c.status.value == "pass"}
    if not failing:
        assert {"stage_gating", "summary_persisted", "artifacts_consumed", "summary_reaches_prompt",
                "no_unpersisted_mutation"} <= judged
    if target == "direct_mutation":
        assert all("'user:last_output'" in line for line in failed["no_unpersisted_mutation"])


def test_adks_retry_limit_is_not_the_agents_defect() -> None:
    """Two failed blocks in a row: ADK's executor (error_retry_attempts 2) leaves the third unrun; both failures are
    digested by one run (the first went back to the analyst's own model first)."""
    result = run_scenario(load_scenario(AGENT_DIR / "scenarios" / "retry_limit.yaml"),
                          RunOptions(llm_mode=LlmMode.SCRIPTED, target=f"{MODULE}:app",
                                     profile=load_profile(AGENT_DIR / "rlm-profile.yaml")))
    verdicts = {c.name: c for c in result.checks}
    assert not [c.name for c in result.checks if c.status.value == "fail"]
    assert "2 fresh delegation(s), 2 execution(s), 1 digest run(s)" in verdicts["stage_gating"].explanation
    assert verdicts["artifacts_consumed"].status.value == "pass"
