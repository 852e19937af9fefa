"""The agent's own driver (profile ``driver``): called per turn with what the harness provides, its returned
outcome judged by ``outcome_from_storage``; a misreporting driver fails it, a driver that cannot be called is the
scenario's error naming the parameter, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.checks.base import Status
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.targets.profile import TargetProfile, load_profile

AGENT_DIR = Path(__file__).resolve().parents[1] / "user_agents" / "tool_rlm"
SCENARIO = AGENT_DIR / "scenarios" / "llm_query_tool.yaml"
DRIVERS = "tests.user_agents.tool_rlm.drivers"
MAPPED = {"termination": "status", "final_answer": "response_text", "delegations": "delegation_count"}


def _profile(**update: Any) -> TargetProfile:
    return load_profile(AGENT_DIR / "rlm-profile.yaml").model_copy(update=update)


def _run(tmp_path: Path, **update: Any):
    return run_scenario(load_scenario(SCENARIO),
                        RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path, profile=_profile(**update)))


@pytest.mark.slow
def test_a_driver_that_reads_storage_passes_and_is_named(tmp_path: Path) -> None:
    result = _run(tmp_path, driver=f"{DRIVERS}:run_conversation", driver_outcome=MAPPED,
                  driver_terminations={"success": None})
    assert result.error is None, result.error
    check = result.check("outcome_from_storage")
    assert check.status is Status.PASS, check.evidence
    assert f"reported by driver {DRIVERS}:run_conversation" in check.explanation
    first = result.trace.turns[0].outcome
    assert (first.termination, first.final_answer, first.delegations) == ("final_answer", "positive", 1)
    assert "status = 'done'" in first.reported_by and result.status == "pass"


@pytest.mark.slow
def test_a_driver_that_misreports_the_end_fails_outcome_from_storage(tmp_path: Path) -> None:
    result = _run(tmp_path, driver=f"{DRIVERS}:upstream_style", driver_outcome=MAPPED,
                  driver_terminations={"success": None})
    check = result.check("outcome_from_storage")
    assert check.status is Status.FAIL
    evidence = "\n".join(check.evidence)
    assert "status = 'success'" in evidence and "the persisted 'status' is 'done'" in evidence
    assert "outcome.final_answer is '' but the persisted 'answer' is 'positive'" in evidence


@pytest.mark.slow
def test_without_the_driver_the_same_agent_reads_its_outcome_from_storage(tmp_path: Path) -> None:
    result = _run(tmp_path)
    assert result.check("outcome_from_storage").status is Status.PASS
    assert all(t.outcome.reported_by is None for t in result.trace.turns)


@pytest.mark.slow
def test_a_plain_function_runs_in_a_thread_with_driver_args(tmp_path: Path) -> None:
    result = _run(tmp_path, driver=f"{DRIVERS}:sync_driver", driver_args={"label": "nightly"},
                  driver_outcome={"termination": "status"}, driver_terminations={"success": None})
    assert result.error is None, result.error
    # It says "success" where storage holds 'done': a real disagreement, found through a blocking Runner.run.
    assert result.check("outcome_from_storage").status is Status.FAIL


@pytest.mark.slow
@pytest.mark.parametrize(("update", "said"), [
    ({"driver": f"{DRIVERS}:needs_a_tenant"}, "cannot fill its parameter(s) tenant"),
    ({"driver": f"{DRIVERS}:run_conversation", "driver_args": {"tenant": "a"}}, "driver_args names tenant"),
    ({"driver": f"{DRIVERS}:no_such"}, "has no attribute 'no_such'"),
    ({"driver": f"{DRIVERS}:run_conversation", "driver_outcome": {"termination": "state"}},
     "without 'state' (profile driver_outcome.termination); it has: delegation_count, response_text, status"),
])
def test_a_driver_that_cannot_be_used_is_the_scenarios_error(tmp_path: Path, update: dict, said: str) -> None:
    from tests.user_agents.tool_rlm.agent import planner, root_agent

    before = (planner.model, root_agent.max_iterations)
    result = _run(tmp_path, **update)
    assert result.status == "error" and said in result.error, result.error
    assert (planner.model, root_agent.max_iterations) == before  # the user's agents are left as they were


@pytest.mark.slow
def test_with_no_outcome_key_a_driver_is_judged_against_the_events(tmp_path: Path) -> None:
    """No termination_key, no final_answer_key: the outcome lives only in what the driver returns. A driver that
    reports an answer no event produced fails; one that reads storage passes (it was n/a either way)."""
    unkeyed = {"termination_key": None, "final_answer_key": None, "stale_flag_keys": ()}
    result = _run(tmp_path / "blind", driver=f"{DRIVERS}:reports_done_blindly", driver_outcome=MAPPED, **unkeyed)
    check = result.check("outcome_from_storage")
    assert check.status is Status.FAIL, (check.explanation, check.evidence)
    assert "the driver reports final_answer 'negative' but no event of the turn holds it" in "\n".join(check.evidence)
    result = _run(tmp_path / "reads", driver=f"{DRIVERS}:run_conversation", driver_outcome=MAPPED, **unkeyed)
    check = result.check("outcome_from_storage")
    assert check.status is Status.PASS, (check.explanation, check.evidence)
