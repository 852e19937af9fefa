"""``rlm-conformance import evalset``: an eval set that ADK itself wrote from a real run of an outside agent
becomes a scenario that replays offline, green, with its final_session_state judged; what cannot be scripted is
refused case by case; a broken agent fails the imported scenario's expected state."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.importers.evalset import AgentTree, import_eval_sets
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario, parse_scenario
from tests.importers import kept_services

AGENT_DIR = Path(__file__).resolve().parents[1] / "user_agents" / "tool_rlm"
TARGET = "tests.user_agents.tool_rlm.agent:app"
PROFILE = AGENT_DIR / "rlm-profile.yaml"
TOOL_RLM = AgentTree(llm_agents=("planner", "summarizer"), first="planner", other_agents=("solve_loop",))
# Named as the imported scenario will be: ids the agent draws from uuid4 are seeded by the scenario's name, so
# the replay draws the artifact ids the recording stored (a live eval set's random ids cannot match: docs).
RECORDED = """
name: math_six_times_seven
description: Two turns of the tool_rlm agent, run once to make the eval set ADK writes from its session.
profile: {profile}
sessions:
  - user: u7
    initial_state: {{"user:tier": gold}}
    turns:
      - user: What is six times seven?
      - user: And plus one?
script:
  planner:
    - call: run_python
      args: {{code: "print(6 * 7)"}}
    - text: Ran it; waiting for the notes.
    - call: finish
      args: {{answer: "42"}}
    - text: It is 42.
    - call: finish
      args: {{answer: "43"}}
    - text: It is 43.
  summarizer:
    - text: "The code printed 42."
"""


def _eval_set_from_a_real_run(tmp_path: Path) -> Path:
    """Run the agent, read its stored session, and let ADK's own generator write the eval set."""
    from google.adk.evaluation.eval_case import EvalCase, SessionInput
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator

    scenario = parse_scenario(RECORDED.format(profile=PROFILE), path=str(tmp_path / "math_six_times_seven.yaml"),
                              stem="math_six_times_seven")
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path / "c",
                                               session_service="tests.importers.kept_services:kept_memory"))
    assert result.error is None, result.error
    service = kept_services.KEPT[-1]
    session = asyncio.run(service.get_session(app_name="tool_rlm", user_id="u7", session_id="math_six_times_seven-0"))
    case = EvalCase(eval_id="six times seven", conversation=EvaluationGenerator.convert_events_to_eval_invocations(
        session.events), session_input=SessionInput(app_name="tool_rlm", user_id="u7", state={"user:tier": "gold"}),
        final_session_state=dict(session.state))
    path = tmp_path / "material" / "math.evalset.json"
    path.parent.mkdir()
    path.write_text(EvalSet(eval_set_id="math", eval_cases=[case]).model_dump_json(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def eval_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _eval_set_from_a_real_run(tmp_path_factory.mktemp("evalset"))


@pytest.mark.slow
def test_a_recorded_eval_case_replays_green_with_its_final_state(eval_set: Path, tmp_path: Path) -> None:
    [imported], refused = import_eval_sets(eval_set, TOOL_RLM, exact_state=True, profile=str(PROFILE))
    assert not refused
    script = imported.scenario["script"]
    assert [s.get("call") or "text" for s in script["planner"]] == ["run_python", "text", "finish", "text",
                                                                     "finish", "text"]
    assert script["summarizer"] == [{"text": "The code printed 42."}]
    assert imported.scenario["sessions"][0]["user"] == "u7"
    assert imported.scenario["expect"]["state"]["answer"] == "43"
    path = tmp_path / f"{imported.name}.yaml"
    path.write_text(yaml.safe_dump(imported.scenario, sort_keys=False), encoding="utf-8")
    result = run_scenario(load_scenario(path), RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path))
    failing = {c.name: c.evidence for c in result.checks if c.status.value == "fail"}
    assert result.status == "pass", failing or result.error
    expectations = result.check("scenario_expectations")
    assert any("state (exact)" in line for line in expectations.evidence)


def test_the_command_writes_validated_files_and_refuses_what_it_cannot_script(
        eval_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(eval_set.read_text(encoding="utf-8"))
    simulated = {"eval_id": "simulated", "conversation_scenario": {"starting_prompt": "hi",
                                                                   "conversation_plan": "Ask twice."}}
    data["eval_cases"].append(simulated)
    source = tmp_path / "two.evalset.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["import", "evalset", str(source), "--target", TARGET, "--profile", str(PROFILE),
                 "--out", "found"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "wrote found/two_six_times_seven.yaml" in out
    assert "refused" in out and "eval case 'simulated': a conversation_scenario" in out
    written = tmp_path / "found" / "two_six_times_seven.yaml"
    assert written.read_text(encoding="utf-8").startswith("# Imported from")
    assert load_scenario(written).expect.state_match == "subset"
    # Again: the file is in the way, so the case gets a new name rather than overwriting it.
    assert main(["import", "evalset", str(source), "--target", TARGET, "--out", "found"]) == 1
    assert (tmp_path / "found" / "two_six_times_seven_2.yaml").is_file()
    assert main(["import", "evalset", str(tmp_path / "nope.json"), "--target", TARGET]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_the_older_test_json_format_imports_with_adks_converter(tmp_path: Path) -> None:
    old = [{"query": "Roll a die", "expected_tool_use": [{"tool_name": "roll", "tool_input": {"sides": 6}}],
            "reference": "I rolled a 4."}]
    path = tmp_path / "dice.test.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    single = AgentTree(llm_agents=("roller",), first="roller")
    [imported], _ = import_eval_sets(path, single)
    assert imported.scenario["script"] == {"roller": [{"call": "roll", "args": {"sides": 6}},
                                                      {"text": "I rolled a 4."}]}
    _, refused = import_eval_sets(path, TOOL_RLM)
    assert "names no author for its tool calls" in refused[0].reason


@pytest.mark.slow
def test_a_broken_agent_fails_the_imported_expected_state(eval_set: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The same imported case against the agent with a defect: finish forgets the answer."""
    from tests.user_agents.tool_rlm import agent

    [imported], _ = import_eval_sets(eval_set, TOOL_RLM, profile=str(PROFILE))
    path = tmp_path / f"{imported.name}.yaml"
    path.write_text(yaml.safe_dump(imported.scenario, sort_keys=False), encoding="utf-8")

    def forgetful_finish(answer: str, tool_context) -> dict:
        tool_context.state["status"] = "done"
        tool_context.actions.escalate = True
        return {"ok": True}

    forgetful_finish.__name__ = "finish"
    tools = agent.planner.tools
    monkeypatch.setattr(agent.planner, "tools", [t if getattr(t, "__name__", "") != "finish" else forgetful_finish
                                                 for t in tools])
    result = run_scenario(load_scenario(path), RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path))
    check = result.check("scenario_expectations")
    assert check.status.value == "fail" and any("state 'answer'" in line for line in check.evidence)


@pytest.mark.parametrize("marked", [True, False], ids=["adk2-final-event-marked", "adk1-final-event-left-out"])
def test_a_final_response_a_custom_agent_gave_is_not_scripted(marked: bool) -> None:
    """An executor (a BaseAgent, no model) reported "Executed code (rc=0)." as the turn's final response: the
    importer gave it to the planner as one more answer, and the replay failed 'script.planner[1] never asked for'
    (a newcomer's report). Running the executor gives its report again: it is not a step of anyone's script."""
    from google.adk.evaluation.eval_case import EvalCase, Invocation, InvocationEvent, InvocationEvents
    from google.genai import types

    def content(text: str) -> types.Content:
        return types.Content(role="model", parts=[types.Part(text=text)])

    report = "Executed code (rc=0)."
    events = [InvocationEvent(author="planner", content=content("```python\nprint(42)\n```")),
              InvocationEvent(author="solve_loop", content=content(report))]
    events += [InvocationEvent(author="solve_loop", content=None)] if marked else []
    case = EvalCase(eval_id="custom final", conversation=[Invocation(
        user_content=types.Content(role="user", parts=[types.Part(text="Six times seven?")]),
        intermediate_data=InvocationEvents(invocation_events=events), final_response=content(report))])
    from harness.importers.evalset import scenario_from_case

    scenario = scenario_from_case(case, TOOL_RLM, source="x.evalset.json", name="custom_final", exact_state=False,
                                  profile=None)
    assert scenario["script"] == {"planner": [{"text": "```python\nprint(42)\n```"}]}


def test_a_final_response_is_scripted_where_it_was_given() -> None:
    """In a LoopAgent's turn, ADK's conversion takes the last text answer as the final response and leaves an empty
    event where it was; a later exit tool call (its response ends the loop without text) comes after it. Appending
    the text after the call ended the replayed turn at the call, one model answer early (an outside agent's
    evalset, made by ADK's own conversion, was not green)."""
    from google.adk.evaluation.eval_case import EvalCase, Invocation, InvocationEvent, InvocationEvents
    from google.genai import types

    from harness.importers.evalset import scenario_from_case

    def content(*parts: types.Part) -> types.Content:
        return types.Content(role="model", parts=list(parts))

    events = [InvocationEvent(author="planner", content=content(types.Part(function_call=types.FunctionCall(
                  name="run_python", args={"code": "print(42)"})))),
              InvocationEvent(author="planner", content=None),  # "It printed 42.", moved to final_response
              InvocationEvent(author="planner", content=content(types.Part(function_call=types.FunctionCall(
                  name="finish", args={"answer": "42"}))))]
    case = EvalCase(eval_id="loop", conversation=[Invocation(
        user_content=types.Content(role="user", parts=[types.Part(text="Six times seven?")]),
        intermediate_data=InvocationEvents(invocation_events=events),
        final_response=content(types.Part(text="It printed 42.")))])
    scenario = scenario_from_case(case, TOOL_RLM, source="x.evalset.json", name="loop", exact_state=False,
                                  profile=None)
    assert scenario["script"]["planner"] == [{"call": "run_python", "args": {"code": "print(42)"}},
                                             {"text": "It printed 42."},
                                             {"call": "finish", "args": {"answer": "42"}}]
