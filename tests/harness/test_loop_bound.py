"""The target's own loop bound: a scenario that sets no max_iterations runs the agent's LoopAgent as it ships it
(tool_rlm's solve_loop: 4), one that sets it runs that; explore's generated scenarios leave it out unless they
change it, and read the target's own bound off its tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.explore.library import load_library
from harness.explore.plan import Plan, SessionPlan, StepPlan, to_scenario
from harness.explore.target_model import AgentModel, describe_target, model_from
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.targets.profile import TargetProfile, load_profile

AGENT_DIR = Path(__file__).resolve().parents[1] / "user_agents" / "tool_rlm"
SCENARIO = AGENT_DIR / "scenarios" / "llm_query_tool.yaml"


def _planner_requests(tmp_path: Path, **update) -> int:
    """One turn in which the planner never finishes: the loop runs to its bound."""
    base = load_scenario(SCENARIO)
    script = {"planner": [{"text": "Still thinking."}] * 10, "summarizer": [{"text": "Nothing yet."}] * 10}
    scenario = base.model_validate({**base.model_dump(mode="json", exclude_defaults=True), "script": script,
                                    "sessions": [{"user": "u1", "turns": [{"user": "Anything?"}]}],
                                    "expect": {}, **update})
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path,
                                               profile=load_profile(AGENT_DIR / "rlm-profile.yaml")))
    assert result.error is None, result.error
    return len(result.trace.requests_of("planner"))


@pytest.mark.slow
def test_a_scenario_without_max_iterations_runs_the_agents_own_bound(tmp_path: Path) -> None:
    assert _planner_requests(tmp_path / "own") == 4  # LoopAgent(max_iterations=4), not the harness's 6
    assert load_scenario(SCENARIO).max_iterations is None
    assert _planner_requests(tmp_path / "set", max_iterations=2) == 2


def test_explore_reads_the_targets_own_bound() -> None:
    profile = load_profile(AGENT_DIR / "rlm-profile.yaml")
    assert describe_target("tests.user_agents.tool_rlm.agent:app", profile).loop_bound == 4


def test_generated_scenarios_write_max_iterations_only_when_they_change_it() -> None:
    model = model_from("pkg.agent:app", TargetProfile(analyst="coder"), (AgentModel("coder"),))
    model = model.__class__(**{**model.__dict__, "loop_bound": 4})
    library = load_library()
    plan = Plan(max_iterations=None, sessions=(SessionPlan("user_1", 1),), steps=(StepPlan(kind="text"),))
    own = to_scenario(plan, model, library, name="x", description="x")
    assert own.max_iterations is None and "max_iterations" not in own.model_dump(exclude_defaults=True)
    assert len(own.script["coder"]) >= 1 + 3 * 4  # padded for the target's own 4 iterations
    changed = to_scenario(Plan(max_iterations=2, sessions=plan.sessions, steps=plan.steps), model, library,
                          name="x", description="x")
    assert changed.model_dump(exclude_defaults=True)["max_iterations"] == 2
    assert "max_iterations own" in plan.describe()
