"""``rlm-conformance import adk-test``: a fixture ADK's own ``rebuild_tests`` wrote for an outside agent
(tests/user_agents/digest_rlm/tests/digest_twice.json, made by tests/importers/adk_test_agents.py) becomes a scenario
that replays offline, green on the correct agent, failing a wrong final state, and catching each planted defect of
digest_rlm/broken.py by the check that owns it; what cannot be scripted is refused fixture by fixture."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from adk_compat import HAS_ADK_TEST_RUNNER
from harness.cli import main
from harness.importers.adk_test import import_fixtures
from harness.importers.evalset import AgentTree
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import parse_scenario
from harness.targets.profile import load_profile
from tests.importers.adk_test_agents import DIGEST_DIR, FIXTURE, agent_folder, rebuilt_fixture

TARGET = "tests.user_agents.digest_rlm.agent:app"
PROFILE = DIGEST_DIR / "rlm-profile.yaml"
DIGEST = AgentTree(llm_agents=("coder",), first="coder", other_agents=("digest_loop", "runner", "digest"))


def _fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _folder_with(tmp_path: Path, fixtures: dict[str, object]) -> Path:
    folder = agent_folder(tmp_path / "agents")
    (folder / "tests").mkdir()
    for name, data in fixtures.items():
        (folder / "tests" / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    return tmp_path / "agents"


def _run(tmp_path: Path, fixture: dict, target: str = TARGET):
    imported, refused = import_fixtures(_folder_with(tmp_path, {"digest_twice": fixture}), DIGEST,
                                        profile=str(PROFILE), target=TARGET)
    assert not refused and len(imported) == 1
    text = yaml.safe_dump(imported[0].scenario, sort_keys=False)
    scenario = parse_scenario(text, path=str(tmp_path / f"{imported[0].name}.yaml"), stem=imported[0].name)
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path,
                                               profile=load_profile(PROFILE), target=target))
    assert result.error is None, result.error
    return {c.name: c for c in result.checks if c.status.value == "fail"}


@pytest.mark.slow
@pytest.mark.skipif(not HAS_ADK_TEST_RUNNER, reason="ADK 1.x has no `adk test` (google.adk.cli.agent_test_runner)")
def test_the_committed_fixture_is_what_adks_rebuild_writes(tmp_path: Path) -> None:
    made = rebuilt_fixture(agent_folder(tmp_path))
    assert json.loads(made.read_text(encoding="utf-8")) == _fixture()


def test_the_fixture_becomes_turns_a_script_of_stored_contents_and_the_state_its_deltas_leave() -> None:
    [imported], refused = import_fixtures(DIGEST_DIR.parent, DIGEST, target=TARGET)
    assert not refused
    scenario = imported.scenario
    assert [t["user"] for t in scenario["sessions"][0]["turns"]] == ["What is six times seven?", "And plus one?"]
    served = [step["response"]["candidates"][0]["content"] for step in scenario["script"]["coder"]]
    assert served == [e["content"] for e in _fixture()["events"] if e.get("content", {}).get("role") == "model"]
    assert scenario["expect"] == {"state": {"artifact:1": "consumed", "artifact:2": "consumed", "run_count": 2,
                                            "user:summary": "1 line(s); last: 43"}, "state_match": "subset"}


@pytest.mark.slow
def test_the_imported_fixture_replays_green_on_the_correct_agent(tmp_path: Path) -> None:
    assert _run(tmp_path, _fixture()) == {}


@pytest.mark.slow
def test_a_wrong_final_state_fails_the_expectation(tmp_path: Path) -> None:
    wrong = _fixture()
    for event in wrong["events"]:
        if "user:summary" in event.get("actions", {}).get("stateDelta", {}):
            event["actions"]["stateDelta"]["user:summary"] = "1 line(s); last: 44"
    failed = _run(tmp_path, wrong)
    assert set(failed) == {"scenario_expectations"}
    assert "user:summary" in str(failed["scenario_expectations"].evidence)


@pytest.mark.slow
@pytest.mark.parametrize(("app", "check"), [("stale_app", "stage_gating"), ("unmarking_app", "artifacts_consumed")])
def test_each_planted_defect_is_caught_by_its_check(tmp_path: Path, app: str, check: str) -> None:
    failed = _run(tmp_path, _fixture(), target=f"tests.user_agents.digest_rlm.broken:{app}")
    assert check in failed, sorted(failed)


def test_the_command_writes_what_it_can_and_refuses_the_rest_one_by_one(tmp_path: Path, capsys) -> None:
    good = _fixture()
    with_mocks = {**good, "mocks": {"random.random": [0.5]}}
    answered = copy.deepcopy(good)
    answered["events"].append({"author": "user", "content": {"role": "user", "parts": [
        {"functionResponse": {"id": "fc-9", "name": "approve", "response": {"ok": True}}}]}})
    stranger = copy.deepcopy(good)
    stranger["events"][1]["author"] = "planner"
    root = _folder_with(tmp_path, {"good": good, "flaky_xfail": good, "random": with_mocks, "approval": answered,
                                   "stranger": stranger, "broken": []})
    out = tmp_path / "scenarios"
    code = main(["import", "adk-test", str(root), "--target", TARGET, "--profile", str(PROFILE), "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 1
    assert sorted(p.name for p in out.iterdir()) == ["digest_rlm_good.yaml"]
    for reason in ("_xfail", "'mocks' fixes what random.random", "carries functionResponse",
                   "model content of 'planner', not an LlmAgent", "broken.json: no events"):
        assert reason in printed, printed
    assert "1 case(s) imported" in printed and "5 refused" in printed


def test_code_asking_the_sub_model_is_named_and_its_answers_taken_from_a_file(tmp_path: Path) -> None:
    fixture = _fixture()
    fixture["events"][1]["content"]["parts"][0]["functionCall"]["args"]["code"] = "print(llm_query('6*7?'))"
    root = _folder_with(tmp_path, {"asks": fixture})
    [imported], _ = import_fixtures(root, DIGEST, target=TARGET)
    assert "coder[0]" in imported.notes[0] and "--sub-lm FILE" in imported.notes[0]
    answers = tmp_path / "sub.yaml"
    answers.write_text("- '42'\n", encoding="utf-8")
    [imported], _ = import_fixtures(root, DIGEST, target=TARGET, sub_lm=answers)
    assert imported.scenario["script"]["sub_lm"] == [{"text": "42"}]


def test_a_folder_without_fixtures_is_named_with_the_fix(tmp_path: Path) -> None:
    shutil.copytree(DIGEST_DIR / "scenarios", tmp_path / "scenarios")
    code = main(["import", "adk-test", str(tmp_path), "--target", TARGET, "--out", str(tmp_path / "out")])
    assert code == 2


def test_an_agent_run_as_a_tool_is_named_with_the_fix(tmp_path: Path, capsys) -> None:
    """tests/user_agents/agent_tool_rlm: the solver's call of its coder (an AgentTool) runs the coder in a session of
    its own, so no fixture holds the coder's answers."""
    folder = tmp_path / "agents" / "agent_tool_rlm"
    (folder / "tests").mkdir(parents=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    fixture = {"events": [
        {"author": "user", "content": {"role": "user", "parts": [{"text": "What is 2 + 2?"}]}},
        {"author": "solver", "content": {"role": "model", "parts": [
            {"functionCall": {"id": "fc-1", "name": "coder", "args": {"request": "print 2 + 2"}}}]}}]}
    (folder / "tests" / "asks_coder.json").write_text(json.dumps(fixture), encoding="utf-8")
    code = main(["import", "adk-test", str(tmp_path / "agents"), "--target",
                 "tests.user_agents.agent_tool_rlm.agent:app", "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert code == 0
    assert "solver[0] -> coder: an agent run as a tool answers in a session of its own" in printed


def test_the_initial_state_is_what_the_fixtures_state_holds_that_no_event_wrote(tmp_path: Path) -> None:
    fixture = {**_fixture(), "state": {"user:tier": "gold", "run_count": 2, "temp:scratch": 1}}
    [imported], _ = import_fixtures(_folder_with(tmp_path, {"seeded": fixture}), DIGEST, target=TARGET)
    assert imported.scenario["sessions"][0]["initial_state"] == {"user:tier": "gold"}
    assert imported.scenario["expect"]["state"]["user:tier"] == "gold"
