"""explore on an agent that calls a sub-agent through ADK's ``AgentTool`` (tests/user_agents/agent_tool_rlm): the
sub-agent is in no ``sub_agents`` list, yet its model answers each call of the tool. Unscripted, every example
that called the tool ran its model out of answers (discarded, a traceback on stderr each)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.explore.findings import judge
from harness.explore.library import load_library
from harness.explore.plan import Plan, SessionPlan, StepPlan, to_scenario
from harness.explore.target_model import describe_target
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.targets.profile import load_profile

TARGET = "tests.user_agents.agent_tool_rlm.agent:app"
PROFILE = Path(__file__).resolve().parents[1] / "user_agents" / "agent_tool_rlm" / "rlm-profile.yaml"


def test_the_agent_behind_an_agent_tool_is_known_with_the_tool_that_runs_it() -> None:
    model = describe_target(TARGET, load_profile(PROFILE))
    assert [a.name for a in model.agents] == ["solver", "coder"]
    assert model.agent("coder").via_tool == "coder" and model.agent("solver").via_tool is None
    assert {t.name for t in model.other_tools} == {"coder"}  # the analyst may call it: a generated call step


def test_each_call_of_the_agent_tool_is_answered_and_the_example_is_judged(capfd: pytest.CaptureFixture[str]) -> None:
    profile = load_profile(PROFILE)
    model = describe_target(TARGET, profile)
    call = StepPlan(kind="call", tool="coder", args=json.dumps({"request": "add two numbers"}))
    plan = Plan(max_iterations=1, sessions=(SessionPlan("user_1", 1, ("explore_note",)),), steps=(call, call, call),
                context=False)
    scenario = to_scenario(plan, model, load_library(), name="agent_tool", description="three calls of the coder")
    assert len(scenario.script["coder"]) > len(scenario.script["solver"]) - len(plan.steps)  # one more per call
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, target=TARGET, profile=profile,
                                               profile_path=PROFILE))
    verdict = judge(result, frozenset(c.name for c in result.checks))
    assert verdict.discarded is None and not verdict.raised, (verdict, result.error)
    assert sum(1 for r in result.trace.llm_requests if r.agent == "coder") == 3
    # ADK runs the coder in a nested Runner, on a session of its own service: its live state is judged against that
    # service, not against the harness's (where the session does not exist: a false 'mutated without an event').
    assert next(c for c in result.checks if c.name == "no_unpersisted_mutation").status.value == "pass"
    assert "Traceback" not in capfd.readouterr().err
