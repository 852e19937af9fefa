"""The recovery ``resume`` without processes: which invocation is resumed, what the model still serves, what a
target must provide, and how the first recovered turn becomes the resume."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness.crash.journal import Journal
from harness.crash.recovery import recovery_scenario, remaining_script, resumed_invocation
from harness.crash.resume import Resume, cannot_resume, resume_first_turn
from harness.scenario.loader import load_scenario
from harness.trace.model import EventRecord

SCENARIO = load_scenario(Path(__file__).parents[2] / "scenarios" / "two_turns_one_session.yaml")
ANALYST = next(iter(SCENARIO.script))


def record(index: int, turn: int, invocation: str, *, calls: tuple[str, ...] = (),
           responses: tuple[str, ...] = ()) -> EventRecord:
    return EventRecord(index=index, session_id=SCENARIO.session_id(0), user_id="analyst_1", turn=turn,
                       invocation_id=invocation, author=ANALYST if calls or responses else "user",
                       emitted_delta={}, appended_delta={}, function_calls=list(calls),
                       function_responses=list(responses), text="" if calls or responses else "hi")


def test_the_resumed_invocation_is_the_crashed_turns_as_the_client_saw_it() -> None:
    journal = Journal(acks=[("e0", record(0, 0, "inv-0")), ("e1", record(1, 1, "inv-1"))])
    assert resumed_invocation(SCENARIO, crashed_turn=1, journal=journal) == Resume(
        user_id="analyst_1", session_id=SCENARIO.session_id(0), invocation_id="inv-1")
    # Nothing of the crashed turn acknowledged: no invocation to resume (the message is sent again, as retry).
    assert resumed_invocation(SCENARIO, crashed_turn=1, journal=Journal(acks=journal.acks[:1])) is None


def test_resume_sends_the_crashed_turn_and_the_turns_after_it() -> None:
    journal = Journal(acks=[("e0", record(0, 0, "inv-0"))])
    resumed = recovery_scenario(SCENARIO, crashed_turn=0, journal=journal, recovery="resume")
    assert [t.user for t in resumed.sessions[0].turns] == [t.user for t in SCENARIO.sessions[0].turns]


def test_under_resume_an_acknowledged_call_whose_tool_never_answered_is_not_asked_again() -> None:
    """A resumable ADK invocation runs a trailing call itself; retry asks the model for it again."""
    journal = Journal(acks=[("e0", record(0, 0, "inv-0")), ("e1", record(1, 0, "inv-0", calls=("delegate",)))],
                      served={ANALYST: [0]})
    assert remaining_script(SCENARIO, journal)[ANALYST] == list(SCENARIO.script[ANALYST])
    assert remaining_script(SCENARIO, journal, resumed="inv-0")[ANALYST] == list(SCENARIO.script[ANALYST][1:])
    resumed = recovery_scenario(SCENARIO, crashed_turn=0, journal=journal, recovery="resume")
    assert resumed.script[ANALYST] == list(SCENARIO.script[ANALYST][1:])


def test_under_resume_a_text_whose_agent_never_ended_is_asked_again() -> None:
    """ADK re-runs an agent whose end_of_agent event was not stored: its stored text does not count as answered."""
    text = record(1, 0, "inv-0").model_copy(update={"author": ANALYST})
    ended = record(2, 0, "inv-0").model_copy(update={"author": ANALYST, "text": ""})
    served = {ANALYST: [0]}
    assert remaining_script(SCENARIO, Journal(acks=[("e1", text)], served=served), resumed="inv-0")[ANALYST] \
        == list(SCENARIO.script[ANALYST])
    assert remaining_script(SCENARIO, Journal(acks=[("e1", text), ("e2", ended)], served=served),
                            resumed="inv-0")[ANALYST] == list(SCENARIO.script[ANALYST][1:])
    # Without resume (retry) the acknowledged text stands.
    assert remaining_script(SCENARIO, Journal(acks=[("e1", text)], served=served))[ANALYST] \
        == list(SCENARIO.script[ANALYST][1:])


def built(*, resumable: bool, resume_turn: Any = None) -> Any:
    from google.adk.apps import ResumabilityConfig

    app = SimpleNamespace(name="an_app", resumability_config=ResumabilityConfig(is_resumable=True) if resumable
                          else None)

    async def run_turn(runner: Any, user_id: str, session_id: str, message: str,
                       state_delta: dict | None = None) -> str:
        return f"ran {message!r} in {session_id}"

    return SimpleNamespace(name="t", app=app, run_turn=run_turn, resume_turn=resume_turn)


async def resume_turn(runner: Any, user_id: str, session_id: str, invocation_id: str) -> str:
    return f"resumed {invocation_id} in {session_id}"


def test_a_target_that_cannot_resume_says_what_is_missing() -> None:
    assert "not resumable" in cannot_resume(built(resumable=False, resume_turn=resume_turn))
    assert "ResumabilityConfig(is_resumable=True)" in cannot_resume(built(resumable=False, resume_turn=resume_turn))
    assert "provides no resume_turn" in cannot_resume(built(resumable=True))
    assert cannot_resume(built(resumable=True, resume_turn=resume_turn)) is None


def test_the_first_turn_in_the_crashed_session_resumes_and_the_rest_run() -> None:
    target = built(resumable=True, resume_turn=resume_turn)
    resume_first_turn(target, Resume(user_id="u", session_id="s", invocation_id="inv-7"))
    assert "state_delta" in inspect.signature(target.run_turn).parameters  # the runner reads it

    async def turns() -> list[str]:
        return [await target.run_turn(None, "u", "other", "a"), await target.run_turn(None, "u", "s", "b"),
                await target.run_turn(None, "u", "s", "c", state_delta={"k": 1})]

    assert asyncio.run(turns()) == ["ran 'a' in other", "resumed inv-7 in s", "ran 'c' in s"]
