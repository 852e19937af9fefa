"""A result computed before a crash is summarised on recovery, exactly once, and its code is not run again
(reference_agent/recovery.py). The crash is real: a turn on a DuckDB file SIGKILLed in a child process (right
after Job_B's event was stored, before the summary; or before Job_B's event); recovery is the next turn here."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.audit.checks import run_audit_checks
from reference_agent.conformance.profile import reference_profile
from reference_agent import state_contract as keys
from reference_agent.models.scripted import Reply
from reference_agent.recovery import orphaned_execution
from reference_agent.run import run_conversation
from reference_agent.testing import build_local_stack
from tests.audit.crashed_store import crashed_store, executions
from tests.audit.reference_store import read_store

pytestmark = pytest.mark.slow


def next_turn(home: Path, *, message: str, processor: list[Reply]) -> dict:
    """One more turn of session 'crashed' in this process: the analyst ends the loop when it gets to speak."""
    stack = build_local_stack(home, script={keys.ANALYST: [Reply(call="exit_loop", args={})],
                                            keys.RESULTS_PROCESSOR: processor}, context={"x": 1})

    async def turn() -> dict:
        outcome = await run_conversation(stack.runner, user_id="u", session_id="crashed", message=message)
        session = await stack.session_service.get_session(app_name=stack.services.settings.app_name, user_id="u",
                                                          session_id="crashed")
        assert session is not None
        artifacts = stack.services.registry.list_for_session(stack.services.settings.app_name, "u", "crashed")
        return {"outcome": outcome, "session": session, "statuses": [str(a.status.value) for a in artifacts],
                "summaries": [e for e in session.events if e.author == keys.RESULTS_PROCESSOR
                              and keys.LAST_RESULTS_SUMMARY in (e.actions.state_delta or {})]}

    try:
        return asyncio.run(turn())
    finally:
        stack.services.close()


def test_a_result_computed_before_the_crash_is_summarised_once_and_not_run_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    crashed_store(home, kill_after=keys.JOB_BUILDER)
    assert executions(home) == 1

    recovered = next_turn(home, message="and?", processor=[Reply(text="Recovered: 42.")])
    assert recovered["session"].state[keys.LAST_RESULTS_SUMMARY] == "Recovered: 42."
    assert recovered["statuses"] == ["consumed"]
    assert len(recovered["summaries"]) == 1
    assert executions(home) == 1, "recovery ran the delegated code again"
    assert orphaned_execution(recovered["session"].events) is None

    later = next_turn(home, message="thanks", processor=[])  # a second processor answer would be unscripted
    assert len(later["summaries"]) == 1 and later["outcome"].termination == "exit_loop"
    assert executions(home) == 1

    [stored] = read_store(home / "rlm.duckdb")
    assert not [r for r in run_audit_checks(stored, reference_profile()) if r.failed]


@pytest.mark.parametrize(("crash", "ran_before"), [({"kill_after": keys.ANALYST}, 0),
                                                 ({"kill_before": keys.JOB_BUILDER}, 1)])
def test_a_delegation_whose_execution_was_not_stored_is_run_or_adopted_once(tmp_path: Path, crash: dict,
                                                                             ran_before: int) -> None:
    """Killed after the delegation (Job_B never ran: it runs once now), or after Job_B finished but before its
    event was stored (its result is adopted: the code does not run again); either way summarised once."""
    home = tmp_path / "home"
    crashed_store(home, **crash)
    assert executions(home) == ran_before
    recovered = next_turn(home, message="and?", processor=[Reply(text="Recovered: 42.")])
    assert recovered["session"].state[keys.LAST_RESULTS_SUMMARY] == "Recovered: 42."
    assert recovered["statuses"] == ["consumed"] and len(recovered["summaries"]) == 1
    assert executions(home) == 1
    [stored] = read_store(home / "rlm.duckdb")
    assert not [r for r in run_audit_checks(stored, reference_profile()) if r.failed]


def test_an_artifact_summarised_before_the_crash_is_marked_consumed_on_the_next_run(tmp_path: Path) -> None:
    """Killed after the summary's event, before the stage plugin marked the artifact: the next run marks it
    (it stayed ``executed`` for ever before), and nothing is summarised or run again."""
    home = tmp_path / "home"
    crashed_store(home, kill_after=keys.RESULTS_PROCESSOR)
    recovered = next_turn(home, message="and?", processor=[])
    assert recovered["statuses"] == ["consumed"]
    assert len(recovered["summaries"]) == 1 and executions(home) == 1
