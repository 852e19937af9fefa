"""The drafts for the harness (profile, scenarios) fit the example agent.

The scenarios are validated by the harness's scenario model (imported here, in a test, only), then
run with this folder's own fakes -- not through harness/ -- and their expectations read through the
profile: its names must be the agent's, its termination map must explain how each run ended.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from examples.seed004_rlm.agent import app, build_root_agent
from tests.examples.conftest import walk_agents, run_agent

FOLDER = Path(__file__).resolve().parents[2] / "examples" / "seed004_rlm"
PROFILE = yaml.safe_load((FOLDER / "rlm-profile.yaml").read_text(encoding="utf-8"))
SCENARIOS = sorted((FOLDER / "scenarios").glob("*.yaml"))
AGENT_NAMES = {agent.name for agent in walk_agents(app.root_agent)}


def test_profile_names_the_agents_and_keys_of_the_tree() -> None:
    for field in ("loop_agent", "analyst", "executor", "summary_author"):
        assert PROFILE[field] in AGENT_NAMES, field
    assert PROFILE["results_processor"] is None
    assert PROFILE["target"] == "examples.seed004_rlm.agent:app" and PROFILE["name"] == app.name
    for rule in PROFILE["contract"]:
        assert set(rule["writers"]) <= AGENT_NAMES, rule
    assert set(PROFILE["termination_map"].values()) <= {"final_answer", "exit_loop", "max_iterations", "fatal_error"}


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_is_valid_for_the_harness_and_names_this_agent(path: Path) -> None:
    from harness.scenario.models import Scenario

    scenario = Scenario.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert scenario.name == path.stem
    assert scenario.profile == "../rlm-profile.yaml" and scenario.target is None
    assert set(scenario.script) <= AGENT_NAMES | {"sub_lm"}


def _sub_lm_answer(steps: list[dict[str, Any]]):
    """Answer llm_query like the scripted endpoint: a step's `when` picks its prompt, the others go in order."""
    lock = threading.Lock()
    pending = list(steps)

    def answer(prompt: str) -> str:
        with lock:
            step = next((s for s in pending if s.get("when") and s["when"] in prompt), None) \
                or next(s for s in pending if not s.get("when"))
            pending.remove(step)
        time.sleep(step.get("delay", 0))
        return step["text"]

    return answer, pending


@pytest.mark.slow
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
async def test_scenario_runs_as_expected_on_the_agent(path: Path, sublm) -> None:
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    (session,) = spec["sessions"]
    script = {agent: [step["text"] for step in steps] for agent, steps in spec["script"].items() if agent != "sub_lm"}
    answer, pending = _sub_lm_answer(spec["script"].get("sub_lm", []))
    fake = sublm(answer)
    run = await run_agent(build_root_agent, app_name="seed004_rlm", script=script, context=spec.get("context"),
                          turns=[turn["user"] for turn in session["turns"]], max_iterations=spec["max_iterations"])
    assert not pending, "sub-LM answers never asked for"
    stored = (await run.stored_session()).state
    expect = spec["expect"]
    assert len(run.deltas_of(PROFILE["executor"])) == expect["executions"]
    status = stored.get(PROFILE["termination_key"])
    assert PROFILE["termination_map"].get(status) == expect["termination"]
    if "final_answer" in expect:
        assert stored[PROFILE["final_answer_key"]] == expect["final_answer"]
    for key, value in expect.get("state", {}).items():
        assert stored.get(key) == value, key
    if any(step.get("when") for step in spec["script"].get("sub_lm", [])):
        assert fake.max_in_flight >= 2, "the batch was not sent concurrently"
    if len(session["turns"]) > 1:
        flags = PROFILE["stale_flag_keys"]
        for turn in run.turns[1:]:
            first = turn[0]
            assert first.author == "context_loader"  # the pipeline's first agent clears the flags
            assert {k: first.actions.state_delta.get(k, "missing") for k in flags} == dict.fromkeys(flags)
