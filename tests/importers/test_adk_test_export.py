"""``rlm-conformance export adk-test``: a scenario of an outside agent (tests/user_agents/digest_rlm) exported as an
`adk test` fixture into the target's agent folder; ADK's own runner (pytest over agent_test_runner, as `adk test`
runs it) passes on it for the correct agent and fails it for a broken one; importing it back gives the scenario's
conversation. A target ADK's AgentLoader cannot load, code asking the sub-model, and ADK 1.x are refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

import adk_compat
from adk_compat import HAS_ADK_TEST_RUNNER
from harness.cli import main
from harness.importers.adk_test import import_fixtures
from harness.importers.adk_test_export import AdkTestExportError, agent_folder
from harness.importers.evalset import AgentTree
from tests.importers.adk_test_agents import DIGEST_DIR, agent_folder as make_agent_folder, run_adk_test

PROFILE = DIGEST_DIR / "rlm-profile.yaml"
SCENARIO = DIGEST_DIR / "scenarios" / "digest_once.yaml"
needs_adk_test = pytest.mark.skipif(not HAS_ADK_TEST_RUNNER,
                                    reason="ADK 1.x has no `adk test` (google.adk.cli.agent_test_runner)")


def _export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario_text: str, capsys) -> tuple[int, str, Path]:
    """Export ``scenario_text`` for a copy of digest_rlm at tmp_path/exported/digest_rlm."""
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = make_agent_folder(tmp_path / "exported")
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / SCENARIO.name).write_text(scenario_text.replace("../rlm-profile.yaml", str(PROFILE)),
                                           encoding="utf-8")
    code = main(["export", "adk-test", "--scenarios-dir", str(scenarios), "--target",
                 "exported.digest_rlm.agent:app", "--profile", str(PROFILE)])
    return code, capsys.readouterr().out, folder


@pytest.mark.slow
@needs_adk_test
def test_adks_own_runner_passes_the_exported_fixture_on_the_correct_agent_and_fails_a_broken_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    code, printed, folder = _export(tmp_path, monkeypatch, SCENARIO.read_text(encoding="utf-8"), capsys)
    assert code == 0, printed
    fixture = folder / "tests" / "digest_once.json"
    assert fixture.is_file(), printed
    broken = make_agent_folder(tmp_path / "exported", "digest_unmarking", broken="unmarking_app")
    shutil.copytree(folder / "tests", broken / "tests")
    ran = run_adk_test(tmp_path / "exported")
    assert "1 failed, 1 passed" in ran.stdout, ran.stdout[-3000:]
    assert "FAILED" in ran.stdout and "digest_unmarking/digest_once.json" in ran.stdout

    # Imported back: the scenario's conversation, and the state the correct agent left.
    [imported], refused = import_fixtures(tmp_path / "exported" / "digest_rlm", AgentTree(
        llm_agents=("coder",), first="coder", other_agents=("digest_loop", "runner", "digest")))
    assert not refused
    original = yaml.safe_load(SCENARIO.read_text(encoding="utf-8"))
    assert imported.scenario["sessions"][0]["turns"] == original["sessions"][0]["turns"]
    assert len(imported.scenario["script"]["coder"]) == len(original["script"]["coder"])
    assert imported.scenario["expect"]["state"]["user:summary"] == "1 line(s); last: 43"


@needs_adk_test
def test_a_target_that_is_not_an_agent_folder_is_refused_before_anything_runs() -> None:
    with pytest.raises(AdkTestExportError, match=r"`app` or `root_agent` from an agent folder's agent.py"):
        agent_folder("tests.user_agents.digest_rlm.broken:stale_app")
    with pytest.raises(AdkTestExportError, match="needs the agent folder's module"):
        agent_folder("reference")


def test_adk_1_has_no_adk_test_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adk_compat, "HAS_ADK_TEST_RUNNER", False)
    with pytest.raises(AdkTestExportError, match="ADK 1.x does not have"):
        agent_folder("tests.user_agents.digest_rlm.agent:app")


@needs_adk_test
def test_code_asking_the_sub_model_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    text = SCENARIO.read_text(encoding="utf-8") + "  sub_lm:\n    - text: '42'\n"
    code, printed, folder = _export(tmp_path, monkeypatch, text, capsys)
    assert code == 1
    assert "not exported scenario digest_once: its code asks the sub-model" in printed
    assert not (folder / "tests").exists()


@needs_adk_test
def test_turns_sending_a_state_delta_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    text = SCENARIO.read_text(encoding="utf-8").replace(
        "      - user: And plus one?\n", "      - user: And plus one?\n        state_delta: {'user:unit': m}\n")
    code, printed, folder = _export(tmp_path, monkeypatch, text, capsys)
    assert code == 1
    assert "turn(s) 0.1 (session.turn) send a state_delta with the message" in printed
    assert not (folder / "tests").exists()


@pytest.mark.slow
@needs_adk_test
def test_model_calls_no_event_holds_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """tests/user_agents/agent_tool_rlm: its coder runs inside an AgentTool, in a session of its own; ADK's mock
    would run out of contents at its call."""
    source = DIGEST_DIR.parent / "agent_tool_rlm"
    monkeypatch.syspath_prepend(str(tmp_path))
    shutil.copytree(source, tmp_path / "exported" / "agent_tool_rlm", ignore=shutil.ignore_patterns("scenarios"))
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    text = (source / "scenarios" / "coder_then_run.yaml").read_text(encoding="utf-8")
    (scenarios / "coder_then_run.yaml").write_text(
        text.replace("../rlm-profile.yaml", str(source / "rlm-profile.yaml")), encoding="utf-8")
    code = main(["export", "adk-test", "--scenarios-dir", str(scenarios), "--target",
                 "exported.agent_tool_rlm.agent:app", "--profile", str(source / "rlm-profile.yaml")])
    printed = capsys.readouterr().out
    assert code == 1
    assert "model call(s) that leave no event in the session (coder: 1 call(s), 0 served" in printed
    assert not (tmp_path / "exported" / "agent_tool_rlm" / "tests").exists()
