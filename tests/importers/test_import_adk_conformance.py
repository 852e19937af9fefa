"""``rlm-conformance import adk-conformance``: a case recorded by ADK's own RecordingsPlugin (as `adk conformance
record` runs it, without `adk web`) becomes a scenario that replays offline in-process; the run's session equals
ADK's recording (check adk_recording_matches), a planted defect fails it and the state invariants, and what
cannot be replayed is refused with the reason."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.importers.adk_conformance import import_cases
from harness.importers.evalset import AgentTree
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario

TARGET = "tests.user_agents.adk_case.agent:app"
TREE = AgentTree(llm_agents=("calculator",), first="calculator")
SPEC = """description: Adds two numbers, then answers again with the user's unit set.
agent: adk_case
initial_state:
  user:unit: cm
user_messages:
  - text: What is 2 plus 3?
  - text: And in metres?
    state_delta:
      user:unit: m
"""


def _canned_responses() -> list:
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=31, candidates_token_count=7,
                                                       total_token_count=38)

    def answer(*parts: types.Part) -> LlmResponse:
        return LlmResponse(content=types.Content(role="model", parts=list(parts)), usage_metadata=usage,
                           finish_reason=types.FinishReason.STOP, model_version="gemini-2.5-flash-001")

    return [answer(types.Part(function_call=types.FunctionCall(name="add", args={"a": 2, "b": 3}))),
            answer(types.Part(text="2 plus 3 is 5 cm.")),
            answer(types.Part(text="That is 0.05 m."))]


async def _record(case: Path) -> None:
    """What `adk conformance record` does through `adk web`, in-process: ADK's RecordingsPlugin writes the
    recordings; the session is dumped with the exclusions cli_record uses."""
    from google.adk.cli.conformance.test_case import TestSpec
    from google.adk.cli.plugins.recordings_plugin import RecordingsPlugin
    from google.adk.models.base_llm import BaseLlm
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.utils.yaml_utils import dump_pydantic_to_yaml
    from google.genai import types

    from tests.user_agents.adk_case.agent import calculator

    responses = _canned_responses()

    class Canned(BaseLlm):
        async def generate_content_async(self, llm_request, stream: bool = False) -> AsyncGenerator:
            yield responses.pop(0)

    spec = TestSpec.model_validate(yaml.safe_load((case / "spec.yaml").read_text()))
    from google.adk.apps import App

    app = App(name=spec.agent, root_agent=calculator.model_copy(update={"model": Canned(model="canned")}),
              plugins=[RecordingsPlugin()])
    service = InMemorySessionService()
    runner = Runner(app=app, session_service=service)
    user = "adk_conformance_test_user"
    session = await service.create_session(app_name=spec.agent, user_id=user, state=spec.initial_state)
    for index, message in enumerate(spec.user_messages):
        delta = dict(message.state_delta or {}) | {"_adk_recordings_config": {
            "dir": str(case), "user_message_index": index, "streaming_mode": "none"}}
        async for _ in runner.run_async(user_id=user, session_id=session.id, state_delta=delta,
                                        new_message=types.UserContent(parts=[types.Part(text=message.text)])):
            pass
    updated = await service.get_session(app_name=spec.agent, user_id=user, session_id=session.id)
    dump_pydantic_to_yaml(updated, case / "generated-session.yaml", sort_keys=False, exclude={
        "state": {"_adk_recordings_config": True},
        "events": {"__all__": {"actions": {"state_delta": {"_adk_recordings_config": True}}}}})


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("conformance") / "tests"
    recorded = root / "tools" / "add_numbers"
    recorded.mkdir(parents=True)
    (recorded / "spec.yaml").write_text(SPEC, encoding="utf-8")
    asyncio.run(_record(recorded))
    unrecorded = root / "tools" / "not_recorded"
    unrecorded.mkdir(parents=True)
    (unrecorded / "spec.yaml").write_text(SPEC, encoding="utf-8")
    return root


def _write(imported, folder: Path) -> Path:
    path = folder / f"{imported.name}.yaml"
    path.write_text(yaml.safe_dump(imported.scenario, sort_keys=False), encoding="utf-8")
    return path


def test_a_recorded_case_replays_and_equals_adks_recording(cases: Path, tmp_path: Path) -> None:
    imported, refused = import_cases(cases, TREE, app_name="adk_case", target=TARGET)
    assert [i.name for i in imported] == ["tools_add_numbers"]
    assert len(refused) == 1 and "no recording next to spec.yaml" in refused[0].reason
    scenario = imported[0].scenario
    assert [t.get("state_delta") for t in scenario["sessions"][0]["turns"]] == [None, {"user:unit": "m"}]
    assert len(scenario["script"]["calculator"]) == 3
    result = run_scenario(load_scenario(_write(imported[0], tmp_path)),
                          RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path))
    check = result.check("adk_recording_matches")
    assert check.status.value == "pass", check.evidence
    failing = {c.name: c.evidence for c in result.checks if c.status.value == "fail"}
    assert result.status == "pass", failing or result.error


def test_a_planted_defect_differs_from_the_recording(cases: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.user_agents.adk_case import agent

    [imported], _ = import_cases(cases, TREE, app_name="adk_case", target=TARGET)

    def add(a: int, b: int, tool_context) -> dict:
        """Add two numbers and remember the sum."""
        tool_context.state["last_sum"] = a + b + 1  # off by one
        tool_context.state["sums"] = int(tool_context.state.get("sums", 0)) + 1
        return {"sum": a + b}

    monkeypatch.setattr(agent.calculator, "tools", [add])
    result = run_scenario(load_scenario(_write(imported, tmp_path)),
                          RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path))
    check = result.check("adk_recording_matches")
    assert check.status.value == "fail"
    assert any(").actions.state_delta.last_sum: recorded 5, the run has 6" in line for line in check.evidence), \
        check.evidence


def test_the_command_and_a_wrong_target(cases: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["import", "adk-conformance", str(cases), "--target", TARGET, "--out", "found"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "wrote found/tools_add_numbers.yaml" in out and "refused" in out
    assert main(["import", "adk-conformance", str(cases / "tools" / "add_numbers"), "--target",
                 "tests.user_agents.tool_rlm.agent:app", "--out", "other"]) == 1
    assert "agent 'adk_case' is not the target's app ('tool_rlm')" in " ".join(capsys.readouterr().out.split())


def test_the_committed_case_replays_green_and_is_what_the_importer_writes(tmp_path: Path) -> None:
    """tests/user_agents/adk_case: the case ADK recorded (committed) and its imported scenario (committed, the
    proof of adk_recording_matches on a broken target) agree, and the correct agent matches the recording."""
    root = Path(__file__).resolve().parents[1] / "user_agents" / "adk_case"
    [imported], _ = import_cases(root / "conformance", TREE, app_name="adk_case", target=TARGET)
    committed = load_scenario(root / "scenarios" / "tools_add_numbers.yaml")
    fresh = load_scenario(_write(imported, tmp_path))
    # The recorded session as this ADK line's Session model dumps it differs between lines; the rest may not.
    without_session = {"expect": {"adk_session"}}
    assert committed.model_dump(exclude=without_session) == fresh.model_dump(exclude=without_session)
    assert committed.expect.adk_session["events"][2]["actions"]["state_delta"] == {"last_sum": 5, "sums": 1}
    result = run_scenario(committed, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path))
    assert result.check("adk_recording_matches").status.value == "pass"
