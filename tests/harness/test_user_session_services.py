"""A user's session service is judged by what it does: declared by its class, said by the profile, or observed.

Never assumed: a factory returning ADK's InMemorySessionService gets ADK's declared divergences; a class the
harness has never seen gets its None semantics and stale-writer behaviour from a short probe of that very
instance (harness/contract/observe.py), unless the target profile requires one; a class is called as
harness/targets/session_services.py documents, with the profile's session_service_args.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checks.base import Status
from harness.llm.modes import LlmMode
from harness.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.targets.base import TargetEnvironment
from harness.targets.profile import load_profile
from harness.targets.session_services import call_factory

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = load_scenario(ROOT / "scenarios" / "single_delegation.yaml")
REFERENCE_PROFILE = load_profile(ROOT / "reference_agent" / "conformance_profile.yaml")
SERVICE_CHECKS = ("stale_writer_rejected", "session_service_contract", "none_deletes", "get_session_config_honoured",
                  "event_order_preserved")


def _run(spec: str, **profile_changes):
    profile = REFERENCE_PROFILE.model_copy(update=profile_changes) if profile_changes else None
    result = run_scenario(SCENARIO, RunOptions(llm_mode=LlmMode.SCRIPTED, session_service=spec, profile=profile))
    assert result.error is None, result.error
    return {c.name: c for c in result.checks}


@pytest.mark.parametrize("spec", ["tests.user_session_services:adk_in_memory", "tests.user_session_services:OwnSessions"])
def test_a_correct_user_service_raises_no_false_alarm(spec: str) -> None:
    checks = _run(spec)
    failed = {n: (c.explanation, c.evidence) for n, c in checks.items() if c.failed}
    assert not failed
    assert checks["none_deletes"].status is Status.NOT_APPLICABLE  # it stores None, as observed / declared
    stale = checks["stale_writer_rejected"]
    assert "accept" in " ".join((stale.explanation, *stale.evidence))


def test_the_observation_says_so_for_a_class_the_harness_never_saw() -> None:
    stale = _run("tests.user_session_services:OwnSessions")["stale_writer_rejected"]
    assert "OwnSessions accepts a stale writer's append" in " ".join(stale.evidence)
    assert "stale_writes: reject" in " ".join(stale.evidence)


def test_the_profile_can_require_what_the_service_does_not_do() -> None:
    checks = _run("tests.user_session_services:OwnSessions", stale_writes="reject", none_semantics="delete")
    assert checks["stale_writer_rejected"].failed
    assert "expected exactly one StaleSessionError" in " ".join(checks["stale_writer_rejected"].evidence)
    contract = checks["session_service_contract"]
    assert contract.failed and "None must delete the key" in " ".join(contract.evidence)


def test_a_class_with_defaults_is_built_bare_or_with_the_profiles_args(tmp_path: Path, monkeypatch) -> None:
    from tests.user_session_services import CALLS, FileSessions

    monkeypatch.chdir(tmp_path)
    CALLS.clear()
    call_factory("x:FileSessions", FileSessions, tmp_path)  # before: called with the folder, "Is a directory"
    assert CALLS == [("FileSessions", "sessions.duckdb")]
    call_factory("x:FileSessions", FileSessions, tmp_path, args={"db_path": "{work}/own.duckdb"})
    assert CALLS[-1] == ("FileSessions", f"{tmp_path}/own.duckdb") and (tmp_path / "own.duckdb").exists()


def test_the_calling_convention(tmp_path: Path) -> None:
    from google.adk.sessions import InMemorySessionService

    seen: list[object] = []

    def folder(path):  # a required first parameter: the folder
        seen.append(path)
        return InMemorySessionService()

    def env(env: TargetEnvironment):  # the whole environment
        seen.append(env)
        return InMemorySessionService()

    def bare():
        seen.append(None)
        return InMemorySessionService()

    marker = object()
    call_factory("x:folder", folder, tmp_path)
    call_factory("x:env", env, tmp_path, env=marker)  # type: ignore[arg-type]
    call_factory("x:bare", bare, tmp_path)
    assert seen == [tmp_path, marker, None]


def test_run_with_session_service_args_from_the_profile() -> None:
    from tests.user_session_services import CALLS

    CALLS.clear()
    checks = _run("tests.user_session_services:FileSessions", session_service_args={"db_path": "{work}/s.duckdb"})
    assert not [n for n, c in checks.items() if c.failed]
    [(_, path)] = CALLS
    assert str(path).endswith("/s.duckdb") and "{work}" not in str(path)


AGENT_TOOL_SCENARIO = ROOT / "tests" / "user_agents" / "agent_tool_rlm" / "scenarios" / "coder_then_run.yaml"


@pytest.mark.parametrize("spec, args", [
    ("tests.user_agents.agent_tool_rlm.sessions:sqlite_sessions", {}),
    ("tests.user_agents.agent_tool_rlm.sessions:sqlite_at", {"db_url": "sqlite+aiosqlite:///{work}/sessions.db"}),
])
def test_a_file_store_named_relatively_lives_and_dies_with_the_scenarios_work_folder(
        spec: str, args: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ADK's DatabaseSessionService on 'sqlite+aiosqlite:///sessions.db', as a team writes it: the factory was
    called in the project folder, the file outlived the run, and the next run died in every turn on
    'UNIQUE constraint failed: events.id' (the harness's repeatable ids met the stored rows)."""
    scenario = load_scenario(AGENT_TOOL_SCENARIO)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    profile_path = AGENT_TOOL_SCENARIO.parents[1] / "rlm-profile.yaml"
    profile = load_profile(profile_path).model_copy(update={"session_service_args": args})
    for _ in range(2):  # the second run starts from nothing too
        result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, session_service=spec, profile=profile,
                                                   profile_path=profile_path))
        assert result.error is None and not result.crashed_turns, [t.outcome.error for t in result.crashed_turns]
        assert result.status == "pass", [(c.name, c.explanation) for c in result.checks if c.failed]
        assert Path.cwd() == project and not list(project.iterdir())  # nothing outlives the run
