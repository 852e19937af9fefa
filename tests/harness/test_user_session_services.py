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
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.targets.base import TargetEnvironment
from harness.targets.profile import load_profile
from harness.targets.session_services import call_factory

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = load_scenario(ROOT / "scenarios" / "single_delegation.yaml")
REFERENCE_PROFILE = load_profile(ROOT / "reference_agent" / "conformance_profile.yaml")
SERVICE_CHECKS = ("stale_writer_rejected", "session_service_contract", "none_deletes", "get_session_config_honoured",
                  "event_order_preserved")


def _run(spec: str, scenario=SCENARIO, **profile_changes):
    result = _result(spec, scenario, **profile_changes)
    assert result.error is None, result.error
    return {c.name: c for c in result.checks}


def _result(spec: str, scenario=SCENARIO, **profile_changes):
    profile = REFERENCE_PROFILE.model_copy(update=profile_changes) if profile_changes else None
    return run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, session_service=spec, profile=profile))


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
    assert "expected the stale writer's append to be refused" in " ".join(checks["stale_writer_rejected"].evidence)
    # The failure names who asked for rejection and the fix either way (issue 51: "names no fix").
    said = checks["stale_writer_rejected"].explanation
    assert "said by the target profile's stale_writes: reject" in said and "say stale_writes: accept" in said
    contract = checks["session_service_contract"]
    assert contract.failed and "None must delete the key" in " ".join(contract.evidence)
    assert "None semantics by the target profile's none_semantics: delete" in contract.explanation


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


# --- issue 51: None semantics without false alarms; home-made services judged by behaviour ----------------------

CLEANUP = load_scenario(ROOT / "scenarios" / "final_answer_then_new_turn.yaml")  # its cleanup writes None


def _failures(checks) -> dict:
    return {n: (c.explanation, c.evidence) for n, c in checks.items() if c.failed}


def test_a_service_that_deletes_on_none_is_not_told_a_delete_belongs_in_deleted_keys() -> None:
    """The None its stored event keeps is the delete: the service's stored state does not hold the key."""
    checks = _run("tests.user_session_services:DeletingSessions", CLEANUP)
    assert not _failures(checks)
    none = checks["none_deletes"]
    assert none.status is Status.PASS and "are deletes" in none.explanation
    assert "a probe of DeletingSessions" in none.explanation  # where the semantics came from


def test_a_null_the_scenario_planted_is_the_harnesss_not_the_agents() -> None:
    """Explore's starting states plant ``explore_cleared: null``; the service (deleting on None in a delta, not at
    create) keeps it; none_deletes said it was the agent's."""
    sessions = [s.model_copy(update={"initial_state": {**s.initial_state, "explore_cleared": None}})
                for s in CLEANUP.sessions]
    checks = _run("tests.user_session_services:DeletingSessions", CLEANUP.model_copy(update={"sessions": sessions}))
    assert not _failures(checks)
    assert "'explore_cleared'" in checks["none_deletes"].explanation
    assert "the harness's" in checks["none_deletes"].explanation


def test_a_class_attribute_that_says_delete_on_a_storing_service_fails_naming_the_attribute() -> None:
    none = _run("tests.user_session_services:SaysDeleteButStores", CLEANUP)["none_deletes"]
    assert none.failed
    assert "the service class's attribute SaysDeleteButStores.none_semantics = 'delete'" in none.explanation
    assert "the profile says" not in none.explanation
    assert "set its class attribute none_semantics = 'store'" in none.explanation  # the fix where it was said


def test_the_profile_is_named_when_the_profile_said_it() -> None:
    none = _run("tests.user_session_services:OwnSessions", CLEANUP, none_semantics="delete")["none_deletes"]
    assert none.failed and "the target profile's none_semantics: delete" in none.explanation


@pytest.mark.parametrize("declared", [{}, {"stale_writes": "reject"}, {"none_semantics": "store"}])
def test_a_stale_writer_refused_with_the_services_own_error_is_a_rejection(declared) -> None:
    """Upstream's shape: its own ValueError, not StaleSessionError; neither field needs declaring to get past."""
    checks = _run("tests.user_session_services:RejectingSessions", **declared)
    assert not _failures(checks)
    stale = checks["stale_writer_rejected"]
    assert stale.status is Status.PASS and "stale_writer_rejected" in stale.explanation


def test_an_error_while_observing_a_service_names_the_field_that_skips_it() -> None:
    result = _result("tests.user_session_services:RefusesNone")
    assert result.error is not None and "what None in a delta does" in result.error
    assert "say none_semantics: delete (or store) in the target profile" in result.error
    # Declaring that one field is enough to get past the observation (the stale writer is still observed).
    checks = _run("tests.user_session_services:RefusesNone", none_semantics="store")
    assert checks["session_service_contract"].failed  # None refused: the contract's none_semantics case says so
    assert "stale_writer_rejected" in checks and not checks["stale_writer_rejected"].failed


def test_a_teams_own_service_on_an_agent_that_clears_keys_with_none(tmp_path: Path) -> None:
    """The issue's shape, on an agent the service tests had not met: tests/user_agents/output_key_rlm (its runner
    clears pending_code with None) from init's draft, on tests/user_agents/home_made_sessions (an
    InMemorySessionService subclass saying none_semantics = "delete", refusing stale writers with its own
    ValueError): init's smoke green; the planted variant that says delete but stores None fails none_deletes,
    naming the class attribute."""
    from harness.init.project import init_project

    init_project("tests.user_agents.output_key_rlm.agent:app", tmp_path)
    smoke = load_scenario(tmp_path / "scenarios" / "smoke.yaml")
    profile = load_profile(tmp_path / "rlm-profile.yaml")

    def checks(service: str) -> dict:
        result = run_scenario(smoke, RunOptions(llm_mode=LlmMode.SCRIPTED, profile=profile,
                                                target="tests.user_agents.output_key_rlm.agent:app",
                                                session_service=f"tests.user_agents.home_made_sessions.sessions:{service}"))
        assert result.error is None, result.error
        return {c.name: c for c in result.checks}

    team = checks("TeamSessions")
    assert not _failures(team)
    assert team["none_deletes"].status is Status.PASS and team["stale_writer_rejected"].status is Status.PASS
    planted = checks("StoringNone")["none_deletes"]
    assert planted.failed and "StoringNone.none_semantics = 'delete'" in planted.explanation
    assert "session_state stores 'pending_code' = null" in " ".join(planted.evidence)
