"""``capture`` names the sub-model calls made from executed code (no stored session holds their answers) and takes
them from ``--sub-lm FILE``, as ``import evalset`` does: the captured session then replays green."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.targets.profile import load_profile
from tests.importers.test_import_evalset import PROFILE, TARGET

SCENARIO = Path(__file__).resolve().parents[1] / "user_agents" / "tool_rlm" / "scenarios" / "llm_query_tool.yaml"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tool_rlm's code asks the sub-model (llm_query in its run_python worker); ADK's SQLite store keeps the
    agents' events only."""
    folder = tmp_path_factory.mktemp("store")
    path = folder / "sessions.db"
    profile = load_profile(PROFILE).model_copy(update={"session_service_args": {
        "db_url": f"sqlite+aiosqlite:///{path}"}})
    result = run_scenario(load_scenario(SCENARIO), RunOptions(
        llm_mode=LlmMode.SCRIPTED, cassette_dir=folder / "c", profile=profile,
        session_service="google.adk.sessions:DatabaseSessionService"))
    assert result.error is None and result.status == "pass", result.error
    return path


def _capture(store: Path, out: Path, *extra: str) -> int:
    return main(["capture", str(store), "--session", "llm_query_tool-0", "--target", TARGET, "--profile",
                 str(PROFILE), "--out", str(out), "--name", "llm_query_tool", *extra])


def _replay(path: Path, tmp_path: Path):
    return run_scenario(load_scenario(path), RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path / "c"))


@pytest.mark.slow
def test_capture_names_the_sub_model_calls_then_takes_their_answers(store: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    bare = tmp_path / "bare"
    assert _capture(store, bare) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "note: the code of planner[0] calls llm_query/llm_query_batched, whose answers no stored session " \
           "holds" in said and "--sub-lm FILE" in said
    result = _replay(bare / "llm_query_tool.yaml", tmp_path)
    assert result.check("script").status.value == "fail"  # stops at the sub-model's call, as the note said

    answers = tmp_path / "answers.yaml"
    answers.write_text("llm_query_tool: [positive]\n", encoding="utf-8")
    given = tmp_path / "given"
    assert _capture(store, given, "--sub-lm", str(answers)) == 0
    assert f"asks the sub-model: 1 answer(s) from {answers}" in " ".join(capsys.readouterr().out.split())
    scenario = load_scenario(given / "llm_query_tool.yaml")
    assert [s.text for s in scenario.script["sub_lm"]] == ["positive"]
    result = _replay(given / "llm_query_tool.yaml", tmp_path)
    failing = {c.name: c.evidence for c in result.checks if c.status.value == "fail"}
    assert result.status == "pass", failing or result.error
    assert result.check("script").status.value == "pass"  # the sub-model's answer was asked for and served


def test_an_unreadable_answers_file_exits_2_naming_it(store: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "answers.yaml"
    bad.write_text("just text\n", encoding="utf-8")
    assert _capture(store, tmp_path / "out", "--sub-lm", str(bad)) == 2
    assert "answers.yaml: sub-model answers are a YAML list" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "out").exists()
