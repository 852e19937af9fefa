"""``rlm-conformance capture``: a session an outside agent stored in ADK's own SQLite store becomes a scenario
that replays green on the correct agent, fails the invariant that names a planted defect, and holds no key."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.llm.cassettes import SCRUBBED
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario, parse_scenario
from harness.targets.profile import load_profile
from tests.importers.test_import_evalset import PROFILE, RECORDED, TARGET
from tests.secret_shapes import google_api_key

SECRET = google_api_key("incident")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tool_rlm agent's two turns, persisted by ADK's DatabaseSessionService on SQLite."""
    folder = tmp_path_factory.mktemp("store")
    path = folder / "sessions.db"
    text = RECORDED.format(profile=PROFILE).replace("And plus one?", f"And plus one? My key is {SECRET}")
    scenario = parse_scenario(text, path=str(folder / "math_six_times_seven.yaml"), stem="math_six_times_seven")
    profile = load_profile(PROFILE).model_copy(update={"session_service_args": {
        "db_url": f"sqlite+aiosqlite:///{path}"}})
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=folder / "c", profile=profile,
                                               session_service="google.adk.sessions:DatabaseSessionService"))
    assert result.error is None and result.status == "pass", result.error
    return path


def _capture(store: Path, out: Path, *extra: str) -> int:
    return main(["capture", str(store), "--session", "math_six_times_seven-0", "--target", TARGET, "--profile",
                 str(PROFILE), "--out", str(out), "--name", "math_six_times_seven", *extra])


@pytest.mark.slow
def test_a_captured_session_replays_green_and_scrubbed(store: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", SECRET)
    assert _capture(store, tmp_path) == 0
    assert "wrote" in capsys.readouterr().out
    path = tmp_path / "math_six_times_seven.yaml"
    text = path.read_text(encoding="utf-8")
    assert SECRET not in text and f"My key is {SCRUBBED}" in text
    scenario = load_scenario(path)
    assert scenario.sessions[0].user == "u7" and scenario.sessions[0].initial_state == {"user:tier": "gold"}
    assert [t.user for t in scenario.sessions[0].turns][0] == "What is six times seven?"
    assert [s.call if hasattr(s, "call") else "text" for s in scenario.script["planner"]][:3] == [
        "run_python", "text", "finish"]
    monkeypatch.delenv("GOOGLE_API_KEY")
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path / "c"))
    failing = {c.name: c.evidence for c in result.checks if c.status.value == "fail"}
    assert result.status == "pass", failing or result.error
    assert _capture(store, tmp_path) == 2  # the file is there: nothing overwritten without --force
    assert "exists" in capsys.readouterr().err


@pytest.mark.slow
def test_a_planted_defect_fails_the_captured_replay(store: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's next-turn cleanup mutates the fetched state instead of writing a delta: stale flags stay."""
    from tests.user_agents.tool_rlm import agent

    assert _capture(store, tmp_path) == 0

    def forgets_to_clear(callback_context) -> None:
        return None

    monkeypatch.setattr(agent.root_agent, "before_agent_callback", forgets_to_clear)
    result = run_scenario(load_scenario(tmp_path / "math_six_times_seven.yaml"),
                          RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path / "c"))
    assert result.check("stale_flags_cleared").status.value == "fail"


def test_no_such_session_says_how_to_list_them(store: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", str(store), "--session", "nope", "--target", TARGET, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no session 'nope'" in err and "rlm-conformance audit" in err
