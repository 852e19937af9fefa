"""A user's agent as a target with no glue: model on every LlmAgent, the gateway for its own clients,
Runner services, loop size, context, stable ids offline, the outcome read through the profile.

tests/user_agents/tool_rlm is written as a user would write it (no harness import): it delegates through a
tool that runs code in a subprocess, where llm_query() is a plain google.genai.Client().
"""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path

import httpx
import pytest

from harness.run.determinism import deterministic_ids
from harness.llm.gateway import BASE_URL_VARIABLE, ModelGateway, routed_model_environment
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.scenario.script import TextStep
from harness.targets.choice import choose_target
from harness.targets.profile import load_profile

AGENT_DIR = Path(__file__).resolve().parents[1] / "user_agents" / "tool_rlm"
SCENARIO = AGENT_DIR / "scenarios" / "llm_query_tool.yaml"


def _events(result) -> list[tuple[str, dict]]:
    return [(e.author, e.emitted_delta) for e in result.trace.events if e.emitted_delta]


def test_the_scenario_names_its_profile_and_the_profile_its_target() -> None:
    choice = choose_target(load_scenario(SCENARIO))
    assert choice.spec == "tests.user_agents.tool_rlm.agent:app" and choice.name == "tool_rlm"
    assert choice.profile_path == (AGENT_DIR / "rlm-profile.yaml").resolve()


@pytest.mark.slow
def test_scripted_run_reaches_the_agents_and_the_subprocess_through_the_harness(tmp_path: Path) -> None:
    result = run_scenario(load_scenario(SCENARIO), RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path))
    assert result.error is None and not result.crashed_turns, result.error
    deltas = dict(_events(result)[:1])
    # llm_query() in the tool's subprocess got the scripted sub_lm answer through the gateway.
    assert deltas["planner"]["last_output"] == "label: positive\n"
    # The artifact service the harness gave the Runner saved the code; the id is the agent's own uuid4.
    assert any(k.startswith("artifact:code_") for k in deltas["planner"])
    assert result.session_service == "InMemorySessionService"
    assert "gateway" in result.trace.model_route
    assert [t.outcome.termination for t in result.trace.turns] == ["final_answer", "final_answer"]  # 'done', mapped
    assert result.trace.turns[-1].outcome.final_answer == "still positive"


@pytest.mark.slow
def test_offline_runs_draw_the_same_ids(tmp_path: Path) -> None:
    runs = [run_scenario(load_scenario(SCENARIO), RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path))
            for _ in range(2)]
    ids = [[k for _, d in _events(r) for k in d if k.startswith("artifact:")] for r in runs]
    assert ids[0] and ids[0] == ids[1]


@pytest.mark.slow
def test_replay_of_the_committed_cassette_is_judged_like_the_reference() -> None:
    result = run_scenario(load_scenario(SCENARIO), RunOptions(llm_mode=LlmMode.REPLAY))
    assert result.check("cassette").status.value == "pass", result.check("cassette").explanation


@pytest.mark.slow
def test_max_iterations_and_context_reach_any_target(tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIO).model_copy(update={"max_iterations": 1, "context": {"k": 1}})
    profile = load_profile(AGENT_DIR / "rlm-profile.yaml").model_copy(update={"context_key": "task_context"})
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path, profile=profile))
    planner_turn0 = [e for e in result.trace.events if e.author == "planner" and e.turn == 0]
    assert planner_turn0 and not any("answer" in e.emitted_delta for e in planner_turn0)  # one iteration only
    assert result.trace.persisted[0].session_state["task_context"] == {"k": 1}
    from tests.user_agents.tool_rlm.agent import root_agent

    assert root_agent.max_iterations == 4  # put back after the run


@pytest.mark.slow
def test_a_module_level_app_gets_its_own_model_back_after_the_run(tmp_path: Path) -> None:
    from tests.user_agents.tool_rlm.agent import planner, summarizer

    before = (planner.model, summarizer.model)
    run_scenario(load_scenario(SCENARIO), RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path))
    assert (planner.model, summarizer.model) == before


def test_the_gateway_forwards_unchanged_and_sets_the_key(tmp_path: Path) -> None:
    from harness.llm.scripted_endpoint import ScriptedEndpoint

    with ScriptedEndpoint({"sub_lm": (TextStep(text="forty-two"),)}) as endpoint, \
            ModelGateway(upstream=endpoint.base_url, api_key="scripted-dummy-key") as gateway:
        reply = httpx.post(f"{gateway.base_url}/v1beta/models/gemini-2.5-flash:generateContent",
                           json={"contents": [{"role": "user", "parts": [{"text": "What is 6*7?"}]}]},
                           headers={"x-goog-api-key": "the-callers-key"})
        assert reply.status_code == 200
        assert reply.json()["candidates"][0]["content"]["parts"][0]["text"] == "forty-two"
        assert gateway.forwarded == 1 and endpoint.calls[0].agent == "sub_lm"


def test_the_routed_environment_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "users-own")
    monkeypatch.delenv(BASE_URL_VARIABLE, raising=False)
    with ModelGateway(upstream="http://127.0.0.1:9", api_key="k") as gateway, routed_model_environment(gateway):
        assert os.environ[BASE_URL_VARIABLE] == gateway.base_url and os.environ["GOOGLE_API_KEY"] != "users-own"
    assert os.environ["GOOGLE_API_KEY"] == "users-own" and BASE_URL_VARIABLE not in os.environ


def test_deterministic_ids_repeat_per_seed_and_leave_randomness_alone_after() -> None:
    with deterministic_ids("s"):
        first = (uuid.uuid4(), random.random())
    with deterministic_ids("s"):
        second = (uuid.uuid4(), random.random())
    with deterministic_ids("other"):
        other = uuid.uuid4()
    assert first == second and other != first[0] and first[0].version == 4
    assert uuid.uuid4() != first[0]
