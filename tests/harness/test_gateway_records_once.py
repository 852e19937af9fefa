"""Every model call through the model gateway is recorded exactly once, and replayed (issue #31, item 3).

An agent's own ``google.genai.Client()`` reaches the run's model through the gateway on 127.0.0.1. In-process,
its call goes through the HTTP clients vcrpy patches, and the gateway forwards it through them again: both hops
used to be recorded, so a cassette held each in-process call twice, replay played one copy, and the ``cassette``
row failed on the other. Now the gateway's forwarded call is the one recorded and played, for an in-process client
(tests/user_agents/inprocess_genai: sync, async, streaming and async streaming) as for a subprocess's
(tests/user_agents/tool_rlm). Offline throughout: scripted recording, then replay with the network guard on.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from harness.llm.modes import LlmMode
from harness.result import ScenarioResult
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.scenario.models import Scenario

USER_AGENTS = Path(__file__).resolve().parents[1] / "user_agents"
IN_PROCESS = USER_AGENTS / "inprocess_genai" / "scenarios" / "inprocess_calls.yaml"
SUBPROCESS = USER_AGENTS / "tool_rlm" / "scenarios" / "llm_query_tool.yaml"
SHAPES = ("sync", "async", "stream", "async_stream")


def one_shape(shape: str) -> Scenario:
    """inprocess_calls cut to the turn that calls the model in ``shape``, and that turn's scripted answers."""
    scenario = load_scenario(IN_PROCESS)
    at = SHAPES.index(shape)
    session = scenario.sessions[0]
    assert session.turns[at].user == shape
    return scenario.model_copy(update={
        "sessions": [session.model_copy(update={"turns": [session.turns[at]]})],
        "script": {agent: [steps[at]] for agent, steps in scenario.script.items()}})


def model_calls(scenario: Scenario) -> int:
    """The model calls a run of ``scenario`` makes when it follows its script (the ``script`` row says it did)."""
    return sum(len(steps) for steps in scenario.script.values())


def recorded_prompts(cassette_dir: Path, scenario: Scenario) -> list[str]:
    """The first text of each interaction's request in the scenario's cassette, in recorded order."""
    [path] = cassette_dir.rglob(f"{scenario.name}.yaml")
    interactions = yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"]
    return [json.loads(i["request"]["body"])["contents"][0]["parts"][0]["text"] for i in interactions]


def record_then_replay(scenario: Scenario, cassette_dir: Path) -> tuple[list[str], ScenarioResult]:
    """Record ``scenario`` from its script, then replay it: the prompts recorded, and the replay's result."""
    recorded = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=cassette_dir, record=True))
    assert recorded.error is None, recorded.error
    assert recorded.check("script").status.value == "pass", recorded.check("script").evidence
    return recorded_prompts(cassette_dir, scenario), run_scenario(
        scenario, RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=cassette_dir))


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES)
def test_an_in_process_client_call_is_recorded_once_and_replayed(shape: str, tmp_path: Path) -> None:
    scenario = one_shape(shape)
    prompts, replayed = record_then_replay(scenario, tmp_path)
    # One interaction per model call: the agent's own call once (not once per hop), and the reporter's.
    calls = model_calls(scenario)
    assert (len(prompts), calls) == (2, 2), prompts
    assert sum(p.startswith(f"[{shape}] ") for p in prompts) == 1, prompts
    # Replay: no miss (an error), every recorded interaction played (the cassette row), none twice (vcrpy plays
    # an interaction once), and the agent got the recorded answer in its own shape.
    assert replayed.error is None, replayed.error
    cassette = replayed.check("cassette")
    assert cassette.status.value == "pass", cassette.explanation
    assert replayed.trace.turns[0].outcome.final_answer == f"42 ({shape})"


@pytest.mark.slow
def test_all_four_shapes_in_one_session_replay_exactly(tmp_path: Path) -> None:
    scenario = load_scenario(IN_PROCESS)
    prompts, replayed = record_then_replay(scenario, tmp_path)
    calls = model_calls(scenario)
    assert (len(prompts), calls) == (8, 8), prompts
    assert replayed.error is None and replayed.check("cassette").status.value == "pass", (
        replayed.error or replayed.check("cassette").explanation)
    assert [t.outcome.final_answer for t in replayed.trace.turns] == [f"42 ({shape})" for shape in SHAPES]


@pytest.mark.slow
def test_an_in_process_call_waits_its_recorded_delay_on_replay(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A scripted ``delay:`` is recorded with the forwarded answer and waited for again when the gateway replays it
    (harness/llm/replay_delays.py), for an in-process call as for a subprocess's."""
    from tests.user_agents.inprocess_genai import agent

    scenario = one_shape("async")
    step = scenario.script["sub_lm"][0]
    scenario = scenario.model_copy(update={"script": {**scenario.script,
                                                      "sub_lm": [step.model_copy(update={"delay": 1.0})]}})
    took: list[float] = []
    ask = agent.ask

    async def timed_ask(shape: str) -> str:
        started = time.monotonic()
        try:
            return await ask(shape)
        finally:
            took.append(time.monotonic() - started)

    monkeypatch.setattr(agent, "ask", timed_ask)
    prompts, replayed = record_then_replay(scenario, tmp_path)
    assert len(prompts) == 2 and replayed.check("cassette").status.value == "pass", prompts
    assert len(took) == 2 and min(took) >= 1.0, took  # recording, then replay: as long as the answer took


@pytest.mark.slow  # the worker subprocess of tool_rlm's run_python, twice
def test_a_subprocess_client_call_is_recorded_once_and_replayed(tmp_path: Path) -> None:
    scenario = load_scenario(SUBPROCESS)
    prompts, replayed = record_then_replay(scenario, tmp_path)
    calls = model_calls(scenario)
    assert (len(prompts), calls) == (8, 8), prompts
    assert prompts.count("Classify: great product") == 1
    assert replayed.error is None and replayed.check("cassette").status.value == "pass", (
        replayed.error or replayed.check("cassette").explanation)


@pytest.mark.slow
def test_an_in_process_call_the_cassette_lacks_is_still_a_miss(tmp_path: Path) -> None:
    """Calls to the gateway pass the cassette by, but the call the gateway forwards is judged as ever: one the
    cassette does not hold fails the cassette row, named by its caller (the prompt)."""
    scenario = one_shape("sync")
    record_then_replay(scenario, tmp_path)
    [path] = tmp_path.rglob(f"{scenario.name}.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["interactions"] = [i for i in data["interactions"] if "[sync] " not in i["request"]["body"]]
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    replayed = run_scenario(scenario, RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=tmp_path))
    cassette = replayed.check("cassette")
    assert cassette.status.value == "fail"
    assert "not in the cassette" in cassette.explanation and "sub_lm:[sync]" in cassette.explanation
